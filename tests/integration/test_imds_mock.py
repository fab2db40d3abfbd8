"""The AWS instance metadata reads against a real IMDS implementation: AWS's own
amazon-ec2-metadata-mock v1.13.0 (built by scripts/bootstrap.sh from its Go module, cached under
~/.cache/railyard/imds-mock), one per "instance", IMDSv2 only, on loopback.

The check suite's commands run unchanged but for the address (169.254.169.254 becomes the
mock's 127.0.0.1:<port>): the placement group check's read (``IMDS_PLACEMENT_GROUP``) and the
provider topology's instance id (``IMDS_INSTANCE_ID``, AWS's ``PLACEMENT_COMMAND``), each through a session
token. The instance ids then name the instances of DescribeInstanceTopology's documented
example (the AWS API being the one thing not run here), and the tree they give is what a real
slurmctld showed for it. IMDS has no topology path: AWS publishes topology only by the API.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from fabric.targets.aws.checks import IMDS_PLACEMENT_GROUP, placement_group_problems
from fabric.topology.cloud import IMDS_INSTANCE_ID
from fabric.verify.cloud_topology import provider_graph, topology_problems
from fabric.verify.harness import HarnessError

pytestmark = pytest.mark.integration

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "railyard"
MOCK = CACHE / "imds-mock/v1.13.0/bin/ec2-metadata-mock"
FIXTURES = Path(__file__).parents[1] / "fixtures"
IMDS = "169.254.169.254"
#: The instances: the AWS CLI example's ids as gpu01, gpu02 and gpu04 (the ones the real
#: slurmctld capture scontrol_show_topology__aws_example__1.txt names).
INSTANCES = {
    "gpu01": {"instance-id": "i-1111111111example", "placement-group-name": "my-ml-cpg"},
    "gpu02": {"instance-id": "i-2222222222example", "placement-group-name": "my-ml-cpg"},
    "gpu04": {"instance-id": "i-444444444example", "placement-group-name": ""},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(port: int, proc: subprocess.Popen[bytes], seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"ec2-metadata-mock exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"ec2-metadata-mock did not listen on {port} within {seconds} s")


@pytest.fixture(scope="module")
def imds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """host -> the address of its own metadata service."""
    assert MOCK.is_file(), f"{MOCK} missing: scripts/bootstrap.sh builds it (make bootstrap)"
    procs, where = [], {}
    try:
        for host, values in INSTANCES.items():
            home = tmp_path_factory.mktemp(f"imds-{host}")
            config = home / "aemm-config.json"
            config.write_text(
                json.dumps({"metadata": {"values": values | {"instance-type": "p4d.24xlarge"}}})
            )
            port = _free_port()
            argv = [str(MOCK), "--imdsv2", "-n", "127.0.0.1", "-p", str(port), "-c", str(config)]
            proc = subprocess.Popen(
                argv,
                env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append(proc)
            _wait(port, proc)
            where[host] = f"127.0.0.1:{port}"
        yield where
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)


def _run(command: str, address: str) -> tuple[str, int, str]:
    done = subprocess.run(
        ["bash", "-c", command.replace(IMDS, address)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.stdout, done.returncode, done.stderr


def test_imdsv1_is_refused_so_the_reads_use_a_session_token(imds: dict[str, str]) -> None:
    code = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "5",
         f"http://{imds['gpu01']}/latest/meta-data/instance-id"],
        capture_output=True, text=True, timeout=30, check=False,
    ).stdout  # fmt: skip
    assert code == "401"


def test_placement_group_read_and_judged(imds: dict[str, str]) -> None:
    stdout, rc, stderr = _run(IMDS_PLACEMENT_GROUP, imds["gpu01"])
    assert rc == 0, stderr
    assert placement_group_problems(stdout, "my-ml-cpg") == []
    [problem] = placement_group_problems(stdout, "efa-p5-pg")
    assert "reports placement group 'my-ml-cpg', declared 'efa-p5-pg'" in problem


def test_instance_ids_name_the_providers_topology(imds: dict[str, str]) -> None:
    readings = {h: _run(IMDS_INSTANCE_ID, a) for h, a in imds.items()}
    assert {h: r[0] for h, r in readings.items()} == {
        h: v["instance-id"] for h, v in INSTANCES.items()
    }
    response = (FIXTURES / "aws_describe_instance_topology__aws-cli__example.json").read_text()

    def aws_cli(argv: Sequence[str], timeout: int) -> subprocess.CompletedProcess[str]:
        assert argv[argv.index("--instance-ids") + 1 :] == [
            v["instance-id"] for v in INSTANCES.values()
        ]
        return subprocess.CompletedProcess(argv, 0, response, "")

    graph = provider_graph("aws", readings, "us-west-2", run=aws_cli)
    shown = (FIXTURES / "scontrol_show_topology__aws_example__1.txt").read_text()
    assert topology_problems(graph, list(INSTANCES), shown) == []
    twice = {**readings, "gpu04": readings["gpu01"]}  # one instance reached under two names
    with pytest.raises(HarnessError, match="gpu01 and gpu04 both answer as instance i-1111"):
        provider_graph("aws", twice, "us-west-2", run=aws_cli)
