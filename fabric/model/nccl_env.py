"""The NCCL job environment per fabric and instance kind, in one place: EFA (aws-ofi-nccl over
libfabric's efa provider), GCP A3 High (GPUDirect-TCPX), A3 Mega (TCPXO/FasTrak) and A3 Ultra
(gIB). The hand-off's task prolog gives it to jobs (``fabric.handoff.vars.job_environment``) and
the nccl checks' runs use the same (``fabric.verify.nccl_run.nccl_env``).
"""

from __future__ import annotations

#: Job environment on EFA instances (aws/aws-ofi-nccl doc/efa-env-var.md, commit
#: 2daf7d303aa139a03140aa530957d10521e4478d: "FI_PROVIDER=efa, FI_EFA_USE_DEVICE_RDMA=1"):
#: libfabric's efa provider, and device RDMA where the instance supports it (p4, p5).
EFA_JOB_ENV: dict[str, str] = {"FI_PROVIDER": "efa"}
EFA_DEVICE_RDMA_ENV: dict[str, str] = {"FI_EFA_USE_DEVICE_RDMA": "1"}

#: NCCL environment of multi-node jobs per A3 machine type, as Cluster Toolkit's blueprints set
#: it: TCPX (A3 High) and TCPXO/FasTrak (A3 Mega) from
#: examples/machine-learning/a3-highgpu-8g/nccl-tests/run-nccl-tests.sh and
#: a3-megagpu-8g/nccl-tests/run-nccl-tests.sh (commit 1047080375afbb44da4b596be314634e7486af4a);
#: gIB (A3 Ultra) from a3-ultragpu-8g/nccl-tests/run-nccl-tests.sh (commit
#: c9ec0265044729f675562f19ed2845d08fca7251: ``NCCL_NET=gIB``, the two gVNIC interfaces as
#: ``NCCL_SOCKET_IFNAME``, /usr/local/gib/lib64 first on ``LD_LIBRARY_PATH``; the plugin's
#: tunables are in the image's /usr/local/gib/scripts/set_nccl_env.sh, which a job script
#: sources as the blueprint's does: the task prolog only sets variables).
#: ``${SLURM_JOB_ID}`` is expanded by the task prolog for each job.
PLUGIN_JOB_ENV: dict[str, dict[str, str]] = {
    "a3-highgpu-8g": {
        "NCCL_NET": "GPUDirectTCPX_v7",
        "NCCL_SOCKET_IFNAME": "enp0s12",
        "NCCL_GPUDIRECTTCPX_CTRL_DEV": "enp0s12",
        "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME": "enp6s0,enp12s0,enp134s0,enp140s0",
        "NCCL_CROSS_NIC": "0",
        "NCCL_ALGO": "Ring",
        "NCCL_PROTO": "Simple",
        "NCCL_NSOCKS_PERTHREAD": "4",
        "NCCL_SOCKET_NTHREADS": "1",
        "NCCL_DYNAMIC_CHUNK_SIZE": "524288",
        "NCCL_P2P_NET_CHUNKSIZE": "524288",
        "NCCL_P2P_PCI_CHUNKSIZE": "524288",
        "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
        "NCCL_BUFFSIZE": "4194304",
        "NCCL_NET_GDR_LEVEL": "PIX",
        "NCCL_P2P_PXN_LEVEL": "0",
        "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX": "/run/tcpx-${SLURM_JOB_ID}",
        "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS": "500000",
        "NCCL_GPUDIRECTTCPX_TX_BINDINGS": "enp6s0:8-21,112-125;enp12s0:8-21,112-125;"
        "enp134s0:60-73,164-177;enp140s0:60-73,164-177",
        "NCCL_GPUDIRECTTCPX_RX_BINDINGS": "enp6s0:22-35,126-139;enp12s0:22-35,126-139;"
        "enp134s0:74-87,178-191;enp140s0:74-87,178-191",
        "LD_LIBRARY_PATH": "/var/lib/tcpx/lib64:${LD_LIBRARY_PATH}",
    },
    "a3-megagpu-8g": {
        "NCCL_FASTRAK_CTRL_DEV": "enp0s12",
        "NCCL_FASTRAK_IFNAME": "enp6s0,enp7s0,enp13s0,enp14s0,enp134s0,enp135s0,enp141s0,enp142s0",
        "NCCL_SOCKET_IFNAME": "enp0s12",
        "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices",
        "LD_LIBRARY_PATH": "/var/lib/tcpxo/lib64:${LD_LIBRARY_PATH}",
    },
    "a3-ultragpu-8g": {
        "NCCL_NET": "gIB",
        "NCCL_SOCKET_IFNAME": "enp0s19,enp192s20",
        "LD_LIBRARY_PATH": "/usr/local/gib/lib64:/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH}",
    },
}


def efa_job_env(device_rdma: bool) -> dict[str, str]:
    """Every job's environment on an EFA instance; ``device_rdma`` where the type and the spec
    have GPUDirect RDMA (p4, p5)."""
    return EFA_JOB_ENV | (EFA_DEVICE_RDMA_ENV if device_rdma else {})


def plugin_job_env(machine_type: str) -> dict[str, str]:
    """Multi-node jobs' environment on an A3 machine type (empty for another type)."""
    return dict(PLUGIN_JOB_ENV.get(machine_type, {}))
