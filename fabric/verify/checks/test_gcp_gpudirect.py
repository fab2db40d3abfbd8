"""GCP A3 instances (fabric.kind gcp-gpudirect): GPU NICs as the instance catalog declares them.

Parametrised over ``gpu_nic_hosts`` of the checks part of the target that has the ``gpu_nics``
family (``fabric/targets/<name>/checks.py``, whose judging this module reads through
``fabric.verify.families.checks_part``): the GPU NIC count (4 on a3-highgpu-8g, 8 on
a3-megagpu-8g), each at ``gcp.gpu_nic_mtu`` and in its own VPC subnet; the gVNIC driver; the
receive-data-path manager's Slurm prolog where GPUDirect-TCPX(O) is used.
"""

from __future__ import annotations

from typing import Any

import pytest

from fabric.parsers import PARSERS, ParseError
from fabric.verify.families import checks_part
from fabric.verify.harness_error import HarnessError

#: The GPU NIC families' judging (the target's ``checks`` part, found by the family's name).
nic_checks = checks_part("gpu_nics")
#: A parameter: a ``GpuNicHost`` of that part.
GpuNicHost = Any

#: Where the gcp_gpudirect role installs the RxDM prolog/epilog (gcp_gpudirect_rxdm_script).
RXDM_SCRIPT = "/usr/local/libexec/railyard/rxdm"


def _nics(host, expect: GpuNicHost) -> dict[str, tuple[str, int, str]]:
    result = host.run("timeout 10 ip -j -4 addr show")
    if result.rc != 0:
        raise HarnessError(f"{expect.host}: ip -j -4 addr show failed: {result.stderr.strip()}")
    return nic_checks.gpu_nic_addresses(result.stdout, expect.subnets)


@pytest.mark.family("gpu_nics")
def test_gpu_nics(host, gpu_nic_host: GpuNicHost) -> None:
    """GPU NIC count, MTU 8244 each, one VPC subnet each."""
    nics = _nics(host, gpu_nic_host)
    problems = nic_checks.gpu_nic_problems(
        nics, gpu_nic_host.nics, gpu_nic_host.mtu, gpu_nic_host.subnets
    )
    assert not problems, f"{gpu_nic_host.host} ({gpu_nic_host.machine_type}): " + "; ".join(
        problems
    )


@pytest.mark.family("gvnic")
def test_gvnic_driver(host, gvnic_host: GpuNicHost) -> None:
    """Every GPU NIC is a gVNIC (kernel driver gve, ``ethtool -i``)."""
    problems: list[str] = []
    for netdev in sorted(_nics(host, gvnic_host)):
        result = host.run(f"timeout 10 ethtool -i {netdev}")
        try:
            report = PARSERS["ethtool_i"](result.stdout + result.stderr)
        except ParseError as error:
            raise HarnessError(f"{gvnic_host.host}: ethtool -i {netdev}: {error}") from error
        problems += nic_checks.driver_problems(netdev, report, gvnic_host.driver or "gve")
    assert not problems, f"{gvnic_host.host}: " + "; ".join(problems)


@pytest.mark.family("rxdm")
def test_rxdm_prolog(host, rxdm_host: GpuNicHost) -> None:
    """GPUDirect-TCPX(O): the receive-data-path manager's prolog is installed and Docker, which
    runs it, is active. RxDM itself runs only during multi-node jobs (started by the prolog,
    stopped by the epilog, as Cluster Toolkit's A3 blueprints do)."""
    script = host.file(RXDM_SCRIPT)
    assert script.exists and script.mode & 0o111, (
        f"{rxdm_host.host}: {RXDM_SCRIPT} is missing or not executable: the gcp_gpudirect role "
        "installs it"
    )
    docker = host.run("timeout 10 systemctl is-active docker")
    assert docker.stdout.strip() == "active", (
        f"{rxdm_host.host}: docker is {docker.stdout.strip() or 'not installed'}; the RxDM "
        f"({rxdm_host.transport}) runs as a container started by the Slurm prolog"
    )
