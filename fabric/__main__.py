"""Entry point for ``python -m fabric``."""

import sys

from fabric.cli import main

sys.exit(main())
