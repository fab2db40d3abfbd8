"""The cloud-config every cloud node boots with: its declared host name, and the site proxy.

Slurm names nodes by the spec (``NodeName=gpu01``, ``SlurmctldHost=head1(addr)``, ``slurmd
-N gpu01``), and slurmctld refuses to start on a host whose name is not its SlurmctldHost, so
the declared name must be the node's host name from its first boot, not EC2's
``ip-a-b-c-d``. cloud-init's ``hostname`` / ``fqdn`` with ``preserve_hostname: false`` set it
(and keep it across reboots). With ``egress.mode: proxy`` apt and every login read the proxy
(``apt: http_proxy`` and ``/etc/environment``, which pam_env reads for Ansible's SSH sessions).
"""

from __future__ import annotations

import yaml

from fabric.spec import EgressSpec

__all__ = ["boot_cloud_config"]


def boot_cloud_config(host: str, egress: EgressSpec, fqdn: str | None = None) -> str:
    """The ``#cloud-config`` user data of ``host``."""
    config: dict[str, object] = {
        "hostname": host,
        "fqdn": fqdn or host,
        "prefer_fqdn_over_hostname": False,
        "preserve_hostname": False,
    }
    if egress.mode == "proxy" and egress.proxy:
        config["apt"] = {"http_proxy": egress.proxy, "https_proxy": egress.proxy}
        lines = [f"http_proxy={egress.proxy}", f"https_proxy={egress.proxy}"]
        if egress.no_proxy:
            lines.append(f"no_proxy={','.join(egress.no_proxy)}")
        config["write_files"] = [
            {"path": "/etc/environment", "append": True, "content": "\n".join(lines) + "\n"}
        ]
    return "#cloud-config\n" + yaml.safe_dump(config, sort_keys=False)
