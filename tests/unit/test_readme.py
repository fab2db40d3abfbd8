"""README.md as a user reads it (issue 45): short, its tour in the order the issue asks for,
and every ``railyard`` command it shows one the command line takes. The tour itself runs on a
lab in ``tests/integration/test_handoff_lab.py`` (``tests/integration/tour.py``)."""

from __future__ import annotations

import re
import shlex

import pytest

from fabric.cli import COMMANDS, build_parser
from tests.integration.tour import README, steps

TEXT = README.read_text()


def _commands() -> list[str]:
    """Every ``railyard ...`` command in README's code blocks and inline code."""
    blocks = re.findall(r"```sh\n(.*?)```", TEXT, flags=re.S)
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    inline = re.findall(r"`(railyard [^`]+)`", TEXT)
    found = [c for c in lines + inline if c.startswith("railyard ")]
    # a command named in passing (``railyard run`` needs pulumi) and the report's title line
    return [c for c in found if c != "railyard run" and c.split()[1] in COMMANDS]


def test_readme_is_short() -> None:
    assert len(TEXT.splitlines()) < 150


def test_the_tour_is_status_check_fault_cause_repair_check() -> None:
    tour = [" ".join(s.argv[1:3]) for s in steps(TEXT)]
    assert tour == [
        "lab status",
        "check",
        "lab fault",
        "check",
        "lab fault",
        "lab fault",
        "check",
    ]
    codes = [s.exit_code for s in steps(TEXT)]
    assert codes == [0, 0, 0, 1, 0, 0, 0]
    assert "cable down" in steps(TEXT)[3].shows


@pytest.mark.parametrize("command", _commands())
def test_every_command_in_the_readme_parses(command: str) -> None:
    argv = [a for a in shlex.split(command)[1:] if a not in ("...", "…")]
    argv = [re.sub(r"<stack>|STACK", "lab", a).replace("NAME", "qos-change") for a in argv]
    if argv == ["--help"]:
        return
    build_parser().parse_args(argv)  # a bad one exits 2 (UsageError)


def test_real_clusters_name_aws_gcp_and_azure_with_their_docs() -> None:
    section = TEXT.split("## Real clusters", 1)[1].split("\n## ", 1)[0]
    for cloud, anchor in (
        ("AWS", "#aws-efa"),
        ("GCP", "#gcp-a3--a3-mega-gpudirect-tcpxtcpxo"),
        ("Azure", "#azure-nd-h100-v5--nd-h200-v5-infiniband"),
    ):
        line = next(x for x in section.split("\n- ") if x.startswith(f"**{cloud}**"))
        assert f"docs/targets.md{anchor}" in line, line
