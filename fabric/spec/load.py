"""Load a cluster spec from YAML and turn every validation failure into readable problems.

Two file shapes are accepted: a plain spec (the cluster mapping at the top level)
or a Pulumi stack file (``config: {railyard:cluster: {...}}``). Every problem is a
:class:`~fabric.spec.problems.Problem` whose path reads like the YAML:
``nodes[0].hcas[1].rate_gbps``.
"""

from __future__ import annotations

import copy
import ipaddress
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from fabric.redact import first_bad_char, public, secret_kind, shown, text_problem
from fabric.spec.constants import SKIP_RULES
from fabric.spec.models import ClusterSpec, SecretRef
from fabric.spec.problems import Problem, SpecError
from fabric.spec.rules import cross_field_problems
from fabric.spec.targets import stack_config_problems

__all__ = [
    "STACK_KEY",
    "cluster_mapping",
    "format_path",
    "load_spec",
    "problems_of",
    "spec_from_mapping",
]

#: The Pulumi stack config key that holds the cluster spec.
STACK_KEY = "railyard:cluster"


#: The most aliases (``*name``) a spec may use, and the most values they may add when expanded:
#: a spec aliases a few shared settings; a "billion laughs" aliases lists of lists of aliases.
MAX_ALIASES = 1000
MAX_ALIASED_VALUES = 100_000
#: The most text (characters of the values) aliases may add once expanded: a few aliased
#: values are small, while one host list aliased a thousand times was 84 KB of YAML that took
#: over 60 s and 620 MB (issue 44). The size, not the count of values, is what costs.
MAX_ALIASED_TEXT = 1 << 20


class _UniqueKeys(yaml.constructor.SafeConstructor):
    """A safe constructor that rejects a key repeated in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"found the key {key!r} twice; keep one",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _UniqueKeyLoader(_UniqueKeys, yaml.SafeLoader):
    """A safe YAML loader that rejects a key repeated in one mapping, and bounds aliases: at
    most MAX_ALIASES of them, adding at most MAX_ALIASED_VALUES values once expanded, no loop
    (checked on the composed nodes, before any value is built). Pure Python: it words every
    YAML error a spec gets."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):  # type: ignore[no-untyped-call]
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"more than {MAX_ALIASES} aliases (*name); write the values out",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
        return super().compose_node(parent, index)  # type: ignore[no-untyped-call]

    def compose_document(self) -> yaml.Node | None:
        node = super().compose_document()  # type: ignore[no-untyped-call]
        if self.aliases and node is not None:
            _check_expansion(node)
        return node  # type: ignore[no-any-return]


# --- the fast path: libyaml composes plain text -------------------------------------------

#: Whether PyYAML was built with libyaml, whose composer is ~15x faster than the Python one
#: (a 16,384-host spec: 1 s of the 1.3 s its load took).
_HAVE_LIBYAML = bool(getattr(yaml, "__with_libyaml__", False))

#: The deepest nesting the fast path takes: a spec nests a few levels. Deeper text goes to the
#: Python loader, whose recursion limit (not libyaml's 1,000 levels) says what is too deep.
_PLAIN_DEPTH = 64

#: Text libyaml reads otherwise than PyYAML's Python scanner (found by running both on
#: mutated specs and random text), left to the Python loader: a tab (PyYAML refuses many), a
#: byte order mark (libyaml skips one at any line's start), ``!`` (a tag: PyYAML reads ``!``
#: with no value as null, libyaml as ''), ``?`` (libyaml takes it inside a flow collection's
#: plain scalar), and ``#`` right after a block scalar's ``|`` or ``>`` (PyYAML refuses it).
_UNLIKE = re.compile(r"[\t\ufeff!?]|[|>][-+0-9]*#")


_LIBYAML_LOADER: Any = yaml.CSafeLoader if _HAVE_LIBYAML else yaml.SafeLoader


class _PlainLoader(_UniqueKeys, _LIBYAML_LOADER):  # type: ignore[misc]
    """libyaml's composer with _UniqueKeyLoader's construction (the duplicate-key check
    included); it bounds no alias, so only a tree :func:`_plain_tree` accepts is built."""


class _NotPlain(Exception):
    """The text needs the Python loader: it has aliases, or nests deeper than _PLAIN_DEPTH."""


def _plain_tree(root: yaml.Node) -> bool:
    """Whether ``root`` is a tree (no node reached twice) at most _PLAIN_DEPTH deep. libyaml
    composes an alias as its anchor's very node, so a tree has no alias (and no loop)."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen or depth > _PLAIN_DEPTH:
            return False
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend((part, depth + 1) for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)
    return True


def _load_plain(text: str) -> Any:
    """The value of a YAML text without aliases, composed by libyaml; raise _NotPlain (or
    any error) for text the Python loader must read."""
    if not _HAVE_LIBYAML or _UNLIKE.search(text):
        raise _NotPlain
    loader = _PlainLoader(text)
    try:
        node = loader.get_single_node()
        if node is None or not _plain_tree(node):
            raise _NotPlain
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _load_yaml(text: str) -> Any:
    """The value of a YAML text, as _UniqueKeyLoader reads it. Plain text (no alias, shallow)
    takes libyaml's fast path; anything else, and any error there, goes to the Python loader,
    so that every bound holds and every error reads as it always did."""
    try:
        return _load_plain(text)
    except Exception:  # noqa: BLE001, S110 - the Python loader reads it again and words the error
        pass
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _own_text(node: yaml.Node) -> int:
    """The characters a node holds itself: a scalar's value (a collection's are its items')."""
    return len(node.value) if isinstance(node, yaml.ScalarNode) else 0


def _check_expansion(root: yaml.Node) -> None:
    """Raise a ComposerError (at the alias's anchor) if aliases add more than
    MAX_ALIASED_VALUES values once expanded, or an alias sits inside its own anchor (a loop).
    Each distinct node is sized once, so a billion-laughs document costs its own length."""
    sizes: dict[int, int] = {}
    texts: dict[int, int] = {}  # characters of the values, once expanded
    distinct = distinct_text = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            texts[key] = _own_text(node) + sum(texts[id(child)] for child in children)
            if sizes[key] - distinct > MAX_ALIASED_VALUES:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"the aliases in this value expand to more than {MAX_ALIASED_VALUES} values "
                    "(a 'billion laughs'); write the values out, or alias fewer and smaller ones",
                    node.start_mark,
                )
            if texts[key] - distinct_text > MAX_ALIASED_TEXT:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"the aliases in this value repeat more than {MAX_ALIASED_TEXT >> 20} MiB of "
                    "text once expanded; write the values out, or alias fewer and smaller ones",
                    node.start_mark,
                )
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise yaml.composer.ComposerError(
                None,
                None,
                "an alias inside its own anchor (a loop); alias a value defined before it",
                node.start_mark,
            )
        open_nodes.add(key)
        distinct += 1
        distinct_text += _own_text(node)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


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


def _type_at(loc: Sequence[int | str]) -> Any:
    """The (unwrapped) type of the value at ``loc`` inside ClusterSpec, or None if unknown."""
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
    return _strip(current)


def _model_at(loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The spec model found at ``loc`` inside ClusterSpec, if one is there."""
    current = _type_at(loc)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _shown(value: Any) -> str:
    """The value quoted in a message: cut to 60 characters before it is built, no secret; a
    text public data would not be (a password, a token) is named by its length and the
    position of its first character no name uses, never shown."""
    if isinstance(value, str) and not public(value):
        bad = first_bad_char(value[: 1 << 16])
        at = f"; character {bad} is not allowed" if bad is not None else ""
        return f"text of {len(value)} characters (not shown{at})"
    return shown(value)


# --- text in fields: secrets and characters public data never uses ------------------------

#: What a text field may hold besides names' characters (fabric.redact.PUBLIC_CHARS), by the
#: field's name: a node description (as a switch or HCA answers), a URL, an SSH key line.
_URL_CHARS = "?&#!$'()*;"
#: What a URL field holds: a scheme, then the rest.
_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S")
_EXTRA_CHARS = {
    "node_description": ";#()",
    "url": _URL_CHARS,
    "proxy": _URL_CHARS,
    "api_server": _URL_CHARS,
    # known_hosts host patterns (``10.20.0.*``, ``!gpu9?``) and hashed names (``|1|...``)
    "known_hosts": "*?!|",
    # enroot's image names: ``registry#image:tag`` (pyxis's --container-image)
    "nccl_container": "#",
}
#: Fields of SSH key lines (``ssh-ed25519 AAAA...``): the key's body is public.
_KEY_LINES = frozenset({"host_keys", "known_hosts"})
#: The password of a URL's ``user:password@`` (its field's rule refuses it, never showing it).
_USERINFO_PASSWORD = re.compile(r":[^\s/@]{1,256}@")


def _extra_kind(loc: Sequence[int | str]) -> str:
    return "ssh-key" if _KEY_LINES & {part for part in loc if isinstance(part, str)} else ""


#: An SSH public key in a key line: its base64 body is public, and key-shaped.
_SSH_KEY = re.compile(
    r"(?:ssh-ed25519|ssh-rsa|ssh-dss|ecdsa-sha2-nistp(?:256|384|521)|"
    r"sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) AAAA[A-Za-z0-9+/]+={0,3}"
)


def _pattern(annotation: Any, field: FieldInfo | None) -> str | None:
    """The pattern of the value's field, if it has one of its own."""
    metadata = list(field.metadata) if field is not None else []
    if get_origin(annotation) is Annotated:
        metadata += list(get_args(annotation)[1:])
    return next((item.pattern for item in metadata if getattr(item, "pattern", None)), None)


def _extra(loc: Sequence[int | str]) -> str:
    names = [part for part in loc if isinstance(part, str)]
    for name in reversed(names):
        if name in _EXTRA_CHARS:
            return _EXTRA_CHARS[name]
        if name.endswith("_url"):
            return _EXTRA_CHARS["url"]
    return ""


@dataclass
class _TextFinding:
    """A text the spec must not hold: its problem, and where the value (or key) sits."""

    problem: Problem
    loc: tuple[int | str, ...]
    key: bool = False


def _text_findings(data: Any) -> list[_TextFinding]:
    """Every text of ``data`` (values and keys) that is secret-shaped or uses a character its
    field's public data never does; fields with a pattern of their own and secret fields
    (SecretRef, reported by their own rule) are left to validation."""
    found: list[_TextFinding] = []

    def visit(value: Any, annotation: Any, field: FieldInfo | None, loc: tuple) -> None:
        kind = _strip(annotation) if annotation is not None else None
        if kind is SecretRef and not isinstance(value, Mapping):
            return
        if isinstance(value, str):
            pattern = _pattern(annotation, field)
            if get_origin(kind) is Literal or (pattern and not re.search(pattern, value)):
                return  # validation refuses it, never showing it (_shown)
            if pattern:  # well-formed for its field: a checksum's hex is no secret there
                why = text_problem(value, _extra(loc))
                if why is not None and secret_kind(value[: 1 << 16]) != "hex key":
                    found.append(_TextFinding(Problem(format_path(loc), why), loc))
                return
            extra = _extra(loc)
            if extra == _URL_CHARS and not _URL.match(value):
                extra = ""  # a URL's characters only after its scheme
            text = _SSH_KEY.sub("ssh-key", value) if "ssh-key" in _extra_kind(loc) else value
            if extra == _URL_CHARS:  # a URL's user:password@: its own rule names it
                text = _USERINFO_PASSWORD.sub("@", text)
            why = text_problem(text, extra)
            if why is not None:
                found.append(_TextFinding(Problem(format_path(loc) or "(spec)", why), loc))
        elif isinstance(value, Mapping):
            model = kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None
            item = get_args(kind)[-1] if get_origin(kind) is dict else None
            for index, (key, item_value) in enumerate(value.items()):
                if isinstance(key, str) and (why := text_problem(key)) is not None:
                    where = f"{format_path(loc) or '(spec)'} (key {index + 1})"
                    found.append(_TextFinding(Problem(where, "its key " + why), (*loc, key), True))
                    continue
                info = model.model_fields.get(str(key)) if model is not None else None
                inner = info.annotation if info is not None else item
                visit(item_value, inner, info if info is not None else None, (*loc, key))
        elif isinstance(value, list):
            item = get_args(kind)[0] if get_origin(kind) in (list, tuple) else None
            for index, entry in enumerate(value[:_MAX_WALKED]):
                visit(entry, item, None, (*loc, index))

    visit(data, ClusterSpec, None, ())
    return found


#: The most list entries the walk reads in one list (a host list is a text; the loaders
#: bound the rest).
_MAX_WALKED = 200_000


#: The Pulumi config key each secret field's examples name.
_SECRET_EXAMPLES = {
    "bmc.password": "bmcPassword",
    "slurm.munge_key": "mungeKey",
    "kubernetes.token": "kubernetesToken",
    "kubernetes.client_certificate": "kubernetesClientCertificate",
    "kubernetes.client_key": "kubernetesClientKey",
    "kubernetes.ca_certificate": "kubernetesCa",
}


def _secret_field(loc: Sequence[int | str]) -> str | None:
    """The path of the secret field (a SecretRef) ``loc`` is in or at, or None."""
    for end in range(len(loc), 0, -1):
        if _type_at(loc[:end]) is SecretRef:
            return format_path(loc[:end])
    return None


def _secret_problem(path: str, field: str, kind: str) -> Problem:
    """A field error in a secret field, without its value or any key written there."""
    name = _SECRET_EXAMPLES.get(field, "mySecret")
    how = f"write {{config: {name}}} and run `pulumi config set --secret {name} ...`"
    if path == field and kind != "missing":
        return Problem(path, f"a secret is never written in the spec (value not shown); {how}")
    if kind == "extra_forbidden":
        return Problem(field, f"a secret reference has only the key config (keys not shown); {how}")
    return Problem(path, f"names the Pulumi config secret holding the value; {how}")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _expected(error: Mapping[str, Any], loc: Sequence[int | str]) -> str:
    """What the field takes, in the spec's terms, for one pydantic error type."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "expected a whole number"
    if kind in ("bool_parsing", "bool_type"):
        return "expected true or false"
    if kind == "string_type":
        return "expected text"
    if kind in ("list_type", "tuple_type"):
        return "expected a list"
    bounds = {
        "greater_than_equal": ("ge", "must be {} or more"),
        "greater_than": ("gt", "must be more than {}"),
        "less_than_equal": ("le", "must be {} or less"),
        "less_than": ("lt", "must be less than {}"),
    }
    if kind in bounds:
        key, text = bounds[kind]
        return text.format(ctx.get(key))
    if kind == "literal_error":
        return f"use one of {ctx.get('expected')}"
    if kind == "too_short" and tuple(loc) == ("nodes",):
        return "declare at least one node group, e.g. - {names: gpu[01-04], gpus: 8}"
    if kind == "too_short":
        return f"needs at least {_count(ctx.get('min_length', 1), 'entry', 'entries')}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_pattern_mismatch" and tuple(loc) == ("name",):
        return (
            "use lowercase letters, digits and hyphens, starting with a letter, at most"
            " 40 characters, e.g. gpu-cluster"
        )
    if kind == "ip_v4_network":
        return "expected an IPv4 network with no host bits set, e.g. 10.10.0.0/24"
    if kind == "ip_v4_address":
        return "expected an IPv4 address, e.g. 10.10.0.11"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        model = _model_at(loc)
        keys = f" ({', '.join(model.model_fields)})" if model else ""
        return f"expected a mapping of keys{keys}; see railyard schema"
    message = str(error["msg"]).removeprefix("Value error, ")
    for phrase, plain in (("Input should be ", "expected "), ("Input is not ", "not ")):
        if message.startswith(phrase):
            return plain + message[len(phrase) :]
    return message


def _field_problem(error: Mapping[str, Any]) -> Problem:
    """One pydantic field error as a problem with the bad value and the fix; a secret
    field's value is never shown."""
    loc = tuple(error["loc"])
    path = format_path(loc) or "(spec)"
    kind = error["type"]
    secret = _secret_field(loc)
    if secret is not None:
        return _secret_problem(path, secret, kind)
    if kind == "missing":
        return Problem(path, f"required but missing; {_how_to_add(loc)}")
    if kind == "hosts_in_all":  # a count over the whole list: no one value to show
        return Problem(path, str(error["msg"]))
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        allowed = ", ".join(model.model_fields) if model else "see railyard schema"
        return Problem(path, f"unknown key {str(loc[-1])!r}; allowed keys: {allowed}")
    return Problem(path, f"{_expected(error, loc)}; got {_shown(error.get('input'))}")


#: Examples for the required sections a spec most often lacks.
_MISSING_EXAMPLES = {
    "management": "management: {subnet: 10.10.0.0/24}",
    "nodes": "nodes: [{names: gpu[01-04], gpus: 8}]",
    "fabric": "fabric: {kind: infiniband}",
}


def _how_to_add(loc: Sequence[int | str]) -> str:
    """How to add the missing field at ``loc``: an example, or the keys its model requires."""
    name = str(loc[-1]) if loc else "(spec)"
    if tuple(loc) in {(key,) for key in _MISSING_EXAMPLES}:
        return f"add it, e.g. {_MISSING_EXAMPLES[name]} (railyard schema has every key)"
    model = _model_at(loc)
    if model is not None:
        keys = [key for key, info in model.model_fields.items() if info.is_required()]
        need = f" with at least {', '.join(keys)}" if keys else ""
        return f"add {name}:{need} (railyard schema has every key)"
    return f"add {name}: with a value (railyard schema says which kind)"


def _rule_problems(error: ValidationError) -> list[Problem] | None:
    """The cross-field problems ``error`` carries, or None if it holds field errors."""
    problems: list[Problem] = []
    for item in error.errors():
        cause = (item.get("ctx") or {}).get("error")
        if not isinstance(cause, SpecError):
            return None
        problems.extend(cause.problems)
    return problems


def _bound(field: FieldInfo) -> int:
    """The smallest int ``field`` accepts (0 when unbounded below)."""
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            return int(item.ge)  # type: ignore[call-overload]
        if isinstance(item, annotated_types.Gt):
            return int(item.gt) + 1  # type: ignore[call-overload]
    return 0


@dataclass
class _Repair:
    """A copy of a spec mapping whose failing fields are dropped or given placeholders.

    ``unknown`` collects the paths of failing fields (whose values are defaults or
    placeholders now); the cross-field rules skip findings in or reading them.
    """

    data: dict[str, Any]
    unknown: set[str] = dc_field(default_factory=set)
    placeholders: int = 0

    def placeholder(self, kind: Any, field: FieldInfo | None = None) -> Any:
        """A value of type ``kind`` that validates: the type's first literal, a unique
        name, the field's lowest int, an empty network, or a model of such values."""
        kind = _strip(kind)
        if get_origin(kind) is Literal:
            return get_args(kind)[0]
        if get_origin(kind) is list:
            least = next(
                (
                    m.min_length
                    for m in (field.metadata if field else ())
                    if isinstance(m, annotated_types.MinLen)
                ),
                0,
            )
            return [self.placeholder(get_args(kind)[0]) for _ in range(least)]
        if get_origin(kind) is dict:
            return {}
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return {
                name: self.placeholder(info.annotation, info)
                for name, info in kind.model_fields.items()
                if info.is_required()
            }
        if kind is bool:
            return False
        if kind is int:
            return _bound(field) if field else 0
        if kind is ipaddress.IPv4Network:
            return "0.0.0.0/0"
        if kind is ipaddress.IPv4Address:
            return "0.0.0.0"
        self.placeholders += 1
        return f"unknown{self.placeholders}"

    def fix(self, error: Mapping[str, Any]) -> bool:
        """Drop or replace the value ``error`` points at; False if it cannot be found."""
        loc = tuple(error["loc"])
        if not loc:
            return False
        if loc[-1] == "[key]":  # a bad dict key: drop the entry
            loc = loc[:-1]
        parent: Any = self.data
        for part in loc[:-1]:
            try:
                parent = parent[part]
            except (KeyError, IndexError, TypeError):
                return False
        last = loc[-1]
        if error["type"] == "extra_forbidden":  # not a field: rules never read it
            if isinstance(parent, dict):
                parent.pop(last, None)
            return True
        self.unknown.add(format_path(loc))
        model = _model_at(loc[:-1])
        field = model.model_fields.get(str(last)) if model else None
        if isinstance(parent, dict) and (field is None or not field.is_required()):
            parent.pop(last, None)  # a default takes its place, or a dict entry goes
            return True
        if isinstance(parent, (dict, list)):
            parent[last] = self.placeholder(_type_at(loc), field)  # type: ignore[index]
            return True
        return False


#: Repair rounds: a placeholder model may bring its own field errors to the next round.
_REPAIR_ROUNDS = 4


def _best_effort_rule_problems(
    data: Mapping[str, Any], error: ValidationError, unknown: Sequence[str] = ()
) -> list[Problem]:
    """The cross-field problems of ``data`` despite its field errors, best effort.

    Failing fields are dropped (when they have a default) or given placeholders, the
    result is validated without rules, and the rules then run skipping every finding
    in or reading a failed field (or one of ``unknown``). Returns [] if no such spec can be
    built.
    """
    try:
        repair = _Repair(copy.deepcopy(dict(data)), set(unknown))
    except (TypeError, copy.Error):
        return []
    errors = error.errors()
    for _ in range(_REPAIR_ROUNDS):
        fixed = [repair.fix(item) for item in errors]
        if not all(fixed):
            return []
        try:
            spec = ClusterSpec.model_validate(repair.data, context={SKIP_RULES: True})
        except ValidationError as again:
            errors = again.errors()
            continue
        return cross_field_problems(spec, unknown=repair.unknown)
    return []


def problems_of(error: ValidationError, data: Mapping[str, Any] | None = None) -> list[Problem]:
    """Every problem of a ClusterSpec ValidationError: field errors, then cross-field rules.

    With the validated ``data``, field errors come with the cross-field problems found
    on the rest of the spec; a path reported by a field error is not reported again.
    """
    rules = _rule_problems(error)
    if rules is not None:
        return rules
    problems = [_field_problem(item) for item in error.errors()]
    if data is not None:
        reported = {problem.path for problem in problems}
        problems += [
            problem
            for problem in _best_effort_rule_problems(data, error)
            if problem.path not in reported
        ]
    return problems


def spec_from_mapping(data: Any, source: str | None = None) -> ClusterSpec:
    """Validate a cluster spec mapping; raise SpecError listing every problem."""
    if not isinstance(data, Mapping):
        raise SpecError(
            [Problem("(spec)", f"expected a mapping of spec keys; got {_shown(data)}")],
            source,
        )
    findings = _text_findings(data)
    if findings:
        raise SpecError(_problems_beside(data, findings), source)
    try:
        return ClusterSpec.model_validate(data)
    except ValidationError as error:
        # Not chained: pydantic's own text repeats every input value, secrets included.
        raise SpecError(problems_of(error, data), source) from None


def _under(path: str, paths: Sequence[str]) -> bool:
    return any(path == p or path.startswith((f"{p}.", f"{p}[")) for p in paths)


def _problems_beside(data: Mapping[str, Any], findings: list[_TextFinding]) -> list[Problem]:
    """The text findings, then every other problem of ``data``: each finding's value is a
    placeholder (its key's entry gone), and the rules skip what reads it."""
    clean: Any = copy.deepcopy(dict(data))
    repair = _Repair(clean)
    unknown: list[str] = []
    for finding in sorted(findings, key=lambda f: len(f.loc), reverse=True):
        *parents, last = finding.loc
        parent = clean
        for part in parents:
            parent = parent[part]
        if finding.key:
            parent.pop(last, None)
            if _model_at(parents) is None:  # a mapping's entry (a host's), not a spec key
                unknown.append(format_path(parents))
        else:
            parent[last] = repair.placeholder(_type_at(finding.loc) or str)
            unknown.append(format_path(finding.loc))
    problems = [finding.problem for finding in findings]
    try:
        spec = ClusterSpec.model_validate(clean, context={SKIP_RULES: True})
    except ValidationError as error:
        fields = [p for p in map(_field_problem, error.errors()) if not _under(p.path, unknown)]
        rules = _best_effort_rule_problems(clean, error, unknown)
        problems += fields
    else:
        rules = cross_field_problems(spec, unknown=unknown)
    reported = {problem.path for problem in problems}
    return problems + [rule for rule in rules if rule.path not in reported]


#: The largest spec file read, sized to the 10 s a command may take (issue 44: a 60 MB spec
#: took 37 s and 279 MB to refuse under the old 64 MiB cap). PyYAML's pure-Python loader reads
#: dense flow mappings at about 0.3 MB/s: 3 MB of them took 10.9 s and 342 MB here (16 MB, 51 s
#: and 1.5 GB). A 100,000-host spec listing every host's SSH address is 2.7 MB.
MAX_SPEC_BYTES = 3 << 20

#: How much of a spec file is read at a time: memory grows with what arrives, and Ctrl-C
#: stops the read between chunks (an endless device, e.g. /dev/zero, included).
_CHUNK = 1 << 20


def _read_capped(path: Path) -> bytearray:
    """At most MAX_SPEC_BYTES + 1 bytes of ``path``, in chunks (the spec layer's copy of
    ``fabric.parsers.text.read_capped``: the spec package imports no parser)."""
    data = bytearray()
    with path.open("rb") as handle:
        while len(data) <= MAX_SPEC_BYTES:
            chunk = handle.read(min(_CHUNK, MAX_SPEC_BYTES + 1 - len(data)))
            if not chunk:
                break
            data += chunk
    return data


def _read_yaml(path: Path) -> Any:
    """Parse ``path`` as YAML, turning missing files and syntax errors into SpecError."""
    where = str(path)
    try:
        raw = _read_capped(path)
    except FileNotFoundError:
        raise SpecError(
            [Problem(where, "no such file; pass a spec or Pulumi.<stack>.yaml")]
        ) from None
    except IsADirectoryError:
        raise SpecError([Problem(where, "is a directory; pass a spec YAML file")]) from None
    except OSError as error:
        raise SpecError([Problem(where, f"cannot be read: {error.strerror}")]) from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(
            [Problem(where, f"larger than {MAX_SPEC_BYTES >> 20} MiB: not a cluster spec")]
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpecError(
            [
                Problem(
                    where,
                    f"not UTF-8 text (byte {error.start}): a spec is a YAML text file; pass"
                    " the spec or Pulumi.<stack>.yaml itself",
                )
            ]
        ) from None
    if "\0" in text:
        raise SpecError([Problem(where, "binary data (a NUL byte): a spec is a YAML text file")])
    try:  # not chained below: a YAML error's text quotes the source line, maybe a secret
        return _load_yaml(text)
    except RecursionError:
        raise SpecError(
            [Problem(where, "invalid YAML: nested too deep to read; a spec nests a few levels")],
            where,
        ) from None
    except ValueError:  # a number too long to convert (Python's 4,300-digit limit)
        raise SpecError(
            [Problem(where, "invalid YAML: a number with too many digits; write a real value")],
            where,
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
        raise SpecError([Problem(at, f"invalid YAML: {error.problem}")], where) from None
    except yaml.YAMLError as error:  # e.g. a control character: its text spans two lines
        raise SpecError(
            [Problem(where, f"invalid YAML: {' '.join(str(error).split())}")], where
        ) from None


def cluster_mapping(data: Any, source: str) -> Any:
    """The cluster mapping of a loaded file: a stack's ``railyard:cluster``, or the file."""
    if data is None:
        raise SpecError([Problem(source, "is empty; expected a cluster spec")], source)
    if isinstance(data, Mapping) and "config" in data:
        config = data["config"]
        if not isinstance(config, Mapping) or STACK_KEY not in config:
            keys = ", ".join(map(str, config)) if isinstance(config, Mapping) else "none"
            raise SpecError(
                [
                    Problem(
                        f"config.{STACK_KEY}",
                        f"missing from this Pulumi stack; config keys: {keys}",
                    )
                ],
                source,
            )
        return config[STACK_KEY]
    return data


def load_spec(path: str | Path) -> ClusterSpec:
    """Read and validate a spec YAML or Pulumi stack file; raise SpecError on any problem
    (a stack's provider settings and secrets are checked against its spec too)."""
    path = Path(path)
    data = _read_yaml(path)
    spec = spec_from_mapping(cluster_mapping(data, str(path)), str(path))
    if isinstance(data, Mapping) and isinstance(data.get("config"), Mapping):
        problems = stack_config_problems(data["config"], spec)
        if problems:
            raise SpecError(problems, str(path))
    return spec
