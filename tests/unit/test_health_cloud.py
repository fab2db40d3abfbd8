"""The Slurm health program on cloud instances (issue 27): its configuration from the AWS and GCP
examples (the catalog's EFA devices, the A3 GPU NICs, the GPUDirect paths that serve each), and
the program's cloud checks judging a sysfs tree and a real ``ip -j addr`` capture of A3 High's
NICs (tests/fixtures/ip_addr_json__a3high_netns__1.json)."""

from __future__ import annotations

import json
from pathlib import Path

from fabric.handoff.health import health_configs
from fabric.handoff.vars import HEALTH_PROGRAM, role_vars_from_spec
from fabric.model.cluster import ClusterModel
from fabric.model.gpus import GPUDIRECT_PATHS
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.verify import health

IP_JSON = (REPO_ROOT / "tests/fixtures/ip_addr_json__a3high_netns__1.json").read_text()
A3_SUBNETS = ["198.19.0.0/20", "198.19.16.0/20", "198.19.32.0/20", "198.19.48.0/20"]


def test_cloud_examples_get_a_health_check_on_every_compute_node() -> None:
    aws = load_spec(REPO_ROOT / "Pulumi.aws-efa.example.yaml")
    configs = health_configs(ClusterModel(aws))
    assert sorted(configs) == sorted(aws.hosts_with_role("compute"))
    assert configs["gpu01"]["efa"] == {"devices": 32}
    assert configs["gpu01"]["gpudirect"] == GPUDIRECT_PATHS
    high = health_configs(ClusterModel(load_spec(REPO_ROOT / "Pulumi.gcp-a3-high.example.yaml")))
    first = next(iter(high.values()))
    assert len(first["gpu_nics"]["subnets"]) == 4 and first["gpu_nics"]["mtu"] == 8244
    assert first["gpudirect"] == []  # TCPX: no peer memory
    ultra = health_configs(ClusterModel(load_spec(REPO_ROOT / "Pulumi.gcp-a3-ultra.example.yaml")))
    assert next(iter(ultra.values()))["gpudirect"] == ["dma-buf", "nvidia_peermem"]
    got = role_vars_from_spec(aws)
    assert got["slurm_extra_config"]["HealthCheckProgram"] == HEALTH_PROGRAM


def test_gpu_nodes_get_their_declared_gpu_count_and_lab_nodes_none() -> None:
    """The GPU fitness checks read ``gpu.gpus``: the catalog's count on a cloud instance, the
    node group's on bare metal; the lab's nodes have no GPU to check."""
    aws = health_configs(ClusterModel(load_spec(REPO_ROOT / "Pulumi.aws-efa.example.yaml")))
    assert aws["gpu01"]["gpu"] == {"gpus": 8}  # p5.48xlarge
    dgx = load_spec(REPO_ROOT / "examples/dgx-h100-ib.yaml")
    configs = health_configs(ClusterModel(dgx))
    assert configs
    for host, config in configs.items():  # the GPU count, the HCAs' PCIe links, ACS and IOMMU
        group = dgx.hosts[host]
        assert config["gpu"] == {
            "gpus": group.gpus,
            "hcas": [hca.device for hca in group.hcas],
            "gpudirect_pcie": True,
        }
    lab = health_configs(ClusterModel(load_spec(REPO_ROOT / "Pulumi.lab.yaml")))
    assert lab and not any("gpu" in c for c in lab.values())


def _checker(tmp_path: Path, config: dict, ip_json: str = IP_JSON) -> health.Checker:
    checker = health.Checker(config | {"node": "n1", "ports": []}, tmp_path / "state.json")
    checker._run = lambda argv: (0, ip_json)  # the captured ip -j -4 addr show
    return checker


def _sysfs(root: Path, devices: dict[str, tuple[str, str]]) -> Path:
    for name, (vendor, device) in devices.items():
        (root / "bus/pci/devices" / name).mkdir(parents=True)
        (root / "bus/pci/devices" / name / "vendor").write_text(vendor + "\n")
        (root / "bus/pci/devices" / name / "device").write_text(device + "\n")
    return root


def test_efa_devices_counted_from_sysfs(tmp_path: Path) -> None:
    sysfs = _sysfs(
        tmp_path / "sys",
        {
            "0000:10:00.0": ("0x1d0f", "0xefa1"),
            "0000:20:00.0": ("0x1d0f", "0xefa1"),
            "0000:00:05.0": ("0x1d0f", "0xec20"),  # the ENA primary
        },
    )
    good = _checker(tmp_path, {"efa": {"devices": 2, "sysfs": str(sysfs)}})
    assert good.check() == []
    bad = _checker(tmp_path, {"efa": {"devices": 32, "sysfs": str(sysfs)}})
    assert bad.check() == ["2 EFA devices, the instance type has 32"]


def test_an_unreadable_sysfs_file_is_a_harness_error_not_a_drain(tmp_path: Path) -> None:
    """A PCI device whose sysfs ``device`` file cannot be read may be the missing EFA:
    nothing was learnt, so one device short is a harness error (never a drain)."""
    sysfs = _sysfs(tmp_path / "sys", {"0000:10:00.0": ("0x1d0f", "0xefa1")})
    (sysfs / "bus/pci/devices/0000:20:00.0").mkdir()  # no vendor/device file to read
    checker = _checker(tmp_path, {"efa": {"devices": 2, "sysfs": str(sysfs)}})
    assert checker.check() == []
    assert checker.harness_errors == [
        "1 EFA devices readable, the instance type has 2; sysfs not readable for "
        "0000:20:00.0: No such file or directory"
    ]


def test_gpu_nics_judged_on_a_real_capture(tmp_path: Path) -> None:
    assert _checker(tmp_path, {"gpu_nics": {"subnets": A3_SUBNETS, "mtu": 8244}}).check() == []
    wrong_mtu = _checker(tmp_path, {"gpu_nics": {"subnets": A3_SUBNETS, "mtu": 8896}})
    assert wrong_mtu.check()[0] == "enp6s0 MTU 8244, declared 8896 (198.19.0.0/20)"
    one_more = _checker(
        tmp_path, {"gpu_nics": {"subnets": [*A3_SUBNETS, "198.19.64.0/20"], "mtu": 8244}}
    )
    assert one_more.check() == ["no GPU NIC has an address in 198.19.64.0/20"]
    garbled = _checker(tmp_path, {"gpu_nics": {"subnets": A3_SUBNETS, "mtu": 8244}}, "oops")
    assert garbled.check() == [] and garbled.harness_errors[0].startswith(
        "ip -j addr printed no JSON"
    )


def test_gpudirect_path_needs_the_open_module_for_dma_buf() -> None:
    here = Path("/proc/driver/nvidia/version")
    assert health.gpudirect_path("dma-buf") is (
        here.exists() and "Open Kernel Module" in here.read_text()
    )
    assert health.gpudirect_path("nvidia_peermem") is Path("/sys/module/nvidia_peermem").exists()


def test_the_program_runs_a_cloud_config_here(tmp_path: Path) -> None:
    """The installed program (standard library only) with an EFA config on this machine, which
    has no EFA device: exit 1 naming the count, nothing drained (--check)."""
    import subprocess
    import sys

    config = tmp_path / "health.json"
    config.write_text(json.dumps({"node": "n1", "ports": [], "efa": {"devices": 4}}))
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "fabric/verify/health.py"), "--check", "--config",
         str(config), "--state", str(tmp_path / "s.json")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "0 EFA devices, the instance type has 4" in done.stdout + done.stderr
