"""The target rules: what each target (lab, baremetal, existing, aws, gcp) needs of a spec.

These run with the general rules (fabric.spec.rules) in ClusterSpec's validator, so
``python -m fabric validate`` refuses what ``pulumi up`` would refuse: cloud machine
types and placement, head nodes, bare-metal BMC endpoints and fixed addresses. The
components run them again (fabric.spec.rules.provision_problems) before creating
anything. Stack config that is not part of the spec (the bare-metal boot targets) is
checked by :func:`baremetal_settings_problems`, which the bare-metal component calls; the
import's placeholder SSH addresses, which ``validate`` accepts, by
:func:`existing_placeholder_problems`, which the existing component calls.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from fabric.catalog import aws_efa_types, aws_instance, gcp_gpu_machine_types, gcp_machine
from fabric.spec.checker import Checker, Rule
from fabric.spec.constants import (
    AWS_REGION_PATTERN,
    BOOT_TARGETS,
    GCP_REGION_PATTERN,
    IBSIM_PORT_SPAN,
)
from fabric.spec.problems import Problem

if TYPE_CHECKING:
    from fabric.spec.models import ClusterSpec

__all__ = [
    "TARGET_RULES",
    "BootSettings",
    "baremetal_settings_problems",
    "check_aws",
    "check_access",
    "check_aws_ids",
    "check_aws_instance_types",
    "check_baremetal",
    "cert_authorities",
    "check_existing",
    "existing_placeholder_problems",
    "known_hosts_keys",
    "ssh_target",
    "check_gcp",
    "check_gcp_names",
    "check_egress",
    "check_lab",
    "stack_config_problems",
]

#: Where a node group's role is read.
_ROLES = "nodes[*].role"
#: A Compute Engine resource name (RFC 1035 label: lowercase, at most 63 characters).
_GCP_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
#: The longest suffix railyard appends to ``gcp.network_prefix`` (``-gpu-15-subnet``).
_GCP_SUFFIX = len("-gpu-15-subnet")
#: A bastion host: a DNS name or an IPv4 address, nothing ssh would read as options.
_BASTION_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")


# --- access --------------------------------------------------------------------------------


def check_access(c: Checker) -> None:
    """A bastion is a plain host name or address; when it names a node of the spec, that node
    is not a compute node and has an address the controller can reach."""
    bastion = c.spec.access.bastion
    if bastion is None:
        return
    if not _BASTION_HOST.match(bastion.host):
        c.add(
            "access.bastion.host",
            f"{bastion.host!r} is not a host name or address; write e.g. bastion.example.org"
            " (the user goes in access.bastion.user, the port in access.bastion.port)",
        )
        return
    if not re.match(r"^[a-z_][a-z0-9_.-]*$", bastion.user):
        c.add("access.bastion.user", f"{bastion.user!r} is not a login name, e.g. ec2-user")
    group = c.spec.hosts.get(bastion.host) if c.all_hosts_known else None
    if group is None or not c.known("target"):
        return
    if group.role == "compute":
        c.add(
            "access.bastion.host",
            f"{bastion.host} is a compute node; name a login or controller node, or an address",
            reads=[_ROLES],
        )
    aws = c.spec.aws
    if c.spec.target == "aws" and aws is not None and aws.vpc_id:
        c.add(
            "access.bastion.host",
            f"{bastion.host} gets no public address in an existing VPC (aws.vpc_id); name a"
            " bastion address the controller reaches",
            reads=["aws.vpc_id"],
        )


# --- lab -----------------------------------------------------------------------------------


def check_lab(c: Checker) -> None:
    """The lab's Redfish emulator and ibsim listen on different ports; lab nodes log in as
    root."""
    if c.spec.target == "lab" and c.spec.management.ssh_user != "root":
        c.add(
            "management.ssh_user",
            f"{c.spec.management.ssh_user!r}: lab nodes log in as root; set ssh_user: root",
            reads=["target"],
        )
    lab = c.spec.lab
    if lab is not None and lab.datacenter and c.spec.target != "lab":
        c.add(
            "lab.datacenter",
            f"only a target lab stack provides the datacenter (this is target "
            f"{c.spec.target}); drop it here",
            reads=["target"],
        )
    if lab is not None and lab.hca_guids and c.spec.target != "lab":
        c.add(
            "lab.hca_guids",
            f"only a target lab stack simulates HCAs (this is target {c.spec.target}); "
            "drop it here",
            reads=["target"],
        )
    for host in lab.hca_guids if lab is not None else {}:
        group = c.spec.hosts.get(host)
        if group is None or not any(h.link_layer == "InfiniBand" for h in group.hcas):
            c.add(
                f"lab.hca_guids.{host}",
                f"{host!r} is not a node with an InfiniBand HCA; name one of the spec's nodes "
                "that has one",
                reads=["nodes"],
            )
    if lab is not None:
        ibsim_ports = range(lab.ibsim_port, lab.ibsim_port + IBSIM_PORT_SPAN)
        clash = [p for p in (lab.bmc_port, lab.bmc_port + 1) if p in ibsim_ports]
        if clash:
            c.add(
                "lab.ibsim_port",
                f"ibsim binds {ibsim_ports.start}-{ibsim_ports.stop - 1} (control + one per "
                f"client slot), which holds {clash[0]}, lab.bmc_port"
                f"{'' if clash[0] == lab.bmc_port else ' + 1 (the power notifier)'}; "
                f"move one so the ranges do not meet",
                reads=["lab.bmc_port"],
            )


# --- bare metal ----------------------------------------------------------------------------

#: More hosts than this missing a per-host value are one problem for the section, not one each.
MISSING_ONE_BY_ONE = 3


def missing_per_host(c: Checker, section: str, hosts: list[str], why: str, entry: str) -> None:
    """Report ``hosts`` lacking their entry in the mapping ``section``: one problem per host,
    or, when more than MISSING_ONE_BY_ONE lack it (a whole section's worth), one problem that
    names them as a host list and shows how to fill it (``entry``: one entry, ``{host}``)."""
    if len(hosts) <= MISSING_ONE_BY_ONE:
        for host in hosts:
            c.add(f"{section}.{host}", why)
        return
    from fabric.hostlist import compress

    first = entry.replace("{host}", hosts[0])
    c.add(
        section,
        f"{len(hosts)} nodes have no entry ({compress(hosts)}): {why}; add one per node, e.g. "
        f"{section.split('.')[-1]}: {{{first}, ...}}",
    )


def check_baremetal(c: Checker) -> None:
    """Every bare-metal node has a Redfish endpoint and a fixed address; the BMC password is a
    Pulumi secret, sent over https unless verify_tls is off; managed switches have addresses."""
    spec = c.spec
    if spec.target != "baremetal" or not c.known("target"):
        return
    bmc = spec.bmc
    if bmc is None:
        c.add("bmc", "target baremetal needs a bmc block with endpoints")
    else:
        if bmc.password is None:
            c.add(
                "bmc.password",
                "set {config: bmcPassword} and `pulumi config set --secret bmcPassword ...`",
            )
        missing_per_host(
            c,
            "bmc.endpoints",
            [host for host in c.hosts if host not in bmc.endpoints],
            "every node needs a Redfish endpoint url",
            "{host}: {url: https://BMC-ADDRESS/redfish/v1/Systems/1}",
        )
    missing_per_host(
        c,
        "management.addresses",
        [host for host in c.hosts if host not in spec.management.addresses],
        "every bare-metal node needs a fixed address",
        "{host}: 10.10.0.11",
    )
    if bmc is not None:
        for host, endpoint in bmc.endpoints.items():
            if endpoint.boot_once is not None and endpoint.boot_once not in BOOT_TARGETS:
                c.add(
                    f"bmc.endpoints.{host}.boot_once",
                    f"{endpoint.boot_once!r}; use one of {', '.join(BOOT_TARGETS)}, or drop it",
                )
            for index, line in enumerate(endpoint.host_keys):
                parts = line.split()
                if len(parts) < 2 or not parts[0].startswith(("ssh-", "ecdsa-sha2-")):
                    c.add(
                        f"bmc.endpoints.{host}.host_keys[{index}]",
                        f"{line[:40]!r} is not a host key; write 'ssh-ed25519 AAAA...' as in "
                        "the node's /etc/ssh/ssh_host_ed25519_key.pub",
                    )
            if endpoint.url.startswith("http://") and bmc.verify_tls:
                c.add(
                    f"bmc.endpoints.{host}.url",
                    "plain http sends the BMC password unencrypted; use https://, or set "
                    "bmc.verify_tls: false to accept it knowingly (lab BMCs)",
                    reads=["bmc.verify_tls"],
                )
    for index, switch in enumerate(spec.fabric.switches):
        if switch.os != "unmanaged" and not switch.address:
            c.add(
                f"fabric.switches[{index}].address",
                f"{switch.os} switch {switch.name!r} needs a management address",
                reads=[f"fabric.switches[{index}].os", f"fabric.switches[{index}].name"],
            )


class BootSettings(Protocol):
    """The bare-metal provisioning settings read from stack config, not from the spec
    (fabric.components.baremetal.BareMetalSettings)."""

    @property
    def boot_target(self) -> str | None: ...

    @property
    def settle_target(self) -> str: ...


def baremetal_settings_problems(settings: BootSettings) -> list[Problem]:
    """Problems of the bare-metal stack config: boot targets Redfish does not know (an unset
    ``bootTarget`` asks for no one-time boot)."""
    values = (("bootTarget", settings.boot_target), ("settleBootTarget", settings.settle_target))
    return [
        _boot_target_problem(key, value)
        for key, value in values
        if value is not None and value not in BOOT_TARGETS
    ]


def _boot_target_problem(key: str, value: Any) -> Problem:
    return Problem(f"config railyard:{key}", f"{value!r}; use one of {', '.join(BOOT_TARGETS)}")


# --- existing ------------------------------------------------------------------------------

#: ``[user@]address[:port]``: how target existing reaches a node (existing.ssh).
_SSH_TARGET = re.compile(
    r"^(?:(?P<user>[a-z_][a-z0-9_.-]*)@)?(?P<address>[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)"
    r"(?::(?P<port>[0-9]{1,5}))?$"
)
#: What ``python -m fabric import`` writes where it cannot know a node's SSH address.
SSH_PLACEHOLDER = "PLACEHOLDER"
#: A known_hosts key line: host patterns, key type, base64 blob, optional comment.
_KNOWN_HOSTS_LINE = re.compile(
    r"^(?P<names>[^@\s]\S*)\s+(?P<kind>ssh-[a-z0-9-]+|ecdsa-sha2-nistp[0-9]+|sk-\S+)\s+"
    r"(?P<blob>[A-Za-z0-9+/]+={0,2})(\s.*)?$"
)


def ssh_target(value: str, default_user: str) -> tuple[str, str, int] | None:
    """``[user@]address[:port]`` -> (user, address, port); None when it is not that."""
    match = _SSH_TARGET.match(value)
    port = int(match.group("port") or 22) if match else 0
    if match is None or not 1 <= port <= 65535:
        return None
    return match.group("user") or default_user, match.group("address"), port


def _name_matches(pattern: str, name: str) -> bool:
    """Whether a known_hosts host pattern (``*``/``?`` wildcards, ``|1|`` hashed) names
    ``name``."""
    import fnmatch
    import hashlib
    import hmac
    from base64 import b64decode, b64encode

    if pattern.startswith("|1|"):
        try:
            salt, digest = pattern[3:].split("|", 1)
            mac = hmac.new(b64decode(salt), name.encode(), hashlib.sha1).digest()
        except ValueError:
            return False
        return b64encode(mac).decode() == digest
    return fnmatch.fnmatchcase(name, pattern)


def known_hosts_keys(lines: list[str], names: list[str]) -> list[str]:
    """The keys (``type base64``) of the known_hosts ``lines`` naming any of ``names`` (a
    node's ``address`` or ``[address]:port``, and its name); a ``!pattern`` excludes."""
    keys: list[str] = []
    for line in lines:
        match = _KNOWN_HOSTS_LINE.match(line.strip())
        if match is None:
            continue
        patterns = match.group("names").split(",")
        negated = [p[1:] for p in patterns if p.startswith("!")]
        if any(_name_matches(p, n) for p in negated for n in names):
            continue
        if any(_name_matches(p, n) for p in patterns if not p.startswith("!") for n in names):
            key = f"{match.group('kind')} {match.group('blob')}"
            if key not in keys:
                keys.append(key)
    return keys


def cert_authorities(lines: list[str], names: list[str]) -> list[str]:
    """The ``@cert-authority`` lines (an SSH CA that signs host certificates) naming any of
    ``names``, as written."""
    out = []
    for line in lines:
        parts = line.split(None, 1)
        if (
            len(parts) == 2
            and parts[0] == "@cert-authority"
            and known_hosts_keys([parts[1]], names)
        ):
            out.append(line.strip())
    return out


def _known_name(address: str, port: int) -> str:
    return address if port == 22 else f"[{address}]:{port}"


def check_existing(c: Checker) -> None:
    """A running cluster: every node has an SSH target (``[user@]address[:port]``) of its own;
    known_hosts lines are key lines that name a node; no bastion, no fixed addresses."""
    spec = c.spec
    if not c.known("target"):
        return
    if spec.existing is not None and spec.target != "existing":
        c.add("existing", f"the existing block applies only to target existing; target is "
              f"{spec.target!r}")  # fmt: skip
        return
    if spec.target != "existing":
        return
    existing = spec.existing
    if existing is None:
        c.add(
            "existing",
            "target existing needs the existing block: existing: {ssh: {NODE: "
            "[user@]address[:port], ...}}",
        )
        return
    if spec.access.bastion is not None:
        c.add("access.bastion", "target existing reaches its nodes directly; remove the bastion")
    if spec.management.addresses:
        c.add(
            "management.addresses",
            "target existing reads each node's address from existing.ssh; move them there",
        )
    owners: dict[str, str] = {}
    targets: dict[str, list[str]] = {}
    for host, value in existing.ssh.items():
        path = f"existing.ssh.{host}"
        c.check_host(path, host)
        parsed = ssh_target(value, spec.management.ssh_user)
        if parsed is None:
            c.add(
                path,
                f"{value!r} is not [user@]address[:port]; write e.g. 10.0.0.11 or "
                "admin@gpu01.example.org:2222",
            )
            continue
        if value == SSH_PLACEHOLDER:
            continue
        where = _known_name(parsed[1], parsed[2])
        if where in owners:
            c.add(path, f"{where} is already the address of {owners[where]!r}")
        owners.setdefault(where, host)
        targets[host] = [where, host]
    if c.all_hosts_known:
        missing_per_host(
            c,
            "existing.ssh",
            [host for host in c.hosts if host not in existing.ssh],
            "every node needs its SSH address: [user@]address[:port], e.g. 10.0.0.11",
            "{host}: 10.0.0.11",
        )
    for index, line in enumerate(existing.known_hosts):
        path = f"existing.known_hosts[{index}]"
        marker, _, rest = (
            line.strip().partition(" ") if line.lstrip().startswith("@") else ("", "", line.strip())
        )
        if marker not in ("", "@cert-authority"):
            c.add(
                path,
                f"{marker!r} lines are not supported for target existing; give the nodes' keys"
                " (ssh-keyscan ADDRESS) or their CA (@cert-authority PATTERN KEY)",
            )
        elif _KNOWN_HOSTS_LINE.match(rest.strip()) is None:
            c.add(
                path,
                f"{line[:40]!r} is not a known_hosts line; write 'ADDRESS ssh-ed25519 AAAA...' "
                "as ssh-keyscan ADDRESS prints it, or '@cert-authority PATTERN KEY'",
            )
        elif targets and not any(known_hosts_keys([rest], n) for n in targets.values()):
            c.add(
                path,
                f"names none of the nodes ({', '.join(sorted(owners))}); write a node's "
                "address as existing.ssh has it, or its name",
                reads=["existing.ssh"],
            )


def existing_placeholder_problems(spec: ClusterSpec) -> list[Problem]:
    """Why ``pulumi up`` refuses an existing-target spec that still holds the import's
    ``PLACEHOLDER`` SSH addresses (``validate`` accepts them: the spec serves ``check --plan``
    and the topology commands as it is). One problem naming every such node."""
    from fabric.hostlist import compress
    from fabric.spec.sm import sm_placeholder_problems

    if spec.target != "existing" or spec.existing is None:
        return []
    held = [h for h, v in spec.existing.ssh.items() if v == SSH_PLACEHOLDER]
    if not held:
        return sm_placeholder_problems(spec)
    return [
        Problem(
            "existing.ssh",
            f"{compress(held)}: still PLACEHOLDER (written by python -m fabric import); set "
            "each node's [user@]address[:port] before pulumi up",
        ),
        *sm_placeholder_problems(spec),
    ]


# --- clouds --------------------------------------------------------------------------------


def check_aws(c: Checker) -> None:
    """EFA is on for the efa kind, GPUDirect RDMA runs over it, in a cluster placement group;
    a Capacity Block names its reservation, a given subnet its VPC; a head node exists."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws" or not c.known("target"):
        return
    if not AWS_REGION_PATTERN.match(aws.region):
        c.add("aws.region", f"{aws.region!r} is not an AWS region name; write e.g. us-east-2")
    elif aws.availability_zone is not None and not re.fullmatch(
        re.escape(aws.region) + "[a-z]", aws.availability_zone
    ):
        c.add(
            "aws.availability_zone",
            f"{aws.availability_zone!r} is not a zone of region {aws.region}; write the region"
            f" and a letter, e.g. {aws.region}a, or fix aws.region",
            reads=["aws.region"],
        )
    if c.spec.fabric.kind == "efa" and not aws.efa:
        c.add("aws.efa", "fabric kind efa needs aws.efa: true", reads=["fabric.kind"])
    efa = ["aws.efa"]
    if aws.gpudirect_rdma and not aws.efa:
        c.add(
            "aws.gpudirect_rdma",
            "GPUDirect RDMA runs over EFA; set aws.efa: true or gpudirect_rdma: false",
            reads=efa,
        )
    if aws.efa and aws.placement_strategy != "cluster":
        c.add(
            "aws.placement_strategy",
            f"{aws.placement_strategy!r}: EFA clusters need placement_strategy: cluster",
            reads=efa,
        )
    if aws.capacity_block and aws.placement_group is not None:
        c.add(
            "aws.placement_group",
            "a Capacity Block places its instances itself; a placement group on top leads to"
            " insufficient-capacity errors (ParallelCluster's PlacementGroupCapacityTypeValidator):"
            " drop placement_group",
            reads=["aws.capacity_block"],
        )
    if aws.efa and aws.placement_group is None and not aws.capacity_block:
        c.add(
            "aws.placement_group",
            "EFA clusters need a cluster placement group name, e.g. railyard-pg",
            reads=efa,
        )
    if aws.efa_installer_url and not aws.efa_installer_checksum:
        c.add(
            "aws.efa_installer_checksum",
            "required with aws.efa_installer_url: write sha256:<hex> of the tarball "
            "(sha256sum aws-efa-installer-*.tar.gz)",
            reads=["aws.efa_installer_url"],
        )
    if aws.capacity_block and not aws.capacity_reservation_id:
        c.add(
            "aws.capacity_reservation_id",
            "capacity_block: true launches into a purchased Capacity Block; set its id, "
            "e.g. cr-0123456789abcdef0",
            reads=["aws.capacity_block"],
        )
    if aws.subnet_id and not aws.vpc_id:
        c.add(
            "aws.vpc_id",
            "subnet_id is set: also set the vpc_id it belongs to",
            reads=["aws.subnet_id"],
        )
    if not any(group.role != "compute" for group in c.spec.nodes) and c.known(_ROLES):
        c.add(
            "nodes",
            "declare a head node, e.g. - {names: head1, role: login}; the compute "
            "nodes have no public address",
        )


#: EC2 resource ids: ``ami-`` and friends, then 8 or 17 hex digits.
_AWS_IDS = {
    "ami": ("ami", "ami-0123456789abcdef0"),
    "vpc_id": ("vpc", "vpc-0123456789abcdef0"),
    "subnet_id": ("subnet", "subnet-0123456789abcdef0"),
    "capacity_reservation_id": ("cr", "cr-0123456789abcdef0"),
}


def check_aws_ids(c: Checker) -> None:
    """The AMI, VPC, subnet and capacity reservation are EC2 ids (EC2 refuses anything else)."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws" or not c.known("target"):
        return
    for name, (prefix, example) in _AWS_IDS.items():
        value = getattr(aws, name)
        if value is not None and not re.fullmatch(
            rf"{prefix}-([0-9a-f]{{8}}|[0-9a-f]{{17}})", value
        ):
            c.add(f"aws.{name}", f"{value!r} is not an EC2 {prefix} id, e.g. {example}")


def check_aws_instance_types(c: Checker) -> None:
    """Compute nodes on AWS name a catalogued (EFA, with EFA on) type and its GPU count."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws" or not c.known("target"):
        return
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}]"
        if group.role != "compute" or not c.known(f"{path}.role"):
            continue
        if group.instance_type is None:
            c.add(
                f"{path}.instance_type",
                "target aws needs an instance type for compute nodes, e.g. p5.48xlarge",
            )
            continue
        known = aws_instance(group.instance_type)
        if known is None:
            if aws.efa:
                c.add(
                    f"{path}.instance_type",
                    f"{group.instance_type!r} is not a known EFA instance type; use one of"
                    f" {', '.join(aws_efa_types())}",
                    reads=["aws.efa"],
                )
            continue
        if aws.efa and not known.efa:
            c.add(
                f"{path}.instance_type",
                f"{known.name} has no EFA; use one of {', '.join(aws_efa_types())}",
                reads=["aws.efa"],
            )
        if group.gpus and group.gpus != known.gpus:
            c.add(
                f"{path}.gpus",
                f"{group.gpus} GPUs, but {known.name} has {known.gpus}",
                reads=[f"{path}.instance_type"],
            )
        _check_gpu_type(c, index, known.name, known.gpu_type)


def _check_gpu_type(c: Checker, index: int, machine: str, gpu_type: str | None) -> None:
    """nodes[index].gpu_type names the GPUs the catalog lists for its machine type."""
    group = c.spec.nodes[index]
    if group.gpu_type is None or (gpu_type or "").lower() == group.gpu_type.lower():
        return
    fix = f"set gpu_type: {gpu_type}" if gpu_type else "remove gpu_type"
    has = f"{gpu_type} GPUs" if gpu_type else "no GPUs"
    c.add(
        f"nodes[{index}].gpu_type",
        f"{group.gpu_type!r}, but {machine} has {has}; {fix}, or change instance_type",
        reads=[f"nodes[{index}].instance_type"],
    )


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
        _check_gpu_type(c, index, known.name, known.gpu_type)
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


def check_egress(c: Checker) -> None:
    """A cloud's egress is declared whole: a proxy URL with mode proxy only; with mode offline,
    an image contract that covers what the hand-off would download (fabric.spec.egress)."""
    from fabric.hostlist import compress
    from fabric.spec.egress import NEEDS, egress_of, offline_image_lacks

    egress = egress_of(c.spec) if c.known("target") else None
    if egress is None:
        return
    path = f"{c.spec.target}.egress"
    if egress.mode == "proxy" and egress.proxy is None:
        c.add(f"{path}.proxy", "egress mode proxy needs the proxy, e.g. http://proxy.example:3128")
    if egress.mode != "proxy" and (egress.proxy or egress.no_proxy):
        c.add(f"{path}.proxy", f"set only with mode: proxy (mode is {egress.mode}); drop it")
    if egress.mode != "offline" and egress.image_provides:
        c.add(
            f"{path}.image_provides",
            f"the offline contract applies to mode: offline only (mode is {egress.mode}); drop it",
        )
    unknown = [n for n in egress.image_provides if n not in NEEDS]
    if unknown:
        c.add(f"{path}.image_provides", f"{unknown[0]!r} is none of {', '.join(NEEDS)}")
        return
    if egress.mode != "offline" or not c.all_hosts_known:
        return
    for need, hosts in offline_image_lacks(c.spec).items():
        c.add(
            f"{path}.image_provides",
            f"the offline image lacks {need} ({NEEDS[need]}), needed on {compress(hosts)}: bake"
            f" it into the image and list {need}, or use mode nat or proxy",
            reads=["nodes", "slurm.controller"],
        )
    aws = c.spec.aws if c.spec.target == "aws" else None
    if aws is not None and aws.efa_installer_url:
        c.add(
            "aws.efa_installer_url",
            "egress mode offline reaches no installer URL; bake EFA into the AMI and drop it",
            reads=[f"{path}.mode"],
        )


def _is_secure(value: Any) -> bool:
    """Whether a stack config value is a Pulumi secret (``{secure: v1:...}``)."""
    return isinstance(value, Mapping) and set(value) == {"secure"}


def stack_config_problems(config: Mapping[str, Any], spec: ClusterSpec) -> list[Problem]:
    """Problems of a Pulumi stack's config around its spec: a secret the spec names stored
    in plain text, bare-metal boot targets Redfish does not know, the AWS provider's region (``aws:region``, which the instances use) and
    the GCP provider's project, region and zone that contradict the spec."""
    problems: list[Problem] = []
    wanted: list[tuple[str, str, Any]] = []
    if spec.target == "aws" and spec.aws is not None:
        if "aws:region" not in config:
            problems.append(
                Problem(
                    "config aws:region",
                    f"missing: the AWS provider needs it; set aws:region: {spec.aws.region}"
                    f" (pulumi config set aws:region {spec.aws.region})",
                )
            )
        wanted.append(("aws:region", "aws.region", spec.aws.region))
    if spec.target == "gcp" and spec.gcp is not None:
        gcp = spec.gcp
        wanted += [
            ("gcp:project", "gcp.project", gcp.project),
            ("gcp:region", "gcp.region", gcp.region),
            ("gcp:zone", "gcp.zone", gcp.zone),
        ]
    for field, ref in (
        ("bmc.password", spec.bmc.password if spec.bmc else None),
        ("slurm.munge_key", spec.slurm.munge_key),
    ):
        if ref is None:
            continue
        key = ref.config if ":" in ref.config else f"railyard:{ref.config}"
        if key in config and not _is_secure(config[key]):
            problems.append(
                Problem(
                    f"config {key}",
                    f"{field} names it, but it is stored in plain text in the stack file (value"
                    f" not shown); remove it and run `pulumi config set --secret {ref.config} ...`",
                )
            )
    if spec.target == "baremetal":
        for key in ("bootTarget", "settleBootTarget"):
            value = config.get(f"railyard:{key}")
            if value is not None and value not in BOOT_TARGETS:
                problems.append(_boot_target_problem(key, value))
    for key, field, value in wanted:
        if key in config and str(config[key]) != value:
            problems.append(
                Problem(
                    f"config {key}",
                    f"{str(config[key])!r} differs from {field} {value!r} in railyard:cluster;"
                    " set them equal",
                )
            )
    return problems


#: The target rules, in the order their problems are reported (after the general rules).
TARGET_RULES: tuple[Rule, ...] = (
    check_lab,
    check_baremetal,
    check_existing,
    check_access,
    check_aws,
    check_aws_ids,
    check_aws_instance_types,
    check_gcp,
    check_gcp_names,
    check_egress,
)
