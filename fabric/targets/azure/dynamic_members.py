"""Which scale set instance is which declared compute node: its private address and the
computer name Azure gave it.

A Uniform scale set (the one orchestration Azure gives InfiniBand, rules.py) creates its VMs
itself: their instance ids, computer names and addresses are Azure's, and no Pulumi output
lists them. :class:`ScaleSetMembers` reads them after the scale set is created or resized,
through the REST API "Network Interfaces - List Virtual Machine Scale Set Network Interfaces"
(``GET {scale set id}/networkInterfaces``), called with ``az rest`` on the machine running
``pulumi up`` (its ``az login``; the nodes need no credentials). Each NIC names its VM
(``properties.virtualMachine.id``, ending in ``/virtualMachines/<instance id>``) and its
addresses (``properties.ipConfigurations[].properties.privateIPAddress``, the primary one
taken); pages follow ``nextLink``. The shape is the API's documented example
(tests/fixtures/azure_vmss_nic_list__restspecs__example.json).

Declared hosts take the instances in instance id order; a host keeps its instance across
updates, and a replaced instance's host takes the new one (:func:`assign`). Azure names each
instance ``{computerNamePrefix}{instance id in base 36, six digits}`` (Azure docs, "Understand
names and instance IDs for Azure Virtual Machine Scale Set VMs": prefix ``nsgvmss``, instance
85 -> ``nsgvmss00002D``): :func:`computer_name`.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

__all__ = [
    "ScaleSetMembers",
    "assign",
    "computer_name",
    "nic_list_url",
    "read_members",
    "scale_set_addresses",
]

#: Seconds between two reads while the scale set's NICs are not all there.
POLL_S = 15.0
#: How long one ``az rest`` call may take.
AZ_TIMEOUT_S = 120
#: The Network API version the list is read with (its documented example: 2024-05-01).
NIC_API_VERSION = "2024-05-01"
#: Digits of a computer name's instance id suffix.
_BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

Runner = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str]"]


def _run(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)


def computer_name(prefix: str, instance_id: str) -> str:
    """The computer name (host name) Azure gives instance ``instance_id`` of a Uniform scale
    set: the prefix and the id in base 36, upper case, padded to six digits."""
    number = int(instance_id)
    digits = ""
    while True:
        number, rest = divmod(number, 36)
        digits = _BASE36[rest] + digits
        if not number:
            break
    return prefix + digits.rjust(6, "0")


def nic_list_url(scale_set_id: str) -> str:
    """The REST path of the scale set's NIC list (``az rest`` adds the ARM endpoint)."""
    return f"{scale_set_id.rstrip('/')}/networkInterfaces?api-version={NIC_API_VERSION}"


def scale_set_addresses(page: Any) -> dict[str, str]:
    """Instance id -> private address, from one page of the NIC list (``{"value": [...]}``,
    the REST shape). Raises ValueError naming what is missing."""
    if not isinstance(page, Mapping) or not isinstance(page.get("value"), list):
        raise ValueError("the scale set's NIC list is not a REST list (no 'value' array)")
    out: dict[str, str] = {}
    for index, nic in enumerate(page["value"]):
        props = nic.get("properties") if isinstance(nic, Mapping) else None
        if not isinstance(props, Mapping):
            raise ValueError(f"value[{index}] has no 'properties' object")
        vm = str((props.get("virtualMachine") or {}).get("id") or "")
        if "/virtualMachines/" not in vm:
            continue  # not attached to an instance (yet)
        instance = vm.rstrip("/").rsplit("/", 1)[-1]
        configs = [c.get("properties") or {} for c in props.get("ipConfigurations") or []]
        primary = [c for c in configs if c.get("primary") is not False] or configs
        address = next(
            (c.get("privateIPAddress") for c in primary if c.get("privateIPAddress")), None
        )
        if address and props.get("primary") is not False:
            out[instance] = str(address)
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


def _get(url: str, run: Runner) -> Any:
    """One ``az rest`` GET, its JSON body; RuntimeError with one line on any failure."""
    argv = ["az", "rest", "--method", "get", "--url", url, "--output", "json"]
    try:
        done = run(argv, AZ_TIMEOUT_S)
    except FileNotFoundError as error:
        raise RuntimeError(
            "az not found: railyard lists the scale set's NICs through the Azure CLI on the"
            " machine running pulumi up (install it and run az login)"
        ) from error
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(f"az rest gave no answer within {AZ_TIMEOUT_S} s ({url})") from error
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no error text"])[-1]
        raise RuntimeError(f"az rest failed (exit {done.returncode}): {said[:300]}")
    try:
        return json.loads(done.stdout or "null")
    except ValueError as error:
        raise RuntimeError(f"az rest printed no JSON: {done.stdout.strip()[:80]!r}") from error


def list_addresses(scale_set_id: str, run: Runner = _run) -> dict[str, str]:
    """Instance id -> private address of every NIC of the scale set, all pages."""
    url: str | None = nic_list_url(scale_set_id)
    found: dict[str, str] = {}
    while url:
        page = _get(url, run)
        found |= scale_set_addresses(page)
        url = page.get("nextLink") or None
    return found


def read_members(
    props: Mapping[str, Any],
    previous: Mapping[str, Mapping[str, str]],
    run: Runner = _run,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, dict[str, str]]:
    """The members of ``props['scale_set_id']`` with their computer names, polled until every
    declared host has an instance with an address, within ``props['timeout']`` seconds."""
    hosts = list(props["hosts"])
    prefix = str(props.get("computer_name_prefix") or "")
    deadline = time.monotonic() + float(props.get("timeout") or 900)
    while True:
        found = list_addresses(str(props["scale_set_id"]), run)
        if len(found) >= len(hosts) or time.monotonic() >= deadline:
            members = assign(previous, found, hosts)
            for member in members.values():
                member["computer_name"] = computer_name(prefix, member["instance_id"])
            return members
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
        changed = [k for k in (*keys, "computer_name_prefix") if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        members = read_members(news, olds.get("members") or {})
        return UpdateResult(outs={**news, "members": members})


class ScaleSetMembers(pulumi.dynamic.Resource):
    """Host -> the scale set instance it is, its private address and computer name
    (``members``)."""

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
        computer_name_prefix: str,
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
                "computer_name_prefix": computer_name_prefix,
                "timeout": timeout,
                "members": None,
            },
            opts,
        )
