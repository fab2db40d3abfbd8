"""The node ids and ports of an ibsim net file, so that ``bench.sweep --net FILE`` faults the
nodes the file names, whatever it calls them.

ibsim knows a node by the quoted id of its record (``Ca 1 "gpu00032 mlx5_0"``, ``Ca 2
"H-0002c903003421b0"`` in a capture of ``ibnetdiscover`` fed to it as it is), and reports as its
NodeDescription the record's ``# "description"`` when there is one, else the id
(``fabric.topology.ibsim``'s notes on ibsim 0.10's ``sim_net.c``). The sweep and its faults are
picked from what the served fabric reports (``ibnetdiscover``: GUIDs and node descriptions), so
each fault is taken back to the file: a discovered CA is the file's one CA record with its node
description, and the switch port at the other end of that CA's cable is the one the record's
port line names. A file where two CA records share a description cannot be faulted by
description: ``NetFileError`` names them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fabric.graph import FabricGraph

#: ``Switch 36 "S-e41d..." # "desc" ...``, ``Ca 2 "H-0002..." # "desc"``, ``Hca 1 "gpu01"``.
_NODE = re.compile(r'^(Switch|Hca|Ca|Rt)\s+(\d+)\s+"([^"]+)"(?:\s*#\s*"([^"]*)")?')
#: ``[34] "H-e41d..."[1](e41d...)``, ``[2](2c90...) "S-e41d..."[35]``, ``[1]\t"leaf01"[1]``.
_PORT = re.compile(r'^\[(\d+)\](?:\([0-9A-Fa-f]+\))?\s+"([^"]+)"\[(\d+)\]')


class NetFileError(ValueError):
    """A net file whose nodes cannot be matched to the served fabric; names what and why."""


@dataclass
class NetNode:
    """One node record: kind, port count, ibsim id, node description, cabled ports."""

    kind: str
    ports: int
    node_id: str
    description: str
    links: dict[int, tuple[str, int]] = field(default_factory=dict)


def parse_net(text: str) -> list[NetNode]:
    """The node records of an ibsim net file, in file order, each with its port lines."""
    nodes: list[NetNode] = []
    for line in text.splitlines():
        line = line.strip()
        if match := _NODE.match(line):
            kind, ports, node_id, desc = match.groups()
            nodes.append(NetNode(kind, int(ports), node_id, node_id if desc is None else desc))
        elif (match := _PORT.match(line)) and nodes:
            nodes[-1].links[int(match[1])] = (match[2], int(match[3]))
    return nodes


def first_ca(nodes: list[NetNode]) -> NetNode:
    """The file's first CA record (the sweep's vantage host)."""
    for node in nodes:
        if node.kind in ("Ca", "Hca"):
            return node
    raise NetFileError("the net file has no Ca/Hca record to sweep from")


def ca_ids(nodes: list[NetNode], served: FabricGraph) -> dict[str, NetNode]:
    """The served fabric's CA GUIDs -> their record in the file, matched by node description.
    CAs whose description no record has, or two records share, are left out."""
    by_desc: dict[str, list[NetNode]] = {}
    for node in nodes:
        if node.kind in ("Ca", "Hca"):
            by_desc.setdefault(node.description, []).append(node)
    return {
        guid: by_desc[ca.description][0]
        for guid, ca in served.cas.items()
        if len(by_desc.get(ca.description, [])) == 1
    }


def record_of(records: dict[str, NetNode], guid: str, description: str) -> NetNode:
    """The file's record of the served CA ``guid``; NetFileError when there is no single one."""
    try:
        return records[guid]
    except KeyError:
        raise NetFileError(
            f"no single CA record of the net file has the node description {description!r} "
            f'(the served CA {guid}): give each CA record its own id or # "description"'
        ) from None


def switch_end(node: NetNode, port: int) -> tuple[str, int]:
    """(switch id, switch port) at the other end of ``node``'s ``port``, from its port line."""
    try:
        return node.links[port]
    except KeyError:
        raise NetFileError(
            f'the net file\'s record "{node.node_id}" has no port line [{port}]'
        ) from None


__all__ = ["NetFileError", "NetNode", "ca_ids", "first_ca", "parse_net", "record_of", "switch_end"]
