"""cloud-init NoCloud seeds for lab nodes that boot like cloud instances.

A cloud instance boots with the provider's name for it (EC2: ``ip-a-b-c-d``) and the user data
the stack declared; cloud-init applies that user data at boot. A lab node gets the same from a
NoCloud seed (:attr:`fabric.lab.node.NodeConfig.seed`): ``meta-data`` carries the instance id
and the provider's host name, ``user-data`` the declared cloud-config, unchanged, plus any
lab-only parts, joined as cloud-init's own multipart format (``#cloud-config`` parts are merged).
"""

from __future__ import annotations

import ipaddress
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText

import yaml

__all__ = ["ec2_hostname", "seed"]


def ec2_hostname(address: str) -> str:
    """EC2's default host name for a private IPv4 address: ``ip-10-0-1-5``."""
    return "ip-" + str(ipaddress.IPv4Address(address)).replace(".", "-")


def _user_data(parts: list[str]) -> str:
    if len(parts) == 1:
        return parts[0]
    archive = MIMEMultipart()
    for index, part in enumerate(parts):
        text = MIMEText(part, "cloud-config", "utf-8")
        text.add_header("Content-Disposition", "attachment", filename=f"part-{index:02d}.cfg")
        archive.attach(text)
    return archive.as_string()


def seed(instance_id: str, provider_hostname: str, user_data: list[str]) -> dict[str, str]:
    """The NoCloud seed files: ``meta-data`` and ``user-data`` (the parts in order)."""
    if not user_data:
        raise ValueError("a NoCloud seed needs at least one user-data part")
    meta = yaml.safe_dump(
        {"instance-id": instance_id, "local-hostname": provider_hostname}, sort_keys=False
    )
    return {"meta-data": meta, "user-data": _user_data(user_data)}
