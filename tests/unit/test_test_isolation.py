"""What lets ``make test`` run the integration modules and the molecule scenarios side by side
(``scripts/testrun.py``): no two of them can take the same subnet, host port, podman network or
container, whatever random tag each lab draws.

- Each integration module's lab (``labkit.own_lab(..., spec, tags=N)``, found in the module's
  source) is planned for every tag (``fabric.lab.plan.plan_lab``): its management, BMC and RoCE
  subnets, its BMC and power-notifier ports and ibsim's port span. Modules that make their own
  networks (``ensure_network``) and ports beside a lab are listed in ``OWN_RESOURCES`` by hand;
  a module that makes networks and is not listed fails here. The developers' ``lab`` stack
  (``Pulumi.lab.yaml``) counts too: labs run beside it.
- Each molecule scenario's network (created in its ``dependency`` step with ``--subnet``) and
  its container names are its own.
"""

from __future__ import annotations

import ast
import functools
import inspect
import ipaddress
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

import pytest
import yaml

from fabric.lab.plan import plan_lab
from fabric.spec import ClusterSpec
from fabric.spec.constants import IBSIM_PORT_SPAN
from fabric.state import REPO_ROOT
from tests.integration.labkit import own_lab

Net = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass
class Claim:
    """What one lab (one module at one tag) holds while it runs."""

    nets: list[Net] = field(default_factory=list)
    ports: set[int] = field(default_factory=set)

    def clashes(self, other: Claim) -> list[str]:
        out = [f"{a} overlaps {b}" for a in self.nets for b in other.nets if a.overlaps(b)]
        if shared := sorted(self.ports & other.ports):
            out.append(f"ports {shared[0]}..{shared[-1]} ({len(shared)}) on both")
        return out


def _nets(*cidrs: str) -> list[Net]:
    return [ipaddress.ip_network(c) for c in cidrs]


#: Modules that make networks or take host ports outside their ``own_lab`` spec: tag -> claim,
#: and how many tags they draw from (read these from the module when you change it).
OWN_RESOURCES: dict[str, tuple[int, Callable[[int], Claim]]] = {
    "test_cloud_lab": (16, lambda t: Claim(_nets(f"198.19.{200 + t}.0/24", f"198.19.{220 + t}.0/24"))),
    "test_roce_switch": (4, lambda t: Claim(_nets(f"198.18.{240 + t}.0/24", f"198.18.{244 + t}.0/24"))),
    # fabric watch's and Prometheus's ports, beside the lab's own.
    "test_watch_prometheus": (4, lambda t: Claim(ports={20900 + t, 20950 + t})),
}  # fmt: skip

INTEGRATION = sorted((REPO_ROOT / "tests" / "integration").glob("test_*.py"))
OWN_LAB_TAGS = inspect.signature(own_lab).parameters["tags"].default


def _calls(tree: ast.AST, name: str) -> Iterable[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called == name:
                yield node


def _value(node: ast.expr, module: Any) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return getattr(module, node.id)
    raise AssertionError(f"{module.__name__}: cannot read {ast.unparse(node)} statically")


def _lab_claim(spec: dict[str, Any]) -> Claim:
    plan = plan_lab(ClusterSpec.model_validate(spec), "t", "t", "/nonexistent")
    claim = Claim(_nets(*(n.subnet for n in (plan.mgmt, plan.bmc, plan.fabric) if n)))
    claim.ports = {plan.bmc_port, plan.notifier_port}
    if plan.ibsim:
        claim.ports |= set(range(plan.ibsim_port, plan.ibsim_port + IBSIM_PORT_SPAN))
    return claim


@functools.cache
def integration_claims() -> dict[str, list[Claim]]:
    """Module (or stack) -> the claim of each tag it may draw."""
    out: dict[str, list[Claim]] = {}
    for path in INTEGRATION:
        tree = ast.parse(path.read_text())
        labs = list(_calls(tree, "own_lab"))
        own = OWN_RESOURCES.get(path.stem)
        if not labs and own is None:
            assert not list(_calls(tree, "ensure_network")), (
                f"{path.name} makes podman networks: list them in OWN_RESOURCES"
            )
            continue
        module = import_module(f"tests.integration.{path.stem}")
        tags = {own[0]} if own else set()
        specs: list[Callable[[int], dict[str, Any]]] = []
        for call in labs:
            specs.append(_value(call.args[2], module))
            kw = {k.arg: k.value for k in call.keywords}
            tags.add(_value(kw["tags"], module) if "tags" in kw else OWN_LAB_TAGS)
        assert len(tags) == 1, f"{path.name}: its labs and OWN_RESOURCES draw {tags} tags"
        claims = []
        for tag in range(tags.pop()):
            claim = Claim()
            for parts in [_lab_claim(spec(tag)) for spec in specs] + ([own[1](tag)] if own else []):
                claim.nets += parts.nets
                claim.ports |= parts.ports
            claims.append(claim)
        out[path.stem] = claims
    lab = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())["config"]["railyard:cluster"]
    out["Pulumi.lab.yaml"] = [_lab_claim(lab)]
    return out


def test_every_lab_module_is_found() -> None:
    claims = integration_claims()
    # The modules that bring up labs (not the ones that run ibsim or Slurm on their own).
    assert {"test_lab", "test_faults", "test_cloud_lab", "test_watch_prometheus"} <= set(claims)
    assert all(c.nets for claim in claims.values() for c in claim)


def test_no_two_integration_modules_can_clash() -> None:
    claims = integration_claims()
    clashes = []
    for (a, ca), (b, cb) in itertools.combinations(claims.items(), 2):
        for (ta, x), (tb, y) in itertools.product(enumerate(ca), enumerate(cb)):
            if found := x.clashes(y):
                clashes.append(f"{a} (tag {ta}) and {b} (tag {tb}): {'; '.join(found)}")
                break
    assert not clashes, "labs that can clash when run side by side:\n" + "\n".join(clashes)


SCENARIOS = sorted((REPO_ROOT / "roles").glob("*/molecule/*/molecule.yml"))
SUBNET = re.compile(r"podman network create\s+--subnet\s+(\S+).*?\s(\S+)'?\s*$", re.S)


def _scenario(path: Any) -> tuple[str, list[str], dict[str, Net]]:
    """(scenario, its container names, network name -> subnet it creates)."""
    doc = yaml.safe_load(path.read_text())
    name = str(path.parent.relative_to(REPO_ROOT / "roles"))
    containers = [p["name"] for p in doc["platforms"]] if doc["driver"]["name"] == "podman" else []
    nets: dict[str, Net] = {}
    command = (doc.get("dependency") or {}).get("command", "")
    if match := SUBNET.search(command):
        nets[match.group(2).rstrip("'")] = ipaddress.ip_network(match.group(1))
    used = {p["network"] for p in doc["platforms"] if "network" in p}
    assert used <= set(nets), f"{name}: platforms use {used - set(nets)}, which it does not create"
    return name, containers, nets


def test_scenario_networks_are_parsed() -> None:
    parsed = {name: nets for name, _, nets in map(_scenario, SCENARIOS)}
    assert parsed["slurm/molecule/default"], "the slurm scenario makes its own network"


@pytest.mark.parametrize(
    ("a", "b"), list(itertools.combinations(SCENARIOS, 2)), ids=lambda p: p.parts[-4]
)
def test_no_two_scenarios_share_a_container_or_network(a: Any, b: Any) -> None:
    name_a, containers_a, nets_a = _scenario(a)
    name_b, containers_b, nets_b = _scenario(b)
    assert not set(containers_a) & set(containers_b), f"{name_a} and {name_b} share containers"
    assert not set(nets_a) & set(nets_b), f"{name_a} and {name_b} share a network name"
    overlaps = [(x, y) for x in nets_a.values() for y in nets_b.values() if x.overlaps(y)]
    assert not overlaps, f"{name_a} and {name_b}: subnets overlap {overlaps}"


def test_scenario_networks_are_outside_every_lab() -> None:
    claims = integration_claims()
    clashes = [
        f"{name}: {net} overlaps {module} (tag {tag})"
        for name, _, nets in map(_scenario, SCENARIOS)
        for net in nets.values()
        for module, per_tag in claims.items()
        for tag, claim in enumerate(per_tag)
        if any(net.overlaps(n) for n in claim.nets)
    ]
    assert not clashes, "\n".join(clashes)
