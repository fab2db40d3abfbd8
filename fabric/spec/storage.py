"""The spec's ``storage:`` block: a shared file system mounted on every node, and the nodes'
local NVMe assembled as scratch (issue 40).

The anchors: AWS ParallelCluster's ``SharedStorage`` (EFS, FSx for Lustre) and its ephemeral
volumes (instance store as RAID 0 at ``/scratch``); GCP Cluster Toolkit's Filestore and
Managed Lustre modules and its local SSD RAID 0 (``local_ssd_filesystem``). ``kind`` names the
file system; the target creates the cloud ones (AWS: EFS, FSx for Lustre; GCP: Filestore,
Managed Lustre), and ``nfs`` mounts one that already exists (the lab's NFS server stands in for
EFS and Filestore). The ``storage`` role mounts them and assembles scratch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fabric.spec.blocks import Model

__all__ = ["SharedFileSystem", "ScratchSpec", "StorageSpec", "SharedKind"]

#: A shared file system's kind: ``nfs`` is one that exists (``server`` and ``export``); the
#: others are created by the target that offers them (AWS: efs, fsx_lustre; GCP: filestore,
#: managed_lustre).
SharedKind = Literal["nfs", "efs", "fsx_lustre", "filestore", "managed_lustre"]

_ABSOLUTE = r"^/[A-Za-z0-9._/-]{0,254}$"


class SharedFileSystem(Model):
    """A file system every node mounts at ``mount``."""

    name: str = Field(
        default="home",
        pattern=r"^[a-z][a-z0-9-]{0,30}$",
        description="a short name (the cloud resource's name suffix)",
    )
    kind: SharedKind = Field(description="nfs, efs, fsx_lustre, filestore or managed_lustre")
    mount: str = Field(default="/home", pattern=_ABSOLUTE, description="mount point on every node")
    server: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$",
        description="nfs: the server's host name or address (created kinds: set by the target)",
    )
    export: str = Field(default="/", pattern=_ABSOLUTE, description="nfs: the exported path")
    size_gib: int | None = Field(
        strict=True,
        default=None,
        ge=1,
        le=10_485_760,
        description="created kinds: capacity (Filestore at least 1024, FSx at least 1200)",
    )
    tier: str | None = Field(
        default=None,
        pattern=r"^[A-Z0-9_]{1,40}$",
        description="created kinds: the provider's tier, e.g. BASIC_SSD, ZONAL, SCRATCH_2",
    )
    options: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_=,.:-]{1,200}$",
        description="extra mount options (comma-separated)",
    )


class ScratchSpec(Model):
    """The nodes' local NVMe (AWS instance store, GCP local SSD) as one RAID 0 scratch volume."""

    mount: str = Field(default="/scratch", pattern=_ABSOLUTE, description="mount point")
    devices: Literal["nvme"] | list[str] = Field(
        default="nvme",
        description="nvme: every local NVMe namespace that holds no file system or partition "
        "(the instance store, local SSD); or the device paths, e.g. [/dev/nvme1n1]",
    )
    filesystem: Literal["xfs", "ext4"] = "xfs"


class StorageSpec(Model):
    """Shared file systems and local scratch."""

    shared: list[SharedFileSystem] = Field(
        default_factory=list, description="mounted on every node, in this order"
    )
    scratch: ScratchSpec | None = Field(default=None, description="local NVMe as RAID 0")
