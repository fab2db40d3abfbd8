"""Host-list and alias limits that could be walked around (issue 44 item 4): the 100k-host
limit held per range, not per host list or per spec (30 ranges in 1 KB were 3M hosts, over
60 s and 1.24 GB), and aliases were counted as values, not by the text they repeat. Now every
total is counted before anything is expanded, and each refusal is one problem."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fabric.hostlist import MAX_HOSTS, HostlistError, count, expand
from fabric.spec import SpecError, load_spec
from fabric.spec.load import MAX_ALIASED_TEXT
from fabric.spec.models import MAX_PARTITION_NAMES
from fabric.state import REPO_ROOT

LAB = REPO_ROOT / "tests" / "unit" / "specs" / "valid" / "lab.yaml"
THIRTY_RANGES = ",".join(f"n{i}x[1-99999]" for i in range(30))


def _bounded() -> None:  # in the child, before exec: 1 GiB of address space at most
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    """``validate`` in a child bounded in memory and time (a regression cannot eat the
    machine)."""
    return subprocess.run(
        [sys.executable, "-m", "fabric", "validate", "--spec", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
        timeout=120,
        preexec_fn=_bounded,  # noqa: PLW1509 - no threads in the child before exec
    )


def problems(path: Path) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        load_spec(path)
    return [(p.path, p.message) for p in err.value.problems]


def test_count_is_the_expansions_length() -> None:
    for expr in ["gpu[01-16]", "a[1-3],b,c[01-02,7]", "login1", "gpu[1-2]-ib,x[5]"]:
        assert count(expr) == len(expand(expr))


def test_ranges_of_one_host_list_are_bounded_together() -> None:
    assert count(THIRTY_RANGES) == 30 * 99_999
    with pytest.raises(HostlistError, match=f"more than {MAX_HOSTS} hosts .2999970.; at most"):
        expand(THIRTY_RANGES)


def test_a_number_too_long_for_int_is_a_host_list_error() -> None:
    with pytest.raises(HostlistError, match=f"names more than {MAX_HOSTS} hosts;"):
        expand("gpu[1-" + "9" * 5000 + "]")


def test_node_groups_are_bounded_per_spec(tmp_path: Path) -> None:
    data = yaml.safe_load(LAB.read_text())
    data["nodes"] = [dict(data["nodes"][0], names=f"g{i}n[1-99999]") for i in range(30)]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    assert problems(path) == [
        (
            "nodes",
            f"the node groups declare 2999970 hosts in all; at most {MAX_HOSTS} are allowed in "
            "one spec: split the cluster into several stacks",
        )
    ]


def test_one_host_list_aliased_into_a_thousand_partitions(tmp_path: Path) -> None:
    """84 KB of YAML that expanded to 100M names: refused from the count, in a bounded child."""
    data = yaml.safe_load(LAB.read_text())
    data.pop("slurm", None)
    parts = ['    - {name: p0, nodes: &h "gpu[1-99999]"}']
    parts += [f"    - {{name: p{i}, nodes: *h}}" for i in range(1, 1000)]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data) + "slurm:\n  partitions:\n" + "\n".join(parts) + "\n")
    done = validate(path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        f"{path}: 1 problem",
        f"  slurm.partitions: the partitions name 99999000 hosts in all; at most "
        f"{MAX_PARTITION_NAMES} are allowed (each host in up to ten partitions): use ALL, or "
        "fewer and shorter host lists",
    ]


def test_aliases_are_bounded_by_the_text_they_repeat(tmp_path: Path) -> None:
    """600 aliases of a 2 KB value: few values, but 1.2 MB of text once expanded."""
    value = "x" * 2000
    aliases = ", ".join(["*t"] * 600)
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: lab\nnote: &t {value}\nlab: [{aliases}]\n")
    (where, message), *more = problems(path)
    assert not more and where.startswith(f"{path}:")
    assert f"repeat more than {MAX_ALIASED_TEXT >> 20} MiB of text" in message
