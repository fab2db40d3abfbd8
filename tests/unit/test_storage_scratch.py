"""The storage role's scratch plan on real lsblk and blkid output captured on this machine
(tests/fixtures, rows in SOURCES.md): this VM's disks, and loop devices in a privileged lab
node container (free, holding ext4, mounted at /scratch). No NVMe device exists here, so the
``nvme`` selection is shown selecting nothing on this VM's disks, not picking real namespaces."""

from __future__ import annotations

import importlib.util

from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"
_spec = importlib.util.spec_from_file_location(
    "storage_scratch_filter", REPO_ROOT / "roles/storage/filter_plugins/storage_scratch.py"
)
assert _spec and _spec.loader
plugin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plugin)

VM = (FIXTURES / "lsblk__railyard_vm__1.json").read_text()
LOOPS = (FIXTURES / "lsblk__railyard_loops__1.json").read_text()
EXT4 = (FIXTURES / "blkid_p__railyard_loops__1.txt").read_text()


def test_blkid_type_reads_the_probed_file_system() -> None:
    assert plugin.blkid_type(EXT4) == "ext4"
    assert plugin.blkid_type("") is None  # blkid -p printed nothing (rc 2): no signature


def test_an_assembled_scratch_is_found_mounted_and_left_alone() -> None:
    plan = plugin.scratch_plan(LOOPS, ["/dev/loop0"], "/scratch")
    assert plan == {"mounted": "/dev/loop2", "devices": [], "problems": []}


def test_listed_devices_in_use_are_refused_each_with_its_reason() -> None:
    wanted = ["/dev/loop0", "/dev/loop1", "/dev/loop2", "/dev/nvme9n1"]
    plan = plugin.scratch_plan(LOOPS, wanted, "/mnt/other", {"/dev/loop1": EXT4})
    assert plan["mounted"] is None
    assert plan["devices"] == ["/dev/loop0"]
    assert plan["problems"] == [
        "storage_scratch.devices: /dev/loop1 holds a file system (ext4); scratch takes "
        "empty disks only",
        "storage_scratch.devices: /dev/loop2 is mounted at /scratch; scratch takes empty disks only",
        "storage_scratch.devices: /dev/nvme9n1 does not exist; scratch takes empty disks only",
    ]


def test_without_the_probe_lsblk_alone_misses_the_file_system_in_a_container() -> None:
    """lsblk reads file systems from udev's database; the container has none, so the role
    probes with blkid (this is why)."""
    plan = plugin.scratch_plan(LOOPS, ["/dev/loop1"], "/mnt/other")
    assert plan["devices"] == ["/dev/loop1"]


def test_nvme_selects_nothing_on_a_vm_without_nvme() -> None:
    assert plugin.scratch_plan(VM, "nvme", "/scratch") == {
        "mounted": None,
        "devices": [],
        "problems": [],
    }


def test_the_root_disk_is_never_scratch() -> None:
    plan = plugin.scratch_plan(VM, ["/dev/vda", "/dev/zram0"], "/scratch")
    assert plan["devices"] == ["/dev/zram0"]
    assert plan["problems"] == [
        "storage_scratch.devices: /dev/vda is mounted at /var/lib/containers/storage/overlay, "
        "/run/netns, /; scratch takes empty disks only"
    ]
