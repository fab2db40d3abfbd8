"""Constants of the cluster spec: the value ranges and tables the models and rules share."""

from __future__ import annotations

import re
from typing import Literal

LinkLayer = Literal["InfiniBand", "Ethernet"]

#: InfiniBand MTUs the IBTA defines (bytes).
IB_MTUS = (256, 512, 1024, 2048, 4096)
#: Ethernet MTU range accepted for RoCE and cloud fabrics (bytes).
ETH_MTU_RANGE = (1500, 9216)
#: Largest MTU each cloud's VPC carries (bytes): AWS jumbo frames, GCP VPC maximum.
CLOUD_MAX_MTU = {"aws": 9001, "gcp": 8896}
#: OpenSM sm_priority range.
SM_PRIORITY_RANGE = (0, 15)
#: 802.1Qbb PFC priority range.
PFC_PRIORITY_RANGE = (0, 7)
#: DSCP range (6 bits).
DSCP_RANGE = (0, 63)
#: The fabric kind each cloud target supports, and the target each cloud kind needs.
CLOUD_FABRIC = {"aws": "efa", "gcp": "gcp-gpudirect"}
#: The HCA link layer each fabric kind needs (EFA devices report neither; not checked).
FABRIC_LINK_LAYER: dict[str, LinkLayer] = {
    "infiniband": "InfiniBand",
    "roce": "Ethernet",
    "gcp-gpudirect": "Ethernet",
}
#: A host name: one RFC 1123 label (letters, digits, inner hyphens, at most 63 long).
HOSTNAME_PATTERN = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
#: Boot targets railyard asks a bare-metal BMC for (Redfish BootSourceOverrideTarget values).
BOOT_TARGETS = ("Pxe", "Hdd", "Cd", "UefiHttp", "UefiTarget", "Usb")

#: Validation context key: when true, ClusterSpec skips its cross-field rules (used by
#: fabric.spec.load to build a best-effort spec whose rules it runs itself).
SKIP_RULES = "skip_cross_field_rules"
