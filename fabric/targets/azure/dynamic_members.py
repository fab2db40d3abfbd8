"""Which scale set instance is which declared compute node, and its private address.

A Uniform scale set (the one orchestration Azure gives InfiniBand, rules.py) creates its VMs
itself: their names (``<computerNamePrefix><instance id>``) and addresses are Azure's, and no
Pulumi output lists them. :class:`ScaleSetMembers` reads them after the scale set is created or
resized, through the Azure CLI on the machine running ``pulumi up`` (as the other clouds' host
keys are read): ``az vmss nic list --resource-group RG --vmss-name NAME`` (REST: Network
Interfaces - List Virtual Machine Scale Set Network Interfaces), each NIC naming its VM
(``virtualMachine.id``, ending in ``/virtualMachines/<instance id>``) and its private address
(``ipConfigurations[].privateIPAddress``). Declared hosts take the instances in instance id
order; a host keeps its instance across updates, and a replaced instance's host takes the new
one (:func:`assign`). The parser reads the CLI's flattened shape and the REST shape
(``properties``); neither was seen from a real scale set here.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

__all__ = ["ScaleSetMembers", "assign", "scale_set_addresses"]

#: Seconds between two reads while the scale set's NICs are not all there.
POLL_S = 15.0

Runner = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str]"]


def _run(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)


def _props(item: Mapping[str, Any]) -> Mapping[str, Any]:
    """An ARM object's properties, flattened by the CLI or under ``properties`` (REST)."""
    inner = item.get("properties")
    return inner if isinstance(inner, Mapping) else item


def scale_set_addresses(nics: Any) -> dict[str, str]:
    """Instance id -> private address, from the scale set's NICs (``az vmss nic list``)."""
    if isinstance(nics, Mapping):
        nics = nics.get("value", [])
    if not isinstance(nics, list):
        raise ValueError("az vmss nic list printed no list of network interfaces")
    out: dict[str, str] = {}
    for nic in nics:
        props = _props(nic)
        vm = (props.get("virtualMachine") or {}).get("id") or ""
        instance = vm.rstrip("/").rsplit("/", 1)[-1] if "/virtualMachines/" in vm else ""
        for config in props.get("ipConfigurations") or []:
            address = _props(config).get("privateIPAddress")
            primary = _props(config).get("primary", True)
            if instance and address and primary is not False:
                out[instance] = address
                break
    return out


def _order(instance: str) -> tuple[int, str]:
    return (int(instance), instance) if instance.isdigit() else (1 << 62, instance)


def assign(
    previous: Mapping[str, Mapping[str, str]], found: Mapping[str, str], hosts: Sequence[str]
) -> dict[str, dict[str, str]]:
    """Host -> ``{"instance_id", "private_ip"}``: each host keeps the instance it had while
    that instance is there; the others take the free instances in instance id order. Raises
    ValueError when there are fewer instances than hosts."""
    out: dict[str, dict[str, str]] = {}
    taken: set[str] = set()
    for host in hosts:
        had = (previous.get(host) or {}).get("instance_id")
        if had in found and had not in taken:
            out[host] = {"instance_id": had, "private_ip": found[had]}
            taken.add(had)
    free = sorted((i for i in found if i not in taken), key=_order)
    missing = [h for h in hosts if h not in out]
    if len(free) < len(missing):
        raise ValueError(
            f"the scale set has {len(found)} instances with an address, {len(hosts)} hosts"
            f" are declared: {', '.join(missing[len(free) :])} got none"
        )
    for host, instance in zip(missing, free, strict=False):
        out[host] = {"instance_id": instance, "private_ip": found[instance]}
    return {h: out[h] for h in hosts}


def read_members(
    props: Mapping[str, Any],
    previous: Mapping[str, Mapping[str, str]],
    run: Runner = _run,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, dict[str, str]]:
    """The members of ``props['scale_set']``, polled until every declared host has an
    instance with an address, within ``props['timeout']`` seconds."""
    argv = [
        "az", "vmss", "nic", "list", "--resource-group", props["resource_group"],
        "--vmss-name", props["scale_set"], "--output", "json",
    ]  # fmt: skip
    hosts = list(props["hosts"])
    deadline = time.monotonic() + float(props.get("timeout") or 900)
    while True:
        try:
            done = run(argv, 120)
        except FileNotFoundError as error:
            raise RuntimeError(
                "az not found: railyard reads the scale set's instances and addresses through"
                " the Azure CLI on the machine running pulumi up (az login first)"
            ) from error
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["no error text"])[-1]
            raise RuntimeError(f"az vmss nic list failed (exit {done.returncode}): {said[:300]}")
        found = scale_set_addresses(json.loads(done.stdout or "[]"))
        if len(found) >= len(hosts) or time.monotonic() >= deadline:
            return assign(previous, found, hosts)
        sleep(POLL_S)


class ScaleSetMembersProvider(ResourceProvider):
    """Reads the members at create, and again when the scale set or the hosts change."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        members = read_members(props, {})
        return CreateResult(
            id_=f"{props['resource_group']}/{props['scale_set']}",
            outs={**props, "members": members},
        )

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        keys = ("resource_group", "scale_set", "scale_set_id", "hosts", "capacity")
        changed = [k for k in keys if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        members = read_members(news, olds.get("members") or {})
        return UpdateResult(outs={**news, "members": members})


class ScaleSetMembers(pulumi.dynamic.Resource):
    """Host -> the scale set instance it is and its private address (``members``)."""

    members: pulumi.Output[dict[str, dict[str, str]]]

    def __init__(
        self,
        name: str,
        *,
        resource_group: pulumi.Input[str],
        scale_set: pulumi.Input[str],
        scale_set_id: pulumi.Input[str],
        capacity: int,
        hosts: list[str],
        timeout: float = 900.0,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            ScaleSetMembersProvider(),
            name,
            {
                "resource_group": resource_group,
                "scale_set": scale_set,
                "scale_set_id": scale_set_id,
                "capacity": capacity,
                "hosts": hosts,
                "timeout": timeout,
                "members": None,
            },
            opts,
        )
