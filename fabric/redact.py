"""The one secret filter: text that quotes input never shows anything shaped like a secret.

Every message, log line, JSON error and artifact that quotes what an operator typed or gave
(a spec problem, a command's error line, a parser's error, ``check --plan``'s parameters,
``import``'s notes) goes through :func:`redact`. Whatever field a secret lands in, these
shapes are replaced by a fixed marker with their kind and length, the field around them kept:

- a PEM block (``-----BEGIN ... PRIVATE KEY-----`` through its END line, or the text's end);
- a base64 blob of key length (32 or more characters of the base64 alphabet, lines joined,
  upper and lower case mixed as in random data: a munge key, a private key's body);
- a hex string of key length (32 or more hex digits);
- the password of ``user:password@host`` (the user and the host are kept).

Standard library only: the spec package, the CLI and the parsers' error paths use it.
:func:`shown` is the bounded ``repr`` every message uses to quote a value: it is cut before
it is built, so a huge value (an alias-expanded list) costs no more than the cut.
"""

from __future__ import annotations

import re
from typing import Any

#: How every redacted value starts: ``<redacted KIND, N characters>``.
MARKER = "<redacted"

_PEM = re.compile(r"-----\s*BEGIN[^\n-]*-----.*?(?:-----\s*END[^\n-]*-----|\Z)", re.DOTALL)
#: A run of base64 (its lines joined by real or escaped newlines, or by blanks between long runs).
_BASE64 = re.compile(
    r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{16,}={0,2}"
    r"(?:(?:\\r|\\n|\r|\n)+[ \t]*[A-Za-z0-9+/]+={0,2}|[ \t]+[A-Za-z0-9+/]{16,}={0,2})*"
    r"(?![A-Za-z0-9+/])"
)
_HEX = re.compile(r"(?<![0-9A-Za-z])[0-9A-Fa-f]{32,}(?![0-9A-Za-z])")
#: ``user:password@host``: the user starts a word (so scanning is linear), the password is
#: everything between its colon and the last ``@`` before the host.
_USERINFO = re.compile(
    r"(?<![^\s/'\"\\=,;(\[{<>])(?P<user>[A-Za-z0-9_.%+~-]{1,64}):"
    r"(?P<password>[^\s/'\"\\]{1,256})@(?=[\w\[])"
)

#: The shortest base64 text taken for a key: a 192-bit key is 32 characters of base64.
KEY_CHARS = 32


def marker(kind: str, length: int) -> str:
    """The fixed text a secret of ``kind`` and ``length`` characters is replaced by."""
    return f"{MARKER} {kind}, {length} characters>"


def _base64(match: re.Match[str]) -> str:
    text = match.group(0)
    body = re.sub(r"\\r|\\n|\s", "", text)
    if (
        len(body.rstrip("=")) >= KEY_CHARS
        and re.search(r"[a-z]", body)
        and re.search(r"[A-Z]", body)
        and _changes(body) >= 0.3 * len(body)
    ):
        return marker("base64 key", len(body))
    return text


def _changes(body: str) -> int:
    """How often the kind of character (lower, upper, digit) changes along ``body``'s letters
    and digits: about 0.6 per character in random base64, about 0.2 in a path such as
    ``redfish/v1/Managers/iDRAC/EthernetInterfaces/NIC1`` (which is no key)."""
    kinds = ["l" if c.islower() else "u" if c.isupper() else "d" for c in body if c.isalnum()]
    return sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))


def redact(text: str) -> str:
    """``text`` with every secret-shaped part replaced by its marker (see the module)."""
    if not text:
        return text
    text = _PEM.sub(lambda m: marker("PEM block", len(m.group(0))), text)
    text = _BASE64.sub(_base64, text)
    text = _HEX.sub(lambda m: marker("hex key", len(m.group(0))), text)
    return _USERINFO.sub(
        lambda m: f"{m.group('user')}:{marker('password', len(m.group('password')))}@", text
    )


def has_secret(text: str) -> bool:
    """Whether ``text`` holds anything :func:`redact` would hide."""
    return redact(text) != text


#: The longest quoted value in a message.
SHOWN_CHARS = 60


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, secrets redacted; built piece by piece, so
    a list of a billion entries (YAML aliases) or a 60 MiB string costs what the cut costs.
    A string holding a secret is shown as its marker alone."""
    text = _bounded_repr(value, limit + 1, 0)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: How deep :func:`shown` looks into nested lists and mappings.
_DEPTH = 8


def _bounded_repr(value: Any, budget: int, depth: int) -> str:
    if depth > _DEPTH:
        return "..."
    if isinstance(value, str):
        if has_secret(value[: 1 << 16]):  # what is shown lies in this prefix
            return marker("secret", len(value))
        return redact(repr(value[:budget]))
    if isinstance(value, (bool, float)) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(value) if value.bit_length() < 4096 else f"<a {value.bit_length()}-bit number>"
    if isinstance(value, (list, tuple, set, frozenset)):
        opening, closing = {list: "[]", tuple: "()"}.get(type(value), "{}")
        return _join(
            (_bounded_repr(item, budget, depth + 1) for item in value), opening, closing, budget
        )
    if isinstance(value, dict):
        return _join(
            (
                f"{_bounded_repr(key, budget, depth + 1)}: {_bounded_repr(item, budget, depth + 1)}"
                for key, item in value.items()
            ),
            "{",
            "}",
            budget,
        )
    return redact(repr(value)[:budget])


def _join(parts: Any, opening: str, closing: str, budget: int) -> str:
    text = opening
    for index, part in enumerate(parts):
        text += (", " if index else "") + part
        if len(text) > budget:
            return text
    return text + closing


def redact_doc(doc: Any) -> Any:
    """A JSON-ready document (mappings, lists, scalars) with every string redacted: for
    artifacts that quote the spec, such as ``check --plan``'s parameters."""
    if isinstance(doc, str):
        return redact(doc)
    if isinstance(doc, dict):
        return {redact_doc(key): redact_doc(value) for key, value in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [redact_doc(item) for item in doc]
    return doc
