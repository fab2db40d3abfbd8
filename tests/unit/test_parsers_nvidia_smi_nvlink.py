"""``nvidia_smi_nvlink``: ``nvidia-smi nvlink -s`` on a V100 with two links down and a GB200
(GitHub threads), and the empty output of a single H200 without NVLink (captured here)."""

from __future__ import annotations

import pytest

from fabric.parsers import ParseError, parse
from fabric.parsers.nvidia_smi_nvlink import Link, links
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def test_inactive_links_among_active_ones() -> None:
    (gpu,) = links((FIXTURES / "nvidia_smi_nvlink__azhpcdiag73__1.txt").read_text())
    assert (gpu.index, gpu.name, gpu.uuid) == (3, "Tesla V100-SXM2-32GB", "...")
    assert gpu.links[2:4] == [Link(2, 25.781), Link(3, None)]
    assert (gpu.active, gpu.inactive) == ([0, 1, 2, 4], [3, 5])


def test_every_gb200_link_up() -> None:
    first, second = links((FIXTURES / "nvidia_smi_nvlink__k8stestinfra371__1.txt").read_text())
    assert len(first.links) == 18 and first.inactive == []
    assert {link.speed_gbs for link in first.links} == {53.125}
    assert first.uuid == "GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde"
    assert second.index == 1 and len(second.links) == 2  # the thread's excerpt ends there


@pytest.mark.parametrize("n", [1, 2])
def test_a_gpu_without_nvlink_prints_nothing(n: int) -> None:
    empty = (FIXTURES / "device" / f"nvidia_smi_nvlink__h200vm__{n}.txt").read_text()
    assert empty == ""
    assert links(empty) == []
    with pytest.raises(ParseError, match="^nvidia_smi_nvlink: .*no NVLink"):
        parse("nvidia_smi_nvlink", empty)


def test_registry_result_and_a_line_of_neither_kind() -> None:
    result = parse(
        "nvidia_smi_nvlink", (FIXTURES / "nvidia_smi_nvlink__azhpcdiag73__1.txt").read_text()
    )
    assert result.model_dump()["gpus"][0]["links"][3] == {"link": 3, "speed_gbs": None}
    with pytest.raises(ParseError, match="^nvidia_smi_nvlink: line 1"):
        links((FIXTURES / "dmesg_xid__akash209__1.txt").read_text())
