"""The Slurm topology check expects what the hand-off writes: ``CheckPlan.slurm_switches``
against the topology.conf ``fabric.handoff.vars`` renders for the same spec."""

from __future__ import annotations

import pytest

from fabric.handoff.vars import role_vars_from_spec
from fabric.hostlist import expand
from fabric.spec import load_spec, spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.verify.plan import CheckPlan


def _conf_switches(conf: str) -> dict[str, tuple[list[str], list[str]]]:
    """SwitchName -> (nodes, child switches) of a tree topology.conf; a spine lists every node
    below its leaves, as ``scontrol show topology`` does."""
    rows: dict[str, dict[str, str]] = {}
    for line in conf.splitlines():
        if line.startswith("SwitchName="):
            fields = dict(part.split("=", 1) for part in line.split())
            rows[fields["SwitchName"]] = fields
    out: dict[str, tuple[list[str], list[str]]] = {}
    for name, fields in rows.items():
        children = sorted(expand(fields["Switches"])) if "Switches" in fields else []
        nodes = set(expand(fields["Nodes"])) if "Nodes" in fields else set()
        for child in children:
            nodes |= (
                set(expand(rows[child].get("Nodes", ""))) if rows[child].get("Nodes") else set()
            )
        out[name] = (sorted(nodes), children)
    return out


def _lab(**changes: object):
    data = load_spec(REPO_ROOT / "Pulumi.lab.yaml").model_dump(mode="json", exclude_none=True)
    for dotted, value in changes.items():
        node = data
        *path, last = dotted.split("__")
        for key in path:
            node = node[key] if not key.isdigit() else node[int(key)]
        node[last] = value
    return spec_from_mapping(data)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        # A node added to the cluster before any partition lists it: still a Slurm node.
        {"nodes__0__names": "gpu[01-09]", "fabric__topology__nodes_per_leaf": 6},
        # An unpopulated leaf (leaf03): in neither file.
        {"fabric__topology__leaves": 3},
    ],
)
def test_expected_switches_are_the_handoffs_topology_conf(changes: dict[str, object]) -> None:
    spec = _lab(**changes)
    conf = role_vars_from_spec(spec)["slurm_topology_conf"]
    expected = CheckPlan(spec=spec, hosts=list(spec.hosts)).slurm_switches
    assert expected == _conf_switches(conf)
    assert any("gpu08" in nodes for nodes, _ in expected.values())
    if "nodes__0__names" in changes:
        assert "gpu09" in expected["spine01"][0]
    if "fabric__topology__leaves" in changes:
        assert "leaf03" not in expected and expected["spine01"][1] == ["leaf01", "leaf02"]
