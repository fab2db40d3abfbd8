"""Reading a spec file: binary, non-UTF-8 and oversized files are one problem each, named."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.spec import SpecError, load_spec
from fabric.spec.load import MAX_SPEC_BYTES


def _problem(path: Path) -> str:
    with pytest.raises(SpecError) as refused:
        load_spec(path)
    assert len(refused.value.problems) == 1
    return str(refused.value.problems[0])


def test_non_utf8_bytes_are_named_not_decoded(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"name: lab\n\xe9\xff\n")
    assert "not UTF-8 text (byte 10)" in _problem(path)
    assert "codec" not in _problem(path)


def test_a_nul_byte_is_binary_data(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"name: lab\x00\n")
    assert "binary data" in _problem(path)


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    with path.open("wb") as handle:
        handle.truncate(MAX_SPEC_BYTES + 1)
    assert f"larger than {MAX_SPEC_BYTES >> 20} MiB" in _problem(path)
