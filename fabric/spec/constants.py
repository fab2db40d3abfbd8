"""Constants of the cluster spec: the value ranges and tables the models and rules share."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

LinkLayer = Literal["InfiniBand", "Ethernet"]

#: InfiniBand MTUs the IBTA defines (bytes).
IB_MTUS = (256, 512, 1024, 2048, 4096)
#: Ethernet MTU range accepted for RoCE and cloud fabrics (bytes).
ETH_MTU_RANGE = (1500, 9216)
#: OpenSM sm_priority range.
SM_PRIORITY_RANGE = (0, 15)
#: 802.1Qbb PFC priority range.
PFC_PRIORITY_RANGE = (0, 7)
#: DSCP range (6 bits).
DSCP_RANGE = (0, 63)
#: The HCA link layer each fabric kind needs (EFA devices report neither; not checked).
FABRIC_LINK_LAYER: dict[str, LinkLayer] = {
    "infiniband": "InfiniBand",
    "roce": "Ethernet",
    "gcp-gpudirect": "Ethernet",
}
#: Data rate per lane (Gb/s, as ibstat reports a port's rate) of each InfiniBand generation.
IB_LANE_RATES = {
    "SDR": 2.5,
    "DDR": 5,
    "QDR": 10,
    "FDR": 14,
    "EDR": 25,
    "HDR": 50,
    "NDR": 100,
    "XDR": 200,
}
#: Data rate per lane (Gb/s) of Ethernet generations (10G, 25G NRZ; 50G, 100G PAM4).
ETH_LANE_RATES = {"10G": 10, "25G": 25, "50G": 50, "100G": 100}
#: Lanes of each link width.
WIDTH_LANES = {"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}
#: An AWS region (us-east-2, us-gov-west-1) and a GCP region (us-central1, europe-west4).
AWS_REGION_PATTERN = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$")
GCP_REGION_PATTERN = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
#: What an OpenSM partition's members may be in the spec: port GUIDs are known only after
#: discovery, so hosts cannot be named (partitions.conf keywords).
SM_MEMBER_KEYWORDS = ("ALL", "ALL_CAS", "ALL_SWITCHES", "SELF")
#: A Slurm partition MaxTime: INFINITE/UNLIMITED, minutes, minutes:seconds,
#: hours:minutes:seconds, days-hours, days-hours:minutes, days-hours:minutes:seconds.
SLURM_TIME_PATTERN = re.compile(r"^(INFINITE|UNLIMITED|\d+(:\d+){0,2}|\d+-\d+(:\d+){0,2})$")
#: An RDMA device name (mlx5_0, rdmap16s27) and a Linux netdev name (at most 15 characters).
RDMA_DEVICE_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,63}$")
NETDEV_PATTERN = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,15}$")
#: A host name: one RFC 1123 label (letters, digits, inner hyphens, at most 63 long).
HOSTNAME_PATTERN = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
#: Boot targets railyard asks a bare-metal BMC for (Redfish BootSourceOverrideTarget values).
BOOT_TARGETS = ("Pxe", "Hdd", "Cd", "UefiHttp", "UefiTarget", "Usb")

#: Validation context key: when true, ClusterSpec skips its cross-field rules (used by
#: fabric.spec.load to build a best-effort spec whose rules it runs itself).
SKIP_RULES = "skip_cross_field_rules"

#: UDP ports ibsim binds in remote mode: ``lab.ibsim_port`` for control, then one per client
#: slot (IBSIM_MAX_CLIENTS = 10, compiled into ibsim).
IBSIM_PORT_SPAN = 11
#: The lab's address range (RFC 2544 benchmarking space) and its default BMC and RoCE
#: networks (``fabric.lab.plan`` builds them; the network rules check the spec against them).
LAB_RANGE = ipaddress.ip_network("198.18.0.0/15")
DEFAULT_BMC_SUBNET = "198.18.1.0/24"
DEFAULT_FABRIC_SUBNET = "198.18.2.0/24"

#: What ``python -m fabric import`` writes where it cannot know a node's SSH address (target
#: ``existing``'s rules refuse it until the operator fills it in).
SSH_PLACEHOLDER = "PLACEHOLDER"
