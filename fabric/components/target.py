"""What every target component (lab, bare metal, AWS, GCP) exports: :class:`TargetCluster`.

A target provisions the cluster a spec declares and hands it on; ``Cluster`` passes its
``inventory`` to the hand-off and the checks, and the program exports all of
:data:`TARGET_OUTPUTS` as stack outputs. Every target sets every one of them (an empty dict
where it has nothing, e.g. ``bmc_endpoints`` on a cloud):

- ``inventory``: the Ansible inventory (a dict, :func:`fabric.inventory.build_inventory`);
- ``hosts``: what was provisioned per host (addresses, ids, facts; shape per target);
- ``switches``: switch name -> the Ansible host variables of the switch;
- ``fabric``: the fabric as provisioned; always has ``kind`` (the spec's ``fabric.kind``);
- ``bmc_endpoints``: host -> its Redfish system (``url``, ``system_id``, ``username``);
- ``state_dir``: the stack's state folder (``fabric.state.StateLayout(stack).dir``).
"""

from __future__ import annotations

from typing import Any

import pulumi

from fabric.spec import ClusterSpec
from fabric.state import StateLayout

#: The outputs of every target component, in export order.
TARGET_OUTPUTS = ("inventory", "hosts", "switches", "fabric", "bmc_endpoints", "state_dir")


class TargetCluster(pulumi.ComponentResource):
    """The base of every target component; subclasses end ``__init__`` with :meth:`export`."""

    inventory: pulumi.Output[dict[str, Any]]
    hosts: pulumi.Output[Any]
    switches: pulumi.Output[dict[str, Any]]
    fabric: pulumi.Output[dict[str, Any]]
    bmc_endpoints: pulumi.Output[dict[str, Any]]
    state_dir: pulumi.Output[str]

    def export(
        self,
        spec: ClusterSpec,
        *,
        inventory: pulumi.Input[dict[str, Any]],
        hosts: pulumi.Input[Any],
        switches: pulumi.Input[dict[str, Any]] | None = None,
        fabric: pulumi.Input[dict[str, Any]] | None = None,
        bmc_endpoints: pulumi.Input[dict[str, Any]] | None = None,
        state_dir: pulumi.Input[str] | None = None,
        **extra: pulumi.Input[Any],
    ) -> None:
        """Set every target output (defaults: no switches, ``{"kind": ...}``, no BMCs, the
        stack's state folder) and ``extra`` ones, and register them all."""
        self.inventory = pulumi.Output.from_input(inventory)
        self.hosts = pulumi.Output.from_input(hosts)
        self.switches = pulumi.Output.from_input(switches if switches is not None else {})
        self.fabric = pulumi.Output.from_input(
            fabric if fabric is not None else {"kind": spec.fabric.kind}
        )
        self.bmc_endpoints = pulumi.Output.from_input(
            bmc_endpoints if bmc_endpoints is not None else {}
        )
        self.state_dir = pulumi.Output.from_input(
            state_dir if state_dir is not None else str(StateLayout(pulumi.get_stack()).dir)
        )
        outputs: dict[str, pulumi.Input[Any]] = {key: getattr(self, key) for key in TARGET_OUTPUTS}
        for key, value in extra.items():
            setattr(self, key, pulumi.Output.from_input(value))
            outputs[key] = getattr(self, key)
        self.register_outputs(outputs)


def target_outputs(target: TargetCluster) -> dict[str, pulumi.Output[Any]]:
    """The target's :data:`TARGET_OUTPUTS`, by name."""
    return {key: getattr(target, key) for key in TARGET_OUTPUTS}
