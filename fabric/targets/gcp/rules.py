"""The GCP target's spec rules: region and zone, one provisioning model, catalogued A3
machine types whose GPU NICs match the GPU subnets, Compute Engine names; and the stack
config's ``gcp:project``, ``gcp:region``, ``gcp:zone`` (:func:`config_problems`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fabric.spec.checker import Checker, Rule
from fabric.spec.common import catalogued_compute, check_head_node, check_machine, differing
from fabric.spec.constants import GCP_REGION_PATTERN
from fabric.spec.networks import overlaps
from fabric.spec.problems import Problem
from fabric.targets.gcp.catalog import gcp_blueprint, gcp_gpu_machine_types, gcp_machine

if TYPE_CHECKING:
    from fabric.spec.models import ClusterSpec

#: A Compute Engine resource name (RFC 1035 label: lowercase, at most 63 characters).
_GCP_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
#: The longest suffix railyard appends to ``gcp.network_prefix`` (``-gpu-15-subnet``).
_GCP_SUFFIX = len("-gpu-15-subnet")


def check_gcp(c: Checker) -> None:
    """Compute nodes use a known A3 machine type whose GPU NICs match the GPU subnets; head
    nodes name a machine type, and there is one; the zone is in the region."""
    gcp = c.spec.gcp
    if gcp is None or c.spec.target != "gcp" or not c.known("target"):
        return
    if not GCP_REGION_PATTERN.match(gcp.region):
        c.add("gcp.region", f"{gcp.region!r} is not a GCP region name; write e.g. us-central1")
    elif not re.fullmatch(re.escape(gcp.region) + "-[a-z]", gcp.zone):
        c.add(
            "gcp.zone",
            f"{gcp.zone!r} is not a zone of region {gcp.region}; write the region, a hyphen and"
            f" a letter, e.g. {gcp.region}-a, or fix gcp.region",
            reads=["gcp.region"],
        )
    _check_gcp_capacity(c)
    if gcp.gpu_nic_mtu != c.spec.fabric.mtu:
        c.add(
            "gcp.gpu_nic_mtu",
            f"{gcp.gpu_nic_mtu} differs from fabric.mtu {c.spec.fabric.mtu}; set them equal",
            reads=["fabric.mtu"],
        )
    subnets, subnets_reported = len(gcp.gpu_subnet_cidrs), False
    for index, known in catalogued_compute(
        c,
        gcp_machine,
        "target gcp needs a machine type for compute nodes, e.g. a3-highgpu-8g",
        f"is not a known GPU machine type; use one of {', '.join(gcp_gpu_machine_types())}",
    ):
        check_machine(c, index, known)
        if subnets and subnets != known.gpu_nics and not subnets_reported:
            c.add(
                "gcp.gpu_subnet_cidrs",
                f"{subnets} subnets, but {known.name} has {known.gpu_nics} GPU NICs; list one each",
                reads=[f"nodes[{index}].instance_type"],
            )
            subnets_reported = True
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}]"
        if group.role != "compute" and not group.instance_type and c.known(f"{path}.role"):
            c.add(f"{path}.instance_type", "set a machine type, e.g. n2-standard-8")
    check_head_node(
        c, "{names: head1, role: login, instance_type: n2-standard-8}", "external address"
    )


def _check_gcp_capacity(c: Checker) -> None:
    """One provisioning model, as Cluster Toolkit's A3 blueprints offer them (pick only one):
    a specific reservation by name; DWS flex-start with its run duration and no reservation;
    Spot."""
    gcp = c.spec.gcp
    assert gcp is not None
    mode = ["gcp.provisioning"]
    if gcp.provisioning == "reservation" and gcp.reservation is None:
        c.add(
            "gcp.reservation",
            "provisioning: reservation needs the reservation's name, e.g. a3-reservation",
            reads=mode,
        )
    if gcp.provisioning != "reservation" and gcp.reservation is not None:
        c.add(
            "gcp.reservation",
            f"provisioning is {gcp.provisioning}: {gcp.reservation!r} is not used; set "
            "provisioning: reservation or drop it (DWS flex-start cannot use reservations)",
            reads=mode,
        )
    if gcp.provisioning == "flex-start" and gcp.max_run_duration is None:
        c.add(
            "gcp.max_run_duration",
            "provisioning: flex-start needs the VMs' run time in seconds (600-604800), e.g. 604800",
            reads=mode,
        )
    if gcp.provisioning != "flex-start" and gcp.max_run_duration is not None:
        c.add(
            "gcp.max_run_duration",
            f"applies to provisioning: flex-start only (it is {gcp.provisioning}); drop it",
            reads=mode,
        )


def check_gcp_names(c: Checker) -> None:
    """Compute Engine names what railyard creates after the hosts (instances) and after
    gcp.network_prefix (networks, subnets, firewalls): lowercase RFC 1035 labels."""
    gcp = c.spec.gcp
    if gcp is None or c.spec.target != "gcp" or not c.known("target"):
        return
    longest = 63 - _GCP_SUFFIX
    if not _GCP_NAME.match(gcp.network_prefix) or len(gcp.network_prefix) > longest:
        c.add(
            "gcp.network_prefix",
            f"{gcp.network_prefix!r}: use lowercase letters, digits and hyphens, starting with"
            f" a letter, at most {longest} characters (railyard appends e.g. -gpu-0-subnet)",
        )
    for index, group in enumerate(c.spec.nodes):
        bad = [h for h in group.hosts if not _GCP_NAME.match(h)] if c.all_hosts_known else []
        if bad:
            c.add(
                f"nodes[{index}].names",
                f"{bad[0]!r} cannot name a Compute Engine instance; use lowercase letters,"
                " digits and hyphens, starting with a letter",
            )


def config_problems(config: Mapping[str, Any], spec: ClusterSpec) -> list[Problem]:
    """The GCP provider's project, region and zone equal the spec's."""
    gcp = spec.gcp
    if gcp is None:
        return []
    return differing(
        config,
        [
            ("gcp:project", "gcp.project", gcp.project),
            ("gcp:region", "gcp.region", gcp.region),
            ("gcp:zone", "gcp.zone", gcp.zone),
        ],
    )


#: The GCP rules, in the order their problems are reported.
def check_gcp_networks(c: Checker) -> None:
    """The GPU subnets, the system subnet (and A3 Ultra's second gVNIC network) are distinct;
    management is the system subnet (NIC 0, which carries SSH)."""
    spec, gcp = c.spec, c.spec.gcp
    if gcp is None or spec.target != "gcp":
        return
    networks = [("gcp.system_subnet_cidr", "gcp.system_subnet_cidr", gcp.system_subnet_cidr)]
    networks += [
        (f"gcp.gpu_subnet_cidrs[{i}]", f"gcp.gpu_subnet_cidrs[{i}]", net)
        for i, net in enumerate(gcp.gpu_subnet_cidrs)
    ]
    if _has_second_gvnic(spec):  # A3 Ultra's NIC 1 network
        label = "gcp.second_subnet_cidr"
        networks.insert(1, (label, label, gcp.second_subnet_cidr))
    overlaps(c, networks)
    if not spec.management.subnet.overlaps(gcp.system_subnet_cidr):
        c.add(
            "management.subnet",
            f"{spec.management.subnet} is apart from gcp.system_subnet_cidr"
            f" {gcp.system_subnet_cidr}; on GCP the management network is the system subnet"
            " (NIC 0, which carries SSH): set them equal",
            reads=["gcp.system_subnet_cidr"],
        )
    for index, net in enumerate(gcp.gpu_subnet_cidrs):
        if net.overlaps(spec.management.subnet):
            c.add(
                f"gcp.gpu_subnet_cidrs[{index}]",
                f"{net} overlaps management.subnet {spec.management.subnet}; the GPU NICs"
                " need subnets of their own",
                reads=["management.subnet"],
            )


def _has_second_gvnic(spec: ClusterSpec) -> bool:
    """Whether a compute group's A3 kind has a second gVNIC network (A3 Ultra)."""
    kinds = [gcp_blueprint(g.instance_type or "") for g in spec.nodes if g.role == "compute"]
    return any(k is not None and k.gvnic_networks > 1 for k in kinds)


RULES: tuple[Rule, ...] = (check_gcp, check_gcp_names, check_gcp_networks)

#: Stack config keys the spec must agree with (``config_problems``), read by the program.
CONFIG_KEYS: tuple[str, ...] = ("gcp:project", "gcp:region", "gcp:zone")
