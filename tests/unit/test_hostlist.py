"""Slurm host lists: expansion, compression, and their round trips."""

from __future__ import annotations

import pytest

from fabric.hostlist import MAX_HOSTS, HostlistError, compress, expand


@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        ("gpu01", ["gpu01"]),
        ("gpu[1-3]", ["gpu1", "gpu2", "gpu3"]),
        ("gpu[01-03]", ["gpu01", "gpu02", "gpu03"]),
        ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),
        ("gpu[098-101]", ["gpu098", "gpu099", "gpu100", "gpu101"]),
        ("gpu[1,3,5-6]", ["gpu1", "gpu3", "gpu5", "gpu6"]),
        ("node[1-2]-ib", ["node1-ib", "node2-ib"]),
        ("gpu[01-02],login1", ["gpu01", "gpu02", "login1"]),
        ("a[1-2], b ,c[3]", ["a1", "a2", "b", "c3"]),
    ],
)
def test_expand(expr: str, hosts: list[str]) -> None:
    assert expand(expr) == hosts


def test_expand_sixteen_padded() -> None:
    assert expand("gpu[001-016]") == [f"gpu{n:03d}" for n in range(1, 17)]


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("gpu[1-2", "unbalanced '['"),
        ("gpu1-2]", "unbalanced ']'"),
        ("gpu[a-b]", "bad range 'a-b'"),
        ("gpu[3-1]", "runs backwards"),
        ("gpu[]", "cannot parse"),
        ("gpu[1-2]x[1-2]", "one bracket per name"),
        (f"gpu[1-{MAX_HOSTS + 1}]", f"at most {MAX_HOSTS}"),
    ],
)
def test_expand_rejects(expr: str, fragment: str) -> None:
    with pytest.raises(HostlistError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        expand(expr)


@pytest.mark.parametrize(
    ("hosts", "expr"),
    [
        (["gpu001", "gpu002", "gpu004"], "gpu[001-002,004]"),
        (["gpu3", "gpu1", "gpu2"], "gpu[1-3]"),
        (["gpu1", "gpu1"], "gpu1"),
        (["gpu1", "gpu01"], "gpu1,gpu01"),
        (["gpu099", "gpu100"], "gpu[099-100]"),
        (["gpu0", "gpu1", "gpu10"], "gpu[0-1,10]"),
        (["ctl", "gpu01", "gpu02", "login1"], "ctl,gpu[01-02],login1"),
        (["n1-ib", "n2-ib"], "n1-ib,n2-ib"),  # Slurm 22.05 refuses n[1-2]-ib
        ([], ""),
    ],
)
def test_compress(hosts: list[str], expr: str) -> None:
    assert compress(hosts) == expr


@pytest.mark.parametrize(
    "expr",
    [
        "gpu[001-016]",
        "gpu[001-100]",
        "gpu[0-10]",
        "gpu[01-04,07,10-12]",
        "ctl1,gpu[01-08],sm[1-2]",
        "rack1-gpu[1-4],rack2-gpu[1-4]",
    ],
)
def test_round_trip_from_expression(expr: str) -> None:
    assert compress(expand(expr)) == expr


def test_round_trip_from_names() -> None:
    hosts = ["gpu01", "gpu02", "gpu03", "login1", "gpu05", "sm1", "sm2"]
    assert expand(compress(hosts)) == ["gpu01", "gpu02", "gpu03", "gpu05", "login1", "sm1", "sm2"]
