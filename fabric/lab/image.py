"""The lab node image: a debootstrap Debian 12 rootfs with systemd, sshd and the RDMA,
OpenSM and Slurm packages, imported into podman as ``localhost/railyard-node:<hash12>``.

The tag is a hash of ``images/node/packages.txt`` and the build recipe below, so a changed
package list or recipe gives a new image; an unchanged one is never rebuilt.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from fabric.lab.podman import PodmanError, exists, podman
from fabric.state import REPO_ROOT

IMAGE_NAME = "localhost/railyard-node"
NODE_DIR = REPO_ROOT / "images" / "node"
PACKAGES_FILE = NODE_DIR / "packages.txt"
HOSTKEY_UNIT = NODE_DIR / "ssh-hostkeys.service"
#: cloud-init's lab settings: off without a NoCloud seed; host keys and root login kept.
CLOUD_CFG = NODE_DIR / "cloud.cfg"
CLOUD_CFG_PATH = "etc/cloud/cloud.cfg.d/05_railyard_lab.cfg"
SUITE = "bookworm"
#: Services preinstalled but left to the roles to enable where they belong.
DISABLED_UNITS = ("opensm.service", "munge.service", "slurmd.service", "slurmctld.service")
#: Bump when the steps of ``_build_rootfs`` change: it is part of the image hash.
RECIPE = (
    "v2 debootstrap --variant=minbase --include=PACKAGES bookworm; rm ssh host keys; "
    "enable railyard-ssh-hostkeys.service; cloud.cfg.d/05_railyard_lab.cfg; disable "
    + " ".join(DISABLED_UNITS)
    + "; "
    "empty machine-id; apt-get clean; tar --numeric-owner; podman import --change CMD=/sbin/init"
)


class ImageError(RuntimeError):
    """The node image could not be built; the message says which step and how to fix it."""


def packages(path: Path = PACKAGES_FILE) -> list[str]:
    """Return the package names of ``path`` (comments and blank lines skipped)."""
    names = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    return [n for n in names if n]


def image_hash(package_file: Path = PACKAGES_FILE) -> str:
    """Return the 12-hex-digit hash of the package list, the recipe and the files copied in."""
    digest = hashlib.sha256()
    parts = (
        "\n".join(packages(package_file)),
        RECIPE,
        HOSTKEY_UNIT.read_text(),
        CLOUD_CFG.read_text(),
    )
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def image_tag() -> str:
    """Return the tag ``ensure_image`` builds: ``localhost/railyard-node:<hash12>``."""
    return f"{IMAGE_NAME}:{image_hash()}"


def cache_dir() -> Path:
    """Return ``${XDG_CACHE_HOME:-~/.cache}/railyard/images``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "railyard" / "images"


def _run(cmd: list[str], step: str, fix: str, timeout: float = 3600) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ImageError(f"{step} did not finish in {timeout:.0f} s\nfix: {fix}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise ImageError(f"{step} failed ({proc.returncode}): {tail}\nfix: {fix}")


def _build_rootfs(rootfs: Path) -> None:
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap is not installed: apt-get install debootstrap")
    _run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(packages())}",
            SUITE,
            str(rootfs),
        ],
        "debootstrap",
        "check that the Debian mirror configured for debootstrap is reachable and that every name "
        f"in {PACKAGES_FILE} exists in {SUITE}",
    )
    for key in (rootfs / "etc" / "ssh").glob("ssh_host_*"):
        key.unlink()
    unit = rootfs / "etc" / "systemd" / "system" / "railyard-ssh-hostkeys.service"
    shutil.copyfile(HOSTKEY_UNIT, unit)
    _run(
        ["systemctl", f"--root={rootfs}", "enable", "railyard-ssh-hostkeys.service"],
        "enable railyard-ssh-hostkeys.service",
        "systemctl --root must be available on the build host",
    )
    shutil.copyfile(CLOUD_CFG, rootfs / CLOUD_CFG_PATH)
    _run(
        ["systemctl", f"--root={rootfs}", "disable", *DISABLED_UNITS],
        "disable preinstalled services",
        "systemctl --root must be available on the build host",
    )
    (rootfs / "etc" / "machine-id").write_text("")
    _run(["chroot", str(rootfs), "apt-get", "clean"], "apt-get clean", "run as root")


def _build_tarball(tarball: Path) -> None:
    tarball.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rootfs-", dir=tarball.parent) as tmp:
        rootfs = Path(tmp) / "rootfs"
        _build_rootfs(rootfs)
        partial = tarball.with_suffix(".partial")
        _run(
            ["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(partial), "."],
            "tar the rootfs",
            f"free space under {tarball.parent}",
        )
        partial.rename(tarball)


#: A moving tag on the newest node image, for tools run by hand (molecule's default image).
LATEST = "localhost/railyard-node:latest"


def ensure_image() -> str:
    """Return the node image tag, building the rootfs and importing it only when missing.

    The image is also tagged ``localhost/railyard-node:latest``.
    """
    tag = _ensure_image()
    podman(["tag", tag, LATEST])
    return tag


def _ensure_image() -> str:
    tag = image_tag()
    if exists("image", tag):
        return tag
    digest = tag.rsplit(":", 1)[1]
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"rootfs-{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; waiters reuse its result
        if exists("image", tag):
            return tag
        tarball = cache / f"rootfs-{digest}.tar"
        if not tarball.is_file():
            _build_tarball(tarball)
        try:
            podman(["import", "--change", "CMD=/sbin/init", str(tarball), tag], timeout=900)
        except PodmanError as exc:
            raise ImageError(
                f"podman import of {tarball} failed: {exc}\nfix: delete {tarball} and retry"
            ) from exc
    return tag
