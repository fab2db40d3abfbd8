"""The declared fabric of a spec that lists its cables (``fabric.cabling``, written by
``python -m fabric import``): one switch per ``fabric.switches`` entry, one CA per cabled HCA,
one link per cable, each with the cable's own width and speed.

Both sides of ``fabric.topology.diff`` match nodes by name, so the GUIDs made up here never
reach a report; a CA known only by its GUID (``guid:`` end) keeps that GUID, which is how the
discovered side names it too.
"""

from __future__ import annotations

from fabric.graph import Ca, FabricGraph, Link, Switch, link_rate
from fabric.spec import CableEnd, ClusterSpec

#: Made-up GUIDs: switches from here, CAs from ``_CA_BASE`` (spaced by 4, as from_spec does).
_SWITCH_BASE = 0x0002C90381000000
_CA_BASE = 0x0002C90382000000


def graph_from_cabling(spec: ClusterSpec) -> FabricGraph:
    """Return the fabric ``spec.fabric.cabling`` declares (see the module docstring)."""
    fabric = spec.fabric
    switches: dict[str, Switch] = {}
    names = [sw.name for sw in fabric.switches]
    names += [e.switch for c in fabric.cabling for e in (c.a, c.b) if e.switch is not None]
    for name in dict.fromkeys(names):
        guid = f"0x{_SWITCH_BASE + len(switches):016x}"
        switches[name] = Switch(guid=guid, name=name, description=name, ports=0)
    cas: dict[tuple[str, str], Ca] = {}

    def guid_of(end: CableEnd) -> str:
        if end.switch is not None:
            return switches[end.switch].guid
        if end.guid is not None:
            key = ("", end.guid)
            if key not in cas:
                cas[key] = Ca(end.guid, None, None, end.guid, 0, "hca")
            return end.guid
        key = (end.host or "", end.hca or "")
        if key not in cas:
            guid = f"0x{_CA_BASE + 4 * len(cas):016x}"
            cas[key] = Ca(guid, end.host, end.hca, f"{end.host} {end.hca}", 0, "hca")
        return cas[key].guid

    links = [
        Link(
            guid_of(c.a),
            c.a.port,
            guid_of(c.b),
            c.b.port,
            c.width,
            c.speed,
            link_rate(c.width, c.speed),
        )
        for c in fabric.cabling
    ]
    ports: dict[str, int] = {}
    for link in links:
        for guid, port in ((link.a_guid, link.a_port), (link.b_guid, link.b_port)):
            ports[guid] = max(ports.get(guid, 0), port)
    return FabricGraph(
        switches={s.guid: s._replace(ports=ports.get(s.guid, 0)) for s in switches.values()},
        cas={c.guid: c._replace(ports=ports.get(c.guid, 0)) for c in cas.values()},
        links=links,
    )
