"""The NCCL job environment per kind, one place per target (fabric/targets/gcp/handoff.py
TCPX_JOB_ENV, fabric/targets/aws/catalog.py): every A3 machine type has its plugin's
environment, and the EFA jobs and the nccl checks' EFA runs get the same settings."""

from __future__ import annotations

from fabric.targets.aws.catalog import efa_job_env
from fabric.targets.gcp.catalog import gcp_machine
from fabric.targets.gcp.handoff import TCPX_JOB_ENV
from fabric.verify.nccl_run import EFA_ENV, nccl_env

#: Which variable names which plugin, per the catalog's transport.
PLUGIN_MARK = {
    "gpudirect-tcpx": ("NCCL_NET", "GPUDirectTCPX_v7"),
    "gpudirect-tcpxo": ("NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev/aperture_devices"),
    "rdma-roce": ("NCCL_NET", "gIB"),
}


def test_every_a3_machine_type_has_its_plugins_environment() -> None:
    for name in ("a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g"):
        machine = gcp_machine(name)
        assert machine is not None and machine.gpu_nics > 0
        key, value = PLUGIN_MARK[machine.transport]
        assert TCPX_JOB_ENV[name].get(key) == value, name
    assert all(gcp_machine(name) is not None for name in TCPX_JOB_ENV)


def test_efa_runs_and_jobs_share_one_environment() -> None:
    assert efa_job_env(device_rdma=False) == {"FI_PROVIDER": "efa"}
    assert efa_job_env(device_rdma=True) == EFA_ENV
    assert nccl_env("efa").items() >= EFA_ENV.items()
