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
"""

from __future__ import annotations

from fabric.spec.checker import Checker, Rule

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


CONSISTENCY_RULES: tuple[Rule, ...] = (
    check_roce_tos_ecn,
    check_hca_guids_unique,
    check_dcqcn_rates,
)
