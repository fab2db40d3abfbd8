"""Write a cluster spec from a running fabric: ``python -m fabric import``.

From an ``ibnetdiscover`` capture (``fabric.parsers.ibnetdiscover``) and, when the subnet
manager answered, ``sminfo`` (``fabric.parsers.sminfo``):

* nodes: every host named by an HCA's node description (``gpu01 mlx5_0``), with its HCAs,
  cabled ports, rate and width; hosts with the same HCAs share a node group. A description
  set before the host had its name is no host's: ``localhost mlx5_0``, ``ubuntu mlx5_0``
  (``DEFAULT_HOSTS``) becomes the host ``PLACEHOLDER_<GUID>``, one per CA, which ``validate``
  refuses (an invalid host name, naming ``nodes[i].names``) until the real name is written;
  MLNX_OFED's ``<host> HCA-N`` keeps its host and the device ``HCA-N`` (the name the fabric
  reports and the sweep matches: no capture says which ``mlx5_*`` it is), flagged. Each has
  a PLACEHOLDER note naming the GUID and the fix (the host's name, rdma-ndd);
* switches: every switch by name, ``leaf`` when CAs are cabled to it, else ``spine``;
* the cabling: every discovered link as ``fabric.cabling``, so the declared fabric
  (``fabric.topology.from_spec``) is the discovered one and ``fabric.topology.diff`` finds no
  difference on the day of the import;
* the fat tree: inferred from switch tiers (leaves, spines, super-spines, host ports per leaf,
  uplinks), written only when the spec's topology rules accept it, and said so in a comment;
* subnet managers: never one railyard would start unasked. ``sminfo`` names the master's
  port: a switch's own SM is written ``mode: switch``, any other ``mode: external`` (its node
  description and port GUID), ``managed`` (railyard runs OpenSM there) only when asked
  (``--manage-sm``) and the port is a host's HCA; without ``sminfo`` an ``external`` entry
  whose node description is the PLACEHOLDER (``validate`` accepts it, ``pulumi up`` refuses
  it, saying what to fill in).

What a capture cannot tell (each node's SSH address, the management subnet, MTU, Slurm
partitions, GPUs, and without ``sminfo`` where the SM runs) becomes a placeholder marked
``PLACEHOLDER`` in the YAML and listed in ``Imported.notes`` for stderr. The target is
``existing`` (``fabric.targets.existing.component``): the spec validates as written (``check --plan``,
``topology --spec`` and the diff take it), and ``pulumi up`` refuses it, naming the nodes,
until every ``existing.ssh`` address is set.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fabric.graph import Ca, FabricGraph, Link
from fabric.hostlist import compress, expand
from fabric.parsers.sminfo import SminfoReport
from fabric.spec import HOSTNAME_PATTERN, SpecError, spec_from_mapping
from fabric.spec.constants import RDMA_DEVICE_PATTERN, SSH_PLACEHOLDER
from fabric.spec.sm import SM_PLACEHOLDER
from fabric.topology.spec_yaml import Row, dump

#: Placeholders for what a capture cannot tell (TEST-NET-1: never a real network).
PLACEHOLDER_SUBNET = "192.0.2.0/24"
PLACEHOLDER_MTU = 4096
#: A node description's first word that is the OS's default host name, not the host's own: the
#: description was set (rdma-ndd's "%h %d", MLNX_OFED's "<host> HCA-N") before the host had
#: its name. Such a CA is written as the host ``PLACEHOLDER_<GUID>``, which ``validate``
#: refuses ("host name ... is not valid", naming ``nodes[i].names``) until it is replaced.
DEFAULT_HOSTS = frozenset(
    {"localhost", "localhost.localdomain", "ubuntu", "debian", "centos", "rocky", "fedora"}
)
#: MLNX_OFED's default device word (``"dgx01 HCA-1"``): a count, not the mlx5_* name.
_HCA_N = re.compile(r"^HCA-\d+$")


def placeholder_host(guid: str) -> str:
    """The host written for a CA whose description names the OS's default host (an invalid
    host name on purpose: the spec is refused until it is replaced)."""
    return f"{SSH_PLACEHOLDER}_{guid.removeprefix('0x')}"


def _stand_in(guid: str) -> str:
    """A valid host name standing in for ``placeholder_host(guid)`` while the spec is built and
    checked (the inferred tree must be judged with every host in it)."""
    return f"placeholder-{guid.removeprefix('0x')}"


def _default_host(ca: Ca) -> bool:
    """Whether ``ca``'s node description begins with an OS default host name (and names a
    device): its host is unknown."""
    return (
        ca.kind == "hca"
        and ca.host is not None
        and ca.host.lower() in DEFAULT_HOSTS
        and ca.device is not None
        and bool(RDMA_DEVICE_PATTERN.match(ca.device))
    )


class CaptureError(ValueError):
    """A capture that cannot become a spec; the message names what is missing and the fix."""


@dataclass
class Imported:
    """The imported spec: its mapping, its YAML text (with comments) and the notes for stderr."""

    spec: dict[str, Any]
    text: str
    notes: list[str] = field(default_factory=list)


def _host_ca(ca: Ca) -> bool:
    """Whether ``ca`` can be declared as a host's HCA (a host name and a device name)."""
    return (
        ca.kind == "hca"
        and ca.host is not None
        and ca.device is not None
        and ca.host.lower() not in DEFAULT_HOSTS
        and bool(HOSTNAME_PATTERN.match(ca.host))
        and bool(RDMA_DEVICE_PATTERN.match(ca.device))
    )


def _host_of(ca: Ca) -> str | None:
    """The host ``ca`` is declared on: its own, a stand-in for a default one, or None."""
    if _host_ca(ca):
        return ca.host
    return _stand_in(ca.guid) if _default_host(ca) else None


def _end(graph: FabricGraph, guid: str, port: int) -> dict[str, Any]:
    sw = graph.switches.get(guid)
    if sw is not None:
        return {"switch": sw.name, "port": port}
    ca = graph.cas.get(guid)
    host = _host_of(ca) if ca is not None else None
    if ca is not None and host is not None:
        return {"host": host, "hca": ca.device, "port": port}
    return {"guid": guid, "port": port}


def _default_notes(graph: FabricGraph) -> list[str]:
    """A PLACEHOLDER note per CA whose node description was never set to its host's: the
    OS's default host name, or MLNX_OFED's ``<host> HCA-N``; each names the GUID and the fix."""
    notes = []
    for ca in graph.cas.values():
        if _default_host(ca):
            notes.append(
                f"PLACEHOLDER nodes {placeholder_host(ca.guid)}: CA {ca.guid}'s node description "
                f"{ca.description!r} names the OS's default host ({ca.host}), not the host: "
                "validate refuses the spec until it is replaced by the host's name; set the "
                "host's real name and restart rdma-ndd there (node_desc '<host> <device>'), or "
                "write it here"
            )
        elif _host_ca(ca) and ca.device is not None and _HCA_N.match(ca.device):
            notes.append(
                f"PLACEHOLDER nodes {ca.host} {ca.device}: CA {ca.guid}'s node description "
                f"{ca.description!r} is MLNX_OFED's default numbering, not the device's "
                "name; ibnetdiscover does not say which mlx5_* it is (no device index, and "
                "uncabled or Ethernet devices shift the count), so the device stays "
                f"{ca.device}, the name the fabric reports and the sweep matches; run "
                f"rdma-ndd on {ca.host} (node_desc '{ca.host} mlx5_N') and import again "
                "before host checks use the device"
            )
        elif ca.kind == "hca" and ca.host is not None and ca.host.lower() in DEFAULT_HOSTS:
            notes.append(
                f"PLACEHOLDER CA {ca.guid}: node description {ca.description!r} is the OS's "
                "default host name with no device: written as a GUID cable end; set the "
                "host's real name and restart rdma-ndd there"
            )
    return notes


def _hcas(graph: FabricGraph, notes: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Host -> its HCAs as spec mappings, hosts in capture order, devices sorted."""
    links: dict[str, list[Link]] = {}
    for link in graph.links:
        links.setdefault(link.a_guid, []).append(link)
        if link.b_guid != link.a_guid:
            links.setdefault(link.b_guid, []).append(link)
    hosts: dict[str, list[dict[str, Any]]] = {}
    for ca in graph.cas.values():
        host = _host_of(ca)
        if host is None:
            continue
        assert ca.device is not None
        cabled = links.get(ca.guid, [])
        hca: dict[str, Any] = {"device": ca.device}
        ports = len({lk.a_port if lk.a_guid == ca.guid else lk.b_port for lk in cabled})
        if ports > 1:
            hca["ports"] = min(ports, 2)
        if cabled:
            slowest = min(cabled, key=lambda lk: lk.rate_gbps)
            hca["rate_gbps"] = int(slowest.rate_gbps)
            hca["width"] = slowest.width
            if len({(lk.width, lk.speed) for lk in cabled}) > 1:
                notes.append(
                    f"{host} {ca.device}: its ports run at different rates; the spec "
                    f"declares the slowest, {slowest.width}{slowest.speed}"
                )
        else:
            notes.append(
                f"PLACEHOLDER nodes {host} {ca.device}: no cable in the capture, so its rate "
                "and width are the spec defaults; set rate_gbps and width"
            )
        hosts.setdefault(host, []).append(hca)
    for hcas in hosts.values():
        hcas.sort(key=lambda h: h["device"])
    return hosts


def _node_groups(hosts: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Hosts with identical HCAs in one group (``names`` a Slurm host list)."""
    shapes: dict[str, list[str]] = {}
    by_shape: dict[str, list[dict[str, Any]]] = {}
    for host, hcas in hosts.items():
        # a placeholder host is a group of its own: validate names it alone
        key = repr(hcas) + (host if host.startswith(("placeholder-", SSH_PLACEHOLDER)) else "")
        shapes.setdefault(key, []).append(host)
        by_shape[key] = hcas
    return [{"names": compress(names), "hcas": by_shape[key]} for key, names in shapes.items()]


def _in_spec_order(hosts: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The hosts in the order the spec's node groups declare them."""
    return [h for group in _node_groups(hosts) for h in expand(group["names"])]


def _tiers(graph: FabricGraph) -> tuple[list[str], list[str], list[str]]:
    """Switch GUIDs as (leaves, spines, super-spines): leaves have CAs cabled, spines reach a
    leaf, super-spines reach only spines. Switches that fit none are counted as spines."""
    neighbours: dict[str, set[str]] = {g: set() for g in graph.switches}
    for link in graph.links:
        for a, b in ((link.a_guid, link.b_guid), (link.b_guid, link.a_guid)):
            if a in neighbours and a != b:
                neighbours[a].add(b)
    leaves = [g for g, ns in neighbours.items() if any(n in graph.cas for n in ns)]
    leaf_set = set(leaves)
    rest = [g for g in graph.switches if g not in leaf_set]
    spines = [g for g in rest if not neighbours[g].isdisjoint(leaf_set)]
    spine_set = set(spines)
    supers = [g for g in rest if g not in spine_set and not neighbours[g].isdisjoint(spine_set)]
    placed = spine_set.union(supers)
    spines += [g for g in rest if g not in placed]
    return leaves, spines, supers


def _fat_tree(graph: FabricGraph, leaves: list[str], spines: list[str], supers: list[str]):  # type: ignore[no-untyped-def]
    """The fat-tree parameters that describe the discovered switch tiers."""
    hosts: dict[str, set[str]] = {g: set() for g in leaves}
    up: Counter[str] = Counter()
    spine_up: Counter[str] = Counter()
    trunk: Counter[tuple[str, str]] = Counter()
    tiers = {**dict.fromkeys(leaves, 0), **dict.fromkeys(spines, 1), **dict.fromkeys(supers, 2)}
    for link in graph.links:
        for a, b in ((link.a_guid, link.b_guid), (link.b_guid, link.a_guid)):
            ca = graph.cas.get(b)
            if a in hosts and ca is not None:
                hosts[a].add(_host_of(ca) or ca.guid)
            if a in tiers and b in tiers and tiers[b] == tiers[a] + 1:
                (up if tiers[a] == 0 else spine_up)[a] += 1
                trunk[(link.width, link.speed)] += 1
    tree: dict[str, Any] = {
        "kind": "fat-tree",
        "leaves": len(leaves),
        "spines": len(spines),
        "ports_per_switch": max(2, min(255, max(s.ports for s in graph.switches.values()))),
        "nodes_per_leaf": max(1, max((len(h) for h in hosts.values()), default=1)),
        "uplinks_per_leaf": max(up.values(), default=0),
    }
    if supers:
        tree["super_spines"] = len(supers)
        tree["uplinks_per_spine"] = max(spine_up.values(), default=0)
    if trunk:
        (width, speed), _ = trunk.most_common(1)[0]
        tree["link_width"] = width
        tree["link_rate_gbps"] = int(
            next(lk.rate_gbps for lk in graph.links if lk.speed == speed and lk.width == width)
        )
    return tree


@dataclass(frozen=True)
class SmIdentity:
    """What ``smpquery nodeinfo``/``nodedesc`` on the master SM's LID said (``import --ssh``)."""

    node_type: str | None = None  #: Switch, Channel Adapter
    description: str | None = None


def _subnet_manager(
    graph: FabricGraph,
    sm: SminfoReport | None,
    identity: SmIdentity | None,
    manage: bool,
    notes: list[str],
) -> tuple[dict[str, Any], str]:
    """The master SM's entry and the YAML comment on it. Never an SM railyard would start
    unasked: a switch's SM is ``switch``, any other ``external`` (node description and port
    GUID), ``managed`` only when ``manage`` and the SM's port is a host's HCA. Without
    ``sminfo`` an ``external`` entry whose node description is the PLACEHOLDER."""
    if sm is None or not sm.ok or sm.sm_guid is None:
        if manage:
            raise CaptureError(
                "--manage-sm: no sminfo answer says where the SM runs; import with --ssh HOST "
                "or --sminfo FILE"
            )
        notes.append(
            "PLACEHOLDER fabric.infiniband.subnet_managers: the capture does not say which "
            "port the SM is on (import with --ssh HOST, or --sminfo FILE with sminfo's "
            "output); written as an external SM railyard does not run: set its "
            "node_description (smpquery nodedesc <sminfo's lid>) or guid before pulumi up"
        )
        entry = {"mode": "external", "node_description": SM_PLACEHOLDER, "priority": 0}
        return entry, "PLACEHOLDER an external SM: the capture does not say where it runs"
    guid, priority = sm.sm_guid, sm.priority or 0
    wanted = int(guid, 16)
    switch = next((w for w in graph.switches.values() if int(w.guid, 16) == wanted), None)
    if switch is not None or (identity is not None and identity.node_type == "Switch"):
        name = switch.name if switch is not None else (identity.description if identity else None)
        if manage:
            raise CaptureError(
                f"--manage-sm: the master SM is the switch {name}'s own; railyard runs OpenSM "
                "only on a host: import without --manage-sm"
            )
        if switch is not None:
            notes.append(
                f"fabric.infiniband.subnet_managers: the master SM is switch {name}'s own "
                "(mode switch): railyard checks it and starts no SM"
            )
            entry = {"mode": "switch", "switch": switch.name, "priority": priority}
            return entry, f"the master is switch {name}'s own SM (sminfo: port {guid})"
    ca = next(
        (
            c
            for c in graph.cas.values()
            if int(c.guid, 16) <= wanted <= int(c.guid, 16) + max(c.ports, 1)
        ),
        None,
    )
    description = (identity.description if identity else None) or (
        ca.description if ca is not None else None
    )
    if manage:
        if ca is None or not _host_ca(ca):
            raise CaptureError(
                f"--manage-sm: the master SM's port {guid} is on no host HCA of the capture; "
                "railyard runs OpenSM only on a declared host: import without --manage-sm"
            )
        notes.append(
            f"fabric.infiniband.subnet_managers: --manage-sm: railyard runs OpenSM on {ca.host}, "
            "where sminfo found the master SM"
        )
        return {"host": ca.host, "priority": priority}, f"OpenSM on {ca.host} (--manage-sm)"
    entry: dict[str, Any] = {"mode": "external"}
    if description:
        entry["node_description"] = description
    entry |= {"guid": guid, "priority": priority}
    where = repr(description) if description else f"port {guid}"
    if ca is not None and _host_ca(ca):
        notes.append(
            f"fabric.infiniband.subnet_managers: the master SM runs on {ca.host} ({where}), an "
            "SM railyard does not run: written as external; to have railyard run OpenSM "
            "there instead, import with --manage-sm"
        )
    else:
        notes.append(
            f"fabric.infiniband.subnet_managers: the master SM is {where}, on no cluster host: "
            "written as external (UFM or another team's SM); railyard checks it, starts none"
        )
    return entry, f"the master SM is {where} (sminfo), which railyard does not run"


def _cabling(cables: list[dict[str, Any]]) -> str:
    """``fabric.cabling`` under ``fabric:``, one cable a line."""
    text = dump({"cabling": [Row(c) for c in cables]}, width=1000)
    return "".join(f"  {line}\n" for line in text.splitlines())


def import_fabric(
    graph: FabricGraph,
    name: str,
    sm: SminfoReport | None = None,
    identity: SmIdentity | None = None,
    manage_sm: bool = False,
) -> Imported:
    """Return the spec of the fabric ``graph`` describes (see the module docstring).

    Raises ``CaptureError`` when the capture names no host (no HCA node description of the
    form ``<host> <device>``).
    """
    notes: list[str] = []
    hosts = _hcas(graph, notes)
    if not hosts:
        raise CaptureError(
            f"the capture names no host: none of its {len(graph.cas)} CAs has a node "
            "description '<host> <device>'; set them (e.g. rdma-core's rdma-ndd) and capture again"
        )
    leaves, spines, supers = _tiers(graph)
    leaf_set = set(leaves)
    switches = [
        {"name": graph.switches[g].name, "role": "leaf" if g in leaf_set else "spine"}
        for g in graph.switches
    ]
    cabling = [
        {
            "a": _end(graph, lk.a_guid, lk.a_port),
            "b": _end(graph, lk.b_guid, lk.b_port),
            "width": lk.width,
            "speed": lk.speed,
        }
        for lk in graph.links
    ]
    sm_entry, sm_note = _subnet_manager(graph, sm, identity, manage_sm, notes)
    fabric: dict[str, Any] = {"kind": "infiniband", "mtu": PLACEHOLDER_MTU}
    tree = _fat_tree(graph, leaves, spines, supers) if leaves else None
    spec: dict[str, Any] = {
        "name": name,
        "target": "existing",
        "nodes": _node_groups(hosts),
        "fabric": fabric,
        "management": {"subnet": PLACEHOLDER_SUBNET},
        "existing": {"ssh": dict.fromkeys(_in_spec_order(hosts), SSH_PLACEHOLDER)},
    }
    fabric.update(
        {
            "topology": tree,
            "infiniband": {"subnet_managers": [sm_entry]},
            "switches": switches,
            "cabling": cabling,
        }
    )
    tree_note = _validate(spec)
    _fill_placeholders(spec, hosts)
    notes += _default_notes(graph)
    notes += [
        f"PLACEHOLDER existing.ssh: the capture has no SSH addresses; set each node's "
        f"[user@]address[:port] ({compress(list(spec['existing']['ssh']))}) before pulumi up",
        f"PLACEHOLDER management.subnet {PLACEHOLDER_SUBNET}: the capture has no management "
        "addresses; set the nodes' SSH network",
        f"PLACEHOLDER fabric.mtu {PLACEHOLDER_MTU}: ibnetdiscover does not report the MTU; set "
        "the fabric's",
        "PLACEHOLDER slurm: the capture has no Slurm partitions or controller; add them",
        "PLACEHOLDER nodes: GPUs, CPUs and memory are not in the capture; add gpus per group",
    ]
    text = _render(spec, graph, tree_note, sm_note)
    return Imported(spec=spec, text=text, notes=notes)


def _fill_placeholders(spec: dict[str, Any], hosts: dict[str, list[dict[str, Any]]]) -> None:
    """Replace each stand-in host by its PLACEHOLDER name (nodes, existing.ssh, cabling)."""
    names = {h: placeholder_host(h.removeprefix("placeholder-")) for h in hosts}
    names = {h: p for h, p in names.items() if h.startswith("placeholder-")}
    if not names:
        return
    renamed = {names.get(h, h): hcas for h, hcas in hosts.items()}
    spec["nodes"] = _node_groups(renamed)
    spec["existing"]["ssh"] = {names.get(h, h): v for h, v in spec["existing"]["ssh"].items()}
    for cable in spec["fabric"]["cabling"]:
        for end in (cable["a"], cable["b"]):
            if end.get("host") in names:
                end["host"] = names[end["host"]]


def _validate(spec: dict[str, Any]) -> str:
    """Validate ``spec``; drop the inferred tree if only it breaks a rule. Returns the note on
    the tree for the YAML comment."""
    fabric = spec["fabric"]
    if fabric["topology"] is None:
        del fabric["topology"]
        return "no switch has a host cabled: no fat tree to infer"
    try:
        spec_from_mapping(spec)
        return "inferred from the switch tiers in the capture (leaves: switches with hosts)"
    except SpecError as err:
        reasons = [p for p in err.problems if p.path.startswith("fabric.topology")]
        if not reasons or len(reasons) != len(err.problems):
            raise
        del fabric["topology"]
        spec_from_mapping(spec)
        return f"not written: the inferred tree breaks a rule ({reasons[0].path}: {reasons[0].message})"


def _default_comments(graph: FabricGraph) -> list[str]:
    """YAML comment lines on the CAs whose node description is a default one."""
    lines = []
    for ca in graph.cas.values():
        if _default_host(ca):
            lines.append(
                f"PLACEHOLDER {placeholder_host(ca.guid)}: CA {ca.guid} {ca.description!r} (the "
                "OS's default host name): write the host's name (validate refuses this one)"
            )
        elif _host_ca(ca) and ca.device is not None and _HCA_N.match(ca.device):
            lines.append(
                f"PLACEHOLDER {ca.host} {ca.device}: CA {ca.guid} {ca.description!r}: MLNX_OFED's "
                "numbering, not the mlx5_* name; run rdma-ndd there and import again"
            )
    return lines


def _render(spec: dict[str, Any], graph: FabricGraph, tree_note: str, sm_note: str) -> str:
    """The spec as YAML, each section with comments on where it came from."""
    fabric = dict(spec["fabric"])
    cabling = fabric.pop("cabling")
    parts = [
        "# Written by `railyard import` from an ibnetdiscover capture: "
        f"{len(graph.switches)} switches, {len(graph.cas)} CAs, {len(graph.links)} links.\n"
        "# Lines marked PLACEHOLDER hold what the capture cannot tell: set them before use.\n"
        "# target existing: a running cluster; nothing is provisioned.\n",
        dump({"name": spec["name"], "target": spec["target"]}),
        "# nodes: hosts named by their HCAs' node descriptions; hosts with the same HCAs share a "
        "group.\n# PLACEHOLDER: GPUs, CPUs and memory are not in the capture.\n",
        "".join(f"# {line}\n" for line in _default_comments(graph)),
        dump({"nodes": spec["nodes"]}),
        f"# fabric.topology: the fat-tree shape, {tree_note}.\n"
        "# PLACEHOLDER fabric.mtu: ibnetdiscover does not report it.\n"
        f"# fabric.infiniband.subnet_managers: {sm_note}.\n"
        "# fabric.cabling: every discovered cable; the checks compare the fabric against it.\n",
        dump({"fabric": fabric}),
        _cabling(cabling),
        "# PLACEHOLDER management.subnet (TEST-NET-1): the capture has no management addresses.\n",
        dump({"management": spec["management"]}),
        "# PLACEHOLDER slurm: partitions and controller are not in the capture.\n"
        "# slurm: {controller: HOST, partitions: [{name: gpu, nodes: ALL, default: true}]}\n",
        "# PLACEHOLDER existing.ssh: how railyard reaches each node, [user@]address[:port]\n"
        "# (user: management.ssh_user, port 22); pulumi up refuses the spec until all are set.\n"
        "# existing.known_hosts: optional known_hosts lines (ssh-keyscan ADDRESS); a node none\n"
        "# names is pinned at first contact.\n",
        dump({"existing": spec["existing"]}),
    ]
    return "".join(parts)


__all__ = [
    "DEFAULT_HOSTS",
    "PLACEHOLDER_MTU",
    "PLACEHOLDER_SUBNET",
    "CaptureError",
    "Imported",
    "SmIdentity",
    "import_fabric",
    "placeholder_host",
]
