"""The lab's layout, derived from the spec: names, networks, ports; and the address allocator.

Pure and deterministic, so ``pulumi preview`` and the unit tests see exactly what
``pulumi up`` builds. Node addresses depend on the previous assignment too (a node keeps its
address while it exists): :func:`allocate` computes them, run by the ``AddressPool`` dynamic
resource with its previous inputs (``fabric/targets/lab/dynamic_lab.py``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from fabric.spec import ClusterSpec, LabSpec
from fabric.spec.constants import DEFAULT_BMC_SUBNET, DEFAULT_FABRIC_SUBNET, LAB_RANGE
from fabric.targets import line_of
from fabric.topology.ibsim import sim_host, simulated_device

FIRST_HOST_OFFSET = 10  # node addresses start at .10; .1 is the host-side gateway


class LabPlanError(ValueError):
    """The spec cannot be built as a lab; the message names the field and the fix."""


class NetPlan(BaseModel):
    """One lab network."""

    network: str
    subnet: str
    gateway: str
    mtu: int | None = None


class NodePlan(BaseModel):
    """One lab node (its addresses come from :func:`allocate`)."""

    name: str
    container: str
    sim_host: str | None = None


class PortPlan(BaseModel):
    """One port of the lab switch and the node's fabric netdev at its other end."""

    port: str
    host: str
    netdev: str


class SwitchPlan(BaseModel):
    """The RoCE lab's switch: a container like a node, one port per RoCE node."""

    name: str
    container: str
    address: str | None = None  # pinned in the spec (fabric.switches[].address)
    ports: list[PortPlan]


class LabPlan(BaseModel):
    """Everything the lab component creates."""

    stack: str
    prefix: str
    state_dir: str
    ssh_user: str
    mgmt: NetPlan
    bmc: NetPlan
    fabric: NetPlan | None
    nodes: list[NodePlan]
    fixed: dict[str, str]  # host -> management address pinned in the spec
    ibsim: bool
    ibsim_port: int
    bmc_port: int
    notifier_port: int
    datacenter: bool = False  # nodes created powered off; their BMCs power them on
    #: A RoCE lab's switch (``fabric.switches``: the managed ``linux`` one); its nodes' fabric
    #: netdevs are its ports, and no podman fabric network is made. None: a podman bridge.
    switch: SwitchPlan | None = None


def _net(
    field: str, name: str, subnet: str, gateway: str | None, mtu: int | None = None
) -> NetPlan:
    net = ipaddress.ip_network(subnet)
    if not net.subnet_of(LAB_RANGE):  # type: ignore[arg-type]
        raise LabPlanError(
            f"{field}: {net} is outside the lab range {LAB_RANGE}; pick a subnet inside it"
        )
    if net.num_addresses < 16:
        raise LabPlanError(f"{field}: {net} is too small; use a /28 or larger")
    gw = gateway or str(next(net.hosts()))
    return NetPlan(network=name, subnet=str(net), gateway=gw, mtu=mtu)


def _in(address: str, net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    try:
        return ipaddress.ip_address(address) in net
    except ValueError:
        return False


def allocate(
    previous: Mapping[str, str],
    hosts: Sequence[str],
    subnet: str,
    gateway: str,
    fixed: Mapping[str, str] | None = None,
    field: str = "management.addresses",
) -> dict[str, str]:
    """Return host -> address for ``hosts`` in ``subnet``, keeping ``previous`` where it can.

    Fixed addresses always win. A host keeps its previous address while that is still usable
    (a host address of ``subnet``, not the gateway, not pinned to another host). Any other host
    gets the lowest free address from ``.10`` up that no host held in ``previous``: an address
    released by this change is not handed out in the same update (its container is deleted only
    at the end of it). Hosts missing from ``hosts`` are released.
    """
    net = ipaddress.ip_network(subnet)
    gw = ipaddress.ip_address(gateway)
    fixed = dict(fixed or {})
    reserved = {
        str(a) for a in (net.network_address, net.broadcast_address) if net.num_addresses > 2
    }
    owners: dict[str, str] = {}
    for host, address in fixed.items():
        ip = ipaddress.ip_address(address)
        if ip not in net or str(ip) in reserved or ip == gw:
            raise LabPlanError(
                f"{field}.{host}: {address} is not a usable address of {net} (gateway {gw})"
            )
        if str(ip) in owners:
            raise LabPlanError(
                f"{field}.{host}: {address} is already the address of {owners[str(ip)]!r}"
            )
        owners[str(ip)] = host
    out: dict[str, str] = {h: str(ipaddress.ip_address(fixed[h])) for h in hosts if h in fixed}
    taken = set(owners) | {str(gw)}
    for host in hosts:
        old = previous.get(host)
        if host in out or old is None:
            continue
        if _in(old, net) and old not in reserved and old not in taken:
            out[host] = old
            taken.add(old)
    taken |= set(previous.values())
    free = (
        str(a)
        for i, a in enumerate(net.hosts(), start=1)
        if i >= FIRST_HOST_OFFSET and str(a) not in taken
    )
    for host in hosts:
        if host not in out:
            address = next(free, None)
            if address is None:
                raise LabPlanError(
                    f"{field}: {net} has no free address left for {host}; use a larger subnet"
                )
            out[host] = address
    return {h: out[h] for h in hosts}


def plan_lab(spec: ClusterSpec, stack: str, prefix: str, state_dir: str) -> LabPlan:
    """Return the lab layout of ``spec`` for ``stack``; raise ``LabPlanError`` on a spec it cannot build."""
    if not line_of(spec.target).one_machine:
        raise LabPlanError(f"target is {spec.target!r}; the lab builds only a one-machine target")
    if spec.management.ssh_user != "root":
        raise LabPlanError("management.ssh_user: lab nodes log in as root; set ssh_user: root")
    lab = spec.lab or LabSpec()
    mgmt = _net(
        "management.subnet",
        f"{prefix}-mgmt",
        str(spec.management.subnet),
        str(spec.management.gateway) if spec.management.gateway else None,
    )
    bmc_subnet = str(spec.bmc.subnet) if spec.bmc and spec.bmc.subnet else DEFAULT_BMC_SUBNET
    bmc = _net("bmc.subnet", f"{prefix}-bmc", bmc_subnet, None)
    fabric = None
    if spec.fabric.kind == "roce":
        roce_subnet = str(lab.roce_subnet) if lab.roce_subnet else DEFAULT_FABRIC_SUBNET
        fabric = _net("lab.roce_subnet", f"{prefix}-fabric", roce_subnet, None, spec.fabric.mtu)
    subnets = [ipaddress.ip_network(n.subnet) for n in (mgmt, bmc, fabric) if n]
    if any(a.overlaps(b) for i, a in enumerate(subnets) for b in subnets[i + 1 :]):
        raise LabPlanError(
            f"lab subnets overlap: {[str(s) for s in subnets]}; give each network its own subnet"
        )
    fixed = {h: str(a) for h, a in spec.management.addresses.items()}
    allocate(
        {}, list(spec.hosts), mgmt.subnet, mgmt.gateway, fixed
    )  # fail early on a bad pin or a full subnet
    ib = spec.fabric.kind == "infiniband"
    nodes = []
    for host in spec.hosts:
        device = simulated_device(spec, host) if ib else None
        nodes.append(
            NodePlan(
                name=host,
                container=f"{prefix}-{host}",
                sim_host=sim_host(host, device) if device else None,
            )
        )
    switch = _switch_plan(spec, prefix) if fabric is not None and not lab.datacenter else None
    if switch is not None and switch.address is not None:
        fixed[switch.name] = switch.address
        allocate({}, [*spec.hosts, switch.name], mgmt.subnet, mgmt.gateway, fixed)
    return LabPlan(
        stack=stack,
        prefix=prefix,
        state_dir=state_dir,
        ssh_user=spec.management.ssh_user,
        mgmt=mgmt,
        bmc=bmc,
        fabric=fabric,
        nodes=nodes,
        fixed=fixed,
        ibsim=ib and any(n.sim_host for n in nodes),
        ibsim_port=lab.ibsim_port,
        bmc_port=lab.bmc_port,
        notifier_port=lab.bmc_port + 1,
        datacenter=lab.datacenter,
        switch=switch,
    )


#: The lab node's management interface (``fabric.lab.node.create_node`` names it eth0).
MGMT_NETDEV = "eth0"


def _switch_plan(spec: ClusterSpec, prefix: str) -> SwitchPlan | None:
    """The lab switch of a RoCE ``spec``: its one managed ``linux`` switch, or None (the
    fabric is then a podman bridge). Raise ``LabPlanError`` for a switch the lab cannot build."""
    managed = [(i, s) for i, s in enumerate(spec.fabric.switches) if s.manage]
    if not managed:
        return None
    path = f"fabric.switches[{managed[0][0]}]"
    if len(managed) > 1:
        raise LabPlanError(
            f"fabric.switches: the lab builds one switch, {len(managed)} are managed; "
            "keep one with manage: true"
        )
    index, switch = managed[0]
    if switch.os != "linux":
        raise LabPlanError(f"{path}.os: the lab builds Linux switches only; set os: linux")
    if switch.ssh_user != "root":
        raise LabPlanError(f"{path}.ssh_user: the lab switch logs in as root; set ssh_user: root")
    if switch.name in spec.hosts:
        raise LabPlanError(f"{path}.name: {switch.name!r} is also a node; rename the switch")
    ports: list[PortPlan] = []
    for pindex, port in enumerate(switch.ports):
        ppath = f"{path}.ports[{pindex}]"
        if port.host is None or port.host not in spec.hosts:
            raise LabPlanError(f"{ppath}.host: name the node on this port's other end")
        netdevs = [h.netdev for h in spec.hosts[port.host].hcas if h.link_layer == "Ethernet"]
        netdev = port.netdev or next((n for n in netdevs if n), None)
        if netdev is None:
            raise LabPlanError(
                f"{ppath}.netdev: {port.host} declares no RoCE netdev; set the HCA's netdev "
                "(e.g. fab0) or the port's"
            )
        if netdev == MGMT_NETDEV:
            raise LabPlanError(
                f"{ppath}.netdev: {MGMT_NETDEV} is a lab node's management interface; name the "
                "fabric netdev otherwise, e.g. fab0"
            )
        if any(p.host == port.host for p in ports):
            raise LabPlanError(f"{ppath}.host: {port.host} already has a port; one per node")
        ports.append(PortPlan(port=port.name, host=port.host, netdev=netdev))
    unwired = [
        h for h, g in spec.hosts.items()
        if any(c.link_layer == "Ethernet" for c in g.hcas) and h not in {p.host for p in ports}
    ]  # fmt: skip
    if unwired:
        raise LabPlanError(
            f"{path}.ports: RoCE node(s) {unwired} have no port on {switch.name}; add one each"
        )
    return SwitchPlan(
        name=switch.name,
        container=f"{prefix}-{switch.name}",
        address=switch.address,
        ports=ports,
    )
