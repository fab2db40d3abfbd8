"""``smpquery portinfo`` output (``Key:.....value`` lines) -> field dict.

Not a tool in ``fabric.parsers`` yet; this small reader belongs there once it lands (the
MTU check needs NeighborMTU, which only PortInfo carries and which ibsim answers).
"""

from __future__ import annotations

import re

_FIELD = re.compile(r"^(?P<key>[A-Za-z0-9_]+):\.+(?P<value>.*)$")


class SmpqueryError(ValueError):
    """Output that has no PortInfo fields (a failed query)."""


def parse_portinfo(text: str) -> dict[str, str]:
    """Return PortInfo fields by name (``NeighborMTU`` -> ``"2048"``)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if match := _FIELD.match(line.strip()):
            fields[match["key"]] = match["value"].strip()
    if not fields:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(no output)")
        raise SmpqueryError(f"smpquery portinfo printed no fields: {first}")
    return fields
