"""Load a cluster spec from YAML and turn every validation failure into readable problems.

Two file shapes are accepted: a plain spec (the cluster mapping at the top level)
or a Pulumi stack file (``config: {railyard:cluster: {...}}``). Every problem is a
``(path, message)`` pair whose path reads like the YAML: ``nodes[0].hcas[1].rate_gbps``.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from fabric.spec import ClusterSpec, SpecProblems

#: The Pulumi stack config key that holds the cluster spec.
STACK_KEY = "railyard:cluster"

Problem = tuple[str, str]


class SpecError(ValueError):
    """A spec that cannot be used, with every problem found as ``(path, message)``."""

    def __init__(self, problems: Sequence[Problem], source: str | None = None) -> None:
        super().__init__(list(problems))
        self.problems = list(problems)
        self.source = source

    def __str__(self) -> str:
        return "\n".join(f"{path}: {message}" for path, message in self.problems)


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that rejects a key repeated in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"found the key {key!r} twice; keep one", key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def format_path(loc: Sequence[int | str]) -> str:
    """``("nodes", 0, "hcas", 1, "rate_gbps")`` -> ``nodes[0].hcas[1].rate_gbps``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _strip(annotation: Any) -> Any:
    """Drop ``Annotated`` and ``| None`` wrappers from a type annotation."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _model_at(loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The spec model found at ``loc`` inside ClusterSpec, if one is there."""
    current: Any = ClusterSpec
    for part in loc:
        current = _strip(current)
        if get_origin(current) in (list, dict):
            current = get_args(current)[-1]
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return None
            current = field.annotation
        else:
            return None
    current = _strip(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field_problem(error: Mapping[str, Any]) -> Problem:
    """One pydantic field error as a ``(path, message)`` pair with the bad value and the fix."""
    loc = tuple(error["loc"])
    path = format_path(loc) or "(spec)"
    kind = error["type"]
    if kind == "missing":
        return path, "required but missing"
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        allowed = ", ".join(model.model_fields) if model else "see python -m fabric schema"
        return path, f"unknown key {str(loc[-1])!r}; allowed keys: {allowed}"
    return path, f"{error['msg']}; got {_shown(error.get('input'))}"


def problems_of(error: ValidationError) -> list[Problem]:
    """Every problem in a ClusterSpec ValidationError: field errors, then cross-field rules."""
    problems: list[Problem] = []
    for item in error.errors():
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, SpecProblems):
            problems.extend(cause.problems)
        else:
            problems.append(_field_problem(item))
    return problems


def spec_from_mapping(data: Any, source: str | None = None) -> ClusterSpec:
    """Validate a cluster spec mapping; raise SpecError listing every problem."""
    if not isinstance(data, Mapping):
        raise SpecError(
            [("(spec)", f"expected a mapping of spec keys; got {_shown(data)}")],
            source,
        )
    try:
        return ClusterSpec.model_validate(data)
    except ValidationError as error:
        raise SpecError(problems_of(error), source) from error


def _read_yaml(path: Path) -> Any:
    """Parse ``path`` as YAML, turning missing files and syntax errors into SpecError."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([(where, "no such file; pass a spec or Pulumi.<stack>.yaml")]) from None
    except IsADirectoryError:
        raise SpecError([(where, "is a directory; pass a spec YAML file")]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError([(where, f"cannot be read: {error}")]) from error
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
        raise SpecError([(at, f"invalid YAML: {error.problem}")], where) from error
    except yaml.YAMLError as error:
        raise SpecError([(where, f"invalid YAML: {error}")], where) from error


def cluster_mapping(data: Any, source: str) -> Any:
    """The cluster mapping of a loaded file: a stack's ``railyard:cluster``, or the file."""
    if data is None:
        raise SpecError([(source, "is empty; expected a cluster spec")], source)
    if isinstance(data, Mapping) and "config" in data:
        config = data["config"]
        if not isinstance(config, Mapping) or STACK_KEY not in config:
            keys = ", ".join(map(str, config)) if isinstance(config, Mapping) else "none"
            raise SpecError(
                [(f"config.{STACK_KEY}", f"missing from this Pulumi stack; config keys: {keys}")],
                source,
            )
        return config[STACK_KEY]
    return data


def load_spec(path: str | Path) -> ClusterSpec:
    """Read and validate a spec YAML or Pulumi stack file; raise SpecError on any problem."""
    path = Path(path)
    return spec_from_mapping(cluster_mapping(_read_yaml(path), str(path)), str(path))
