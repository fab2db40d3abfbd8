"""node_health: the program, its modules and configuration are installed; it judges the
declared port (absent here: no HCA) and names it; a bad configuration is one line."""

import json


def test_program_and_modules_installed(host):
    program = host.file("/usr/local/sbin/railyard-health")
    assert program.exists and program.mode == 0o755
    for name in ("health.py", "counters.py"):
        assert host.file(f"/usr/local/lib/railyard/{name}").exists


def test_configuration_is_the_declared_port(host):
    config = json.loads(host.file("/etc/railyard/health.json").content_string)
    assert config["node"] == "gpu01"
    assert [(p["device"], p["port"], p["cable"]) for p in config["ports"]] == [
        ("mlx5_0", 1, "leaf01 p1")
    ]


def test_check_names_the_unreadable_port(host):
    result = host.run("/usr/local/sbin/railyard-health --check --json")
    assert result.rc == 1, result.stderr
    out = json.loads(result.stdout)
    assert out["failures"][0].startswith("mlx5_0/1 not readable (leaf01 p1)")
    assert out["action"] == "checked only"


def test_bad_configuration_is_one_line_and_exit_2(host):
    result = host.run("/usr/bin/python3 /usr/local/lib/railyard/health.py --config /nonexistent")
    assert result.rc == 2
    assert result.stderr.strip().count("\n") == 0
    assert "/nonexistent: cannot read it" in result.stderr
