"""A spec of N hosts for ``check --plan``: the DGX H100 example (examples/dgx-h100-ib.yaml)
scaled: 8 GPUs and 8 NDR HCAs per host, one per rail, a rail-optimized fat tree of scalable
units of 32 hosts (8 rail leaves each), a head node running the SM and Slurm."""

from __future__ import annotations

import ipaddress

UNIT = 32  # hosts per scalable unit: 32 down-ports per 64-port rail leaf
RAILS = 8


def spec_text(hosts: int) -> str:
    """The spec's YAML for ``hosts`` compute hosts (a multiple of 32)."""
    units = -(-hosts // UNIT)
    leaves = units * RAILS
    spines = max(1, leaves // 2)
    width = len(str(hosts))
    net = ipaddress.ip_network("10.0.0.0/8")
    ssh = "\n".join(f"    dgx{i:0{width}d}: {net[i + 256]}" for i in range(1, hosts + 1))
    hcas = "\n".join(f"      - {{device: mlx5_{r}, rail: {r}}}" for r in range(RAILS))
    return f"""name: plan-{hosts}
target: existing
nodes:
  - names: dgx[{1:0{width}d}-{hosts:0{width}d}]
    role: compute
    gpus: 8
    gpu_type: h100
    hcas:
{hcas}
  - names: head1
    role: controller
    hcas:
      - {{device: mlx5_0}}
fabric:
  kind: infiniband
  mtu: 4096
  topology:
    kind: fat-tree
    leaves: {leaves}
    spines: {spines}
    ports_per_switch: 64
    nodes_per_leaf: {UNIT + 1}
    uplinks_per_leaf: 31
    rail_optimized: true
  infiniband:
    subnet_managers:
      - {{host: head1, priority: 14}}
management:
  subnet: 10.0.0.0/8
  ssh_user: root
slurm:
  controller: head1
  partitions:
    - {{name: gpu, nodes: "dgx[{1:0{width}d}-{hosts:0{width}d}]", default: true}}
existing:
  ssh:
{ssh}
    head1: 10.0.0.2
"""
