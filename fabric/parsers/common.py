"""Shared models and helpers for the tool-output parsers.

Every parser is a pure function ``parse(text) -> Model``. Text that is not the tool's
output raises :class:`ParseError`; a failure the tool itself reported (``ibpanic``,
``Couldn't connect ...``) becomes a result with ``ok=False`` and a ``reason``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from fabric.parsers.errors import ParseError  # the ibnetdiscover path loads no pydantic

Number = int | float
M = TypeVar("M", bound=BaseModel)

#: Canonical logical port states (IBA PortState).
PORT_STATES = {
    "NOP": "Nop",
    "NO_STATE_CHANGE": "Nop",
    "DOWN": "Down",
    "INIT": "Initializing",
    "INITIALIZE": "Initializing",
    "INITIALIZING": "Initializing",
    "ARMED": "Armed",
    "ACTIVE": "Active",
    "ACTIVE_DEFER": "ActiveDefer",
    "ACTIVEDEFER": "ActiveDefer",
}

#: Canonical physical port states (IBA PortPhysicalState).
PHYS_STATES = {
    "SLEEP": "Sleep",
    "POLLING": "Polling",
    "DISABLED": "Disabled",
    "PORTCONFIGURATIONTRAINING": "PortConfigurationTraining",
    "LINK_UP": "LinkUp",
    "LINKUP": "LinkUp",
    "LINKERRORRECOVERY": "LinkErrorRecovery",
    "LINK_ERROR_RECOVERY": "LinkErrorRecovery",
    "PHYTEST": "PhyTest",
    "PHY_TEST": "PhyTest",
}

#: Per-lane signalling rate (Gb/s) of each InfiniBand speed generation.
LANE_GBPS = {
    "SDR": 2.5,
    "DDR": 5.0,
    "QDR": 10.0,
    "FDR10": 10.3125,
    "FDR": 14.0625,
    "EDR": 25.78125,
    "HDR": 53.125,
    "NDR": 106.25,
    "XDR": 212.5,
}

#: Tool-failure markers shared by the infiniband-diags and verbs tools.
FAILURE_MARKERS = (
    re.compile(r"^ibpanic: .*"),
    re.compile(r"^.*iberror: .*"),
    re.compile(r"^Couldn't .*"),
    re.compile(r"^Failed .*"),
    re.compile(r"^.*No such device.*"),
    re.compile(r"^.*No IB devices found.*"),
    re.compile(r"^-E- .*"),
)


#: The ranges of values every tool prints with the same meaning, checked by field name on every
#: parsed model (issue 44: LID 70000, port 999, -3 ports and a rate of 1e23 were accepted).
#: LIDs: 16 bits, unicast 1-0xBFFF, multicast above, 0xFFFF the permissive LID (a real
#: ibstat shows it on a port no SM has given a LID; tests/fixtures/ibstat__magnate3__1.txt),
#: 0 none assigned. Ports: 1-254 are
#: physical, 0 a switch's management port, 255 PortSelect's "all ports" (perfquery -a). Rates:
#: XDR 4x (800 Gb/s) is the fastest port; twice it.
MAX_LID = 0xFFFF
MAX_PORT = 255
MAX_RATE_GBPS = 1600
#: A 64-bit counter (PortCounters extended); an ibqueryerrors or perfquery value above it,
#: or below 0, is no counter.
MAX_COUNTER = 2**64 - 1

#: A counter's value: 0 to MAX_COUNTER.
Counter = Annotated[int, Field(ge=0, le=MAX_COUNTER)]

_PORT_COUNTS = {"ports", "number_of_ports", "phys_port_cnt"}


def _range(name: str) -> tuple[int, int, str] | None:
    """(lowest, highest, what) for a field named ``name``, or None when its name says nothing."""
    if name in {"lid", "lid_max"} or name.endswith("_lid"):
        return 0, MAX_LID, "a 16-bit LID, 0-0xFFFF"
    if name == "port" or name.endswith("_port"):
        return 0, MAX_PORT, "a port number, 0-255"
    if name in _PORT_COUNTS:
        return 0, MAX_PORT, "a port count, 0-255"
    if name == "rate_gbps":
        return 0, MAX_RATE_GBPS, f"a link rate, 0-{MAX_RATE_GBPS} Gb/s"
    return None


@cache
def _ranged(model: type[BaseModel]) -> tuple[tuple[str, tuple[int, int, str]], ...]:
    """The fields of ``model`` whose names give them a range (once per class)."""
    return tuple(
        (name, bounds) for name in model.model_fields if (bounds := _range(name)) is not None
    )


class Model(BaseModel):
    """Base for every parsed model: frozen, no unknown fields, no NaN or infinity, and every
    LID, port number, port count and rate in its range (:func:`_range`, by field name)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @model_validator(mode="after")
    def _in_range(self) -> Any:
        for name, (low, high, what) in _ranged(type(self)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if not low <= value <= high:
                raise PydanticCustomError(
                    "out_of_range",
                    "{name} {value} is out of range: not {what}",
                    {"name": name, "value": value, "what": what},
                )
        return self

    def __init__(self, /, **data: Any) -> None:
        """A model a parser builds directly (``SminfoReport(sm_lid=...)``): a value out of
        range is a ParseError of its tool, as from :func:`build`, never a traceback."""
        try:
            super().__init__(**data)
        except ValidationError as err:
            module = sys.modules.get(type(self).__module__)
            tool = str(getattr(module, "TOOL", type(self).__module__.rsplit(".", 1)[-1]))
            raise _parse_error(tool, type(self), err, 0, None) from None


class ToolResult(Model):
    """A tool run's result: ``ok`` is False when the tool reported its own failure."""

    ok: bool = True
    reason: str | None = None


class Rate(Model):
    """A link rate such as ``400 Gb/sec (4X NDR)``."""

    rate_gbps: Number
    width: str | None = None
    speed: str | None = None


def lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` pairs, numbered from 1, without line endings."""
    for number, line in enumerate(text.splitlines(), start=1):
        yield number, line.rstrip("\r")


def number(text: str) -> Number:
    """``"400"`` -> 400, ``"2.5"`` -> 2.5 (integral values stay ints)."""
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def to_int(text: str) -> int:
    """Decimal or ``0x`` hexadecimal integer text to int."""
    text = text.strip()
    return int(text, 16) if text.lower().startswith("0x") else int(text)


_RATE = re.compile(
    r"^\s*(?P<gbps>\d+(?:\.\d+)?)\s*(?:Gb/sec|Gbps|Gb/s)?"
    r"(?:\s*\((?P<width>\d+X)\s+(?P<speed>[A-Z0-9]+)\))?\s*$"
)


def parse_rate(text: str) -> Rate | None:
    """``"400 Gb/sec (4X NDR)"`` -> Rate(400, "4X", "NDR"); ``"200"`` -> Rate(200)."""
    match = _RATE.match(text)
    if not match:
        return None
    return Rate(rate_gbps=number(match["gbps"]), width=match["width"], speed=match["speed"])


def _strip_code(text: str) -> str:
    """Drop the numeric code from ``"4: ACTIVE"`` or ``"PORT_ACTIVE (4)"``."""
    text = re.sub(r"^\s*\d+\s*:\s*", "", text)
    text = re.sub(r"\s*\(\d+\)\s*$", "", text)
    return text.strip()


@lru_cache(maxsize=512)  # a large fabric repeats a handful of values
def normalize_state(text: str) -> str:
    """``"4: ACTIVE"``, ``"PORT_ACTIVE (4)"``, ``"Active"`` -> ``"Active"``."""
    word = _strip_code(text)
    key = word.upper().removeprefix("PORT_").replace(" ", "")
    return PORT_STATES.get(key, word)


@lru_cache(maxsize=512)  # a large fabric repeats a handful of values
def normalize_phys_state(text: str) -> str:
    """``"5: LinkUp"``, ``"LINK_UP (5)"``, ``"LinkUp"`` -> ``"LinkUp"``."""
    word = _strip_code(text)
    key = word.upper().replace(" ", "")
    return PHYS_STATES.get(key, word)


def normalize_link_layer(text: str) -> str:
    """``"IB"`` (ibsim) and ``"InfiniBand"`` -> ``"InfiniBand"``; else as given."""
    word = text.strip()
    return "InfiniBand" if word.upper() in {"IB", "INFINIBAND"} else word


def normalize_guid(text: str) -> str:
    """``"0002:c903:004b:feee"`` or ``"0x100001"`` -> ``"0x0002c903004bfeee"`` form."""
    digits = text.strip().lower().removeprefix("0x").replace(":", "")
    if not re.fullmatch(r"[0-9a-f]{1,16}", digits):
        raise ValueError(f"not a GUID: {text!r}")
    return "0x" + digits.rjust(16, "0")


@lru_cache(maxsize=512)  # a large fabric repeats a handful of values
def speed_from_lane_gbps(gbps: float) -> str | None:
    """Lane rate in Gb/s (``53.125``) -> generation name (``"HDR"``)."""
    for name, lane in LANE_GBPS.items():
        if abs(lane - gbps) < 1e-6:
            return name
    return None


def failure_line(line: str, extra: Iterable[re.Pattern[str]] = ()) -> str | None:
    """``line`` (stripped) when it records a tool failure (``ibpanic: ...``), else None."""
    stripped = line.strip()
    markers = (*FAILURE_MARKERS, *extra)
    return stripped if any(marker.match(stripped) for marker in markers) else None


def find_failure(text: str, extra: Iterable[re.Pattern[str]] = ()) -> str | None:
    """Return the first line that records a tool failure, if any."""
    for _, line in lines(text):
        if reason := failure_line(line, extra):
            return reason
    return None


def failed(tool: str, model: type[M], data: dict[str, object], reason: str) -> M:
    """The envelope of a run the tool itself reported as failed: the records parsed before its
    failure line, ``ok=False`` and the line as the reason (only the reason when the records
    before it are incomplete)."""
    try:
        return model.model_validate({**data, "ok": False, "reason": reason})
    except ValidationError:
        return model.model_validate({"ok": False, "reason": reason})


P = TypeVar("P")


def cut_short(tool: str, result: P, line: int) -> P:
    """The result envelope of output whose last line (``line``) has no newline, i.e. was cut
    short: a result with ``ok`` keeps its records and becomes ``ok=False`` with the reason (a
    tool failure already reported stays the reason); one without (ibnetdiscover's graph)
    becomes a ParseError."""
    reason = f"{tool}: line {line} ends without a newline: the output was cut short"
    if "ok" in getattr(type(result), "model_fields", {}):
        if not result.ok:  # type: ignore[attr-defined]
            return result
        return result.model_copy(update={"ok": False, "reason": reason})  # type: ignore[attr-defined]
    raise ParseError(tool, line, "a last line ending in a newline (was the output cut short?)")


def first_content_line(text: str) -> tuple[int, str]:
    """The first non-blank line and its number, or ``(0, "")`` for blank input."""
    for number_, line in lines(text):
        if line.strip():
            return number_, line
    return 0, ""


def _lower_first(text: str) -> str:
    """pydantic's message with its first letter lowered (a range's "LID" and "Gb/s" kept)."""
    return text[:1].lower() + text[1:]


#: A number as a tool prints it: decimal, with a fraction or exponent, or 0x hexadecimal; a
#: minus sign belongs to it, a word or hyphenated name around it does not.
_NUMBER_TOKEN = re.compile(r"(?<![\w-])-?(?:0x[0-9a-f]+|\d+(?:\.\d+)?(?:e[+-]?\d+)?)", re.I)


def _value_line(text: str | None, value: object) -> int:
    """The first line of ``text`` printing a number equal to ``value``; 0 when there is no
    text or no such line."""
    if text is None or isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    for number, line in lines(text):
        for token in _NUMBER_TOKEN.findall(line):
            digits = token.lstrip("-")
            shown = int(digits, 16) if digits[:2].lower() == "0x" else float(digits)
            if (-shown if token.startswith("-") else shown) == value:
                return number
    return 0


def _parse_error(
    tool: str, model: type[BaseModel], err: ValidationError, line: int, text: str | None
) -> ParseError:
    """A ValidationError of ``model`` as the ParseError naming each field (a nested model's
    own ParseError, from :meth:`Model.__init__`, unwrapped), the value and, where ``text``
    shows a value out of range, its line. The ParseError keeps ``problems`` (path, message),
    ``value`` and ``missing`` for an enclosing model's."""
    problems: list[tuple[str, str]] = []
    value: object = None
    missing = False
    for error in err.errors():
        path = ".".join(map(str, error["loc"]))
        ctx = error.get("ctx") or {}
        cause = ctx.get("error")
        if isinstance(cause, ParseError) and hasattr(cause, "problems"):
            inner = cause.problems
            problems += [(".".join(p for p in (path, sub) if p), msg) for sub, msg in inner]
            value = cause.value if value is None else value  # type: ignore[attr-defined]
            missing = missing or cause.missing  # type: ignore[attr-defined]
            continue
        problems.append((path, _lower_first(error["msg"])))
        if error["type"] == "missing":
            missing = True
        elif value is None:
            value = ctx.get("value", error.get("input"))
    if not missing and line == 0:
        line = _value_line(text, value)
    shown = [f"{path}: {msg}" if path else msg for path, msg in problems[:3]]
    more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
    hint = "; was the output cut short?" if line == 0 and missing else ""
    parse_error = ParseError(
        tool, line, f"complete {model.__name__} fields ({'; '.join(shown)}{more}){hint}"
    )
    parse_error.problems = problems  # type: ignore[attr-defined]
    parse_error.value = value  # type: ignore[attr-defined]
    parse_error.missing = missing  # type: ignore[attr-defined]
    return parse_error


def build(tool: str, model: type[M], data: object, line: int = 0, text: str | None = None) -> M:
    """Validate ``data`` into ``model``; a validation failure becomes a ParseError (naming the
    line of ``text`` that shows a value out of range)."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise _parse_error(tool, model, err, line, text) from None
