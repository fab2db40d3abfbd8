"""The ``congestion_control`` family's judging: what ``ibccquery`` reads from every switch and
HCA against ``fabric.infiniband.congestion_control``.

Pure functions over parsed output. Per switch, SwitchCongestionSetting (control map, victim and
credit masks, threshold, packet size, credit starvation threshold and return delay, marking
rate); per HCA, CACongestionSetting (port control, the control map of the declared SLs, each
declared SL's CCTI timer, increase, trigger threshold and minimum) and the CCT's limit
(CongestionControlTable ``CCTI_Limit``: the last entry's index). Values are compared as
numbers: ibccquery prints the masks as bare hex, others as ``0x`` hex or decimal.
"""

from __future__ import annotations

from fabric.parsers.ibccquery import CcRecord, IbccqueryReport
from fabric.spec.models import CongestionControl

#: Mismatches shown in one message.
SHOWN = 8


def _num(text: str, bare_hex: bool = False) -> int | None:
    try:
        return int(text, 16) if bare_hex else int(text, 0)
    except ValueError:
        return None


def _delay(entry: str) -> int:
    """A CCT entry ``shift:multiplier`` as its 16-bit field (shift in the top 2 bits)."""
    shift, multiplier = entry.split(":")
    return (int(shift) << 14) | int(multiplier)


def expected_switch(cc: CongestionControl) -> dict[str, tuple[int, bool]]:
    """SwitchCongestionSetting field -> (value, printed as bare hex)."""
    sw = cc.switch
    return {
        "Control_Map": (sw.control_map, False),
        "Victim_Mask": (int(sw.victim_mask, 16), True),
        "Credit_Mask": (int(sw.credit_mask, 16), True),
        "Threshold": (sw.threshold, False),
        "Packet_Size": (sw.packet_size, False),
        "CS_Threshold": (sw.credit_starvation_threshold, False),
        "CS_ReturnDelay": (_delay(sw.credit_starvation_return_delay), False),
        "Marking_Rate": (sw.marking_rate, False),
    }


def _compare(name: str, fields: dict[str, str], want: dict[str, tuple[int, bool]]) -> list[str]:
    out = []
    for key, (value, bare) in want.items():
        got = fields.get(key)
        if got is None:
            out.append(f"{name}: {key} not read")
        elif _num(got, bare) != value:
            out.append(f"{name}: {key} {got}, declared {value:#x}")
    return out


def judge(
    cc: CongestionControl, report: IbccqueryReport, names: dict[int, str]
) -> tuple[list[str], set[tuple[str, int]]]:
    """(mismatches, the (attribute, LID) records read) of every record against the declared
    settings; ``names`` maps a LID to the node it belongs to."""
    wrong: list[str] = []
    read: set[tuple[str, int]] = set()
    for record in report.records:
        name = names.get(record.lid, f"LID {record.lid}")
        read.add((record.attribute, record.lid))
        if record.attribute == "SwitchCongestionSetting":
            wrong += _compare(name, record.fields, expected_switch(cc))
        elif record.attribute == "CACongestionSetting":
            wrong += _ca(name, record, cc)
        elif record.attribute == "CongestionControlTable":
            limit = max(len(cc.cct) - 1, 0)
            wrong += _compare(name, record.fields, {"CCTI_Limit": (limit, False)})
    return wrong, read


def _ca(name: str, record: CcRecord, cc: CongestionControl) -> list[str]:
    want = {"Port_Control": (cc.ca_port_control, False), "Control_Map": (cc.ca_control_map, False)}
    out = _compare(name, record.fields, want)
    by_sl = {_num(g.get("SL", "")): g for g in record.groups}
    for entry in cc.ca:
        group = by_sl.get(entry.sl)
        if group is None:
            out.append(f"{name}: SL {entry.sl} not read")
            continue
        out += _compare(
            f"{name} SL {entry.sl}",
            group,
            {
                "CCTI_Timer": (entry.ccti_timer, False),
                "CCTI_Increase": (entry.ccti_increase, False),
                "Trigger_Threshold": (entry.trigger_threshold, False),
                "CCTI_Min": (entry.ccti_min, False),
            },
        )
    return out


def query_command(switch_lids: list[int], hca_lids: list[int], timeout_ms: int = 200) -> str:
    """One shell command reading every switch's and HCA's settings (records concatenated)."""
    t = int(timeout_ms)
    sw = " ".join(str(int(lid)) for lid in switch_lids)
    ca = " ".join(str(int(lid)) for lid in hca_lids)
    return (
        f"for l in {sw}; do ibccquery -t {t} SwitchCongestionSetting $l; done; "
        f"for l in {ca}; do ibccquery -t {t} CACongestionSetting $l; "
        f"ibccquery -t {t} CongestionControlTable $l; done"
    )
