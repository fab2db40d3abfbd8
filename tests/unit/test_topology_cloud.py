"""Slurm topology from the providers' placement data, through the InfiniBand writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabric.graph import GraphError
from fabric.topology.cloud import (
    aws_topology_graph,
    gce_instances_from_metadata,
    gce_topology_graph,
)
from fabric.topology.slurm import block_conf, slurm_tree, tree_conf

FIXTURES = Path(__file__).parents[1] / "fixtures"
AWS = json.loads((FIXTURES / "aws_describe_instance_topology__aws-cli__example.json").read_text())
NAMES = {
    "i-1111111111example": "gpu01",
    "i-2222222222example": "gpu02",
    "i-444444444example": "gpu04",
}


def test_aws_network_nodes_become_a_tree() -> None:
    """The AWS CLI's documented example: gpu01 and gpu02 share their bottom node, gpu04 shares
    only the top one; the trn1.32xlarge in another zone is not one of the cluster's hosts."""
    graph = aws_topology_graph(AWS, NAMES)
    tree = slurm_tree(graph)
    assert tree.leaves == {
        "nn-1235301234example": ["gpu04"],
        "nn-3333333333example": ["gpu01", "gpu02"],
    }
    assert tree.uppers == {
        "nn-2222222222example": ["nn-3333333333example"],
        "nn-5434334334example": ["nn-1235301234example"],
        "nn-1111111111example": ["nn-2222222222example", "nn-5434334334example"],
    }
    conf = tree_conf(graph)
    assert "SwitchName=nn-3333333333example Nodes=gpu[01-02]" in conf.splitlines()
    # names with text after the number are not bracketed: Slurm 22.05 refuses
    # nn-[2222222222,5434334334]example ("Invalid switches", seen in a real slurmctld)
    assert (
        "SwitchName=nn-1111111111example Switches=nn-2222222222example,nn-5434334334example"
        in conf.splitlines()
    )
    assert graph.warnings == []


def test_aws_blocks_are_the_bottom_nodes() -> None:
    conf = block_conf(aws_topology_graph(AWS, NAMES))
    assert conf.splitlines()[1:] == [
        "BlockName=nn-1235301234example Nodes=gpu04",
        "BlockName=nn-3333333333example Nodes=gpu[01-02]",
    ]


def test_aws_host_missing_from_the_response_is_a_warning() -> None:
    graph = aws_topology_graph(AWS, {**NAMES, "i-0abc": "gpu09"})
    assert graph.warnings == ["gpu09: not in the response"]
    assert "gpu09" not in slurm_tree(graph).hosts()


def test_aws_response_without_instances_is_refused() -> None:
    with pytest.raises(GraphError, match="no Instances list"):
        aws_topology_graph({"Reservations": []}, NAMES)


GCE = json.loads((FIXTURES / "gce_instances_list__ai_hypercomputer__example.json").read_text())
CLUSTER = "europe-west1-cluster-jfhb"
BLOCK = f"{CLUSTER}-3e3056e23cf91a5cb4a8621b6a52c100"


def test_gce_placement_levels_become_a_tree() -> None:
    """The documented instances.list example (``physicalHostTopology`` with ``subBlock``): two
    VMs of one block on two sub-blocks; a VM without placement is a warning."""
    graph = gce_topology_graph([*GCE["items"], {"name": "vm-03", "resourceStatus": {}}])
    tree = slurm_tree(graph)
    assert tree.leaves == {
        f"{BLOCK}-0fc09525cbd5abd734342893ca1c083f": ["vm-01"],
        f"{BLOCK}-1fc18636cbd4abd623553784ca2c174e": ["vm-02"],
    }
    assert tree.uppers == {BLOCK: sorted(tree.leaves)}  # the cluster passes through: pruned
    assert graph.warnings == ["vm-03: no physical placement (not running, or no compact placement)"]


def test_gce_metadata_key_gives_the_same_placement() -> None:
    """Inside the VM, the ``physical_host_topology`` key's documented JSON places vm-02 where
    instances.list does; the older ``physical_host`` path and an absent key are read too."""
    text = FIXTURES / "gce_metadata_physical_host_topology__ai_hypercomputer__example.json"
    items = gce_instances_from_metadata(
        {"vm-02": text.read_text(), "vm-05": "/c9/b9/s9/h9", "vm-06": ""}
    )
    graph = gce_topology_graph(items)
    assert slurm_tree(graph).leaves == {
        f"{BLOCK}-1fc18636cbd4abd623553784ca2c174e": ["vm-02"],
        "c9-b9-s9": ["vm-05"],
    }
    assert graph.warnings == ["vm-06: no physical placement (not running, or no compact placement)"]


def test_gce_metadata_that_is_not_json_is_refused() -> None:
    with pytest.raises(GraphError, match="vm-01: physical_host_topology is not JSON"):
        gce_instances_from_metadata({"vm-01": "<html>404</html>"})
    with pytest.raises(GraphError, match="not a JSON object"):
        gce_instances_from_metadata({"vm-01": "[1, 2]"})


def test_a_layer_name_slurm_cannot_use_is_refused() -> None:
    bad = {"Instances": [{"InstanceId": "i-1", "NetworkNodes": ["nn 1", "nn-2", "nn-3"]}]}
    with pytest.raises(GraphError, match="Slurm cannot use"):
        aws_topology_graph(bad, {"i-1": "gpu01"})


# --- python -m fabric topology --from-aws-topology ---------------------------------------


def test_cli_writes_topology_conf_from_the_aws_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fabric.cli import main

    hosts = tmp_path / "hosts.json"  # the shape of `pulumi stack output hosts --json`
    hosts.write_text(
        json.dumps(
            {
                "gpu01": {"role": "compute", "instance_id": "i-1111111111example"},
                "gpu02": {"role": "compute", "instance_id": "i-2222222222example"},
                "head1": {"role": "controller", "instance_id": "i-444444444example"},
            }
        )
    )
    fixture = str(FIXTURES / "aws_describe_instance_topology__aws-cli__example.json")
    code = main(
        ["topology", "--from-aws-topology", fixture, "--hosts", str(hosts), "--plugin", "block"]
    )
    out = capsys.readouterr()
    assert code == 0
    assert out.out.splitlines()[1:] == ["BlockName=nn-3333333333example Nodes=gpu[01-02]"]
    assert out.err == ""  # the head node is not a Slurm compute node: not looked for


def test_cli_refuses_aws_topology_without_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    from fabric.cli import main

    fixture = str(FIXTURES / "aws_describe_instance_topology__aws-cli__example.json")
    assert main(["topology", "--from-aws-topology", fixture]) == 2
    assert "needs --hosts FILE" in capsys.readouterr().err
