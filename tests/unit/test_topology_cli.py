"""``python -m fabric topology`` end to end through the CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fabric.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests/fixtures"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["topology", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_from_spec_tree(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--from-spec", str(ROOT / "Pulumi.lab.yaml"))
    assert code == 0 and "SwitchName=spine01 Switches=leaf[01-02]\n" in out


def test_from_ibnetdiscover_block(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--from-ibnetdiscover",
        str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt"),
        "--plugin",
        "block",
        "--block-size",
        "5",
    )
    assert code == 0 and out.splitlines()[1:] == [
        "BlockName=leaf01 Nodes=gpu[01-05]",
        "BlockName=leaf02 Nodes=gpu[06-08],sm[1-2]",
        "BlockSizes=5",
    ]


def test_from_ibnetdiscover_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--from-ibnetdiscover",
        str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt"),
        "--plugin",
        "yaml",
    )
    assert code == 0 and yaml.safe_load(out)[0]["tree"]["switches"][2] == {
        "switch": "spine01",
        "children": "leaf[01-02]",
    }


def test_oversubscription(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--from-spec", str(ROOT / "Pulumi.lab.yaml"), "--oversubscription")
    assert code == 0 and out.splitlines()[0] == "leaf01\tdown 2000 Gb/s\tup 1600 Gb/s\t1.25:1"


def test_ibsim_net(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--from-spec", str(ROOT / "Pulumi.lab.yaml"), "--ibsim-net")
    assert code == 0 and 'Ca\t1 "gpu01:mlx5_0"\t# "gpu01 mlx5_0"' in out


def test_bad_ibnetdiscover_reports_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "--from-ibnetdiscover", str(FIXTURES / "ibnetdiscover_p__ibsim_quirks__1.txt")
    )
    assert code == 2 and "line 1" in err and "without -p" in err
    assert err.startswith("python -m fabric topology: error: ") and err.count("\n") == 1


def test_block_size_too_big_names_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "--from-spec",
        str(ROOT / "Pulumi.lab.yaml"),
        "--plugin",
        "block",
        "--block-size",
        "6",
    )
    assert code == 2 and "use --block-size 5 or less" in err


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "--from-ibnetdiscover", str(tmp_path / "nope.txt"))
    assert code == 2 and f"cannot read {tmp_path / 'nope.txt'}: No such file or directory" in err


def test_nodes_keeps_only_the_slurm_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--from-ibnetdiscover",
        str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt"),
        "--nodes",
        "gpu[01-08]",
    )
    assert code == 0 and "sm1" not in out and "Nodes=gpu[06-08]\n" in out, out


def test_nodes_bad_hostlist_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--from-spec", str(ROOT / "Pulumi.lab.yaml"), "--nodes", "gpu[01-")
    assert (
        code == 2
        and err.startswith("python -m fabric topology: error: --nodes: ")
        and "gpu[01-" in err
    ), err


def test_block_size_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "--from-spec",
        str(ROOT / "Pulumi.lab.yaml"),
        "--plugin",
        "block",
        "--block-size",
        "0",
    )
    assert (code, err) == (2, "python -m fabric topology: error: --block-size must be 1 or more\n")


def test_bad_spec_is_bad_input_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = yaml.safe_load((ROOT / "tests/unit/specs/valid/lab.yaml").read_text())
    data["fabric"]["mtu"] = 9000
    data["slurm"]["controller"] = "ctl9"
    spec = tmp_path / "broken.yaml"
    spec.write_text(yaml.safe_dump(data))
    code, out, err = run(capsys, "--from-spec", str(spec))
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith(
        f"python -m fabric topology: error: {spec}: fabric.mtu: 9000 is not an InfiniBand MTU"
    )
    assert f"(and 1 more problem: python -m fabric validate {spec} lists them all)" in err


def test_missing_spec_is_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "--from-spec", str(tmp_path / "none.yaml"))
    assert code == 2 and "none.yaml: no such file" in err
