"""The ``storage:`` block's rules: mount points, servers, scratch devices, sizes (issue 40).

Which kinds a target offers is each target's own rule (its ``rules.py`` calls
:func:`check_storage_kinds`); the rules here hold on every target. Sizes follow the
providers' minimums, as the anchors check them: Filestore's tiers (Cluster Toolkit's
``modules/file-system/filestore/README.md``: Basic HDD 1 TiB, Basic SSD 2.5 TiB, High Scale
10 TiB) and FSx for Lustre's capacities (ParallelCluster's
``cli/src/pcluster/validators/fsx_validators.py``, ``FsxStorageCapacityValidator``:
1200 GiB, 2400 GiB, then steps of 2400, or 3600 for SCRATCH_1).
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection

from fabric.spec.checker import Checker, Rule

__all__ = ["STORAGE_RULES", "check_storage", "check_storage_kinds", "min_size_gib"]

#: Mount points that would hide the system: exact paths refused.
RESERVED_MOUNTS = frozenset(
    {"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/opt", "/proc", "/root"}
    | {"/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/local", "/var"}
)
#: Trees no mount point may sit inside.
RESERVED_TREES = ("/proc/", "/sys/", "/dev/", "/run/", "/boot/", "/etc/", "/usr/")
#: Kinds the target creates (``server`` comes from the created resource).
CREATED_KINDS = frozenset({"efs", "fsx_lustre", "filestore", "managed_lustre"})
#: Filestore's smallest capacity per tier, GiB; tiers not listed start at 1024.
FILESTORE_MIN_GIB = {"BASIC_HDD": 1024, "BASIC_SSD": 2560, "HIGH_SCALE_SSD": 10240}


def min_size_gib(kind: str, tier: str | None) -> int | None:
    """The provider's smallest capacity of ``kind`` at ``tier``; None where it has none."""
    if kind == "filestore":
        return FILESTORE_MIN_GIB.get(tier or "BASIC_HDD", 1024)
    if kind == "fsx_lustre":
        return 1200
    return None


def _fsx_size_problem(size: int, tier: str | None) -> str | None:
    """Why ``size`` is no FSx for Lustre capacity at ``tier`` (None when it is one)."""
    step = 3600 if tier == "SCRATCH_1" else 2400
    if size in (1200, 2400) or size % step == 0:
        return None
    return f"{size}: FSx for Lustre takes 1200, 2400 or a multiple of {step} GiB; e.g. {step}"


def _reserved(mount: str) -> bool:
    return mount in RESERVED_MOUNTS or mount.startswith(RESERVED_TREES)


def check_storage(c: Checker) -> None:
    """Mount points unique and off the system's paths; ``nfs`` names its server, created kinds
    do not; sizes within the provider's; scratch devices under ``/dev``."""
    storage = c.spec.storage
    if storage is None:
        return
    seen: dict[str, str] = {}
    mounts = [(f"storage.shared[{i}].mount", fs.mount) for i, fs in enumerate(storage.shared)]
    if storage.scratch is not None:
        mounts.append(("storage.scratch.mount", storage.scratch.mount))
    for path, raw in mounts:
        mount = posixpath.normpath(raw)
        if _reserved(mount):
            c.add(
                path, f"{raw!r} would hide the system's own files; mount at e.g. /home or /shared"
            )
        elif mount in seen:
            c.add(path, f"{raw!r} is already the mount point of {seen[mount]}; pick another")
        seen.setdefault(mount, path)
    names: dict[str, int] = {}
    for index, fs in enumerate(storage.shared):
        path = f"storage.shared[{index}]"
        if fs.name in names:
            c.add(
                f"{path}.name", f"{fs.name!r} is also storage.shared[{names[fs.name]}]; rename one"
            )
        names.setdefault(fs.name, index)
        _check_shared(c, path, fs.kind, fs.server, fs.size_gib, fs.tier)
    scratch = storage.scratch
    if scratch is not None and isinstance(scratch.devices, list):
        if not scratch.devices:
            c.add("storage.scratch.devices", "lists no device; name some or write devices: nvme")
        for index, device in enumerate(scratch.devices):
            if not device.startswith("/dev/") or posixpath.normpath(device) != device:
                c.add(
                    f"storage.scratch.devices[{index}]",
                    f"{device!r} is not a device path; write e.g. /dev/nvme1n1",
                )
        for device in {d for d in scratch.devices if scratch.devices.count(d) > 1}:
            c.add("storage.scratch.devices", f"{device!r} is listed twice; list each device once")


def _check_shared(
    c: Checker, path: str, kind: str, server: str | None, size: int | None, tier: str | None
) -> None:
    """One shared file system's server, size and tier against its kind."""
    if kind == "nfs":
        if server is None:
            c.add(f"{path}.server", "kind nfs mounts an existing server: set server: HOST")
        for name, value in (("size_gib", size), ("tier", tier)):
            if value is not None:
                c.add(f"{path}.{name}", "applies to file systems the target creates; remove it")
        return
    if server is not None:
        c.add(
            f"{path}.server",
            f"kind {kind} is created by the target, which sets its address; remove server",
        )
    if kind == "efs" and size is not None:
        c.add(f"{path}.size_gib", "EFS grows with its contents and takes no size; remove it")
    least = min_size_gib(kind, tier)
    if size is not None and least is not None and size < least:
        tier_name = f" tier {tier or 'BASIC_HDD'}" if kind == "filestore" else ""
        c.add(
            f"{path}.size_gib",
            f"{size}: {kind}{tier_name} needs at least {least} GiB; set size_gib: {least}",
        )
    elif size is not None and kind == "fsx_lustre":
        problem = _fsx_size_problem(size, tier)
        if problem:
            c.add(f"{path}.size_gib", problem)


def check_storage_kinds(c: Checker, target: str, offered: Collection[str]) -> None:
    """For a target's own rules: every shared file system is of a kind ``target`` offers."""
    storage = c.spec.storage
    if storage is None or c.spec.target != target or not c.known("target"):
        return
    for index, fs in enumerate(storage.shared):
        if fs.kind not in offered:
            c.add(
                f"storage.shared[{index}].kind",
                f"{fs.kind}: target {target} offers {', '.join(sorted(offered))}; "
                "mount an existing server with kind: nfs",
            )


#: The storage rules, in the order their problems are reported.
STORAGE_RULES: tuple[Rule, ...] = (check_storage,)
