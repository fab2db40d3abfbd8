"""Shared unit-test helpers: the one Pulumi ``Mocks`` and how to run a component under it.

``Mocks`` records every resource and answers with its inputs plus what the real resource
would compute (instance addresses, launch template versions, the lab's keys and address
pools, a Redfish node's facts ...). Use the fixtures (``mock_pulumi``, ``build_component``,
``state_root``), or ``from conftest import Mocks, build_component`` in module-level helpers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

DYNAMIC = "pulumi-python:dynamic:Resource"
#: What the lab's dynamic resources compute (an image tag, SSH keys, BMC endpoints), and the
#: hand-off's recap.
LAB_OUTPUTS = {
    "tag": "localhost/railyard-node:0123456789ab",
    "public_key": "ssh-ed25519 AAAA x",
    "private_key": "PRIVATE",
    "out_endpoints": {},
    "recap": "ok=1 changed=0",
}


class Mocks(pulumi.runtime.Mocks):
    """Records every resource; outputs are its inputs plus what the real resource computes.

    Mocks skip a dynamic provider's ``check``; the lab's address pools run the real one (no
    previous state), so addresses flow as in a first ``pulumi up``.
    """

    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        return f"{args.name}-id", self.outputs(args, len(self.resources))

    def outputs(self, args: pulumi.runtime.MockResourceArgs, count: int) -> dict[str, Any]:
        """The outputs of the ``count``-th resource registered."""
        outs = dict(args.inputs)
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            outs["latestVersion"] = 1
        elif args.typ == "aws:ec2/instance:Instance":
            outs["privateIp"] = f"10.0.0.{count}"
            if args.inputs.get("associatePublicIpAddress"):  # TEST-NET-3, never contacted
                outs["publicIp"] = f"203.0.113.{count}"
        elif args.typ == "aws:ec2/eip:Eip":
            outs["allocationId"] = f"eipalloc-{count}"
        elif args.typ == "gcp:compute/resourcePolicy:ResourcePolicy":
            outs["selfLink"] = f"projects/p/regions/r/resourcePolicies/{args.inputs['name']}"
        elif args.typ == "gcp:compute/instance:Instance":
            nics = [dict(n) for n in args.inputs["networkInterfaces"]]
            nics[0]["networkIp"] = f"10.128.0.{count}"
            if nics[0].get("accessConfigs"):  # an external address (TEST-NET-3)
                nics[0]["accessConfigs"] = [{"natIp": f"203.0.113.{count}"}]
            outs["networkInterfaces"] = nics
        elif args.typ == DYNAMIC and {"node", "url"} <= set(args.inputs):  # a RedfishNode
            outs.update(
                serial=f"SN-{args.inputs['node']}",
                macs=["aa:bb:cc:00:00:01"],
                power_state="On",
                boot_override_target="Pxe",
                boot_override_enabled="Once",
                boot_note="",
                ssh_banner="SSH-2.0-x",
                system_path="/redfish/v1/Systems/1",
            )
            outs.pop("password", None)
        elif args.typ == DYNAMIC:
            if args.name.endswith("-addresses"):  # a lab AddressPool
                from fabric.targets.lab.dynamic_lab import AddressPoolProvider

                outs = AddressPoolProvider().check({}, outs).inputs
            outs.update(LAB_OUTPUTS)
        return outs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        """An invoke's result: an SSM parameter (the AMI an image parameter names) reads as
        a fixed AMI id; any other invoke as empty."""
        if args.token == "aws:ssm/getParameter:getParameter":
            return {"name": args.args["name"], "type": "String", "value": "ami-0123456789abcdef0"}
        return {}

    def of(self, typ: str) -> list[pulumi.runtime.MockResourceArgs]:
        """The resources of type ``typ``, in registration order."""
        return [r for r in self.resources if r.typ == typ]

    def named(self, name: str) -> pulumi.runtime.MockResourceArgs:
        """The one resource called ``name``."""
        (found,) = [r for r in self.resources if r.name == name]
        return found

    def instance(self, host: str) -> dict[str, Any]:
        """The inputs of the cloud instance of ``host`` (GCP ``name``, AWS tag ``Name``)."""

        def name(inputs: dict[str, Any]) -> Any:
            tags = inputs.get("tags")
            return tags.get("Name") if isinstance(tags, dict) else inputs.get("name")

        (found,) = [
            r.inputs
            for r in self.resources
            if r.typ.endswith("/instance:Instance") and name(r.inputs) == host
        ]
        return found

    @property
    def names(self) -> list[str]:
        """Every resource's name, in registration order."""
        return [r.name for r in self.resources]


def mock_stack(
    stack: str, config: dict[str, str] | None = None, secret_keys: Iterable[str] = ()
) -> Mocks:
    """Fresh mocks for ``stack`` (project ``railyard``); set the stack config when given."""
    mocks = Mocks()
    pulumi.runtime.set_mocks(mocks, project="railyard", stack=stack, preview=False)
    if config is not None:
        pulumi.runtime.set_all_config(config, list(secret_keys))
    return mocks


def build_component(
    factory: Callable[[], pulumi.ComponentResource],
    stack: str,
    outputs: Iterable[str] = (
        "inventory",
        "hosts",
        "switches",
        "fabric",
        "bmc_endpoints",
        "state_dir",
    ),
) -> tuple[Mocks, dict[str, Any]]:
    """Build ``factory()`` under fresh mocks; return the mocks and the resolved ``outputs`` of
    the component, plus ``urns``: every URN registered."""
    names = list(outputs)
    mocks = mock_stack(stack)
    result: dict[str, Any] = {}

    @pulumi.runtime.test
    def run() -> pulumi.Output[Any]:
        component = factory()
        return pulumi.Output.all(*[getattr(component, n) for n in names]).apply(
            lambda values: result.update(zip(names, values, strict=True))
        )

    run()
    monitor = pulumi.runtime.settings.get_monitor()
    result["urns"] = list(monitor.get_registered_resources())  # type: ignore[union-attr]
    return mocks, result


@pytest.fixture
def mock_pulumi() -> Iterator[Callable[..., Mocks]]:
    """``mock_pulumi(stack, config=None, secret_keys=())`` -> fresh Mocks; the config is
    cleared afterwards."""
    yield mock_stack
    pulumi.runtime.set_all_config({}, [])


@pytest.fixture(name="build_component", scope="session")
def build_component_fixture() -> Callable[..., tuple[Mocks, dict[str, Any]]]:
    """:func:`build_component`, for module-scoped fixtures."""
    return build_component


@pytest.fixture
def state_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$RAILYARD_STATE_DIR`` for the test."""
    root = tmp_path / "state"
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(root))
    return root


def bare_metal_access(hosts: list[str]) -> dict[str, Any]:
    """The management and bmc blocks target baremetal needs: an address and a BMC per host."""
    return {
        "management": {
            "subnet": "198.18.0.0/16",
            "addresses": {h: f"198.18.{i // 250}.{i % 250 + 2}" for i, h in enumerate(hosts)},
        },
        "bmc": {
            "password": {"config": "bmcPassword"},
            "endpoints": {h: {"url": f"https://bmc-{h}"} for h in hosts},
        },
    }


def junit_of(module: Path, env: dict[str, str] | None = None) -> Path:
    """Run pytest on ``module`` (a stand-in check suite) and return the JUnit XML it wrote,
    ``checks.xml`` beside it, as the check runner asks for it (xunit1)."""
    import subprocess
    import sys

    junit = module.parent / "checks.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "junit_family=xunit1",
            f"--junitxml={junit}",
            str(module),
        ],
        cwd=module.parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    assert junit.is_file(), done.stdout[-2000:] + done.stderr[-2000:]
    return junit
