"""The GCP target's hand-off variables: the gcp_gpudirect role on A3 instances and the NCCL
environment GPUDirect-TCPX(O) jobs need (found by ``fabric.handoff.vars`` through the
registry)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabric.targets.gcp.catalog import gcp_machine
from fabric.targets.gcp.model import gpu_subnet_cidrs

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec


def role_vars(spec: ClusterSpec) -> dict[str, Any]:
    """GPU NICs of A3 instances (``kind: gcp-gpudirect``): per host (``railyard_gcp_gpudirect``,
    host -> settings: site.yml runs the gcp_gpudirect role on these hosts only) the GPU subnets
    (one VPC per NIC, the GCP component's ranges), MTU, machine type and transport, and on A3
    Ultra the RDMA stack for its ConnectX RoCE NICs (``railyard_roce_hosts``)."""
    gcp = spec.gcp
    if spec.fabric.kind != "gcp-gpudirect" or gcp is None:
        return {}
    hosts: dict[str, dict[str, Any]] = {}
    for host, group in spec.hosts.items():
        known = gcp_machine(group.instance_type or "")
        if group.role != "compute" or known is None or known.gpu_nics == 0:
            continue
        hosts[host] = {
            "gcp_gpudirect_machine_type": known.name,
            "gcp_gpudirect_transport": known.transport,
            "gcp_gpudirect_subnets": gpu_subnet_cidrs(gcp, known.gpu_nics),
            "gcp_gpudirect_mtu": known.gpu_nic_mtu
            if known.transport == "rdma-roce"
            else gcp.gpu_nic_mtu,
        }
    return {
        "railyard_gcp_gpudirect": hosts,
        "railyard_roce_hosts": sorted(
            h for h, v in hosts.items() if v["gcp_gpudirect_transport"] == "rdma-roce"
        ),
        # The RxDM's prolog/epilog runs through the slurm role's dispatchers.
        "slurm_prolog_epilog_dirs": any(
            v["gcp_gpudirect_transport"] in ("gpudirect-tcpx", "gpudirect-tcpxo")
            for v in hosts.values()
        ),
    }


#: NCCL environment of multi-node jobs per A3 machine type, the one place, as Cluster Toolkit's
#: blueprints set it: TCPX (A3 High) and TCPXO/FasTrak (A3 Mega) from
#: examples/machine-learning/a3-highgpu-8g/nccl-tests/run-nccl-tests.sh and
#: a3-megagpu-8g/nccl-tests/run-nccl-tests.sh (commit 1047080375afbb44da4b596be314634e7486af4a);
#: gIB (A3 Ultra) from a3-ultragpu-8g/nccl-tests/run-nccl-tests.sh (commit
#: c9ec0265044729f675562f19ed2845d08fca7251: ``NCCL_NET=gIB``, the two gVNIC interfaces as
#: ``NCCL_SOCKET_IFNAME``, /usr/local/gib/lib64 first on ``LD_LIBRARY_PATH``; the plugin's
#: tunables are in the image's /usr/local/gib/scripts/set_nccl_env.sh, which a job script
#: sources as the blueprint's does: the task prolog only sets variables).
#: ``${SLURM_JOB_ID}`` is expanded by the task prolog for each job.
TCPX_JOB_ENV = {
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


def job_environment(spec: ClusterSpec) -> dict[str, dict[str, dict[str, str]]]:
    """Per A3 compute host, the NCCL environment of multi-node jobs (TCPX(O) and gIB run only
    between nodes)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    if spec.fabric.kind != "gcp-gpudirect":
        return out
    for host, group in spec.hosts.items():
        machine = gcp_machine(group.instance_type or "")
        if group.role == "compute" and machine is not None and machine.name in TCPX_JOB_ENV:
            out[host] = {"all": {}, "multinode": dict(TCPX_JOB_ENV[machine.name])}
    return out
