"""The GCP target's spec rules: region and zone, one provisioning model, catalogued A3
machine types whose GPU NICs match the GPU subnets, Compute Engine names; and the stack
config's ``gcp:project``, ``gcp:region``, ``gcp:zone`` (:func:`config_problems`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fabric.spec.checker import Checker, Rule
from fabric.spec.common import ROLES_READ as _ROLES
from fabric.spec.common import check_gpu_type, differing
from fabric.spec.constants import GCP_REGION_PATTERN
from fabric.spec.problems import Problem
from fabric.targets.gcp.catalog import gcp_gpu_machine_types, gcp_machine

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
    subnets_reported = False
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}]"
        if group.role != "compute" or not c.known(f"{path}.role"):
            continue
        if group.instance_type is None:
            c.add(
                f"{path}.instance_type",
                "target gcp needs a machine type for compute nodes, e.g. a3-highgpu-8g",
            )
            continue
        known = gcp_machine(group.instance_type)
        if known is None:
            c.add(
                f"{path}.instance_type",
                f"{group.instance_type!r} is not a known GPU machine type; use one of"
                f" {', '.join(gcp_gpu_machine_types())}",
            )
            continue
        machine = [f"{path}.instance_type"]
        if group.gpus and group.gpus != known.gpus:
            c.add(
                f"{path}.gpus",
                f"{group.gpus} GPUs, but {known.name} has {known.gpus}",
                reads=machine,
            )
        check_gpu_type(c, index, known.name, known.gpu_type)
        subnets = len(gcp.gpu_subnet_cidrs)
        if subnets and subnets != known.gpu_nics and not subnets_reported:
            c.add(
                "gcp.gpu_subnet_cidrs",
                f"{subnets} subnets, but {known.name} has {known.gpu_nics} GPU NICs; list one each",
                reads=machine,
            )
            subnets_reported = True
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}]"
        if group.role != "compute" and not group.instance_type and c.known(f"{path}.role"):
            c.add(f"{path}.instance_type", "set a machine type, e.g. n2-standard-8")
    if not any(group.role != "compute" for group in c.spec.nodes) and c.known(_ROLES):
        c.add(
            "nodes",
            "declare a head node, e.g. - {names: head1, role: login, "
            "instance_type: n2-standard-8}; compute nodes have no external address",
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
RULES: tuple[Rule, ...] = (check_gcp, check_gcp_names)
