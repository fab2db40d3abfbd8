"""YAML text of an imported spec's sections, without PyYAML's pure-Python representer.

``dump(data, width)`` returns exactly what ``yaml.dump(data, Dumper=SpecDumper,
sort_keys=False, default_flow_style=False, width=width)`` returns. Mappings, lists, ints and
strings of the known-simple shapes (names such as ``c1-leaf01``, ``mlx5_0``, ``4x``, written
plain and never quoted by PyYAML) are written directly; ``Row`` mappings go on one line (flow
style). Anything else (a string PyYAML would quote, a bool, None, a float, an empty mapping or
list, a key too long for a simple key, a row line near the width) makes the whole call PyYAML's
(``write`` returns None), except in a top-level list of rows such as the cabling, where only that
row is PyYAML's; the text is the same either way (``tests/unit/test_import_yaml.py`` compares
them on real captures). The cables of a 63 MB capture take seconds this way, not minutes.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

#: Plain-safe text: no indicator, quote, space, colon, comma or bracket; first an alphanumeric.
_SIMPLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]*\Z")
_STR_TAG = "tag:yaml.org,2002:str"
#: libyaml writes a longer key as a complex key (``? key``); stay well below its 128.
_MAX_KEY = 100


class SpecDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """libyaml's emitter when PyYAML has it; ``Row`` mappings one a line (flow style)."""


class Row(dict):  # type: ignore[type-arg]
    """A mapping written on one line: a cable."""


SpecDumper.add_representer(
    Row, lambda dumper, row: dumper.represent_mapping("tag:yaml.org,2002:map", row, True)
)


def pyyaml_dump(data: dict[str, Any], width: int) -> str:
    """PyYAML's text of ``data`` (the reference ``dump`` matches)."""
    return yaml.dump(
        data, Dumper=SpecDumper, sort_keys=False, default_flow_style=False, width=width
    )


class _Unsimple(Exception):
    """A value this writer leaves to PyYAML."""


class _Writer:
    """Block-style YAML of simple values; raises ``_Unsimple`` on anything else."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.out: list[str] = []
        self._resolver = Resolver()
        self._plain: dict[str, bool] = {}

    def scalar(self, value: Any) -> str:
        if type(value) is int:
            return str(value)
        if type(value) is not str:
            raise _Unsimple
        ok = self._plain.get(value)
        if ok is None:
            ok = bool(_SIMPLE.match(value)) and (
                self._resolver.resolve(ScalarNode, value, (True, False)) == _STR_TAG
            )
            self._plain[value] = ok
        if not ok:
            raise _Unsimple
        return value

    def key(self, value: Any) -> str:
        if type(value) is not str or len(value) > _MAX_KEY:
            raise _Unsimple
        return self.scalar(value)

    def flow(self, row: dict[str, Any]) -> str:
        parts = []
        for k, v in row.items():
            text = self.flow(v) if type(v) is dict else self.scalar(v)
            parts.append(f"{self.key(k)}: {text}")
        return "{" + ", ".join(parts) + "}"

    def row(self, row: Row, indent: int, dash: str) -> str:
        """A sequence's ``- {...}`` line; at the top level a row this writer leaves to PyYAML
        (a GUID end, quoted) is PyYAML's alone, so one odd cable does not slow the rest."""
        try:
            line = self.flow(row)
            if indent + 2 + len(line) > self.width // 2:
                raise _Unsimple
        except _Unsimple:
            if indent:
                raise
            return pyyaml_dump({"k": [row]}, self.width).split("\n", 1)[1]
        return f"{dash}{line}\n"

    def value(self, value: Any, indent: int) -> None:
        """``value`` after ``key:`` at ``indent`` (the key's column)."""
        if isinstance(value, Row):
            line = self.flow(value)
            if indent + len(line) > self.width // 2:
                raise _Unsimple
            self.out.append(f" {line}\n")
        elif type(value) is dict:
            if not value:
                raise _Unsimple
            self.out.append("\n")
            self.mapping(value, indent + 2, first_prefix=" " * (indent + 2))
        elif type(value) is list:
            if not value:
                raise _Unsimple
            self.out.append("\n")
            self.sequence(value, indent)
        else:
            self.out.append(f" {self.scalar(value)}\n")

    def mapping(self, mapping: dict[str, Any], indent: int, first_prefix: str) -> None:
        prefix = first_prefix
        for k, v in mapping.items():
            self.out.append(f"{prefix}{self.key(k)}:")
            self.value(v, indent)
            prefix = " " * indent

    def sequence(self, items: list[Any], indent: int) -> None:
        dash = " " * indent + "- "
        for item in items:
            if isinstance(item, Row):
                self.out.append(self.row(item, indent, dash))
            elif type(item) is dict:
                if not item:
                    raise _Unsimple
                self.mapping(item, indent + 2, first_prefix=dash)
            else:
                self.out.append(f"{dash}{self.scalar(item)}\n")


def write(data: dict[str, Any], width: int = 100) -> str | None:
    """``data`` as YAML text written directly, byte for byte ``pyyaml_dump(data, width)``;
    None when some value is not of the simple shapes (``dump`` then asks PyYAML)."""
    writer = _Writer(width)
    try:
        if type(data) is not dict or not data:
            raise _Unsimple
        writer.mapping(data, 0, first_prefix="")
    except _Unsimple:
        return None
    return "".join(writer.out)


def dump(data: dict[str, Any], width: int = 100) -> str:
    """``data`` as YAML text, byte for byte ``pyyaml_dump(data, width)``."""
    text = write(data, width)
    return pyyaml_dump(data, width) if text is None else text


__all__ = ["Row", "SpecDumper", "dump", "pyyaml_dump", "write"]
