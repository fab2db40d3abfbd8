"""The one secret filter: text that quotes input never shows anything shaped like a secret.

Every message, log line, JSON error and artifact that quotes what an operator typed or gave
(a spec problem, a command's error line, a parser's error, ``check --plan``'s parameters,
``import``'s notes) goes through :func:`redact`. Whatever field a secret lands in, these
shapes are replaced by a fixed marker with their kind and length, the field around them kept:

- a PEM block (``-----BEGIN ... PRIVATE KEY-----`` through its END line, or the text's end);
- a base64 blob of key length (32 or more characters of the base64 alphabet, lines joined,
  upper and lower case mixed as in random data: a munge key, a private key's body);
- a hex string of key length (32 or more hex digits);
- the password of ``user:password@host`` (the user and the host are kept);
- a token with a known prefix (chat, code-hosting and API tokens: ``xoxb-``, ``ghp_``,
  ``github_pat_``, ``glpat-``, ``sk-``, ...), an AWS access key ID (``AKIA``/``ASIA``...), a
  JSON web token, the token after ``Bearer``/``Basic``;
- a cloud credential file's JSON (a GCP service-account key: ``"private_key"``,
  ``service_account``), whole;
- a long high-entropy word (20 or more letters and digits, upper, lower and digits mixed as
  in random data).

Fields go further (:func:`text_problem`, :func:`shown`): a value is shown only when it is made
of the characters names, addresses and numbers use; any other is named by its length only.

Standard library only: the spec package, the CLI and the parsers' error paths use it.
:func:`shown` is the bounded ``repr`` every message uses to quote a value: it is cut before
it is built, so a huge value (an alias-expanded list) costs no more than the cut.
"""

from __future__ import annotations

import dataclasses
import re
from functools import cache
from itertools import accumulate, chain, compress, repeat, tee
from operator import attrgetter
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

#: Tokens whose prefix names them: chat (Slack), code hosting (GitHub, GitLab), API keys
#: (OpenAI-style ``sk-``, Stripe, Google ``AIza``/``ya29.``, Hugging Face, npm), AWS key IDs.
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    r"xox[abposre]-[A-Za-z0-9-]{8,}|xapp-[A-Za-z0-9-]{8,}"
    r"|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}|glpat-[A-Za-z0-9_-]{16,}"
    r"|sk-[A-Za-z0-9_-]{16,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|AIza[A-Za-z0-9_-]{30,}|ya29\.[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{16,}|npm_[A-Za-z0-9]{16,}"
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA|ABIA|ACCA)[A-Z0-9]{16}"
    r")(?![A-Za-z0-9_])"
)
#: A JSON web token: base64url header (``{"`` is ``eyJ``), payload and signature.
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?")
#: The credential after an HTTP authorization scheme.
_SCHEME = re.compile(
    r"\b(?P<scheme>Bearer|bearer|BEARER|Basic|basic)(?P<gap>\s+)"
    r"(?P<token>(?=[A-Za-z._~+/=-]*[0-9+/=._~-])[A-Za-z0-9._~+/=-]{8,})"
)
#: A credential file's JSON object (a GCP service-account key), to its closing brace or the end.
_CREDENTIAL_JSON = re.compile(
    r"\{[^{}]{0,4096}?(?:service_account|private_key|client_secret|refresh_token)[^{}]*(?:\}|\Z)"
)
#: A word that may be random: letters and digits (base64url's ``-``/``_`` split words).
_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{20,}(?![A-Za-z0-9])")
#: The shortest word taken as random data, and the share of kind changes it must have.
WORD_CHARS = 20
_RANDOM_CHANGES = 0.45

#: The shortest base64 text taken for a key: a 192-bit key is 32 characters of base64.
KEY_CHARS = 32

#: What every pattern above needs somewhere in a text before it can match: ``@`` (userinfo),
#: ``-----`` (PEM), ``{`` (credential JSON), ``eyJ`` (web token), a scheme, a token prefix, or
#: a run of 16 base64 characters (base64 and hex keys, random words, AWS key ids). A text
#: without any is returned as it is, in one scan (a 16,384-host plan holds 9 million strings).
#: (Each alternative starts with a plain character, grouped by it: the regex engine then skips
#: to the next such character at once, and tries only the alternatives that start with it.)
_MAYBE_MARKS = (
    r"@|\{|-----|eyJ|B(?:earer|EARER|asic)|b(?:earer|asic)|x(?:ox|app-)"
    r"|g(?:h[pousr]_|ithub_pat_|lpat-)|sk-|k_(?:live|test)_|AIza|ya29\.|hf_|npm_"
)
_BASE64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_BASE64_RUN = 16
_MAYBE = re.compile(rf"{_MAYBE_MARKS}|[{_BASE64_CHARS}]{{{_BASE64_RUN}}}")

#: Lower-case hex shorter than a hex key, as a GUID is (``0x0002c90300a1b2c3``): no pattern
#: above matches it (a key needs 32 digits or mixed case), so it is passed without them.
_GUID_TEXT = r"(?:0x)?[0-9a-f]{1,31}"
_GUID = re.compile(_GUID_TEXT)


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


def _word(match: re.Match[str]) -> str:
    word = match.group(0)
    if (
        re.search(r"[a-z]", word)
        and re.search(r"[A-Z]", word)
        and re.search(r"[0-9]", word)
        and _changes(word) >= _RANDOM_CHANGES * len(word)
    ):
        return marker("random token", len(word))
    return word


def redact(text: str) -> str:
    """``text`` with every secret-shaped part replaced by its marker (see the module)."""
    if not text or _MAYBE.search(text) is None or _GUID.fullmatch(text):
        return text
    text = _PEM.sub(lambda m: marker("PEM block", len(m.group(0))), text)
    text = _CREDENTIAL_JSON.sub(lambda m: marker("credential JSON", len(m.group(0))), text)
    text = _JWT.sub(lambda m: marker("web token", len(m.group(0))), text)
    text = _SCHEME.sub(
        lambda m: m.group("scheme") + m.group("gap") + marker("token", len(m.group("token"))),
        text,
    )
    text = _TOKEN.sub(lambda m: marker("token", len(m.group(0))), text)
    text = _BASE64.sub(_base64, text)
    text = _HEX.sub(lambda m: marker("hex key", len(m.group(0))), text)
    text = _WORD.sub(_word, text)
    return _USERINFO.sub(
        lambda m: f"{m.group('user')}:{marker('password', len(m.group('password')))}@", text
    )


def has_secret(text: str) -> bool:
    """Whether ``text`` holds anything :func:`redact` would hide."""
    return redact(text) != text


#: The characters of public data: names, host lists, addresses, URLs, versions and numbers.
PUBLIC_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/@[],=+~%- "
)


#: Text no secret shape can match (all need 16 or more characters, or upper case, or ``:``
#: and ``@``), except a chat token's ``xoxb-``: host names and addresses, checked in bulk.
_PLAIN = re.compile(r"[a-z0-9.-]{0,15}")


def first_bad_char(value: str, extra: str = "") -> int | None:
    """The 1-based position of the first character of ``value`` that public data (plus
    ``extra``) does not use, or None."""
    for index, char in enumerate(value, 1):
        if char not in PUBLIC_CHARS and char not in extra:
            return index
    return None


def secret_kind(text: str) -> str | None:
    """The kind of the first secret shape in ``text`` (``base64 key``, ``token``...), or None."""
    found = redact(text)
    if found == text:
        return None
    start = found.index(MARKER) + len(MARKER) + 1
    return found[start : found.index(",", start)]


def text_problem(value: str, extra: str = "", limit: int = 1 << 16) -> str | None:
    """Why ``value`` cannot stand in a field holding public data (``extra``: the further
    characters the field allows), in words that never quote it; None when it can."""
    if _PLAIN.fullmatch(value) and not value.startswith(("xox", "xapp")):
        return None  # a short host name or address: too short for every shape but a chat token
    head = value[:limit]
    kind = secret_kind(head)
    if kind is not None:
        return (
            f"holds what looks like a secret ({kind}, {len(value)} characters; not shown): a "
            "secret is never written in the spec; keep it in Pulumi config (pulumi config set "
            "--secret NAME ...) and leave this field a name or an address"
        )
    bad = first_bad_char(head, extra)
    if bad is not None:
        return (
            f"character {bad} of {len(value)} is one no name, address or number in this field "
            "uses (value not shown); write the value with letters, digits, blanks and "
            ". _ : / @ [ ] , = + ~ % -"
        )
    return None


def public(value: str) -> bool:
    """Whether ``value`` may be quoted: no secret shape, only characters public data uses."""
    return first_bad_char(value[: 1 << 16]) is None and not has_secret(value[: 1 << 16])


#: The longest quoted value in a message.
SHOWN_CHARS = 60


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, secrets redacted; built piece by piece, so
    a list of a billion entries (YAML aliases) or a 60 MiB string costs what the cut costs.
    A string holding a secret is shown as its marker alone, any other string that public data
    would not be (:func:`public`) as its length alone."""
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
        if not public(value):
            return f"<text of {len(value)} characters, not shown>"
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
    """A JSON-ready document (mappings, lists, scalars, and records: dataclass instances, read
    as mappings of their fields) with every string redacted: for artifacts that quote the spec,
    such as ``check --plan``'s parameters. Each distinct string is judged once, all of them
    together (a 16,384-host plan holds 9 million strings, 540,000 distinct), and the document is
    returned as it is when none holds a secret, else copied with them hidden (records as dicts)."""
    hidden = {}
    for text in _suspects(_strings(doc)):
        shown = redact(text)
        if shown != text:
            hidden[text] = shown
    return _replaced(doc, hidden) if hidden else doc


def _suspects(texts: list[str]) -> set[str]:
    """The texts that :func:`redact` may change (a superset: it judges each again): those
    holding a mark of :data:`_MAYBE` or a run of 16 base64 characters, except GUID-shaped ones.
    They are searched all at once, joined by newlines, as a Python call per text costs more
    than its scan; neither shape spans a newline, so each match lies in one text (line), and
    texts holding a newline are all taken."""
    joined = "\n".join(texts)
    suspects = set()
    if joined.count("\n") >= len(texts):  # some text holds a newline: it is a line no more
        suspects = {text for text in texts if "\n" in text}
        texts = [text for text in texts if "\n" not in text]
        joined = "\n".join(texts)
    # GUID-shaped texts blanked first (no pattern matches them, see _GUID): 131,073 of them in
    # a 16,384-host plan, each with a run of base64 characters
    lines = _GUID_LINE.sub("\n", "\n" + joined)[1:]
    for match in _MARKS.finditer(lines):  # none in most documents
        start = lines.rfind("\n", 0, match.start()) + 1
        end = lines.find("\n", match.end())
        suspects.add(lines[start : end if end >= 0 else None])
    # every base64 character as "a": a run is 16 a's in a row, in the text numbered by the
    # newlines before it
    pieces = lines.translate(_BASE64_AS_A).split("a" * _BASE64_RUN)
    runs = set(accumulate(map(str.count, pieces[:-1], repeat("\n"))))
    suspects.update(map(texts.__getitem__, runs))
    return suspects


#: :data:`_MAYBE` less its run of base64 characters, which :func:`_suspects` finds by
#: translating every base64 character to ``a``.
_MARKS = re.compile(_MAYBE_MARKS)
#: A GUID-shaped line of texts joined by newlines, with the newline before it.
_GUID_LINE = re.compile(rf"(?m)\n{_GUID_TEXT}$")
_BASE64_AS_A = str.maketrans(_BASE64_CHARS, "a" * len(_BASE64_CHARS))


def _strings(doc: Any) -> list[str]:
    """Every distinct string of ``doc``, keys included (records' field names are not: they are
    identifiers), without a Python call per item: a list of mappings goes into the set in one
    call for its keys and one for its values, a list of records of one type in one call per
    field; only what is nested (lists, mappings, tuples, records) is walked."""
    seen: set[Any] = set()
    strings: list[str] = []
    stack = [doc]
    tuples: list[tuple[Any, ...]] = []
    while stack or tuples:
        new: set[Any] = set()
        _take_rows(new, stack, tuples)  # those taken whole last round, opened
        while stack:
            _take(new, stack, stack.pop())
        if seen:  # a later round: only what it adds is looked at
            new -= seen
            seen |= new
        else:
            seen = new
        # the strings, and the kinds of item, in one pass over them (each item is read once:
        # 540,000 scattered objects cost more to reach than to judge)
        types, kinds_of, types_again = tee(map(type, new), 3)
        strings.extend(compress(new, map(issubclass, types, repeat(str))))
        kinds = set(kinds_of)
        # tuples and records were taken whole, as values: opened together, next round
        whole = {kind for kind in kinds if issubclass(kind, tuple) or _fields(kind) is not None}
        items = list(compress(new, map(whole.__contains__, types_again))) if whole else []
        tuples = [item for item in items if isinstance(item, tuple)]
        stack = [[item for item in items if not isinstance(item, tuple)]] if items else []
    return strings


def _take(seen: set[Any], stack: list[Any], item: Any) -> None:
    """Add the scalars of ``item`` to ``seen``; what is nested in it goes on ``stack``."""
    if isinstance(item, dict):
        _take_mappings(seen, stack, [item])
    elif isinstance(item, (list, tuple)):
        _take_items(seen, stack, item)
    elif (fields := _fields(type(item))) is not None:
        _take_records(seen, stack, [item], fields)
    else:
        seen.add(item)


def _take_items(seen: set[Any], stack: list[Any], items: list[Any] | tuple[Any, ...]) -> None:
    """Add the scalars of ``items`` to ``seen`` in one go, or, when some are walked (mappings,
    lists, records), each kind of them in one go; what is nested deeper goes on ``stack``."""
    kinds = set(map(type, items))
    walked = _walked(kinds)
    if not walked:
        try:
            seen.update(items)  # scalars, and tuples of scalars (opened later)
        except TypeError:  # a tuple holding a list, a mapping's subclass...: one by one
            stack.extend(items)
    elif len(kinds) > 1:  # each kind apart
        stack.extend([item for item in items if type(item) is kind] for kind in walked)
        stack.append([item for item in items if type(item) not in walked])
    elif dict in kinds:
        _take_mappings(seen, stack, items)
    elif list not in kinds:  # records of one type
        _take_records(seen, stack, items, _fields(kinds.pop()) or ())
    elif _walked(set(map(type, chain.from_iterable(items)))):
        stack.extend(items)  # lists holding more than scalars: one by one
    else:
        _take_rows(seen, stack, items)  # lists of scalars (records' host lists): together


def _walked(kinds: set[type]) -> set[type]:
    """Those of ``kinds`` whose items are walked, not hashed whole: mappings, lists, records."""
    return {kind for kind in kinds if kind is dict or kind is list or _fields(kind) is not None}


@cache
def _fields(kind: type) -> tuple[str, ...] | None:
    """The field names of a dataclass type (its instances are records), else None."""
    if not hasattr(kind, "__dataclass_fields__"):
        return None
    return tuple(field.name for field in dataclasses.fields(kind))


def _take_mappings(seen: set[Any], stack: list[Any], mappings: Any) -> None:
    """Add the keys and the scalar values of ``mappings`` to ``seen``; what is nested in them
    goes on ``stack``."""
    seen.update(*mappings)
    _take_rows(seen, stack, list(map(dict.values, mappings)))


def _take_records(seen: set[Any], stack: list[Any], records: Any, fields: tuple[str, ...]) -> None:
    """Add the scalar field values of ``records`` (of one dataclass type with ``fields``) to
    ``seen``, field by field; a field holding nested values (lists, mappings) goes on
    ``stack``, as one list."""
    columns = [attrgetter(name) for name in fields]
    try:
        seen.update(*(map(column, records) for column in columns))
    except TypeError:
        for column in columns:
            values = list(map(column, records))
            try:
                seen.update(values)
            except TypeError:
                stack.append(values)


def _take_rows(seen: set[Any], stack: list[Any], rows: list[Any]) -> None:
    """Add the values of ``rows`` (iterables) to ``seen``; the values of the rows holding
    nested ones (lists, mappings) go on ``stack``, all in one list."""
    try:
        seen.update(*rows)
    except TypeError:
        nested = []
        for row in rows:
            try:
                seen.update(row)
            except TypeError:
                nested.append(row)
        stack.append(list(chain.from_iterable(nested)))


def _replaced(doc: Any, hidden: dict[str, str]) -> Any:
    """``doc`` with each string of ``hidden`` replaced (tuples as lists, records as dicts of
    their fields, as JSON has them)."""
    if isinstance(doc, str):
        return hidden.get(doc, doc)
    if isinstance(doc, dict):
        return {_replaced(key, hidden): _replaced(value, hidden) for key, value in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_replaced(item, hidden) for item in doc]
    if (names := _fields(type(doc))) is not None:
        return {name: _replaced(getattr(doc, name), hidden) for name in names}
    return doc
