"""``saquery -s``: the ports whose capability mask has the IsSM bit, as the SA lists them.

The output is two sections, ``IsSM ports`` and ``IsSMdisabled ports``, each a run of
``PortInfoRecord dump:`` blocks of ``field.....value`` lines (``EndPortLid``, ``PortNum``,
``base_lid``, ``master_sm_base_lid``, ``capability_mask``). A fabric with no SA answering
(no master SM) gives ``ibwarn: ... No SM/SA found`` and ``ibpanic: ... Failed to bind to the
SA``, or ``Query SA failed: Connection timed out`` when the SA does not answer in time (seen
while a standby took over): a report with ``ok=False``.
"""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    ParseError,
    ToolResult,
    find_failure,
    first_content_line,
    lines,
    to_int,
)

TOOL = "saquery"

#: saquery's own line when its query got no answer (``Query SA failed: <strerror>``).
_SA_FAILED = re.compile(r"^Query SA failed: .*")
_SECTION = re.compile(r"^(?P<name>IsSM|IsSMdisabled) ports$")
_RECORD = re.compile(r"^PortInfoRecord dump:$")
_FIELD = re.compile(r"^(?P<key>[A-Za-z_]+)\.+(?P<value>\S+)$")
#: The capability mask's IsSM bit (IBA PortInfo:CapabilityMask bit 1).
IS_SM = 0x2


class SmPortRecord(Model):
    """One PortInfoRecord: the port's LID and number, its capability mask and master SM."""

    lid: int
    port: int
    capability_mask: int
    master_sm_lid: int | None = None
    disabled: bool = False  #: listed under ``IsSMdisabled ports``

    @property
    def is_sm(self) -> bool:
        """The IsSM bit is set (an SM runs on this port)."""
        return bool(self.capability_mask & IS_SM)


class SaquerySmReport(ToolResult):
    """Every port the SA lists under ``IsSM ports`` (and ``IsSMdisabled ports``)."""

    ports: list[SmPortRecord] = []

    @property
    def sm_lids(self) -> list[int]:
        """LIDs of the ports with an SM on them (IsSM, not disabled), in the SA's order."""
        return [p.lid for p in self.ports if p.is_sm and not p.disabled]


def _record(fields: dict[str, str], disabled: bool, lineno: int) -> SmPortRecord:
    try:
        return SmPortRecord(
            lid=to_int(fields["EndPortLid"]),
            port=to_int(fields["PortNum"]),
            capability_mask=to_int(fields["capability_mask"]),
            master_sm_lid=to_int(fields["master_sm_base_lid"])
            if "master_sm_base_lid" in fields
            else None,
            disabled=disabled,
        )
    except (KeyError, ValueError) as err:
        raise ParseError(
            TOOL, lineno, "EndPortLid, PortNum and capability_mask in each record", str(err)
        ) from None


def parse(text: str) -> SaquerySmReport:
    """Parse ``saquery -s`` output."""
    ports: list[SmPortRecord] = []
    section: str | None = None
    fields: dict[str, str] | None = None
    start = 0
    for lineno, line in lines(text):
        stripped = line.strip()
        if match := _SECTION.match(stripped):
            if fields is not None:
                ports.append(_record(fields, section == "IsSMdisabled", start))
            section, fields = match["name"], None
        elif _RECORD.match(stripped):
            if fields is not None:
                ports.append(_record(fields, section == "IsSMdisabled", start))
            fields, start = {}, lineno
        elif fields is not None and (match := _FIELD.match(stripped)):
            fields[match["key"]] = match["value"]
    if fields is not None:
        ports.append(_record(fields, section == "IsSMdisabled", start))
    if section is None:
        if reason := find_failure(text, [re.compile(r"^ibwarn: .*"), _SA_FAILED]):
            panics = [ln.strip() for _, ln in lines(text) if ln.strip().startswith("ibpanic")]
            return SaquerySmReport(ok=False, reason=panics[0] if panics else reason)
        lineno, line = first_content_line(text)
        raise ParseError(TOOL, lineno, "'IsSM ports' and 'PortInfoRecord dump:' blocks", line)
    return SaquerySmReport(ports=ports)
