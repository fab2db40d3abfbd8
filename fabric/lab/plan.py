"""The lab's layout, derived from the spec alone: names, networks, addresses, ports.

Pure and deterministic, so ``pulumi preview`` and the unit tests see exactly what
``pulumi up`` builds.
"""

from __future__ import annotations

import ipaddress

from pydantic import BaseModel

from fabric.spec import ClusterSpec, LabSpec
from fabric.topology.ibsim import sim_host

LAB_RANGE = ipaddress.ip_network("198.18.0.0/15")
DEFAULT_BMC_SUBNET = "198.18.1.0/24"
DEFAULT_FABRIC_SUBNET = "198.18.2.0/24"
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
    """One lab node."""

    name: str
    container: str
    address: str
    fabric_address: str | None = None
    sim_host: str | None = None


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
    ibsim: bool
    ibsim_port: int
    bmc_port: int
    notifier_port: int


def _net(field: str, name: str, subnet: str, gateway: str | None, mtu: int | None = None) -> NetPlan:
    net = ipaddress.ip_network(subnet)
    if not net.subnet_of(LAB_RANGE):  # type: ignore[arg-type]
        raise LabPlanError(f"{field}: {net} is outside the lab range {LAB_RANGE}; pick a subnet inside it")
    if net.num_addresses < 16:
        raise LabPlanError(f"{field}: {net} is too small; use a /28 or larger")
    gw = gateway or str(next(net.hosts()))
    return NetPlan(network=name, subnet=str(net), gateway=gw, mtu=mtu)


def _addresses(net: NetPlan, hosts: list[str], fixed: dict[str, str], field: str) -> dict[str, str]:
    subnet = ipaddress.ip_network(net.subnet)
    pool = [str(a) for a in list(subnet.hosts())[FIRST_HOST_OFFSET - 1 :] if str(a) != net.gateway]
    taken = set(fixed.values()) | {net.gateway}
    out: dict[str, str] = {}
    for host in hosts:
        if host in fixed:
            out[host] = fixed[host]
            continue
        while pool and pool[0] in taken:
            pool.pop(0)
        if not pool:
            raise LabPlanError(f"{field}: {subnet} has no free address left for {host}; use a larger subnet")
        out[host] = pool.pop(0)
    return out


def plan_lab(spec: ClusterSpec, stack: str, prefix: str, state_dir: str) -> LabPlan:
    """Return the lab layout of ``spec`` for ``stack``; raise ``LabPlanError`` on a spec it cannot build."""
    if spec.target != "lab":
        raise LabPlanError(f"target is {spec.target!r}; the lab builds only target: lab")
    if spec.management.ssh_user != "root":
        raise LabPlanError("management.ssh_user: lab nodes log in as root; set ssh_user: root")
    lab = spec.lab or LabSpec()
    mgmt = _net("management.subnet", f"{prefix}-mgmt", str(spec.management.subnet),
                str(spec.management.gateway) if spec.management.gateway else None)
    bmc_subnet = str(spec.bmc.subnet) if spec.bmc and spec.bmc.subnet else DEFAULT_BMC_SUBNET
    bmc = _net("bmc.subnet", f"{prefix}-bmc", bmc_subnet, None)
    fabric = None
    if spec.fabric.kind == "roce":
        fabric = _net("fabric (RoCE)", f"{prefix}-fabric", DEFAULT_FABRIC_SUBNET, None, spec.fabric.mtu)
    subnets = [ipaddress.ip_network(n.subnet) for n in (mgmt, bmc, fabric) if n]
    if any(a.overlaps(b) for i, a in enumerate(subnets) for b in subnets[i + 1 :]):
        raise LabPlanError(f"lab subnets overlap: {[str(s) for s in subnets]}; give each network its own subnet")
    hosts = list(spec.hosts)
    fixed = {h: str(a) for h, a in spec.management.addresses.items()}
    addresses = _addresses(mgmt, hosts, fixed, "management.addresses")
    fabric_addresses = _addresses(fabric, hosts, {}, "fabric (RoCE)") if fabric else {}
    ib = spec.fabric.kind == "infiniband"
    nodes = []
    for host, group in spec.hosts.items():
        ib_hcas = [h for h in group.hcas if h.link_layer == "InfiniBand"]
        nodes.append(
            NodePlan(
                name=host,
                container=f"{prefix}-{host}",
                address=addresses[host],
                fabric_address=fabric_addresses.get(host),
                sim_host=sim_host(host, ib_hcas[0].device) if ib and ib_hcas else None,
            )
        )
    return LabPlan(
        stack=stack, prefix=prefix, state_dir=state_dir, ssh_user=spec.management.ssh_user,
        mgmt=mgmt, bmc=bmc, fabric=fabric, nodes=nodes, ibsim=ib and any(n.sim_host for n in nodes),
        ibsim_port=lab.ibsim_port, bmc_port=lab.bmc_port, notifier_port=lab.bmc_port + 1,
    )
