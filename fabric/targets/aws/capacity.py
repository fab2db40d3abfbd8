"""Running out of EC2 capacity, said once and plainly.

A launch that EC2 refuses with ``InsufficientInstanceCapacity`` fails ``pulumi up`` partway:
some instances exist, others do not. The compute instances carry an error hook that turns that
error into one line naming the instance type, the zone and the count asked for, and what was
left made, then lets the update fail (no retry: capacity does not come back in seconds).
ParallelCluster warns of this error where a reservation meets an unrelated placement group
(cli/src/pcluster/validators/ec2_validators.py, PlacementGroupCapacityReservationValidator);
railyard's spec rules refuse that pairing (``rules.check_aws_capacity``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pulumi
from pulumi.runtime import settings

__all__ = ["ICE", "capacity_hook", "capacity_message", "error_hooks_available"]

#: The EC2 error code of a launch without capacity.
ICE = "InsufficientInstanceCapacity"


def capacity_message(
    errors: Sequence[str], host: str, instance_type: str, zone: str | None, hosts: Sequence[str]
) -> str | None:
    """The one line for ``host``'s failed launch when ``errors`` say EC2 ran out of capacity,
    else None (another error speaks for itself)."""
    if not any(ICE in e for e in errors):
        return None
    where = zone or "the subnet's zone"
    return (
        f"{ICE}: EC2 has no {instance_type} capacity in {where} for the {len(hosts)} instances"
        f" of {host}'s group ({', '.join(hosts)}); {host} was not made. Left made: the network,"
        " security groups, placement group, launch template, file systems and the instances"
        " that launched (pulumi stack --show-urns lists them). Run pulumi up again when there"
        " is capacity (it makes only what is missing), launch into a capacity reservation"
        " (aws.capacity_reservation_id) or another zone, or pulumi destroy to remove them"
    )


def capacity_hook(
    host: str, instance_type: str, zone: str | None, hosts: Sequence[str]
) -> Callable[[pulumi.ErrorHookArgs], bool]:
    """The error hook's function: log the capacity line once, never retry."""

    def on_error(args: pulumi.ErrorHookArgs) -> bool:
        message = capacity_message(args.errors, host, instance_type, zone, hosts)
        if message is not None:
            pulumi.log.error(message)
        return False

    return on_error


def error_hooks_available() -> bool:
    """Whether this engine runs error hooks: the CLI supports them and the program talks to a
    real resource monitor (the SDK's own condition for its callback server; Pulumi's mocks
    have none)."""
    from pulumi.runtime.proto import resource_pb2, resource_pb2_grpc

    return settings.monitor_supports_feature(
        resource_pb2.RESOURCE_MONITOR_FEATURE_ERROR_HOOKS
    ) and isinstance(settings.SETTINGS.monitor, resource_pb2_grpc.ResourceMonitorStub)
