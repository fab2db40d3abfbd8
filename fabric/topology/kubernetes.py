"""Kubernetes topology labels from a ``FabricGraph``: a Node patch per host and a Kueue
``Topology`` whose levels are those labels.

The labels come from the same tree as Slurm's ``topology.conf`` (``fabric.topology.slurm``):

* **tier 0** is the host's Slurm leaf: the switch its HCA is cabled to, or, on a
  rail-optimized fabric (a host cabled to several leaves), its rail-0 leaf, which stands for
  the whole scalable unit exactly as the block plugin's block does: every node of a unit
  reaches the same rail leaves, so nodes sharing tier 0 are one hop apart on every rail;
* **tier 1, 2, ...** are the switches above, one per level up to the top, each the first
  (switch-name order) of the switches listing the one below; spines merged because they reach
  the same switches are named after the first of them (it stands for the group);
* on a rail-optimized fabric each host also gets ``railyard.dev/rail-K``: the leaf its rail-K
  HCA is cabled to (rails counted in switch-name order, as the spec's layout numbers them).

Label keys follow NVIDIA topograph: ``fabric.topograph.run/tier-N`` since its 1.0 release (tier
0 closest to the node), or before it ``network.topology.nvidia.com/leaf``, ``/spine``, ``/core``
(``topograph-v0``; a deeper tier has no key there and is left out). A value is the switch
name when it is a valid label value of at most 63 characters, else, as topograph writes one,
``x`` + the FNV-64a hash of the name in hex. Node names are the hosts' names in lower case (as
the kubelet registers them); a host whose name is no Kubernetes node name is left out, with a
warning.

The Kueue ``Topology`` (``kueue.x-k8s.io/v1beta2``, Kueue's storage version) lists the tiers
from the top down, then ``kubernetes.io/hostname`` (the kubelet's label), as Kueue's topology
aware scheduling wants its levels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from fabric.graph import FabricGraph, GraphError
from fabric.topology.slurm import SlurmTree, natural_key, slurm_tree

Scheme = Literal["topograph", "topograph-v0"]
SCHEMES: tuple[Scheme, ...] = ("topograph", "topograph-v0")
V0_KEYS = (
    "network.topology.nvidia.com/leaf",
    "network.topology.nvidia.com/spine",
    "network.topology.nvidia.com/core",
)
HOSTNAME_LABEL = "kubernetes.io/hostname"
RAIL_LABEL = "railyard.dev/rail-{rail}"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
#: The label value grammar (at most 63 characters, checked apart).
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
#: A node's name: a DNS-1123 subdomain.
_NODE_NAME = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_FNV_OFFSET, _FNV_PRIME, _MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def tier_key(scheme: Scheme, tier: int) -> str | None:
    """The label key of fabric tier ``tier`` (0: the leaf) in ``scheme``; None when the scheme
    has no key that deep."""
    if scheme == "topograph":
        return f"fabric.topograph.run/tier-{tier}"
    return V0_KEYS[tier] if tier < len(V0_KEYS) else None


def label_value(name: str) -> str:
    """``name`` as a label value: itself when valid and at most 63 characters, else ``x`` + its
    FNV-64a hash in hex (topograph's rule for long values, here for any invalid one)."""
    if len(name) <= 63 and _VALUE.match(name):
        return name
    return f"x{fnv1a64(name.encode()):x}"


def fnv1a64(data: bytes) -> int:
    """The 64-bit FNV-1a hash of ``data``."""
    digest = _FNV_OFFSET
    for byte in data:
        digest = ((digest ^ byte) * _FNV_PRIME) & _MASK
    return digest


@dataclass
class NodeLabels:
    """Each node's topology labels, the Topology's levels (top down), and notes for stderr."""

    labels: dict[str, dict[str, str]]
    levels: list[str]
    warnings: list[str] = field(default_factory=list)


def _parents(tree: SlurmTree) -> dict[str, str]:
    """Switch -> the first switch listing it (``uppers`` is in level, then name order)."""
    parent: dict[str, str] = {}
    for upper, kids in tree.uppers.items():
        for kid in kids:
            parent.setdefault(kid, upper)
    return parent


def _chains(tree: SlurmTree) -> dict[str, list[str]]:
    """Slurm leaf -> its switches from the leaf up to its top."""
    parent = _parents(tree)
    chains: dict[str, list[str]] = {}
    for leaf in tree.leaves:
        chain = [leaf]
        while chain[-1] in parent and parent[chain[-1]] not in chain:
            chain.append(parent[chain[-1]])
        chains[leaf] = chain
    return chains


def _rails(graph: FabricGraph) -> dict[str, list[str]]:
    """Host -> its leaves in switch-name order, for hosts cabled to several (rails)."""
    return {
        host: sorted(leaves, key=natural_key)
        for host, leaves in graph.host_leaves().items()
        if len(leaves) > 1
    }


def node_labels(graph: FabricGraph, scheme: Scheme = "topograph") -> NodeLabels:
    """Every host's topology labels (module docstring). Raises ``GraphError`` as the Slurm
    writers do, e.g. for a fabric with no switch cabled to a host."""
    if not graph.host_leaves():
        raise GraphError(
            f"no switch is cabled to a host's HCA ({len(graph.switches)} switches, "
            f"{len(graph.cas)} CAs), so no node would get a topology label; give the fabric "
            "with its hosts"
        )
    tree = slurm_tree(graph, slurm_names=False)
    chains = _chains(tree)
    rails = _rails(graph)
    depth = max(map(len, chains.values()))
    labels: dict[str, dict[str, str]] = {}
    warnings: list[str] = []
    skipped: list[str] = []
    for leaf, hosts in tree.leaves.items():
        chain = chains[leaf]
        tiers = {
            key: label_value(sw)
            for tier, sw in enumerate(chain)
            if (key := tier_key(scheme, tier)) is not None
        }
        for host in hosts:
            name = host.lower()
            if not _NODE_NAME.match(name):
                skipped.append(host)
                continue
            node = dict(tiers)
            for rail, sw in enumerate(rails.get(host, ())):
                node[RAIL_LABEL.format(rail=rail)] = label_value(sw)
            labels[name] = node
    if skipped:
        warnings.append(
            f"{len(skipped)} hosts have no Kubernetes node name ({', '.join(skipped[:5])}"
            f"{', ...' if len(skipped) > 5 else ''}): set their HCAs' node descriptions to the "
            "host name; left out"
        )
    keys = [k for tier in range(depth) if (k := tier_key(scheme, tier)) is not None]
    if len(keys) < depth:
        warnings.append(
            f"the fabric has {depth} switch tiers but scheme {scheme} names only {len(keys)}; "
            "the tiers above are left out (scheme topograph names every tier)"
        )
    shallow = sorted({len(c) for c in chains.values()} - {depth})
    if shallow:
        short = [
            h for leaf, hosts in tree.leaves.items() if len(chains[leaf]) < depth for h in hosts
        ]
        warnings.append(
            f"{len(short)} hosts sit in a part of the fabric with fewer than {depth} tiers "
            f"(e.g. {short[0]}): they lack the upper tiers' labels the Kueue Topology lists"
        )
    return NodeLabels(labels, [*reversed(keys), HOSTNAME_LABEL], warnings)


def node_patches(labels: NodeLabels) -> dict[str, object]:
    """A ``v1 List`` of Node objects carrying only their topology labels (for ``kubectl apply
    --server-side`` or a merge patch: other labels stay as they are)."""
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": node}}
            for name, node in labels.labels.items()
        ],
    }


def kueue_topology(labels: NodeLabels, name: str) -> dict[str, object]:
    """The Kueue ``Topology`` named ``name`` whose levels are the labels, top down."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": key} for key in labels.levels]},
    }


def dump_yaml(docs: list[dict[str, Any]]) -> str:
    """``docs`` as a YAML stream, keys in their order, text of several lines (a JSON config
    held in a field) as a literal block."""
    import yaml  # only these outputs need it

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump_all(docs, Dumper=Dumper, sort_keys=False)


def render(graph: FabricGraph, scheme: Scheme, topology_name: str) -> tuple[str, list[str]]:
    """The Node patches and the Kueue Topology as two YAML documents, and the warnings."""
    labels = node_labels(graph, scheme)
    head = (
        f"# Node topology labels ({scheme}) and the Kueue Topology naming them, written by "
        "railyard\n"
    )
    docs = [node_patches(labels), kueue_topology(labels, topology_name)]
    return head + dump_yaml(docs), labels.warnings
