"""The ``storage_scratch_plan`` filter: which block devices become scratch, from
``lsblk --json -o NAME,PATH,TYPE,FSTYPE,MOUNTPOINTS`` (util-linux 2.37 or later).

Pure: it reads the lsblk JSON and the spec's ``devices`` and returns the plan the role runs
(``devices``: the free devices to assemble; ``mounted``: the device already mounted at the
scratch mount point, when a run did it before; ``problems``: one line per listed device that
cannot be scratch). lsblk reads file systems from udev's database, which a container lacks:
``probed`` (path -> ``blkid -p -o export`` output of that device) adds what blkid finds on the
device itself. A device is free when it is a whole disk with no partition, no file system,
no holder (RAID member, LVM) and no mount; ``devices: nvme`` takes every free NVMe namespace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["FilterModule", "blkid_type", "scratch_plan"]


def _walk(devices: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for device in devices:
        yield device
        yield from _walk(device.get("children") or [])


def _mounts(device: Mapping[str, Any]) -> list[str]:
    points = device.get("mountpoints") or [device.get("mountpoint")]
    return [p for p in points if p]


def blkid_type(text: str) -> str | None:
    """The ``TYPE`` in ``blkid -p -o export`` output (None when blkid found nothing)."""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "TYPE" and value:
            return value
    return None


def _why_busy(device: Mapping[str, Any], probed: Mapping[str, str]) -> str | None:
    """Why ``device`` cannot be scratch; None when it is free."""
    if device.get("type") not in ("disk", "loop"):
        return f"is a {device.get('type')}, not a whole disk"
    fstype = device.get("fstype") or blkid_type(probed.get(device["path"], ""))
    if fstype:
        return f"holds a file system ({fstype})"
    if device.get("children"):
        kinds = sorted({str(c.get("type")) for c in device["children"]})
        return f"is in use ({', '.join(kinds)} on it)"
    if _mounts(device):
        return f"is mounted at {', '.join(_mounts(device))}"
    return None


def scratch_plan(
    lsblk: str | Mapping[str, Any],
    wanted: str | Sequence[str],
    mount: str,
    probed: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The scratch plan for ``wanted`` (``nvme`` or device paths) at ``mount``."""
    probed = probed or {}
    tree = json.loads(lsblk) if isinstance(lsblk, str) else lsblk
    top = tree.get("blockdevices") or []
    for device in _walk(top):
        if mount in _mounts(device):
            return {"mounted": device["path"], "devices": [], "problems": []}
    if wanted == "nvme":
        free = [
            d["path"]
            for d in top
            if d.get("type") == "disk"
            and d["name"].startswith("nvme")
            and _why_busy(d, probed) is None
        ]
        return {"mounted": None, "devices": free, "problems": []}
    by_path = {d["path"]: d for d in _walk(top)}
    devices: list[str] = []
    problems: list[str] = []
    for path in wanted:
        device = by_path.get(path)
        why = "does not exist" if device is None else _why_busy(device, probed)
        if why is None:
            devices.append(path)
        else:
            problems.append(
                f"storage_scratch.devices: {path} {why}; scratch takes empty disks only"
            )
    return {"mounted": None, "devices": devices, "problems": problems}


class FilterModule:
    """Ansible's entry point."""

    def filters(self) -> dict[str, Any]:
        return {"storage_scratch_plan": scratch_plan}
