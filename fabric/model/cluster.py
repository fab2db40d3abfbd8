"""The cluster model of one spec: each fact computed once, on first use, from the spec alone.

Pure: no I/O, no other step's code. A step that needs several facts of the same spec builds one
``ClusterModel`` and reads them from it, instead of deriving each again (the hand-off's health
configuration reads the ports and the fabric from it).
"""

from __future__ import annotations

from functools import cached_property

from fabric.graph import FabricGraph
from fabric.model.ports import (
    HcaPort,
    declared_graph,
    expected_graph,
    expected_ib_mtu,
    hca_ports,
)
from fabric.spec import ClusterSpec


class ClusterModel:
    """What every later step needs of ``spec``, each computed once."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec

    @cached_property
    def declared_graph(self) -> FabricGraph | None:
        """The declared fabric (fat tree or ``fabric.cabling``), or None when the spec declares
        neither (clouds)."""
        return declared_graph(self.spec)

    @cached_property
    def expected_graph(self) -> FabricGraph | None:
        """The declared fabric as the target will report it (ibsim speeds in the lab)."""
        return expected_graph(self.spec, self.declared_graph)

    @cached_property
    def hca_ports(self) -> list[HcaPort]:
        """Every declared HCA port, host by host in declaration order, with its cable."""
        return hca_ports(self.spec, list(self.spec.hosts), self.expected_graph)

    @cached_property
    def ib_ports(self) -> list[HcaPort]:
        """The HCA ports whose link layer is InfiniBand."""
        return [p for p in self.hca_ports if p.link_layer == "InfiniBand"]

    @property
    def ib_mtu(self) -> int:
        """The active IB MTU every IB port must show."""
        return expected_ib_mtu(self.spec.fabric.mtu, self.spec.simulated)
