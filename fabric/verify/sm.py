"""The subnet managers judged, the same way in every mode (managed, external, switch).

What a fabric shows: every port whose capability mask has the IsSM bit (``saquery -s``), and
for each its SMInfo (``sminfo <lid>``: state and priority) and the identity of the node the
LID names (``smpquery nodeinfo``/``nodedesc``: node type, GUIDs, node description), read into
one :class:`SeenSm`. What the spec declares: ``fabric.verify.plan.SubnetManagerExpect``. The
functions here compare the two and return the problems as one-line messages; they run no
tool (``fabric.verify.checks.test_subnet_manager`` gathers, these judge; unit tests feed them
real captured output).

How a declared SM is recognised among the ports:

* ``managed``: the port GUID of its host's HCA (ibstat there), or, when that is unknown, a
  node description whose first word is the host (``sm1 mlx5_0``);
* ``external``: its ``node_description`` and/or ``guid`` (port or node GUID), each given one
  must match;
* ``switch``: a node of type Switch whose description is ``node_description``, else the
  switch's name, and whose GUID is ``guid`` when given.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from fabric.parsers.sminfo import SminfoReport
from fabric.parsers.smpquery import NodeDescReport, NodeInfoReport
from fabric.verify.plan import SubnetManagerExpect

#: Why the lab forgives an IsSM port of a lab host that answers no SMInfo.
LAB_PING_SERVER = (
    "in the lab the ping checks' ibping -S servers register as their port's SM "
    "(SIM_SET_ISSM) and answer no SMInfo"
)


@dataclass(frozen=True)
class SeenSm:
    """One port with the IsSM bit, as the fabric answers for it."""

    lid: int
    state: str | None = None  #: MASTER, STANDBY, DISCOVER, NOTACTIVE; None: no SMInfo answer
    priority: int | None = None
    port_guid: str | None = None
    node_guid: str | None = None
    node_type: str | None = None  #: Switch, Channel Adapter
    description: str | None = None
    reason: str | None = None  #: why SMInfo or the node's identity could not be read

    @property
    def name(self) -> str:
        """How messages name it: ``lid 13 'sm2 mlx5_0' (Channel Adapter, port GUID 0x...)``."""
        what = ", ".join(
            part
            for part in (self.node_type, f"port GUID {self.port_guid}" if self.port_guid else "")
            if part
        )
        desc = repr(self.description) if self.description is not None else "(no description)"
        return f"lid {self.lid} {desc}" + (f" ({what})" if what else "")


def seen_sm(lid: int, info: SminfoReport, node: NodeInfoReport, desc: NodeDescReport) -> SeenSm:
    """A :class:`SeenSm` from the three answers about ``lid``."""
    reasons = [r.reason for r in (info, node, desc) if not r.ok and r.reason]
    return SeenSm(
        lid=lid,
        state=info.state if info.ok else None,
        priority=info.priority if info.ok else None,
        port_guid=(node.port_guid if node.ok else None) or (info.sm_guid if info.ok else None),
        node_guid=node.node_guid if node.ok else None,
        node_type=node.node_type if node.ok else None,
        description=desc.description if desc.ok else None,
        reason="; ".join(reasons) or None,
    )


def matches(
    expect: SubnetManagerExpect, seen: SeenSm, host_guids: Mapping[str, str | None]
) -> bool:
    """Whether the port ``seen`` is the declared SM ``expect`` (see the module docstring)."""
    guids = {g for g in (seen.port_guid, seen.node_guid) if g}
    if expect.mode == "managed":
        guid = host_guids.get(expect.host or "")
        if guid:
            return guid == seen.port_guid
        words = (seen.description or "").split()
        return bool(words) and words[0] == expect.host and seen.node_type != "Switch"
    if expect.guid is not None and expect.guid not in guids:
        return False
    if expect.mode == "switch":
        wanted = expect.node_description or expect.switch
        return seen.node_type == "Switch" and (seen.description or "").strip() == wanted
    return expect.node_description is None or (
        (seen.description or "").strip() == expect.node_description.strip()
    )


def owner(
    expects: list[SubnetManagerExpect], seen: SeenSm, host_guids: Mapping[str, str | None]
) -> SubnetManagerExpect | None:
    """The declared SM the port ``seen`` is, or None."""
    return next((e for e in expects if matches(e, seen, host_guids)), None)


def find(
    expect: SubnetManagerExpect, seen: list[SeenSm], host_guids: Mapping[str, str | None]
) -> SeenSm | None:
    """The port of the declared SM ``expect`` among ``seen``, or None."""
    return next((s for s in seen if matches(expect, s, host_guids)), None)


def judge_answers(expect: SubnetManagerExpect, found: SeenSm | None) -> str | None:
    """The declared SM was found and answers SMInfo as MASTER or STANDBY."""
    if found is None:
        return f"{_sm(expect)}: no port with the IsSM bit is this SM ({_how(expect)})"
    if found.state not in ("MASTER", "STANDBY"):
        return (
            f"{_sm(expect)} at {found.name}: state {found.state or 'no SMInfo answer'}"
            f"{f' ({found.reason})' if found.reason and not found.state else ''}, "
            "expected MASTER or STANDBY"
        )
    return None


def judge_priority(expect: SubnetManagerExpect, found: SeenSm) -> str | None:
    """The SM runs with the declared priority."""
    if found.priority != expect.priority:
        return f"{_sm(expect)}: priority {found.priority}, declared {expect.priority}"
    return None


def judge_single_master(seen: list[SeenSm]) -> str | None:
    """Exactly one port answers SMInfo as MASTER."""
    masters = [s for s in seen if s.state == "MASTER"]
    if len(masters) == 1:
        return None
    states = "; ".join(f"{s.name}: {s.state or 'no answer'}" for s in seen) or "no IsSM port"
    return f"{len(masters)} MASTER SMs, expected exactly one ({states})"


def judge_master(
    expects: list[SubnetManagerExpect],
    master: SeenSm,
    host_guids: Mapping[str, str | None],
) -> str | None:
    """The master that ``sminfo`` names is the declared master."""
    expected = next((e for e in expects if e.master), None)
    if expected is not None and matches(expected, master, host_guids):
        return None
    who = owner(expects, master, host_guids)
    want = f"expected master {expected.id} ({_how(expected)})" if expected else "none declared"
    if who is None:
        return f"the master SM is {master.name}, which no subnet_managers entry declares; {want}"
    return f"the master SM is {who.id} ({master.name}), declared standby; {want}"


def judge_standbys(
    expects: list[SubnetManagerExpect],
    seen: list[SeenSm],
    host_guids: Mapping[str, str | None],
) -> list[str]:
    """Every declared standby answers STANDBY, and every STANDBY is a declared standby."""
    problems = []
    for expect in expects:
        if expect.master:
            continue
        found = find(expect, seen, host_guids)
        if found is None:
            problems.append(f"declared standby {expect.id}: not found ({_how(expect)})")
        elif found.state != "STANDBY":
            problems.append(
                f"declared standby {expect.id} at {found.name}: state "
                f"{found.state or 'no SMInfo answer'}"
            )
    for s in seen:
        if s.state == "STANDBY":
            who = owner(expects, s, host_guids)
            if who is not None and who.master:
                problems.append(f"{s.name} is STANDBY but is the declared master {who.id}")
    return problems


def undeclared(
    expects: list[SubnetManagerExpect],
    seen: list[SeenSm],
    host_guids: Mapping[str, str | None],
    lab_hosts: Collection[str] = (),
) -> list[SeenSm]:
    """The IsSM ports no entry declares. ``lab_hosts``: in the lab, the hosts whose IsSM
    port answering no SMInfo is a ping check's server (``LAB_PING_SERVER``), not an SM."""

    def ping_server(s: SeenSm) -> bool:
        words = (s.description or "").split()
        return s.state is None and s.node_type != "Switch" and bool(words) and words[0] in lab_hosts

    return [s for s in seen if owner(expects, s, host_guids) is None and not ping_server(s)]


def judge_undeclared(found: list[SeenSm]) -> str | None:
    """One message naming every SM nobody declared, or None."""
    if not found:
        return None
    named = "; ".join(f"{s.name} state {s.state or 'no SMInfo answer'}" for s in found)
    return (
        f"{len(found)} subnet manager(s) nobody declared: {named}; declare each in "
        "fabric.infiniband.subnet_managers (mode external or switch) or stop it"
    )


def _sm(expect: SubnetManagerExpect) -> str:
    """``SM on sm1`` (managed), ``SM switch:leaf01``, ``SM external:ufm01 mlx5_0``."""
    return f"SM on {expect.host}" if expect.mode == "managed" else f"SM {expect.id}"


def _how(expect: SubnetManagerExpect) -> str:
    """How the declared SM is recognised, for messages."""
    if expect.mode == "managed":
        return f"OpenSM on {expect.host}'s HCA port"
    if expect.mode == "switch":
        return f"the SM of switch {expect.node_description or expect.switch}"
    parts = [f"node description {expect.node_description!r}" if expect.node_description else ""]
    parts.append(f"GUID {expect.guid}" if expect.guid else "")
    return "external SM with " + " and ".join(p for p in parts if p)


__all__ = [
    "LAB_PING_SERVER",
    "SeenSm",
    "find",
    "judge_answers",
    "judge_master",
    "judge_priority",
    "judge_single_master",
    "judge_standbys",
    "judge_undeclared",
    "matches",
    "owner",
    "seen_sm",
    "undeclared",
]
