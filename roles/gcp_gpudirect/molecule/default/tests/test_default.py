"""GPU NICs at their MTU with a route each; the RxDM prolog where GPUDirect-TCPX(O) is used."""

from __future__ import annotations

import ipaddress
import os

import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = RUNNER.get_hosts("all")


def _vars(host) -> dict:
    return RUNNER.get_variables(host.backend.get_hostname())


def test_every_gpu_nic_has_the_mtu(host) -> None:
    v = _vars(host)
    for nic in v["test_nics"]:
        mtu = host.file(f"/sys/class/net/{nic}/mtu").content_string.strip()
        assert mtu == str(v["gcp_gpudirect_mtu"]), f"{nic}: MTU {mtu}"


def test_each_subnet_is_routed_through_its_nic_and_gateway(host) -> None:
    v = _vars(host)
    nets = [ipaddress.IPv4Network(s) for s in v["gcp_gpudirect_subnets"]]
    for nic, address in v["test_nics"].items():
        (net,) = [n for n in nets if ipaddress.IPv4Address(address) in n]
        subnet, gateway = str(net), net.network_address + 1
        route = host.check_output(f"ip -4 route show {subnet}")
        assert f"via {gateway} dev {nic}" in route, route


def test_script_finds_nothing_to_change_and_runs_at_boot(host) -> None:
    assert host.run("/usr/local/libexec/railyard/gpu-nics --check").rc == 0
    assert host.service("railyard-gpu-nics.service").is_enabled


def test_script_restores_a_changed_mtu(host) -> None:
    """The boot script really sets the MTU: break one NIC, --check sees it, a run fixes it."""
    v = _vars(host)
    nic = next(iter(v["test_nics"]))
    host.check_output(f"ip link set dev {nic} mtu 1460")
    check = host.run("/usr/local/libexec/railyard/gpu-nics --check")
    assert check.rc == 1 and f"{nic}: MTU 1460" in check.stdout
    host.check_output("/usr/local/libexec/railyard/gpu-nics")
    assert host.file(f"/sys/class/net/{nic}/mtu").content_string.strip() == str(
        v["gcp_gpudirect_mtu"]
    )


def test_rxdm_prolog_where_tcpx_is_used(host) -> None:
    v = _vars(host)
    script = host.file("/usr/local/libexec/railyard/rxdm")
    prolog = host.file("/etc/slurm/prolog.d/50-rxdm")
    if v["gcp_gpudirect_transport"] == "rdma-roce":
        assert not script.exists and not prolog.exists
        return
    assert script.mode == 0o755
    assert host.run("bash -n /usr/local/libexec/railyard/rxdm").rc == 0
    for kind in ("prolog", "epilog"):
        link = host.file(f"/etc/slurm/{kind}.d/50-rxdm")
        assert link.is_symlink and link.linked_to == "/usr/local/libexec/railyard/rxdm"
    image = "gpudirect-tcpx/" if v["gcp_gpudirect_transport"] == "gpudirect-tcpx" else "tcpxo/"
    assert image in script.content_string
    rxq = host.file("/opt/tcpdirect_benchmark/gpu_rxq_configuration.textproto")
    assert rxq.exists == (v["gcp_gpudirect_transport"] == "gpudirect-tcpx")


def test_rxdm_prolog_skips_single_node_jobs(host) -> None:
    """As Google's script does: a one-node job starts no RxDM (exits 0 before touching docker)."""
    if _vars(host)["gcp_gpudirect_transport"] == "rdma-roce":
        return
    run = host.run(
        "env SLURM_JOB_NUM_NODES=1 SLURM_SCRIPT_CONTEXT=prolog_slurmd SLURM_JOB_ID=7 "
        "/usr/local/libexec/railyard/rxdm"
    )
    assert run.rc == 0 and run.stdout == ""
