"""Filter that reads the status block ``mlnx_qos -i <netdev>`` prints (MLNX_OFED / DOCA-OFED).

The block (printed by a plain query and after every set)::

    DCBX mode: OS controlled
    Priority trust state: dscp
    dscp2prio mapping:
            prio:3 dscp:31,30,29,28,27,26,25,24,
    Cable len: 7
    PFC configuration:
            priority    0   1   2   3   4   5   6   7
            enabled     0   0   0   1   0   0   0   0
            buffer      0   0   0   1   0   0   0   0
    tc: 3 ratelimit: unlimited, tsa: vendor
             priority:  3

``mlnx_qos_parse(text)`` returns::

    {"dcbx_mode": "OS controlled", "trust": "dscp",
     "pfc_enabled": [3],                  # priorities with PFC on
     "pfc": {"enabled": [0,0,0,1,0,0,0,0], "buffer": [...]},
     "dscp2prio": {26: 3, ...},           # only when trust is dscp
     "tcs": {3: {"ratelimit": "unlimited", "tsa": "vendor", "priorities": [3]}}}
"""

from __future__ import annotations

import re

_TC = re.compile(r"^tc:\s*(?P<tc>\d+)\s+ratelimit:\s*(?P<rate>[^,]+),\s*tsa:\s*(?P<tsa>\S+)(?P<rest>.*)$")
_PRIO_DSCP = re.compile(r"^prio:(?P<prio>\d+)\s+dscp:(?P<dscp>[\d,]*)$")


def mlnx_qos_parse(text: str) -> dict:
    """Parse an ``mlnx_qos -i <netdev>`` status block."""
    result = {
        "dcbx_mode": None,
        "trust": None,
        "pfc_enabled": [],
        "pfc": {},
        "dscp2prio": {},
        "tcs": {},
    }
    section = None
    current_tc = None
    for raw in str(text).splitlines():
        line = raw.strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        if sep and key == "DCBX mode":
            result["dcbx_mode"] = value.strip()
            section = None
        elif sep and key == "Priority trust state":
            result["trust"] = value.strip()
            section = None
        elif line == "dscp2prio mapping:":
            section = "dscp2prio"
        elif line == "PFC configuration:":
            section = "pfc"
        elif section == "dscp2prio" and _PRIO_DSCP.match(line):
            match = _PRIO_DSCP.match(line)
            for dscp in filter(None, match.group("dscp").split(",")):
                result["dscp2prio"][int(dscp)] = int(match.group("prio"))
        elif section == "pfc" and line.split()[0] in ("priority", "enabled", "buffer"):
            cells = line.split()
            if cells[0] != "priority":
                result["pfc"][cells[0]] = [int(c) for c in cells[1:]]
        elif _TC.match(line):
            match = _TC.match(line)
            current_tc = int(match.group("tc"))
            entry = {"ratelimit": match.group("rate").strip(), "tsa": match.group("tsa").strip(","),
                     "priorities": []}
            bw = re.search(r"bw:\s*(\d+)%", match.group("rest"))
            if bw:
                entry["bw"] = int(bw.group(1))
            result["tcs"][current_tc] = entry
            section = "tc"
        elif section == "tc" and key == "priority" and current_tc is not None:
            result["tcs"][current_tc]["priorities"] += [int(p) for p in value.split()]
        else:
            section = None if section not in ("dscp2prio", "pfc", "tc") else section
    enabled = result["pfc"].get("enabled", [])
    result["pfc_enabled"] = [prio for prio, on in enumerate(enabled) if on]
    return result


class FilterModule:
    """Ansible entry point."""

    def filters(self):
        return {"mlnx_qos_parse": mlnx_qos_parse}
