"""The check plan's parameter types: what a check runs over (a subnet manager, a host pair, a
switch hop, a declared cable, a swept cable, a cloud's placement). HCA ports, GPU rails and NCCL
runs are the model's (``fabric.model.ports``, ``fabric.model.gpus``)."""

from __future__ import annotations

from fabric.model.record import keyword_record, record


@keyword_record
class SubnetManagerExpect:
    """A declared subnet manager, in any mode (``fabric.spec.models.SubnetManager``): how it
    is recognised (a managed host's port, an external port's node description or GUID, a
    switch's name), its priority and whether it is the expected master."""

    mode: str = "managed"
    host: str | None = None
    switch: str | None = None
    node_description: str | None = None
    guid: str | None = None
    priority: int
    master: bool = False

    @property
    def id(self) -> str:
        """Test id and report subject: the host, ``switch:<name>`` or ``external:<what>``."""
        if self.mode == "managed":
            return self.host or "managed:?"
        if self.mode == "switch":
            return f"switch:{self.switch}"
        return f"external:{self.node_description or self.guid}"

    @property
    def role(self) -> str:
        """MASTER or STANDBY, as sminfo names the state it should answer with."""
        return "MASTER" if self.master else "STANDBY"


@record
class Pair:
    """A sampled (source, target) host pair."""

    source: str
    target: str

    @property
    def id(self) -> str:
        """Test id: ``gpu01->gpu05``."""
        return f"{self.source}->{self.target}"


@record
class SwitchHop:
    """One host-switch hop of a RoCE fabric: the host's fabric netdev and the switch port
    facing it (``fabric.switches[].ports``). A host->switch->host path is two hops."""

    host: str
    netdev: str
    switch: str
    port: str

    @property
    def id(self) -> str:
        """Test id: ``gpu01/eth1-leaf1/swp1``."""
        return f"{self.host}/{self.netdev}-{self.switch}/{self.port}"

    @property
    def where(self) -> str:
        """How messages name the hop."""
        return f"switch {self.switch} port {self.port} <-> host {self.host} {self.netdev}"


@record
class DeclaredLink:
    """A declared cable, named by both ends."""

    a_name: str
    a_port: int
    b_name: str
    b_port: int
    width: str
    speed: str
    rate_gbps: float

    @property
    def id(self) -> str:
        """Test id: ``leaf01/1-gpu01/mlx5_0/1``."""
        return f"{self.a_name}/{self.a_port}-{self.b_name}/{self.b_port}"


@record
class SweptCable:
    """A declared InfiniBand cable the fabric sweep judges (``fabric.verify.sweep_judge``):
    ``link`` names both ends (the discovery check's parameter), ``port`` the HCA port (or
    ``link`` between switches: the state and counter checks' parameter), ``host`` its host."""

    link: str
    port: str
    host: str | None = None

    @property
    def id(self) -> str:
        """Test id: the link, both ends."""
        return self.link


@record
class ProviderTopology:
    """A cloud's placement of the Slurm compute nodes, read when the check runs
    (``fabric.verify.cloud_topology``) and compared with the topology Slurm loaded."""

    provider: str  # the target whose placement it is
    controller: str
    nodes: list[str]
    region: str

    @property
    def id(self) -> str:
        """Test id: the provider."""
        return self.provider
