"""Declared HCA ports and the fabric as the target will report it, from the spec alone.

The check plan (``fabric.verify.plan``) parametrises its port checks over these, and the
hand-off writes each compute node's health-check configuration from them
(``fabric.handoff.health``): one computation for both.
"""

from __future__ import annotations

from fabric.graph import FabricGraph, GraphError, Link
from fabric.model.record import record
from fabric.spec import ClusterSpec

#: umad2sim names every simulated HCA ``ibsim0`` whatever the spec says; match by GUID.
SIM_DEVICE = "ibsim0"
#: ibsim's port template advertises MTUCap 2048, so OpenSM never sets more in the lab.
IBSIM_MAX_MTU = 2048


@record
class HcaPort:
    """One declared HCA port and what it must show."""

    host: str
    device: str
    port: int
    link_layer: str
    rate_gbps: float
    width: str
    node_guid: str | None = None
    switch: str | None = None
    switch_port: int | None = None
    netdev: str | None = None

    @property
    def id(self) -> str:
        """Test id: ``gpu01/mlx5_0/1``."""
        return f"{self.host}/{self.device}/{self.port}"

    @property
    def where(self) -> str:
        """Readable location for failure messages: host, HCA, port and its switch port."""
        peer = f" (cabled to {self.switch} port {self.switch_port})" if self.switch else ""
        return f"{self.host} HCA {self.device} port {self.port}{peer}"


def expected_ib_mtu(spec_mtu: int, simulated: bool) -> int:
    """Return the active IB MTU to expect: the spec's, capped at ibsim's 2048 in the lab."""
    return min(spec_mtu, IBSIM_MAX_MTU) if simulated else spec_mtu


def declared_graph(spec: ClusterSpec) -> FabricGraph | None:
    """The declared fabric: the fat tree, or the cables ``fabric.cabling`` lists (an imported
    fabric, judged against its cabling alone where no fat tree was written). None when the
    spec declares neither (clouds) or it cannot be built (the spec rules name why)."""
    from fabric.topology.from_spec import graph_from_spec

    if spec.fabric.topology is None and not spec.fabric.cabling:
        return None
    try:
        return graph_from_spec(spec)
    except GraphError:
        return None


def expected_graph(spec: ClusterSpec, declared: FabricGraph | None) -> FabricGraph | None:
    """The ``declared`` fabric as the target will report it (ibsim speeds in the lab)."""
    if declared is None or not spec.simulated:
        return declared
    from fabric.topology.ibsim import simulated

    return simulated(declared)


def ca_links(graph: FabricGraph | None) -> dict[tuple[str, str, int], tuple[str, Link, str, int]]:
    """(host, device, ca port) -> (CA guid, link, switch name, switch port): the graph's
    :attr:`~fabric.graph.FabricGraph.ca_cables`, computed once per graph (read, not edited)."""
    return {} if graph is None else graph.ca_cables


def hca_ports(spec: ClusterSpec, hosts: list[str], graph: FabricGraph | None) -> list[HcaPort]:
    """Every declared HCA port of ``hosts`` (those with HCAs, in declaration order), with the
    rate and width the target reports (``graph``: :func:`expected_graph`) and its cable."""
    links = ca_links(graph)
    ports = []
    selected = set(hosts)
    uncabled = (None, None, None, None)
    for host, group in spec.hosts.items():
        if not group.hcas or host not in selected:
            continue
        for hca in group.hcas:
            device, layer, netdev = hca.device, hca.link_layer, hca.netdev
            for port in range(1, hca.ports + 1):
                guid, link, switch, switch_port = links.get((host, device, port), uncabled)
                rate, width = (link.rate_gbps, link.width) if link else (hca.rate_gbps, hca.width)
                # positional, in field order: 700,000 records at 16,384 hosts
                ports.append(
                    HcaPort(
                        host,
                        device,
                        port,
                        layer,
                        float(rate),
                        width,
                        guid,
                        switch,
                        switch_port,
                        netdev,
                    )
                )
    return ports
