"""EFA instances (fabric.kind efa): what each must show, from the instance catalog.

Parametrised over the plan's EFA hosts (``efa_hosts`` of the checks part of the target that has
the ``efa`` family, ``fabric/targets/<name>/checks.py``, whose judging this module reads through
``fabric.verify.families.checks_part``): the catalog's EFA device count, ``fi_info -p efa``
with one provider entry per device, GPUDirect RDMA (peer memory) where declared and supported,
and the declared cluster placement group (instance metadata, IMDSv2).
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from fabric.parsers import PARSERS, ParseError
from fabric.verify.families import checks_part
from fabric.verify.harness_error import HarnessError

#: The EFA families' judging (the target's ``checks`` part, found by the family's name).
efa = checks_part("efa")
#: A parameter: an ``EfaHost`` of that part.
EfaHost = Any

#: The efa role's install prefix (efa_install_dir); fi_info is not on PATH by default.
FI_INFO = "/opt/amazon/efa/bin/fi_info"


@pytest.mark.family("efa")
def test_efa_devices(host, efa_host: EfaHost) -> None:
    """The instance shows as many EFA PCI devices as its type takes (32 on p5.48xlarge)."""
    result = host.run(f"timeout 30 bash -c {shlex.quote(efa.EFA_PCI_SCAN)}")
    if result.rc != 0:
        raise HarnessError(f"{efa_host.host}: the EFA PCI scan failed: {result.stderr.strip()}")
    problems = efa.efa_device_problems(result.stdout.splitlines(), efa_host.devices)
    assert not problems, f"{efa_host.host} ({efa_host.instance_type}): " + "; ".join(problems)


@pytest.mark.family("efa")
def test_efa_provider(host, efa_host: EfaHost) -> None:
    """``fi_info -p efa -t FI_EP_RDM`` lists one efa entry per EFA device."""
    result = host.run(f"timeout 30 {FI_INFO} -p efa -t FI_EP_RDM")
    assert result.rc not in (126, 127), (
        f"{efa_host.host}: {FI_INFO} is not installed: the efa role installs it "
        "(aws.efa_installer_url) or the AMI must carry it"
    )
    try:
        report = PARSERS["fi_info"](result.stdout + result.stderr)
    except ParseError as error:
        raise HarnessError(f"{efa_host.host}: fi_info output unreadable: {error}") from error
    problems = efa.efa_provider_problems(report, efa_host.devices)
    assert not problems, f"{efa_host.host}: " + "; ".join(problems)


@pytest.mark.family("efa_gpudirect")
def test_efa_gpudirect_rdma(host, efa_gpudirect_host: EfaHost) -> None:
    """GPUDirect RDMA declared (aws.gpudirect_rdma) on a p4/p5: EFA reaches GPU memory through
    dma-buf, efa_nv_peermem or nvidia_peermem, whichever the driver uses."""
    result = host.run(f"timeout 20 bash -c {shlex.quote(efa.GPUDIRECT_PROBE)}")
    problems = efa.gpudirect_problems(efa.gpudirect_paths(result.stdout))
    assert not problems, f"{efa_gpudirect_host.host}: " + "; ".join(problems)


@pytest.mark.family("placement_group")
def test_placement_group(host, placement_host: EfaHost) -> None:
    """The instance sits in the declared cluster placement group (IMDSv2 metadata)."""
    result = host.run(f"timeout 20 bash -c {shlex.quote(efa.IMDS_PLACEMENT_GROUP)}")
    if result.rc != 0:
        raise HarnessError(
            f"{placement_host.host}: instance metadata unreadable: {result.stderr.strip()[:200]}"
        )
    problems = efa.placement_group_problems(result.stdout, placement_host.placement_group or "")
    assert not problems, f"{placement_host.host}: " + "; ".join(problems)
