#!/usr/bin/python
"""Find NVIDIA (Mellanox) ConnectX HCAs from sysfs: PCI vendor 0x15b3 and /sys/class/infiniband."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hca_devices
short_description: Find ConnectX HCAs (PCI vendor 0x15b3) from sysfs
description:
  - Reads C(/sys/bus/pci/devices/*/vendor) for the NVIDIA/Mellanox vendor ID C(0x15b3), the same
    devices C(lspci -d 15b3:) lists, and C(/sys/class/infiniband/*/device) for their RDMA device
    names.
  - Returns one entry per physical function; virtual functions (a C(physfn) link) are left out,
    because firmware settings are made through a physical function.
  - Returns one I(configurable) device per adapter (the lowest PCI function), because both
    functions of a dual-port card share one firmware configuration.
  - Never changes anything.
options:
  sysfs_root:
    description: Where sysfs is mounted (tests point it at a fake tree).
    type: path
    default: /sys
  vendor_id:
    description: PCI vendor ID to look for.
    type: str
    default: "0x15b3"
author:
  - railyard
"""

EXAMPLES = r"""
- name: Find ConnectX HCAs.
  hca_devices:
  register: hca_found
"""

RETURN = r"""
devices:
  description: Physical functions with the vendor ID.
  type: list
  elements: dict
  returned: always
  sample:
    - pci: "0000:b1:00.0"
      device_id: "0x101b"
      pci_class: "0x020700"
      rdma_devices: [mlx5_0]
      netdevs: [ib0]
configurable:
  description: PCI addresses to run mlxconfig/mstconfig against (one per adapter).
  type: list
  elements: str
  returned: always
rdma_devices:
  description: Every entry of /sys/class/infiniband, whatever its vendor.
  type: list
  elements: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule


def _read(path):
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def find_devices(sysfs_root="/sys", vendor_id="0x15b3"):
    """Return (physical functions, configurable PCI addresses, all RDMA device names)."""
    pci_root = os.path.join(sysfs_root, "bus", "pci", "devices")
    ib_root = os.path.join(sysfs_root, "class", "infiniband")
    rdma_by_pci = {}
    rdma_devices = _listdir(ib_root)
    for name in rdma_devices:
        target = os.path.realpath(os.path.join(ib_root, name, "device"))
        rdma_by_pci.setdefault(os.path.basename(target), []).append(name)

    devices = []
    for pci in _listdir(pci_root):
        path = os.path.join(pci_root, pci)
        if (_read(os.path.join(path, "vendor")) or "").lower() != vendor_id.lower():
            continue
        if os.path.exists(os.path.join(path, "physfn")):
            continue
        devices.append(
            {
                "pci": pci,
                "device_id": _read(os.path.join(path, "device")),
                "pci_class": _read(os.path.join(path, "class")),
                "rdma_devices": rdma_by_pci.get(pci, []),
                "netdevs": _listdir(os.path.join(path, "net")),
            }
        )

    configurable = []
    seen = set()
    for device in devices:
        slot = device["pci"].rsplit(".", 1)[0]
        if slot not in seen:
            seen.add(slot)
            configurable.append(device["pci"])
    return devices, configurable, rdma_devices


def main():
    module = AnsibleModule(
        argument_spec={
            "sysfs_root": {"type": "path", "default": "/sys"},
            "vendor_id": {"type": "str", "default": "0x15b3"},
        },
        supports_check_mode=True,
    )
    devices, configurable, rdma_devices = find_devices(
        module.params["sysfs_root"], module.params["vendor_id"]
    )
    module.exit_json(
        changed=False, devices=devices, configurable=configurable, rdma_devices=rdma_devices
    )


if __name__ == "__main__":
    main()
