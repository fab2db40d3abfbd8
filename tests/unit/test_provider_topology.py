"""Slurm topology on the clouds: ``check --plan`` generates the provider topology family for the
AWS and GCP examples, and its judge compares the provider's documented responses, through the
InfiniBand writer, with what a real slurmctld (22.05) showed for them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.targets.aws.placement import (
    AWS_IDS_PER_CALL,
    aws_graph,
    describe_instance_topology,
    instance_id,
)
from fabric.targets.gcp.placement import gce_graph, gce_reading
from fabric.topology.cloud import CURL_HTTP_ERROR
from fabric.verify.cloud_topology import topology_problems
from fabric.verify.harness import HarnessError
from fabric.verify.plan import CheckPlan, describe

FIXTURES = Path(__file__).parents[1] / "fixtures"
AWS_RESPONSE = (FIXTURES / "aws_describe_instance_topology__aws-cli__example.json").read_text()
AWS_SHOWN = (FIXTURES / "scontrol_show_topology__aws_example__1.txt").read_text()
GCE_SHOWN = (FIXTURES / "scontrol_show_topology__gce_example__1.txt").read_text()
LAB_SHOWN = (FIXTURES / "scontrol_show_topology__railyard_lab__1.txt").read_text()
IDS = {
    "gpu01": "i-1111111111example",
    "gpu02": "i-2222222222example",
    "gpu04": "i-444444444example",
}
NODES = ["gpu01", "gpu02", "gpu04"]


def _plan(example: str, hosts: list[str] | None = None) -> CheckPlan:
    spec = load_spec(REPO_ROOT / example)
    return CheckPlan(spec=spec, hosts=list(spec.hosts) if hosts is None else hosts)


@pytest.mark.parametrize(
    ("example", "provider", "region"),
    [
        ("Pulumi.aws-efa.example.yaml", "aws", "us-east-2"),
        ("Pulumi.gcp-a3-high.example.yaml", "gcp", None),
        ("Pulumi.gcp-a3-mega.example.yaml", "gcp", None),
        ("Pulumi.gcp-a3-ultra.example.yaml", "gcp", None),
    ],
)
def test_cloud_examples_generate_the_provider_topology_family(
    example: str, provider: str, region: str | None
) -> None:
    plan = _plan(example)
    family = describe(plan)["slurm_provider_topology"]
    assert family["checks"] == ["test_provider_topology"]
    [param] = family["parameters"]
    spec = plan.spec
    assert param["provider"] == provider
    assert param["controller"] == plan.slurm_controller
    assert param["nodes"] == spec.hosts_with_role("compute")
    assert param["region"] == (spec.aws.region if provider == "aws" else spec.gcp.region)
    if region:
        assert param["region"] == region


def test_lab_and_a_partial_selection_say_why_not() -> None:
    lab = _plan("Pulumi.lab.yaml")
    assert "on aws and gcp" in lab.not_generated()["slurm_provider_topology"]
    spec = load_spec(REPO_ROOT / "Pulumi.aws-efa.example.yaml")
    some = [h for h in spec.hosts if h != spec.hosts_with_role("compute")[0]]
    assert CheckPlan(spec=spec, hosts=some).not_generated()["slurm_provider_topology"] == (
        "needs the Slurm controller and every compute node selected"
    )


def test_aws_placement_as_slurm_showed_it_passes() -> None:
    graph = aws_graph(IDS, json.loads(AWS_RESPONSE))
    assert topology_problems(graph, NODES, AWS_SHOWN) == []


def test_gce_placement_as_slurm_showed_it_passes() -> None:
    meta = FIXTURES / "gce_metadata_physical_host_topology__ai_hypercomputer__example.json"
    items = json.loads(
        (FIXTURES / "gce_instances_list__ai_hypercomputer__example.json").read_text()
    )
    vm01 = json.dumps(items["items"][0]["resourceStatus"]["physicalHostTopology"])
    graph = gce_graph({"vm-01": vm01, "vm-02": meta.read_text()})
    assert topology_problems(graph, ["vm-01", "vm-02"], GCE_SHOWN) == []


def test_a_moved_instance_is_named() -> None:
    """gpu04 moved under gpu01's bottom node (the provider's answer changed): Slurm's loaded
    tree no longer matches, and the message names the switches that differ."""
    response = json.loads(AWS_RESPONSE)
    response["Instances"][3]["NetworkNodes"] = response["Instances"][0]["NetworkNodes"]
    problems = topology_problems(aws_graph(IDS, response), NODES, AWS_SHOWN)
    assert any(
        p.startswith("Slurm switch nn-3333333333example: nodes ['gpu01', 'gpu02']")
        and "['gpu01', 'gpu02', 'gpu04']" in p
        for p in problems
    ), problems
    assert any("Slurm has switches the provider does not place" in p for p in problems)


def test_slurm_without_topology_and_unplaced_instances_are_named() -> None:
    graph = aws_graph({**IDS, "gpu09": "i-0abc"}, json.loads(AWS_RESPONSE))
    problems = topology_problems(graph, [*NODES, "gpu09"], "")
    assert problems[0] == "no placement from the provider: gpu09: not in the response"
    assert problems[1].startswith("Slurm shows no topology")


def test_the_labs_fat_tree_is_not_the_providers() -> None:
    graph = aws_graph(IDS, json.loads(AWS_RESPONSE))
    problems = topology_problems(graph, NODES, LAB_SHOWN)
    assert sum(p.startswith("Slurm has no switch nn-") for p in problems) == 5
    assert problems[-1].startswith("Slurm has switches the provider does not place the nodes")


class _Cli:
    """The AWS CLI as the API's documented example answers (AWS APIs are the one thing mocked)."""

    def __init__(self, stdout: str = AWS_RESPONSE, rc: int = 0, stderr: str = "") -> None:
        self.calls: list[list[str]] = []
        self.stdout, self.rc, self.stderr = stdout, rc, stderr

    def __call__(self, argv: Sequence[str], timeout: int) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        return subprocess.CompletedProcess(argv, self.rc, self.stdout, self.stderr)


def test_describe_instance_topology_asks_at_most_100_ids_a_call() -> None:
    cli = _Cli()
    ids = [f"i-{n:017x}" for n in range(AWS_IDS_PER_CALL + 1)]
    response = describe_instance_topology(ids, "us-east-1", run=cli)
    assert len(cli.calls) == 2
    assert cli.calls[0][:7] == [
        "aws", "ec2", "describe-instance-topology", "--region", "us-east-1", "--output", "json"
    ]  # fmt: skip
    assert cli.calls[0][8:] == ids[:100] and cli.calls[1][8:] == ids[100:]
    assert len(response["Instances"]) == 8  # the example's 4, once per call


def test_describe_instance_topology_failures_are_harness_errors() -> None:
    with pytest.raises(HarnessError, match="AWS CLI reads DescribeInstanceTopology"):
        describe_instance_topology(["i-1"], "us-east-1", aws="/nonexistent/aws")
    failing = _Cli(
        stdout="",
        rc=254,
        stderr="An error occurred (UnauthorizedOperation) when calling the "
        "DescribeInstanceTopology operation: key AKIAABCDEFGHIJKLMNOP:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
    )
    with pytest.raises(HarnessError, match="exit 254.*UnauthorizedOperation") as error:
        describe_instance_topology(["i-1"], "us-east-1", run=failing)
    assert "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY" not in str(error.value)
    with pytest.raises(HarnessError, match="printed no JSON"):
        describe_instance_topology(["i-1"], "us-east-1", run=_Cli(stdout="<html>"))


def test_metadata_readings() -> None:
    assert instance_id("gpu01", "i-1111111111example\n", 0, "") == "i-1111111111example"
    with pytest.raises(HarnessError, match="gpu01: instance metadata gave no instance id"):
        instance_id("gpu01", "", 7, "curl: (7) Failed to connect to 169.254.169.254")
    assert gce_reading("vm-01", "", CURL_HTTP_ERROR, "404") == ""
    with pytest.raises(HarnessError, match="vm-01: the metadata server did not answer"):
        gce_reading("vm-01", "", 6, "curl: (6) Could not resolve host")


@pytest.mark.parametrize(
    ("example", "provider"),
    [("Pulumi.aws-efa.example.yaml", "aws"), ("Pulumi.gcp-a3-mega.example.yaml", "gcp")],
)
def test_handoff_reads_the_placement_the_check_reads(example: str, provider: str) -> None:
    """The hand-off's variables ask site.yml (playbooks/provider_topology.yml) to read each
    node's placement with the check's own command and render the plugin the spec names."""
    from fabric.handoff.vars import role_vars_from_spec
    from fabric.hostlist import compress
    from fabric.verify.cloud_topology import placement_command

    spec = load_spec(REPO_ROOT / example)
    got = role_vars_from_spec(spec)
    assert got["railyard_topology_provider"] == provider
    assert got["railyard_placement_command"] == placement_command(provider)
    assert got["railyard_topology_nodes"] == compress(spec.hosts_with_role("compute"))
    assert got["slurm_topology_plugin"] == spec.slurm.topology_plugin
    assert got["slurm_topology_conf"] == ""  # until the play renders the provider's
    assert got["railyard_topology_discover"] is False


def test_cli_renders_the_placement_readings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fabric.cli import main

    meta = FIXTURES / "gce_metadata_physical_host_topology__ai_hypercomputer__example.json"
    readings = tmp_path / "placement.json"
    readings.write_text(
        json.dumps(
            {
                "vm-02": {"stdout": meta.read_text(), "rc": 0, "stderr": ""},
                "vm-03": {"stdout": "", "rc": 0, "stderr": ""},
            }
        )
    )
    assert main(["topology", "--from-placement", str(readings), "--provider", "gcp"]) == 0
    out = capsys.readouterr()
    assert "SwitchName=europe-west1-cluster-jfhb-3e3056e23cf91a5cb4a8621b6a52c100-1fc1" in out.out
    assert "vm-03: no physical placement" in out.err
    assert main(["topology", "--from-placement", str(readings), "--provider", "aws"]) == 2
    assert "needs --provider aws|gcp|azure (and --region on aws)" in capsys.readouterr().err
    readings.write_text(json.dumps({"vm-02": {"stdout": "", "rc": 6, "stderr": "no host"}}))
    assert main(["topology", "--from-placement", str(readings), "--provider", "gcp"]) == 2
    assert "placement not read: vm-02: the metadata server did not answer" in (
        capsys.readouterr().err
    )


def test_gce_placement_command_against_a_metadata_server(tmp_path: Path) -> None:
    """The GCE reading runs for real with curl against a metadata server on loopback that has
    only the older ``physical_host`` key (and wants the Metadata-Flavor header), then none."""
    import http.server
    import threading

    from fabric.topology.cloud import GCE_PLACEMENT

    keys: dict[str, str] = {"physical_host": "/c9/b9/s9/h9"}

    class Metadata(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            key = self.path.rsplit("/", 1)[-1]
            ok = self.headers.get("Metadata-Flavor") == "Google" and key in keys
            body = keys[key].encode() if ok else b"not found"
            self.send_response(200 if ok else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    command = GCE_PLACEMENT.replace(
        "metadata.google.internal", f"127.0.0.1:{server.server_address[1]}"
    )

    def read() -> subprocess.CompletedProcess[str]:
        argv = ["bash", "-c", command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)

    try:
        first = read()
        keys.clear()
        second = read()
    finally:
        server.shutdown()
        server.server_close()
    assert (first.returncode, first.stdout) == (0, "/c9/b9/s9/h9")
    assert (second.returncode, second.stdout) == (0, "")
    gone = read()
    assert gone.returncode == 7  # no server: curl's "failed to connect", a harness error
    with pytest.raises(HarnessError):
        gce_reading("vm-01", gone.stdout, gone.returncode, gone.stderr)
