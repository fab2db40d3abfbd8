"""The AWS target's shared file systems and scratch layout (``storage:`` of the spec).

As AWS ParallelCluster's ``SharedStorage`` does it (cli/src/pcluster/templates/cluster_stack.py,
its EFS and FSx constructs): EFS is a file system with a mount target in the nodes' subnet and a
security group open to NFS (TCP 2049) from the VPC; FSx for Lustre is a file system in the
nodes' subnet in the cluster security group (Lustre's TCP 988 between members). Each one's
address goes to every node as the host var ``storage_shared`` (a list of ``{name, kind, server,
export, mount, options}``), which the ``storage`` role mounts. The instance store (p5: 8 x 3840
GB NVMe) is the scratch: ``storage_scratch_layout`` says what each node carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from fabric.spec.storage import SharedFileSystem, StorageSpec
from fabric.targets.aws.catalog import aws_instance

__all__ = ["SharedStorage", "SharedStorageArgs", "mount_options", "scratch_layout"]

#: Mount options per kind where the spec gives none: EFS's recommended NFS options (EFS User
#: Guide, "Mounting EFS file systems using NFS"), FSx for Lustre's (FSx User Guide, "Mounting
#: from Amazon EC2": relatime, flock); ``_netdev`` waits for the network at boot.
DEFAULT_OPTIONS: dict[str, str] = {
    "efs": "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,_netdev",
    "fsx_lustre": "relatime,flock,_netdev",
    "nfs": "_netdev",
}
#: The NFS port EFS mount targets listen on.
NFS_PORT = 2049
#: Per-unit throughput (MB/s/TiB) of the persistent FSx deployment types, the lowest each takes.
FSX_THROUGHPUT = {"PERSISTENT_1": 50, "PERSISTENT_2": 125}


def mount_options(fs: SharedFileSystem) -> str:
    """The spec's options, else the kind's default."""
    return fs.options or DEFAULT_OPTIONS.get(fs.kind, "_netdev")


def shared_entry(fs: SharedFileSystem, server: str, export: str) -> dict[str, str]:
    """One ``storage_shared`` entry: what the storage role mounts."""
    return {
        "name": fs.name,
        "kind": fs.kind,
        "server": server,
        "export": export,
        "mount": fs.mount,
        "options": mount_options(fs),
    }


def scratch_layout(storage: StorageSpec | None, instance_type: str) -> dict[str, Any] | None:
    """What scratch a node of ``instance_type`` gets: the spec's mount, devices and file system,
    and the catalog's instance store (count, size); None without ``storage.scratch``."""
    if storage is None or storage.scratch is None:
        return None
    known = aws_instance(instance_type)
    scratch = storage.scratch
    return {
        "mount": scratch.mount,
        "filesystem": scratch.filesystem,
        "devices": scratch.devices,
        "count": known.local_nvme if known else 0,
        "size_gb": known.local_nvme_gb if known else 0,
        "source": "instance store",
    }


@dataclass(frozen=True)
class SharedStorageArgs:
    """What the file systems need: the spec's entries, the nodes' subnet and security group,
    the VPC and (a new VPC) its CIDR, the cluster's tags."""

    shared: list[SharedFileSystem]
    vpc_id: pulumi.Input[str]
    vpc_cidr: str | None
    subnet_id: pulumi.Input[str]
    cluster_sg_id: pulumi.Input[str]
    tags: dict[str, str]


class SharedStorage(pulumi.ComponentResource):
    """EFS and FSx for Lustre for ``storage.shared``; ``entries`` is ``storage_shared``."""

    entries: pulumi.Output[list[dict[str, str]]]

    def __init__(
        self, name: str, args: SharedStorageArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("railyard:aws:SharedStorage", name, None, opts)
        self._name, self._args = name, args
        self._child = pulumi.ResourceOptions(parent=self)
        self._nfs_sg: aws.ec2.SecurityGroup | None = None
        made: list[pulumi.Output[dict[str, str]]] = []
        for fs in args.shared:
            if fs.kind == "efs":
                made.append(self._efs(fs))
            elif fs.kind == "fsx_lustre":
                made.append(self._fsx(fs))
            else:  # nfs: a server that exists (the spec's rules refuse other clouds' kinds)
                made.append(pulumi.Output.from_input(shared_entry(fs, fs.server or "", fs.export)))
        self.entries = pulumi.Output.all(*made).apply(list)
        self.register_outputs({"entries": self.entries})

    def _nfs_security_group(self) -> aws.ec2.SecurityGroup:
        """One security group for the EFS mount targets: NFS from the VPC (a new VPC's CIDR;
        an existing VPC: from the cluster's members)."""
        if self._nfs_sg is None:
            a = self._args
            sg = aws.ec2.SecurityGroup(
                f"{self._name}-nfs-sg",
                vpc_id=a.vpc_id,
                description="railyard: NFS (EFS) from the cluster",
                tags=a.tags,
                opts=self._child,
            )
            source: dict[str, Any] = (
                {"cidr_ipv4": a.vpc_cidr}
                if a.vpc_cidr
                else {"referenced_security_group_id": a.cluster_sg_id}
            )
            aws.vpc.SecurityGroupIngressRule(
                f"{self._name}-nfs-in",
                security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=NFS_PORT,
                to_port=NFS_PORT,
                description="NFS to EFS from the VPC",
                opts=self._child,
                **source,
            )
            self._nfs_sg = sg
        return self._nfs_sg

    def _efs(self, fs: SharedFileSystem) -> pulumi.Output[dict[str, str]]:
        """An encrypted EFS and its mount target in the nodes' subnet."""
        a = self._args
        efs = aws.efs.FileSystem(
            f"{self._name}-efs-{fs.name}",
            encrypted=True,
            performance_mode="maxIO" if fs.tier == "MAX_IO" else "generalPurpose",
            tags={**a.tags, "Name": f"{self._name}-{fs.name}"},
            opts=self._child,
        )
        target = aws.efs.MountTarget(
            f"{self._name}-efs-{fs.name}-mt",
            file_system_id=efs.id,
            subnet_id=a.subnet_id,
            security_groups=[self._nfs_security_group().id],
            opts=self._child,
        )
        # the DNS name resolves once the mount target exists
        return pulumi.Output.all(efs.dns_name, target.id).apply(
            lambda v, fs=fs: shared_entry(fs, v[0], fs.export)
        )

    def _fsx(self, fs: SharedFileSystem) -> pulumi.Output[dict[str, str]]:
        """An FSx for Lustre file system in the nodes' subnet and the cluster security group."""
        a = self._args
        tier = fs.tier or "SCRATCH_2"
        lustre = aws.fsx.LustreFileSystem(
            f"{self._name}-fsx-{fs.name}",
            storage_capacity=fs.size_gib,
            subnet_ids=a.subnet_id,
            security_group_ids=[a.cluster_sg_id],
            deployment_type=tier,
            per_unit_storage_throughput=FSX_THROUGHPUT.get(tier),
            tags={**a.tags, "Name": f"{self._name}-{fs.name}"},
            opts=self._child,
        )
        return pulumi.Output.all(lustre.dns_name, lustre.mount_name).apply(
            lambda v, fs=fs: shared_entry(fs, v[0], f"/{v[1]}")
        )
