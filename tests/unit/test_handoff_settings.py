"""How the hand-off runs Ansible (fabric.handoff.runner.AnsibleSettings), seen by real plays:
forks sized to the inventory and capped in the lab, pipelining, Mitogen's strategies, and facts
gathered once and cached in the stack's state folder (emptied when the inventory changes,
removed with it)."""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from localplay import local_stack
from taskfiles import TASK_FILES, tasks_in

from fabric.handoff.runner import (
    MAX_FORKS,
    AnsibleSettings,
    handoff_settings,
    inventory_host_count,
    remove_handoff_files,
    run_playbook,
    write_inventory,
)
from fabric.state import StateLayout

#: Writes what Ansible ran with, after gathering the minimum of facts (a strategy Ansible cannot
#: load fails the play before any task).
PLAYBOOK = """\
- name: Report the settings
  hosts: all
  gather_facts: true
  gather_subset: ["!all"]
  tasks:
    - name: Write forks, pipelining and the fact the gathering found
      ansible.builtin.copy:
        content: >-
          {{ ansible_forks }} {{ lookup('ansible.builtin.config', 'ANSIBLE_PIPELINING') }}
          {{ lookup('ansible.builtin.config', 'DEFAULT_STRATEGY') }} {{ ansible_facts['system'] }}
        dest: "{{ out }}"
        mode: "0600"
"""


def _run(tmp_path: Path, settings: AnsibleSettings | None = None):
    return run_playbook(
        tmp_path / "book.yml",
        stack="t",
        emit=lambda _: None,
        state_root=tmp_path / "state",
        artifacts_root=tmp_path / "artifacts",
        settings=settings,
    )


def test_forks_follow_the_inventory_in_the_lab_too(tmp_path: Path) -> None:
    layout = StateLayout("t", tmp_path)
    layout.dir.mkdir(parents=True)
    count = 14  # more than ibsim's 10 client slots: the lab's shim queues for them
    hosts = {f"n{i}": {} for i in range(count)}
    layout.inventory.write_text(
        yaml.safe_dump({"all": {"children": {"a": {"hosts": hosts}, "b": {"hosts": {"n0": {}}}}}})
    )
    assert inventory_host_count(layout.inventory) == count
    assert handoff_settings("t", tmp_path).forks == count
    assert AnsibleSettings.railyard(5000, tmp_path).forks == MAX_FORKS
    assert AnsibleSettings.railyard(2, tmp_path).forks == 2


def test_railyard_settings_reach_ansible_and_cache_facts(tmp_path: Path) -> None:
    _, out = local_stack(tmp_path, PLAYBOOK)
    first = _run(tmp_path)
    assert first.ok, first.summary()
    assert out.read_text().split() == ["1", "True", "mitogen_linear", "Linux"]
    cache = StateLayout("t", tmp_path / "state").fact_cache
    assert [p.name for p in cache.iterdir()] == ["s1_a"]  # jsonfile's name for host a
    second = _run(tmp_path)
    assert second.ok, second.summary()
    # The second run gathers nothing: one task instead of facts + task.
    assert (first.hosts["a"].ok + first.hosts["a"].changed) == 2
    assert (second.hosts["a"].ok + second.hosts["a"].changed) == 1


def test_stock_settings_gather_every_run_and_cache_nothing(tmp_path: Path) -> None:
    _, out = local_stack(tmp_path, PLAYBOOK)
    for _ in range(2):
        result = _run(tmp_path, AnsibleSettings.stock())
        assert result.ok, result.summary()
        assert result.hosts["a"].ok + result.hosts["a"].changed == 2
    assert out.read_text().split() == ["5", "False", "linear", "Linux"]
    assert not StateLayout("t", tmp_path / "state").fact_cache.exists()
    assert not list((tmp_path / "artifacts").rglob("fact_cache"))
    assert AnsibleSettings.stock().extra_vars() == {
        "railyard_strategy": "linear",
        "railyard_gather_subset": ["all"],
    }


def test_strategies_name_mitogens_unless_it_is_off(tmp_path: Path) -> None:
    assert AnsibleSettings.railyard(3, tmp_path).extra_vars() == {}  # site.yml's own choice
    assert AnsibleSettings.railyard(3, tmp_path).env()["ANSIBLE_STRATEGY"] == "mitogen_linear"
    free = AnsibleSettings(forks=1, pipelining=True, strategy="free")
    assert free.extra_vars() == {"railyard_strategy": "mitogen_free"}
    plain = AnsibleSettings(forks=1, pipelining=True, mitogen=False)
    assert plain.extra_vars() == {"railyard_strategy": "free"}
    assert plain.env()["ANSIBLE_STRATEGY"] == "linear"


def test_a_changed_inventory_empties_the_cache_and_removal_takes_it(tmp_path: Path) -> None:
    layout = StateLayout("t", tmp_path)
    write_inventory("t", "all: {}\n", tmp_path)
    layout.fact_cache.mkdir()
    (layout.fact_cache / "gpu01").write_text("{}")
    write_inventory("t", "all: {}\n", tmp_path)
    assert (layout.fact_cache / "gpu01").is_file()
    write_inventory("t", "all: {hosts: {gpu01: {}}}\n", tmp_path)
    assert not layout.fact_cache.exists()
    layout.fact_cache.mkdir()
    (layout.fact_cache / "gpu01").write_text("{}")
    removed = remove_handoff_files("t", tmp_path)
    assert layout.fact_cache / "gpu01" in removed
    assert not layout.fact_cache.exists()


def test_check_workers_are_sized_to_the_hosts_checked() -> None:
    from fabric.verify.runner import MAX_WORKERS, max_workers, workers_for

    # this machine's 2 cores: at most 8 workers
    assert [workers_for(n, cores=2) for n in (1, 7, 11, 19, 35)] == [2, 2, 3, 5, 8]
    assert workers_for(10_000, cores=2) == 8
    # a 16-core controller: 4 workers per core, 64 at most
    assert workers_for(2048, cores=16) == max_workers(16) == MAX_WORKERS == 64
    assert workers_for(100, cores=16) == 25


CONTROL_DIR = """\
- name: Report the ssh control path directory
  hosts: all
  gather_facts: false
  tasks:
    - name: Append the directory ssh connections would share their masters in
      ansible.builtin.lineinfile:
        path: "{{ out }}"
        line: "{{ lookup('ansible.builtin.config', 'control_path_dir', plugin_type='connection', plugin_name='ssh') }}"
        create: true
        mode: "0600"
"""


def test_each_run_gets_its_own_ssh_control_path_directory(tmp_path: Path) -> None:
    """A master connection kept open by an earlier run (ControlPersist) is never reused: it
    would carry the next run past a host key that changed in between."""
    _, out = local_stack(tmp_path, CONTROL_DIR)
    for _ in range(2):
        result = _run(tmp_path)
        assert result.ok, result.summary()
    first, second = out.read_text().split()
    assert first != second
    assert Path(first).name.startswith("ry-cp-") and not Path(first).exists()


def test_modules_that_read_the_hca_run_in_a_child_of_their_own() -> None:
    # A role module that reads /sys/class/infiniband, run in Mitogen's long-lived interpreter,
    # would keep what it opened for the whole run (in the lab: an ibsim client slot, and the
    # 11-node lab's sminfo waited for one until stopped). Each such task forks under Mitogen.
    root = Path(__file__).resolve().parents[2]
    readers = {
        path.stem
        for path in root.glob("roles/*/library/*.py")
        if "class/infiniband" in path.read_text()
    }
    assert readers, "no role module reads /sys/class/infiniband: this test lost its subject"
    found = []
    for tasks_file in TASK_FILES:
        for task in tasks_in(yaml.safe_load(tasks_file.read_text())):
            for module in readers & set(task):
                found.append(module)
                isolation = (task.get("vars") or {}).get("mitogen_task_isolation")
                assert isolation == "fork", f"{tasks_file}: {task.get('name')} runs {module}"
    assert found, f"no task runs {sorted(readers)}"


def test_a_hung_task_fails_naming_itself_within_the_task_timeout(tmp_path: Path) -> None:
    # ansible.cfg bounds every task (task_timeout); ANSIBLE_TASK_TIMEOUT, as Ansible reads it,
    # overrides it: a task past it is stopped under Mitogen too and the run goes on to the recap.
    config = (Path(__file__).resolve().parents[2] / "ansible.cfg").read_text()
    assert "\ntask_timeout = 3600\n" in config
    local_stack(
        tmp_path,
        "- name: Hang\n  hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - name: Sleep past the bound\n      ansible.builtin.command: sleep 120\n"
        "      changed_when: false\n",
    )
    started = time.monotonic()
    result = run_playbook(
        tmp_path / "book.yml",
        stack="t",
        emit=lambda _: None,
        state_root=tmp_path / "state",
        artifacts_root=tmp_path / "artifacts",
        extra_env={"ANSIBLE_TASK_TIMEOUT": "3"},
    )
    assert time.monotonic() - started < 60
    assert not result.ok
    summary = result.summary()
    assert "Sleep past the bound failed: Task failed: Timed out after 3 second" in summary, summary
