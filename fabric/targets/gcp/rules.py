"""The GCP target's spec rules: region and zone (and the zones the catalog knows for the machine
type), one provisioning model, catalogued A3 machine types whose GPU NICs match the GPU
subnets, boot disk types the machines support, the file systems GCP offers, Compute Engine
names; and the stack config's ``gcp:project``, ``gcp:region``, ``gcp:zone``
(:func:`config_problems`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fabric.spec.checker import Checker, Rule
from fabric.spec.common import catalogued_compute, check_head_node, check_machine, differing
from fabric.spec.constants import GCP_REGION_PATTERN
from fabric.spec.networks import overlaps
from fabric.spec.problems import Problem
from fabric.spec.storage_rules import check_storage_kinds
from fabric.targets.gcp.catalog import (
    boot_disk_types,
    gcp_blueprint,
    gcp_gpu_machine_types,
    gcp_machine,
    gcp_regions,
    gcp_zones,
    head_series,
)

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
    else:
        _check_gcp_zone(c)
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


def _check_gcp_zone(c: Checker) -> None:
    """The region is one the catalog knows, and its zone offers every compute machine type."""
    gcp = c.spec.gcp
    assert gcp is not None
    if gcp.region not in gcp_regions():
        c.add(
            "gcp.region",
            f"{gcp.region!r} is not a region the catalog knows A3 machines in; use one of "
            f"{', '.join(gcp_regions())}, or add its zones to fabric/targets/gcp/catalog.py "
            "with their source",
        )
        return
    for index, group in enumerate(c.spec.nodes):
        zones = gcp_zones(group.instance_type or "") if group.role == "compute" else ()
        if zones and gcp.zone not in zones:
            c.add(
                "gcp.zone",
                f"{gcp.zone!r} does not offer {group.instance_type} (nodes[{index}]); known "
                f"zones: {', '.join(zones)}; pick one (and its region), or add the zone to "
                "fabric/targets/gcp/catalog.py with its source",
                reads=[f"nodes[{index}].instance_type", "gcp.region"],
            )
            return


def check_gcp_boot_disks(c: Checker) -> None:
    """Every node boots from a disk type its machine supports (Compute Engine's default,
    pd-standard, is not one of A3's); ``gcp.boot_disk_type`` overrides the compute nodes'."""
    gcp = c.spec.gcp
    if gcp is None or c.spec.target != "gcp" or not c.known("target"):
        return
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}]"
        if not group.instance_type or not c.known(f"{path}.role", f"{path}.instance_type"):
            continue
        supported = boot_disk_types(group.instance_type)
        if not supported and group.role != "compute":
            c.add(
                f"{path}.instance_type",
                f"{group.instance_type!r}: the catalog lists no boot disk type for its series; "
                f"use a machine of {', '.join(head_series())} (e.g. n2-standard-8), or add the "
                "series to fabric/targets/gcp/catalog.py with its source",
            )
        elif group.role == "compute" and gcp.boot_disk_type and supported:
            if gcp.boot_disk_type not in supported:
                c.add(
                    "gcp.boot_disk_type",
                    f"{gcp.boot_disk_type!r} is not a boot disk type {group.instance_type} "
                    f"supports ({path}); use one of {', '.join(supported)}, or drop it for "
                    f"the default {supported[0]}",
                    reads=[f"{path}.instance_type"],
                )


#: Filestore's tiers (https://cloud.google.com/filestore/docs/service-tiers); their smallest
#: capacities are the shared storage rules' (fabric.spec.storage_rules.min_size_gib).
FILESTORE_TIERS = ("BASIC_HDD", "BASIC_SSD", "HIGH_SCALE_SSD", "ZONAL", "REGIONAL", "ENTERPRISE")
#: Managed Lustre's throughput tiers (MB/s per TiB) and its smallest capacity in GiB
#: (pulumi_gcp.lustre.Instance: ``capacity_gib`` from 9000; Cluster Toolkit's managed-lustre
#: module: ``per_unit_storage_throughput`` 125, 250, 500 or 1000, default 500).
LUSTRE_TIERS = ("125", "250", "500", "1000")
LUSTRE_MIN_GIB = 9000
#: The shared file system kinds target gcp offers: Filestore, Managed Lustre, an NFS server.
OFFERED = ("filestore", "managed_lustre", "nfs")


def check_gcp_storage(c: Checker) -> None:
    """The shared file systems are ones GCP offers (not EFS or FSx for Lustre), at a tier and
    capacity the service takes, and their instance names fit (the shared storage rules check
    servers, mount points and Filestore's sizes)."""
    storage = c.spec.storage
    if c.spec.gcp is None or c.spec.target != "gcp" or storage is None:
        return
    check_storage_kinds(c, "gcp", OFFERED)
    for index, fs in enumerate(storage.shared):
        path = f"storage.shared[{index}]"
        if fs.kind == "filestore" and fs.tier is not None and fs.tier not in FILESTORE_TIERS:
            c.add(
                f"{path}.tier",
                f"{fs.tier!r} is not a Filestore tier; use one of {', '.join(FILESTORE_TIERS)}",
            )
        if fs.kind == "managed_lustre":
            if fs.tier is not None and fs.tier not in LUSTRE_TIERS:
                c.add(
                    f"{path}.tier",
                    f"{fs.tier!r} is not a Managed Lustre throughput (MB/s per TiB); use one of "
                    f"{', '.join(LUSTRE_TIERS)}",
                )
            if fs.size_gib is not None and fs.size_gib < LUSTRE_MIN_GIB:
                c.add(
                    f"{path}.size_gib",
                    f"{fs.size_gib} GiB is below Managed Lustre's {LUSTRE_MIN_GIB} GiB; set at "
                    f"least {LUSTRE_MIN_GIB}",
                )
        longest = 63 - len(c.spec.gcp.network_prefix) - 1
        if fs.kind in ("filestore", "managed_lustre") and len(fs.name) > longest:
            c.add(
                f"{path}.name",
                f"{fs.name!r} after gcp.network_prefix makes an instance name over 63 "
                f"characters; use at most {longest}",
                reads=["gcp.network_prefix"],
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
    """The GCP provider's project, region and zone equal the spec's; the boot disk type is
    the spec's (``gcp.boot_disk_type``, checked against the machine types), not the config's."""
    gcp = spec.gcp
    if gcp is None:
        return []
    moved = [
        Problem(
            "config railyard:bootDiskType",
            "the boot disk type is now gcp.boot_disk_type in railyard:cluster (checked against "
            "each machine type); move it there, or drop it for the catalog's default",
        )
        for key in ("railyard:bootDiskType",)
        if key in config
    ]
    return moved + differing(
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


RULES: tuple[Rule, ...] = (
    check_gcp,
    check_gcp_boot_disks,
    check_gcp_storage,
    check_gcp_names,
    check_gcp_networks,
)

#: Stack config keys the spec must agree with (``config_problems``), read by the program.
CONFIG_KEYS: tuple[str, ...] = ("gcp:project", "gcp:region", "gcp:zone", "railyard:bootDiskType")
