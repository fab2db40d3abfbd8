"""munge and Slurm run; the declared nodes are idle with their GPUs; topology as declared."""

import os
import re

import pytest
import testinfra


def _groups(host):
    return host.ansible.get_variables()["group_names"]


def test_munge_is_running(host):
    assert host.service("munge").is_running


def test_munge_key_is_private_to_munge(host):
    key = host.file("/etc/munge/munge.key")
    assert key.user == "munge"
    assert key.mode == 0o400
    assert key.size >= 1024


def test_munge_credential_decodes_on_this_host(host):
    assert host.run("munge -n | unmunge").rc == 0


def test_munge_key_is_the_controllers(host):
    controller = testinfra.get_host(
        "ansible://ry-slurm-ctl", ansible_inventory=os.environ["MOLECULE_INVENTORY_FILE"]
    )
    path = "/etc/munge/munge.key"
    assert host.file(path).sha256sum == controller.file(path).sha256sum


def test_slurm_daemon_of_this_host_is_running(host):
    daemon = "slurmctld" if "slurm_controller" in _groups(host) else "slurmd"
    service = host.service(daemon)
    assert service.is_running
    assert service.is_enabled


def test_every_node_is_idle(host):
    out = host.check_output('sinfo --noheader --Node --format "%N %t"')
    states = dict(line.split() for line in out.splitlines())
    assert states == {"ry-slurm-c1": "idle", "ry-slurm-c2": "idle"}


@pytest.mark.parametrize("node", ["ry-slurm-c1", "ry-slurm-c2"])
def test_node_has_declared_gpus_and_cpus(host, node):
    out = host.check_output(f"scontrol show node {node}")
    assert re.search(r"\bGres=gpu:h100:8\b", out), out
    assert re.search(r"\bCPUTot=64\b", out), out


def test_topology_matches_the_declared_tree(host):
    out = host.check_output("scontrol show topology")
    assert re.search(r"SwitchName=leaf1 Level=0 .*Nodes=ry-slurm-c1\b", out), out
    assert re.search(r"SwitchName=leaf2 Level=0 .*Nodes=ry-slurm-c2\b", out), out
    assert re.search(r"SwitchName=spine1 Level=1 .*Switches=leaf\[1-2\]", out), out


def test_a_job_runs_on_a_gpu_node(host):
    if "slurm_controller" not in _groups(host):
        pytest.skip("submitted once, from the controller")
    out = host.check_output("srun -N1 --gres=gpu:h100:1 -t 1 hostname")
    assert out.strip() in {"ry-slurm-c1", "ry-slurm-c2"}


def test_job_environment_from_the_task_prolog(host):
    """Every step gets slurm_job_environment; only multi-node jobs get the multinode variables,
    with the job's own id expanded; the prolog dispatcher ran the dropped script."""
    if "slurm_controller" not in _groups(host):
        pytest.skip("submitted once, from the controller")
    one = host.check_output("srun -N1 -t 1 env")
    assert "FI_PROVIDER=efa" in one.splitlines()
    assert "FI_EFA_USE_DEVICE_RDMA=1" in one.splitlines()
    assert "RAILYARD_TEST_UDS_PATH=" not in one
    two = host.check_output(
        "srun -N2 -t 1 sh -c 'echo $SLURM_JOB_ID $RAILYARD_TEST_UDS_PATH' | sort -u"
    )
    job, path = two.split()
    assert path == f"/run/tcpx-{job}"


def test_prolog_dispatcher_ran_the_dropped_script(host):
    if "compute" not in _groups(host):
        pytest.skip("slurmd runs the prolog on compute nodes")
    node = host.backend.get_hostname()
    job = host.check_output(f"srun -N1 -w {node} -t 1 sh -c 'echo $SLURM_JOB_ID'").strip()
    record = host.file("/var/tmp/railyard-prolog-record")
    assert record.exists, "the prolog dispatcher did not run /etc/slurm/prolog.d/10-record"
    assert f"prolog_slurmd {job}" in record.content_string.splitlines()
