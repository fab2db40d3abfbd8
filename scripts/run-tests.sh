#!/usr/bin/env bash
# Run every test (make test): the one-time builds where they are missing (the Pulumi CLI, the
# node image), lint, each role's molecule scenario, the unit tests and each integration module,
# side by side where they can be (scripts/testrun.py; docs/testing.md has the why and the times).
# Called by `make test` with the Makefile's environment (PATH, CONTAINERS_CONF, Pulumi settings).
# Arguments go to scripts/testrun.py: --jobs N (or RAILYARD_TEST_JOBS), --only PATTERN, --list.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# Debian packages and .venv first: every step needs them. The Pulumi CLI is a step of its own.
"$ROOT/scripts/bootstrap.sh" base
PY="$ROOT/.venv/bin/python"
# The tag the build:image step builds (a hash of the package list: nothing is built here).
export RAILYARD_NODE_IMAGE="${RAILYARD_NODE_IMAGE:-$("$PY" -c 'from fabric.lab.image import image_tag; print(image_tag())')}"
exec "$PY" "$ROOT/scripts/testrun.py" "$@"
