"""node_health: the program, its modules and configuration are installed; it judges the
declared port (absent here: no HCA) and names it; a bad configuration is one line."""

import json


def test_program_and_modules_installed(host):
    program = host.file("/usr/local/sbin/railyard-health")
    assert program.exists and program.mode == 0o755
    for name in ("health.py", "counters.py", "health_gpu.py"):
        assert host.file(f"/usr/local/lib/railyard/{name}").exists
    for name in ("dmesg_xid.py", "nvidia_smi_q.py", "nvidia_smi_nvlink.py", "errors.py"):
        assert host.file(f"/usr/local/lib/railyard/fabric/parsers/{name}").exists


def test_gpu_part_imports_with_the_system_python(host):
    """health_gpu.py's parsers resolve from the installed tree (no railyard package here)."""
    result = host.run(
        "cd /usr/local/lib/railyard && /usr/bin/python3 -c "
        "'import health_gpu; print(health_gpu.nvidia_smi_q.__file__)'"
    )
    assert result.rc == 0, result.stderr
    assert result.stdout.strip() == "/usr/local/lib/railyard/fabric/parsers/nvidia_smi_q.py"


def test_configuration_is_the_declared_port(host):
    config = json.loads(host.file("/etc/railyard/health.json").content_string)
    assert config["node"] == "gpu01"
    assert [(p["device"], p["port"], p["cable"]) for p in config["ports"]] == [
        ("mlx5_0", 1, "leaf01 p1")
    ]


def test_check_names_the_unreadable_port(host):
    result = host.run("/usr/local/sbin/railyard-health --check --json")
    assert result.rc == 3, result.stderr  # unreadable: a harness error, never a drain
    out = json.loads(result.stdout)
    assert out["failures"] == []
    assert out["harness_errors"][0].startswith("mlx5_0/1 not readable (leaf01 p1)")
    assert out["action"] == "checked only"


def test_bad_configuration_is_one_line_and_exit_2(host):
    result = host.run("/usr/bin/python3 /usr/local/lib/railyard/health.py --config /nonexistent")
    assert result.rc == 2
    assert result.stderr.strip().count("\n") == 0
    assert "/nonexistent: cannot read it" in result.stderr


def test_gpu_slow_path_prolog_is_installed(host):
    script = host.file("/etc/slurm/prolog.d/60-railyard-health-gpu")
    assert script.exists and script.mode == 0o755 and script.user == "root"
    assert "/usr/local/sbin/railyard-health --slow" in script.content_string


def test_slow_path_without_nccl_tests_is_a_harness_error(host):
    """No nccl-tests (and no GPU) here: the slow path says so as a harness error, never as a
    bandwidth below its floor."""
    result = host.run("/usr/local/sbin/railyard-health --slow --check --json")
    report = json.loads(result.stdout)
    assert any(
        e.startswith("nccl-tests: /opt/railyard/nccl-tests/bin/all_reduce_perf")
        for e in report["harness_errors"]
    ), report
    assert not any("busbw" in f for f in report["failures"]), report


def test_if_drained_runs_nothing_on_a_node_railyard_did_not_drain(host):
    """What a converge runs after a repair: here no slurmctld answers, so nothing runs."""
    result = host.run("/usr/local/sbin/railyard-health --if-drained")
    assert result.rc == 0, result.stderr
    assert "not drained by railyard" in result.stdout and "nothing to do" in result.stdout


def test_api_server_token_is_root_only_and_the_ca_beside_it(host):
    token = host.file("/etc/railyard/kube-token")
    assert token.exists and token.mode == 0o600 and token.user == "root"
    assert token.content_string == "molecule-placeholder-token\n"
    ca = host.file("/etc/railyard/kube-ca.crt")
    assert ca.exists and ca.mode == 0o644
    assert ca.content_string.startswith("-----BEGIN CERTIFICATE-----")


def test_timer_runs_the_program_where_no_slurmd_does(host):
    """node_health_timer_interval: railyard-health.timer, enabled and active, every 3600 s; it
    ran the program once at its start (unreadable port: a harness error, so no scontrol)."""
    timer = host.service("railyard-health.timer")
    assert timer.is_enabled and timer.is_running
    unit = host.file("/etc/systemd/system/railyard-health.timer").content_string
    assert "OnUnitActiveSec=3600s" in unit
    service = host.file("/etc/systemd/system/railyard-health.service").content_string
    assert "ExecStart=/usr/local/sbin/railyard-health" in service
    log = host.run("journalctl -u railyard-health.service --no-pager -o cat")
    assert "harness error" in log.stdout, log.stdout
    assert "scontrol" not in log.stdout
