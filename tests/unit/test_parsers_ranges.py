"""Numbers nothing checked (issue 44 item 5), in parser output: a LID, port number, port count,
rate or counter out of its range is a ParseError naming its line, field and value; NaN, infinity and
decimal commas never reach the JSON as ``ok: true``; an infinite busbw is a harness error.

Every bad input is a real capture from tests/fixtures (SOURCES.md) with one value edited by
the test itself (the edit is in each case's table row); no invented fixture file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric.catalog import BusBwTarget
from fabric.parsers import parse
from fabric.parsers.common import ParseError
from fabric.parsers.nccl_tests import NcclTestsReport
from fabric.verify.nccl import judge, judge_table

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
NCCL_TESTS = "nccl_tests__h100vm__1.txt"
#: The first result row of NCCL_TESTS, as all_reduce_perf printed it.
ROW = "7.08    0.00    0.00       0     0.53    0.02    0.00       0"


def edited(name: str, old: str, new: str) -> str:
    """The capture ``name`` with its first ``old`` replaced by ``new``."""
    text = (FIXTURES / name).read_text()
    assert old in text, f"{name} no longer holds {old!r}"
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("tool", "name", "old", "new", "says"),
    [
        ("ibstat", "ibstat__gpud__1.txt", "Base lid: 128", "Base lid: 70000", "base_lid 70000"),
        (
            "ibstat",
            "ibstat__gpud__1.txt",
            "Rate: 400",
            "Rate: 100000000000000000000000",
            "rate_gbps 99999999999999991611392 is out of range: not a link rate, 0-1600 Gb/s",
        ),
        (
            "ibstat",
            "ibstat__gpud__1.txt",
            "Number of ports: 1",
            "Number of ports: -3",
            "number_of_ports -3 is out of range: not a port count",
        ),
        (
            "ibstat",
            "ibstat__gpud__1.txt",
            "Port 1:",
            "Port 999:",
            "port 999 is out of range: not a port number, 0-255",
        ),
        (
            "perfquery",
            "perfquery__ibdiags16__1.txt",
            "SymbolErrorCounter:..............0",
            "SymbolErrorCounter:..............-5",
            "symbol_errors: input should be greater than or equal to 0",
        ),
        (
            "perfquery",
            "perfquery__ibdiags16__1.txt",
            "PortXmitData:....................0",
            f"PortXmitData:....................{2**70}",
            "port_xmit_data: input should be less than or equal to 18446744073709551615",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and ":" in value and " " in value else None,
)
def test_out_of_range_values_are_refused(
    tool: str, name: str, old: str, new: str, says: str
) -> None:
    text = edited(name, old, new)
    line = text[: text.index(new)].count("\n") + 1
    with pytest.raises(ParseError, match="out of range|input should be") as err:
        parse(tool, text)
    assert says in str(err.value) and "cut short" not in str(err.value), err.value
    assert err.value.line == line, err.value  # the line printing the value


def test_the_unedited_captures_still_parse() -> None:
    """The bounds take every real capture the cases above start from (LID 0xFFFF included)."""
    for tool, name in [
        ("ibstat", "ibstat__gpud__1.txt"),
        ("ibstat", "ibstat__magnate3__1.txt"),
        ("perfquery", "perfquery__ibdiags16__1.txt"),
    ]:
        assert parse(tool, (FIXTURES / name).read_text()).ok


@pytest.mark.parametrize(
    ("new", "says"),
    [
        ("7,08    0,00    0,00       0     0,53    0,02    0,00       0", "a decimal comma"),
        ("7.08    inf    inf       0     0.53    0.02    0.00       0", "not 'inf'"),
        ("7.08    0.00    nan       0     0.53    0.02    0.00       0", "not 'nan'"),
        ("7.08    0.00    1e999       0     0.53    0.02    0.00       0", "not '1e999'"),
        ("7.08    0.00    -3.00       0     0.53    0.02    0.00       0", "not '-3.00'"),
    ],
)
def test_nccl_tests_values_that_are_no_measurement_name_the_line(new: str, says: str) -> None:
    """A locale's decimal comma gave ``ok: true`` with every value null; inf or NaN (a zero
    timing) passed the bus-bandwidth floor."""
    text = edited(NCCL_TESTS, ROW, new)
    line = text[: text.index(new)].count("\n") + 1
    with pytest.raises(ParseError, match=f"line {line}: ") as err:
        parse("nccl_tests", text)
    assert says in str(err.value)


def test_nccl_tests_decimal_comma_average_is_refused() -> None:
    """The average read to its comma was 6 where nccl-tests meant 6.6972."""
    text = edited("nccl_tests__nccl340__1.txt", "bandwidth    : 6.6972", "bandwidth    : 6,6972")
    with pytest.raises(ParseError, match="a decimal comma"):
        parse("nccl_tests", text)


def test_nccl_tests_not_measured_is_still_null() -> None:
    """``N/A`` (``-c 0``) stays what it was: a value not measured, not an error."""
    report = parse("nccl_tests", edited(NCCL_TESTS, ROW, ROW.replace("       0", "     N/A")))
    assert report.ok and report.rows[0].out_of_place.wrong is None


TARGET = BusBwTarget(
    min_busbw=100.0, collective="all_reduce", algorithm="ring", size="8G", source="test"
)


@pytest.mark.parametrize("peak", [float("inf"), float("nan")])
def test_an_infinite_or_nan_busbw_is_a_harness_error_not_a_pass(peak: float) -> None:
    """A report built without validation (``model_construct``) carrying a peak no run can
    measure: judged a problem, and the verdict's JSON carries no NaN or Infinity."""
    real = parse("nccl_tests", (FIXTURES / NCCL_TESTS).read_text())
    report = NcclTestsReport.model_construct(**{**dict(real), "peak_busbw": peak})
    problems, _ = judge_table(report, TARGET)
    assert problems and "harness error, not a pass" in problems[0]
    verdict = judge(None, report, None, TARGET)
    assert not verdict.ok and verdict.busbw is None


@settings(max_examples=150, deadline=None)
@given(
    tokens=st.lists(
        st.one_of(
            st.sampled_from(["inf", "-inf", "nan", "NaN", "1e999", "7,08", "N/A", "-0.5", "0"]),
            st.floats(allow_nan=True, allow_infinity=True).map(repr),
        ),
        min_size=8,
        max_size=8,
    )
)
def test_nccl_tests_rows_are_finite_or_refused(tokens: list[str]) -> None:
    """Any eight values in the first row of a real capture: a ParseError naming the line, or
    a result whose every value is finite (JSON has no NaN or Infinity)."""
    text = edited(NCCL_TESTS, ROW, "  ".join(tokens))
    try:
        report = parse("nccl_tests", text)
    except ParseError as err:
        assert err.line > 0
        return
    values = [
        value
        for half in (report.rows[0].out_of_place, report.rows[0].in_place)
        for value in (half.time_us, half.algbw, half.busbw, half.error)
        if value is not None
    ]
    assert all(math.isfinite(value) and value >= 0 for value in values)
    json.loads(report.model_dump_json())


def test_a_model_built_directly_out_of_range_is_a_parse_error() -> None:
    """sminfo builds its report itself (no ``build``): a LID out of range is still one
    ParseError of the tool, not a pydantic traceback. Real capture, LID edited."""
    text = edited("sminfo__ibsim_extsm__1.txt", "sm lid 1 ", "sm lid 70000 ")
    with pytest.raises(ParseError, match="sminfo: .*sm_lid 70000 is out of range"):
        parse("sminfo", text)
