"""The event summary: on events of a real ansible-runner run (localhost, local connection),
and on hand-written edge cases of the event format."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.handoff.runner import run_playbook
from fabric.handoff.summary import MESSAGE_LIMIT, EventSummary, HostCounts
from fabric.handoff.vars import HandoffError

PLAYBOOK = """\
- name: Exercise the summary
  hosts: all
  gather_facts: false
  tasks:
    - name: An unchanged task
      ansible.builtin.command: "true"
      changed_when: false
    - name: A changed task
      ansible.builtin.command: "true"
    - name: A skipped task
      ansible.builtin.debug:
        msg: never
      when: false
    - name: A failing task on b only
      ansible.builtin.command: sh -c 'echo broke on purpose >&2; exit 3'
      when: inventory_hostname == 'b'
    - name: A last task that b never reaches
      ansible.builtin.command: "true"
      changed_when: false
"""

INVENTORY = """\
all:
  hosts:
    a: {}
    b: {}
  vars:
    ansible_connection: local
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
"""


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("handoff")
    (root / "state" / "t").mkdir(parents=True)
    (root / "state" / "t" / "inventory.yml").write_text(INVENTORY)
    book = root / "book.yml"
    book.write_text(PLAYBOOK)
    lines: list[str] = []
    result = run_playbook(
        book,
        stack="t",
        emit=lines.append,
        state_root=root / "state",
        artifacts_root=root / "artifacts",
    )
    return result, lines, root


def test_failed_run_is_not_ok(real_run):
    result, _, _ = real_run
    assert not result.ok
    assert result.status == "failed"
    assert result.rc != 0


def test_counts_follow_the_play_recap(real_run):
    result, _, _ = real_run
    assert result.hosts["a"] == HostCounts(ok=2, changed=1, failed=0, unreachable=0, skipped=2)
    assert result.hosts["b"] == HostCounts(ok=1, changed=1, failed=1, unreachable=0, skipped=1)


def test_failure_names_host_task_and_message(real_run):
    result, _, _ = real_run
    [failure] = result.failures
    assert failure.host == "b"
    assert failure.task == "A failing task on b only"
    assert failure.play == "Exercise the summary"
    assert "broke on purpose" in failure.message or "non-zero return code" in failure.message


def test_progress_lines_stream_plays_tasks_and_failures(real_run):
    _, lines, _ = real_run
    assert "PLAY [Exercise the summary]" in lines
    # One line per task once it has run on every host; a task skipped everywhere has none.
    assert "  A changed task: changed a,b" in lines
    assert "  An unchanged task: ok 2" in lines
    assert not any("A skipped task" in line for line in lines)
    assert any(line.startswith("    FAILED: b:") for line in lines)
    assert "  A failing task on b only: failed b; skipped 1" in lines
    assert sum("A changed task" in line for line in lines) == 1


def test_artifacts_are_kept_under_the_stack(real_run):
    result, _, root = real_run
    assert result.artifacts.parent == root / "artifacts" / "t"
    assert any(result.artifacts.rglob("job_events/*.json"))
    assert str(result.artifacts) in result.summary()


def test_summary_is_short_and_names_the_failure(real_run):
    result, _, _ = real_run
    text = result.summary()
    assert "FAILED" in text.splitlines()[0]
    assert "b: [Exercise the summary] A failing task on b only failed:" in text
    assert len(text.splitlines()) < 12


def test_missing_inventory_says_how_to_make_it(tmp_path):
    with pytest.raises(HandoffError, match="provision the stack first"):
        run_playbook(__file__, stack="absent", state_root=tmp_path, artifacts_root=tmp_path)


def test_unreachable_host_is_a_failure():
    s = EventSummary()
    s.handle({"event": "playbook_on_play_start", "event_data": {"play": "P"}})
    s.handle({"event": "playbook_on_task_start", "event_data": {"task": "T"}})
    s.handle(
        {
            "event": "runner_on_unreachable",
            "event_data": {"host": "h", "res": {"msg": "ssh: connect to host h port 22: No route"}},
        }
    )
    result = s.result("x.yml", "failed", 4, Path("/tmp/a"))
    assert result.hosts["h"].unreachable == 1
    assert result.failures[0].unreachable
    assert "unreachable: ssh: connect" in result.summary()


def test_ignored_errors_count_as_ok():
    s = EventSummary()
    s.handle(
        {"event": "runner_on_failed", "event_data": {"host": "h", "ignore_errors": True, "res": {}}}
    )
    assert s.hosts["h"].ok == 1 and not s.failures


def test_long_messages_are_cut():
    s = EventSummary()
    s.handle({"event": "runner_on_failed", "event_data": {"host": "h", "res": {"msg": "x" * 5000}}})
    assert len(s.failures[0].message) == MESSAGE_LIMIT


def test_loop_failure_message_comes_from_the_failed_item():
    s = EventSummary()
    s.handle(
        {
            "event": "runner_on_failed",
            "event_data": {
                "host": "h",
                "res": {
                    "results": [
                        {"failed": False, "msg": "fine"},
                        {"failed": True, "msg": "item two broke"},
                    ]
                },
            },
        }
    )
    assert s.failures[0].message == "item two broke"


def test_recap_leaves_out_a_host_where_every_task_was_skipped(tmp_path: Path) -> None:
    """site.yml's opt-in metrics play on the control node: skipped there, so not a row."""
    from fabric.handoff.summary import HostCounts, PlaybookResult

    result = PlaybookResult(
        playbook="site.yml",
        status="successful",
        rc=0,
        hosts={"n1": HostCounts(ok=3, skipped=2), "localhost": HostCounts(skipped=6)},
        failures=[],
        artifacts=tmp_path,
    )
    assert [row.split()[0] for row in result.recap().splitlines()] == ["host", "n1"]
