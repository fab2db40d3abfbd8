"""What the storage role leaves on a lab node: scratch made on a loop device and mounted by
UUID, and the EFS entry in fstab with AWS's options (no NFS client in this kernel)."""

from __future__ import annotations

import os

import testinfra.utils.ansible_runner

testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]
).get_hosts("all")


def test_scratch_is_mounted_ext4_from_the_loop_device(host) -> None:
    disk = host.file("/etc/ry-storage-disk").content_string.strip()
    mount = host.mount_point("/scratch")
    assert mount.exists
    assert mount.filesystem == "ext4"
    assert host.run("findmnt -n -o SOURCE /scratch").stdout.strip() == disk


def test_scratch_is_in_fstab_by_uuid_with_nofail(host) -> None:
    disk = host.file("/etc/ry-storage-disk").content_string.strip()
    uuid = host.check_output(f"blkid -p -s UUID -o value {disk}").strip()
    lines = [line.split() for line in host.file("/etc/fstab").content_string.splitlines()]
    assert [f"UUID={uuid}", "/scratch", "ext4", "defaults,nofail,noatime", "0", "0"] in lines


def test_efs_is_in_fstab_with_the_documented_options(host) -> None:
    lines = [line.split() for line in host.file("/etc/fstab").content_string.splitlines()]
    opts = "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,_netdev"
    assert ["fs-0123.efs.example.internal:/", "/home", "nfs", opts, "0", "0"] in lines


def test_no_array_was_made_for_one_device(host) -> None:
    assert not host.file("/dev/md/railyard-scratch").exists


def test_an_option_the_entry_repeats_is_written_once(host) -> None:
    lines = [line.split() for line in host.file("/etc/fstab").content_string.splitlines()]
    assert ["198.18.0.10:/srv/data", "/data", "nfs", "defaults,_netdev,ro", "0", "0"] in lines


def test_lustre_entries_name_the_server_as_a_nid_once(host) -> None:
    lines = [line.split() for line in host.file("/etc/fstab").content_string.splitlines()]
    opts = "defaults,_netdev,flock,user_xattr,noatime"
    assert ["fs-0456.fsx.example.internal@tcp:/abcdef", "/fsx", "lustre", opts, "0", "0"] in lines
    assert ["10.90.1.4@tcp:/lustrefs", "/lustre", "lustre", opts, "0", "0"] in lines
