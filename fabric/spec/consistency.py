"""Consistency rules: values that must agree with another field, each problem naming the field
and the fix (bad input, round 3).

What each field must agree with (the rules here; the others live in rules.py, networks.py and
targets.py):

| field | must agree with | why |
| --- | --- | --- |
| ``fabric.roce.roce_tos`` (ECN bits, the low two) | ``fabric.roce.ecn`` | with ECN on, RDMA packets must be ECN-capable (01 or 10): at 00 (Not-ECT) a switch can never mark them and DCQCN never reacts; 11 (CE) says every packet met congestion |
| ``fabric.roce.roce_tos`` (DSCP, the high six) | ``fabric.roce.rdma_dscp`` | rules.check_roce |
| ``lab.hca_guids.NODE`` | every other node's GUID there | a GUID names one HCA: two nodes with one GUID make the subnet manager see one port |
| ``lab.hca_guids.NODE`` | not zero | GUID 0 is no HCA's: the subnet manager ignores it |
| ``fabric.roce.dcqcn.rp.rpg_hai_rate`` | ``rpg_ai_rate`` | hyper increase follows additive increase: smaller, recovery slows down as it goes |
| ``fabric.roce.dcqcn.rp.rate_to_set_on_first_cnp`` | ``rpg_min_rate`` | no QP goes below the floor rate |
| ``fabric.roce.cnp_dscp``, ``cnp_priority`` | ``rdma_dscp``, ``pfc_priority``, the lossless classes | rules.check_roce, check_roce_classes |
| ``fabric.roce.ecn_queues[]`` | ``min_bytes`` < ``max_bytes``; ECN on every lossless class | rules.check_roce_congestion |
| ``bmc.endpoints.NODE.url`` | ``bmc.subnet``; the other nodes' urls | networks.py |
| ``management.gateway``, ``management.addresses``, ``fabric.switches[].address`` | the subnet; each other (one address, one machine) | rules.check_management, networks.py |
| ``existing.ssh.NODE`` | the other nodes' addresses | targets.check_existing |
| ``fabric.infiniband.partitions[]`` | distinct names and keys | rules.check_partitions |
| ``slurm.partitions[]`` | distinct names, declared hosts, one default | rules.check_slurm_partitions |
| ``bmc.endpoints``, ``management.addresses`` (bare metal), ``existing.ssh`` | every node: one problem for the section when many lack it | targets.missing_per_host |
| ``fabric.cabling[].width``, ``speed`` | the rate of each host HCA it ends at (``nodes[].hcas[].rate_gbps``) | a cable rated below its HCA (400G NDR on HDR 4x, or NDR 1x) cannot carry the rate the port checks expect: lanes x per-lane rate (SDR 2.5 ... NDR 100, XDR 200) |
| ``nodes[].names`` | every other host, in any case | host names are case-insensitive (DNS, Slurm): ``GPU01`` and ``gpu01`` are one machine |
| ``management.subnet``, ``bmc.subnet``, ``lab.roce_subnet`` | the number of hosts | each host takes an address, besides the network, broadcast and gateway addresses |
| ``kubernetes.network_operator.secondary_networks[].ipam.range`` | the compute hosts | every compute node's pods need at least one address of the range, besides network, broadcast, gateway and excluded ones |
"""

from __future__ import annotations

import ipaddress

from fabric.spec.checker import HOST_NAMES, Checker, Rule
from fabric.spec.constants import IB_LANE_RATES, WIDTH_LANES
from fabric.targets import line_of

#: Per-lane rates of the cable speeds (FDR10 runs 10 Gb/s a lane), from the IB rate table.
_CABLE_LANE_RATES = {**IB_LANE_RATES, "FDR10": 10}

#: ECN codepoints (RFC 3168), the low two bits of the ToS byte.
_ECN_NAMES = {0: "00 (Not-ECT)", 1: "01 (ECT(1))", 2: "10 (ECT(0))", 3: "11 (CE)"}


def check_roce_tos_ecn(c: Checker) -> None:
    """With ``ecn: true`` the ToS's ECN bits must say ECN-capable (01 or 10)."""
    roce = c.spec.fabric.roce
    if roce is None or not roce.ecn:
        return
    bits = roce.roce_tos & 0b11
    if bits in (1, 2):
        return
    fixed = (roce.roce_tos & ~0b11) | 0b10
    what = (
        "switches can never mark its packets, so DCQCN never reacts"
        if bits == 0
        else "every packet is sent marked as having met congestion"
    )
    c.add(
        "fabric.roce.roce_tos",
        f"{roce.roce_tos} has ECN bits {_ECN_NAMES[bits]} while ecn is on: {what}; use "
        f"{fixed} (the same DSCP, ECT(0)), or set ecn: false",
        reads=["fabric.roce.ecn"],
    )


def check_hca_guids_unique(c: Checker) -> None:
    """Each node's HCA GUID (``lab.hca_guids``) is its own."""
    lab = c.spec.lab
    owners: dict[str, str] = {}
    for host, guid in (lab.hca_guids if lab is not None else {}).items():
        if host not in c.spec.hosts:
            continue  # not a node: the lab target rule (fabric/targets/lab/rules.py) names it
        if int(guid, 16) == 0:
            c.add(
                f"lab.hca_guids.{host}",
                "0x0000000000000000 is no HCA's GUID (the subnet manager ignores it); write the "
                "node GUID its HCA reports, or drop the entry",
            )
            continue
        if guid in owners:
            c.add(
                f"lab.hca_guids.{host}",
                f"{guid} is already the HCA GUID of {owners[guid]!r}: a GUID names one HCA, and "
                "the subnet manager would see one port; give each node its own GUID, or drop "
                "the entry (the default comes from the topology)",
            )
        owners.setdefault(guid, host)


def check_dcqcn_rates(c: Checker) -> None:
    """DCQCN's hyper increase is no smaller than its additive increase, and the rate set on the
    first CNP is not below the floor rate."""
    roce = c.spec.fabric.roce
    if roce is None:
        return
    rp = roce.dcqcn.rp
    base = "fabric.roce.dcqcn.rp"
    if rp.rpg_hai_rate < rp.rpg_ai_rate:
        c.add(
            f"{base}.rpg_hai_rate",
            f"{rp.rpg_hai_rate} Mb/s is below rpg_ai_rate {rp.rpg_ai_rate}: the hyper-increase "
            "stage would recover slower than the additive one; raise it to at least "
            f"{rp.rpg_ai_rate} (NVIDIA's defaults: 5 and 50)",
            reads=[f"{base}.rpg_ai_rate"],
        )
    if 0 < rp.rate_to_set_on_first_cnp < rp.rpg_min_rate:
        c.add(
            f"{base}.rate_to_set_on_first_cnp",
            f"{rp.rate_to_set_on_first_cnp} Mb/s is below rpg_min_rate {rp.rpg_min_rate}, the "
            f"floor no QP goes under; set it to {rp.rpg_min_rate} or more, or 0 (no change)",
            reads=[f"{base}.rpg_min_rate"],
        )


def _gbps(rate: float) -> str:
    return f"{rate:g} Gb/s"


def check_cable_rates(c: Checker) -> None:
    """A cable's width and speed carry the rate of each host HCA it ends at."""
    # Each group's HCAs by device (the last one listed wins), looked up through the host's
    # group: every host's (host, device) pairs were 131,072 entries at 16,384 hosts.
    rates = [
        {hca.device: (hca_index, hca.rate_gbps) for hca_index, hca in enumerate(group.hcas)}
        for group in c.spec.nodes
    ]
    for index, cable in enumerate(c.spec.fabric.cabling):
        carries = WIDTH_LANES[cable.width] * _CABLE_LANE_RATES[cable.speed]
        for side, end in (("a", cable.a), ("b", cable.b)):
            group = c.hosts.get(end.host or "")
            found = rates[group].get(end.hca or "") if group is not None else None
            if found is None or carries >= found[1]:
                continue
            hca_index, rate = found
            path = f"fabric.cabling[{index}]"
            c.add(
                f"{path}.speed",
                f"{cable.width} {cable.speed} carries {_gbps(carries)}, less than the "
                f"{_gbps(rate)} of {end.host} {end.hca} (nodes[{group}].hcas[{hca_index}]."
                f"rate_gbps) at its {side} end; declare the cable's real width and speed (4x NDR "
                "is 400 Gb/s), or the HCA's real rate",
                reads=[f"{path}.width", f"nodes[{group}].hcas[{hca_index}].rate_gbps", HOST_NAMES],
            )


def check_hosts_case(c: Checker) -> None:
    """Two host names that differ only in case are one machine (DNS and Slurm ignore case)."""
    seen: dict[str, str] = {}
    for host, index in c.hosts.items():
        other = seen.setdefault(host.lower(), host)
        if other != host:
            c.add(
                f"nodes[{index}].names",
                f"host {host!r} is {other!r} in another case: host names are case-insensitive "
                "(DNS, Slurm), so both name one machine; declare it once, in lowercase",
            )


def _usable(net: ipaddress.IPv4Network, taken: int = 1) -> int:
    """Host addresses of ``net`` beyond its network and broadcast addresses and ``taken`` more
    (the gateway); a /31 or /32 has none to spare."""
    return max(net.num_addresses - 2 - taken, 0)


def check_address_ranges(c: Checker) -> None:
    """Every subnet the nodes take addresses in holds them all; each IPAM range holds one
    address per compute host."""
    if not c.all_hosts_known or not c.hosts:
        return
    hosts = len(c.hosts)
    spec = c.spec
    nets = (  # the lab's management subnet has its own rule (rules.check_management)
        ("management.subnet", None if line_of(spec.target).one_machine else spec.management.subnet),
        ("bmc.subnet", spec.bmc.subnet if spec.bmc is not None else None),
        ("lab.roce_subnet", spec.lab.roce_subnet if spec.lab is not None else None),
    )
    for path, net in nets:
        usable = _usable(net) if net is not None else hosts
        if usable < hosts:
            addresses = f"{usable} host address{'' if usable == 1 else 'es'}"
            c.add(
                path,
                f"{net} has {addresses} (besides network, broadcast and gateway) for {hosts} "
                f"hosts; widen it (a /{_prefix_for(hosts)} holds them)",
                reads=[HOST_NAMES],
            )
    check_ipam_ranges(c)


def _prefix_for(count: int) -> int:
    """The longest prefix whose network holds ``count`` hosts beside 3 reserved addresses."""
    prefix = 30
    while prefix > 0 and (1 << (32 - prefix)) - 3 < count:
        prefix -= 1
    return prefix


def check_ipam_ranges(c: Checker) -> None:
    """Each secondary network's IPAM range gives every compute host at least one address."""
    k8s = c.spec.kubernetes
    operator = k8s.network_operator if k8s is not None else None
    compute = sum(1 for _, group in c.host_groups() if group.role == "compute")
    for index, network in enumerate(operator.secondary_networks if operator else []):
        ipam = network.ipam
        if ipam.type == "host-local":  # host-local: one node per range
            continue
        excluded = sum(net.num_addresses for net in ipam.exclude if net.subnet_of(ipam.range))
        usable = max(_usable(ipam.range, 1 if ipam.gateway else 0) - excluded, 0)
        if usable < compute:
            path = f"kubernetes.network_operator.secondary_networks[{index}].ipam.range"
            c.add(
                path,
                f"{ipam.range} leaves {usable} pod addresses (excluded ones and the gateway "
                f"aside) for {compute} compute hosts; widen it to give each host one or more",
                reads=[HOST_NAMES, f"{path[: -len('.range')]}.exclude"],
            )


CONSISTENCY_RULES: tuple[Rule, ...] = (
    check_roce_tos_ecn,
    check_hca_guids_unique,
    check_dcqcn_rates,
    check_cable_rates,
    check_hosts_case,
    check_address_ranges,
)
