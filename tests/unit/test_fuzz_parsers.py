"""Property-based fuzzing of every registered parser (hypothesis).

For any text, and for mutations of each real fixture (lines dropped, repeated, cut, spliced in
from other tools' output), a parser returns its result or raises its own ``ParseError``, within
the deadline; never any other exception. Examples are derandomized, so CI sees the same ones
on every run.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.cli import main
from fabric.parsers import PARSERS, Parsed, ParseError
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"

#: Tool name -> its real captures (``ibv_devinfo_v__*`` are ibv_devinfo's too).
CAPTURES: dict[str, list[str]] = {
    tool: [
        path.read_text()
        for path in sorted(FIXTURES.glob("*.txt"))
        if path.name.split("__")[0] in {tool, f"{tool}_v", f"{tool}_p"}
    ]
    for tool in PARSERS
}

#: Every fixture line of every tool: material for text that looks like tool output.
ALL_LINES = sorted(
    {line for texts in CAPTURES.values() for text in texts for line in text.splitlines()}
)

FUZZ = settings(
    max_examples=100,
    # A bound against runaway parsing (catastrophic backtracking runs for minutes), wide enough
    # for make test's side-by-side steps: 400 ms was exceeded once at load 62 by fi_info's 534 ms.
    deadline=timedelta(seconds=5),
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


def _outcome(tool: str, text: str) -> Parsed | ParseError:
    """The parser's result or its own error; anything else propagates and fails the test."""
    try:
        result = PARSERS[tool](text)
    except ParseError as err:
        assert err.tool == tool, f"{tool}'s parser raised another tool's error: {err}"
        return err
    result.model_dump(mode="json")  # the result is JSON-ready, as `parse` prints it
    return result


#: Values that look almost right: digits, hex, units, signs, unicode digits, blanks.
value_text = st.text(alphabet="0123456789abcdefxX.-:+ /()[]GbMsB\u00b2\u0663", max_size=16)


@st.composite
def mutated(draw: st.DrawFn, texts: list[str]) -> str:
    """A real capture with a few lines dropped, repeated, cut short, taken from elsewhere, or
    with a field's value replaced."""
    lines = draw(st.sampled_from(texts)).splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        action = draw(
            st.sampled_from(["drop", "repeat", "cut", "splice", "garble", "value", "end"])
        )
        if action == "drop":
            del lines[at]
        elif action == "repeat":
            lines.insert(at, lines[at])
        elif action == "cut":
            lines[at] = lines[at][: draw(st.integers(0, max(0, len(lines[at]) - 1)))]
        elif action == "splice":
            lines.insert(at, draw(st.sampled_from(ALL_LINES)) + "\n")
        elif action == "garble":
            lines[at] = draw(st.text(max_size=40)) + "\n"
        elif action == "value":  # the field's name kept, its value replaced
            keep = max(lines[at].rfind(":"), lines[at].rfind("="), lines[at].rfind(" ")) + 1
            lines[at] = lines[at][:keep] + draw(value_text) + "\n"
        else:
            lines = lines[:at]
    return "".join(lines)


@pytest.mark.parametrize("tool", sorted(PARSERS))
@FUZZ
@given(text=st.text(max_size=400))
def test_any_text(tool: str, text: str) -> None:
    _outcome(tool, text)


@pytest.mark.parametrize("tool", sorted(PARSERS))
@FUZZ
@given(lines=st.lists(st.sampled_from(ALL_LINES), max_size=30))
def test_lines_of_any_tool(tool: str, lines: list[str]) -> None:
    _outcome(tool, "\n".join(lines) + "\n")


@pytest.mark.parametrize("tool", sorted(tool for tool, texts in CAPTURES.items() if texts))
@FUZZ
@given(data=st.data())
def test_mutated_captures(tool: str, data: st.DataObject) -> None:
    _outcome(tool, data.draw(mutated(CAPTURES[tool])))


def test_every_tool_has_captures_to_mutate() -> None:
    assert [tool for tool, texts in CAPTURES.items() if not texts] == []


@FUZZ
@given(
    tool=st.sampled_from(sorted(PARSERS)),
    data=st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300).map(str.encode),
        st.sampled_from(sorted({t for texts in CAPTURES.values() for t in texts})).map(
            lambda text: text.encode()[: len(text) // 2]
        ),
    ),
)
def test_parse_command_survives_any_bytes(tool: str, data: bytes) -> None:
    """``python -m fabric parse`` on any bytes: JSON and exit 0, or one error line and exit 2."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "capture"
        path.write_bytes(data)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["parse", tool, str(path)])
    if code == 0:
        assert json.loads(out.getvalue()) is not None and err.getvalue() == ""
    else:
        assert (code, out.getvalue(), err.getvalue().count("\n")) == (2, "", 1), err.getvalue()
        assert err.getvalue().startswith("railyard parse: error: ")
