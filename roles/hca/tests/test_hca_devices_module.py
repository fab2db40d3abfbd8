"""Unit tests of the hca role's ``hca_devices`` module on a fake sysfs tree.

The tree mimics the kernel's layout (vendor/device/class files, ``physfn`` links on virtual
functions, /sys/class/infiniband/<dev>/device links); no tool output is involved.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location(
    "hca_devices_module", HERE.parent / "library" / "hca_devices.py"
)
mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mod)


def pci(root: Path, addr: str, vendor: str, device: str = "0x101b", vf_of: str | None = None):
    path = root / "bus" / "pci" / "devices" / addr
    path.mkdir(parents=True)
    (path / "vendor").write_text(vendor + "\n")
    (path / "device").write_text(device + "\n")
    (path / "class").write_text("0x020700\n")
    if vf_of:
        (path / "physfn").symlink_to(root / "bus" / "pci" / "devices" / vf_of)
    return path


def rdma(root: Path, name: str, addr: str):
    ib = root / "class" / "infiniband" / name
    ib.mkdir(parents=True)
    (ib / "device").symlink_to(root / "bus" / "pci" / "devices" / addr)


def test_no_devices(tmp_path):
    pci(tmp_path, "0000:00:03.0", "0x8086")
    assert mod.find_devices(str(tmp_path)) == ([], [], [])


def test_dual_port_card_and_vf(tmp_path):
    pci(tmp_path, "0000:b1:00.0", "0x15b3")
    pci(tmp_path, "0000:b1:00.1", "0x15b3")
    pci(tmp_path, "0000:b1:00.2", "0x15b3", device="0x101c", vf_of="0000:b1:00.0")
    pci(tmp_path, "0000:00:03.0", "0x8086")
    (tmp_path / "bus/pci/devices/0000:b1:00.0/net/ib0").mkdir(parents=True)
    rdma(tmp_path, "mlx5_0", "0000:b1:00.0")
    rdma(tmp_path, "mlx5_1", "0000:b1:00.1")
    devices, configurable, names = mod.find_devices(str(tmp_path))
    assert [d["pci"] for d in devices] == ["0000:b1:00.0", "0000:b1:00.1"]
    assert devices[0]["rdma_devices"] == ["mlx5_0"]
    assert devices[0]["netdevs"] == ["ib0"]
    assert configurable == ["0000:b1:00.0"]
    assert names == ["mlx5_0", "mlx5_1"]
