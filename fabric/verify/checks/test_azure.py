"""Azure ND v5 VMs (target azure): what only Azure's VMs and HPC image must show.

Parametrised over ``ndv5_hosts`` of the checks part of the target that has the ``azure_sriov``
family (``fabric/targets/<name>/checks.py``, whose judging this module reads through
``fabric.verify.families.checks_part``): the declared InfiniBand devices are SR-IOV VFs,
accelerated networking gave eth0 its Ethernet VF, and NCCL reads the ND v5 topology file.
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from fabric.parsers import PARSERS, ParseError
from fabric.verify.families import checks_part
from fabric.verify.harness_error import HarnessError

#: The Azure families' judging (the target's ``checks`` part, found by the family's name).
azure = checks_part("azure_sriov")
#: A parameter: an ``Ndv5Host`` of that part.
Ndv5Host = Any


def _ibstat(host, expect: Ndv5Host):
    result = host.run("timeout 30 ibstat")
    if result.rc != 0:
        raise HarnessError(
            f"{expect.host}: ibstat failed (exit {result.rc}): {result.stderr.strip()[:200]}"
        )
    try:
        return PARSERS["ibstat"](result.stdout)
    except ParseError as error:
        raise HarnessError(f"{expect.host}: ibstat output unreadable: {error}") from error


@pytest.mark.family("azure_sriov")
def test_azure_ib_vfs(host, azure_sriov_host: Ndv5Host) -> None:
    """mlx5_ib0 ... mlx5_ib7 are there, each an InfiniBand SR-IOV VF (CA type MT4126)."""
    problems = azure.vf_problems(_ibstat(host, azure_sriov_host), azure_sriov_host.ib_devices)
    assert not problems, f"{azure_sriov_host.host}: " + "; ".join(problems)


@pytest.mark.family("azure_sriov")
def test_azure_accelerated_networking(host, azure_sriov_host: Ndv5Host) -> None:
    """Accelerated networking: the VM has its Ethernet VF (mlx5_an0 on the HPC image)."""
    problems = azure.accelerated_networking_problems(_ibstat(host, azure_sriov_host))
    assert not problems, f"{azure_sriov_host.host}: " + "; ".join(problems)


@pytest.mark.family("azure_nccl_topology")
def test_azure_nccl_topology(host, azure_topology_host: Ndv5Host) -> None:
    """/etc/nccl.conf names the ND v5 topology file, which pairs each GPU with its NIC."""
    expect = azure_topology_host
    conf = host.run(f"timeout 10 cat {azure.NCCL_CONF}")
    problems = azure.nccl_conf_problems(conf.stdout if conf.rc == 0 else "", expect.topology_file)
    topo = host.run(f"timeout 10 cat {shlex.quote(expect.topology_file)}")
    if topo.rc != 0:
        problems.append(f"{expect.topology_file} is not there: {topo.stderr.strip()[:200]}")
    else:
        problems += azure.topology_problems(topo.stdout, expect.gpus)
    assert not problems, f"{expect.host}: " + "; ".join(problems)
