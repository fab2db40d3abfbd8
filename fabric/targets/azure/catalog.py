"""The Azure target's catalog: the ND v5 GPU sizes, their InfiniBand, and the NCCL settings Azure
ships for them.

A small, hand-kept table. A size that is missing here is unknown: add it with its source.
Sources (public documentation):

- ND H100 v5 (``Standard_ND96isr_H100_v5``): "8 NVIDIA H100 Tensor Core GPUs ... Each GPU
  within the VM is provided with its own dedicated, topology-agnostic 400 Gb/s NVIDIA Quantum-2
  CX7 InfiniBand connection. These connections are automatically configured between VMs
  occupying the same virtual machine scale set ... Each GPU features NVLINK 4.0" —
  MicrosoftDocs/azure-docs articles/virtual-machines/sizes/gpu-accelerated/includes/
  nd-h100-v5-series-summary.md (https://learn.microsoft.com/azure/virtual-machines/sizes/
  gpu-accelerated/ndh100v5-series).
- ND H200 v5 (``Standard_ND96isr_H200_v5``): "eight NVIDIA H200 Tensor Core GPUs,
  interconnected with 900 GB/s NVLink ... its own dedicated, topology-agnostic 400 Gb/s NVIDIA
  Quantum-2 CX7 InfiniBand connection ... between VMs occupying the same virtual machine scale
  set" — azure-compute-docs articles/virtual-machines/sizes/gpu-accelerated/includes/
  nd-h200-v5-series-summary.md (https://learn.microsoft.com/azure/virtual-machines/sizes/
  gpu-accelerated/ndh200v5-series).
- The InfiniBand device names on Azure's HPC images: ``mlx5_ib0`` ... ``mlx5_ib7`` (and
  ``mlx5_an0`` for the accelerated-networking Ethernet VF): the image's
  ``azure_persistent_rdma_naming`` service renames every InfiniBand device ``mlx5_ib<n>`` —
  Azure/azhpc-images common/install_azure_persistent_rdma_naming.sh (commit
  1a39accdc2b34777744e8bbb03d92222d3f66384), run by ubuntu/ubuntu-22.x/ubuntu-22.04-hpc/
  install.sh (commit 6e023b3f3ac9d9da129b77e557c28a710610b7e7).

Regions: Azure's size pages list no regions, and no authoritative per-region list was found, so
the catalog names none and the rules do not judge ``azure.location`` against the size (Azure
refuses a size a region lacks at create time: ``SkuNotAvailable``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AzureVmSize:
    """An Azure VM size: its GPUs, NVLink, and its InfiniBand ports (one per GPU)."""

    name: str
    gpus: int
    gpu_type: str
    ib_ports: int
    ib_rate_gbps: int
    nvlink: str
    #: The NCCL topology file Azure's HPC image links for this size (None: none documented).
    nccl_topology: str | None = None

    @property
    def ib_devices(self) -> tuple[str, ...]:
        """The InfiniBand devices as the HPC image names them (``mlx5_ib0`` ...)."""
        return tuple(f"mlx5_ib{n}" for n in range(self.ib_ports))


#: The ND v5 topology file as Azure's HPC image installs it: customizations/ndv5.sh links
#: /opt/microsoft/ndv5-topo.xml to /opt/microsoft/ndv5/topo.xml and names the latter in
#: /etc/nccl.conf (Azure/azhpc-images commit bf3b320e29229de358ec80c4a89980bb0b2a8614).
NDV5_TOPOLOGY = "/opt/microsoft/ndv5/topo.xml"

_AZURE: tuple[AzureVmSize, ...] = (
    AzureVmSize(
        "Standard_ND96isr_H100_v5",
        gpus=8,
        gpu_type="h100",
        ib_ports=8,
        ib_rate_gbps=400,
        nvlink="NVLink 4.0",
        nccl_topology=NDV5_TOPOLOGY,
    ),
    AzureVmSize(
        "Standard_ND96isr_H200_v5",
        gpus=8,
        gpu_type="h200",
        ib_ports=8,
        ib_rate_gbps=400,
        nvlink="NVLink 4.0 (900 GB/s)",
        nccl_topology=NDV5_TOPOLOGY,
    ),
)


def azure_size(size: str) -> AzureVmSize | None:
    """The catalog entry for an Azure VM size, or None when it is not listed."""
    return next((t for t in _AZURE if t.name == size), None)


def azure_ib_sizes() -> list[str]:
    """Names of the listed InfiniBand GPU sizes, for error messages."""
    return [t.name for t in _AZURE]


#: The target's machine lookup (shared code asks ``hook(target, "catalog", "machine")``).
machine = azure_size

#: The NCCL settings Azure's Ubuntu-HPC image writes to /etc/nccl.conf on ND v5 (which NCCL
#: reads by itself): Azure/azhpc-images customizations/ndv5.sh (commit
#: bf3b320e29229de358ec80c4a89980bb0b2a8614): ``NCCL_IB_PCI_RELAXED_ORDERING=1``,
#: ``NCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml``, ``NCCL_IGNORE_CPU_AFFINITY=1``.
NDV5_NCCL_CONF: dict[str, str] = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_TOPO_FILE": NDV5_TOPOLOGY,
    "NCCL_IGNORE_CPU_AFFINITY": "1",
}

#: What Azure's Ubuntu 22.04 HPC image README runs NCCL tests with besides: the GPUs in PCI
#: order (the topology file's order) and NCCL's bootstrap on the Ethernet NIC ``eth0``
#: (Azure/azhpc-images ubuntu/ubuntu-22.x/ubuntu-22.04-hpc/README.md, commit
#: e57b06542fc2f0786812afef481e85f14db9608f: ``-x CUDA_DEVICE_ORDER=PCI_BUS_ID -x
#: NCCL_SOCKET_IFNAME=eth0``). ``UCX_IB_PCI_RELAXED_ORDERING`` is left out: no Azure document
#: found sets it for ND v5 (it serves UCX/MPI, not NCCL).
NDV5_JOB_ENV: dict[str, str] = {
    **NDV5_NCCL_CONF,
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "NCCL_SOCKET_IFNAME": "eth0",
}

# No ``NCCL_ENV`` here on purpose: ``fabric.verify.nccl_run`` keys it by fabric kind, and
# ``infiniband`` is every InfiniBand target's kind (a bare-metal DGX would get Azure's topology
# file). The nccl checks' runs get these settings from the image's /etc/nccl.conf, which NCCL
# reads in every process; the jobs get NDV5_JOB_ENV from the task prolog (handoff.py).
