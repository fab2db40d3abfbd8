"""Role tests (``molecule verify`` and ``roles/*/tests``): testinfra on molecule's podman hosts.

Molecule hands testinfra ``--connection=ansible`` and its inventory, whose hosts say
``ansible_connection: containers.podman.podman``. testinfra turns ssh, docker and lxc hosts of
an inventory into its own backends, but not podman ones: for those every ``host.run`` became a
whole Ansible ``shell`` module run (seconds of CPU each; verify took 98-649 s per scenario in
``make test``). Here a podman host of the inventory is testinfra's own ``podman://`` backend
(``podman exec``); ``host.ansible`` and the inventory's variables work as before.
"""

from __future__ import annotations

from typing import Any

import testinfra
import testinfra.utils.ansible_runner as ansible_runner

#: ``ansible_connection`` values of a podman container.
PODMAN = ("podman", "containers.podman.podman")

_ansible_host = ansible_runner.get_ansible_host


def _podman_or_ansible_host(
    config: Any, inventory: Any, host: str, **kwargs: Any
) -> testinfra.host.Host | None:
    """testinfra's host for an inventory host: ``podman://`` for a podman container."""
    hostvars = (inventory or {}).get("_meta", {}).get("hostvars", {}).get(host, {})
    if hostvars.get("ansible_connection") not in PODMAN:
        return _ansible_host(config, inventory, host, **kwargs)
    name = hostvars.get("ansible_host", host)
    user = hostvars.get("ansible_user")
    spec = f"podman://{user}@{name}" if user else f"podman://{name}"
    return testinfra.get_host(spec, sudo=bool(hostvars.get("ansible_become", False)))


ansible_runner.get_ansible_host = _podman_or_ansible_host
