"""Secrets by field (issue 44 item 2): every kind of secret, placed in any string field of the
spec, reaches no output of ``validate``, ``validate --json``, ``check --plan``,
``kubernetes`` or ``topology`` (in-process, through ``fabric.cli.main``).

The string fields are found by walking the pydantic models (``test_redact.FIELDS``), each
written into a valid base spec that has its section. A leak is any 8-character window of the
secret (with at least five letters or digits, so joints like ``", "`` do not count) found in
an output, in any case (ssh lowercases what it echoes), or in the output with JSON and repr
escapes undone.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_redact import FIELDS, with_secret

from fabric.cli import main
from fabric.redact import redact, shown, text_problem
from fabric.spec import ClusterSpec

_RANDOM = random.Random(44)
_ALNUM = string.ascii_letters + string.digits


def _b64(n: int) -> str:
    return base64.b64encode(_RANDOM.randbytes(n)).decode()


def _word(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RANDOM.choice(alphabet) for _ in range(n))


_PEM_BODY = "\n".join(_b64(48) for _ in range(4))
#: One of each kind of secret an operator may paste into a spec (made here, random).
SECRETS = {
    "pem": f"-----BEGIN RSA PRIVATE KEY-----\n{_PEM_BODY}\n-----END RSA PRIVATE KEY-----\n",
    "munge-key": _b64(96),
    "aws-access-key": "AKIA" + _word(16, string.ascii_uppercase + "234567"),
    "aws-secret-key": _word(40, _ALNUM + "+/"),
    "gcp-service-account": json.dumps(
        {
            "type": "service_account",
            "project_id": "proj-" + _word(6, string.ascii_lowercase),
            "private_key_id": _RANDOM.randbytes(20).hex(),
            "private_key": f"-----BEGIN PRIVATE KEY-----\n{_b64(64)}\n-----END PRIVATE KEY-----\n",
            "client_email": f"sa-{_word(6, string.ascii_lowercase)}@proj.iam.gserviceaccount.com",
        }
    ),
    "bearer": "Bearer eyJ" + _word(30, _ALNUM + "-_") + "." + _word(40, _ALNUM + "-_"),
    "slack": f"xoxb-{_word(12, string.digits)}-{_word(12, string.digits)}-{_word(24)}",
    "github": "ghp_" + _word(36),
    "gitlab": "glpat-" + _word(20),
    "api-key": "sk-" + _word(40),
    "password": "CorrectHorse!Battery#Staple42",
}
COMMANDS = (
    ["validate"],
    ["validate", "--json"],
    ["check", "--plan"],
    ["kubernetes"],
    ["topology"],
)


def windows(secret: str) -> set[str]:
    """Every 8-character window of ``secret`` holding five or more letters or digits."""
    return {
        secret[i : i + 8]
        for i in range(len(secret) - 7)
        if sum(c.isalnum() for c in secret[i : i + 8]) >= 5
    }


#: Text every user may read: the spec's JSON Schema (field names, patterns, descriptions). A
#: window found there (``gservice`` of a service account's address and of its field's pattern)
#: is no part of the secret shown.
PUBLIC_TEXT = json.dumps(ClusterSpec.model_json_schema()).replace("\\\\", "\\").lower()


def leaks(secret: str, text: str, field: tuple = ()) -> list[str]:
    """The secret's 8-character windows ``text`` shows, but for public ones: those of the
    schema, and the field's own path the output names (``"gcp.service_account",`` shares
    ``ccount",`` with a service-account JSON)."""
    plain = text.replace("\\n", "\n").replace('\\"', '"')
    seen = f"{text}\n{plain}"
    if field:
        seen = seen.replace(".".join(map(str, field)), "\0")
    seen = seen.lower()
    return sorted(w for w in windows(secret) if w.lower() in seen and w.lower() not in PUBLIC_TEXT)


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_is_a_shape_or_a_character_no_field_takes(kind: str) -> None:
    """The filter's own ground: each kind is redacted by shape, or refused by character."""
    secret = SECRETS[kind]
    assert text_problem(secret) is not None
    assert not leaks(secret, shown(secret))
    if kind != "password":
        assert not leaks(secret, redact(f"field: {secret} (end)"))


@settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(field=st.sampled_from(FIELDS), kind=st.sampled_from(sorted(SECRETS)))
def test_no_command_shows_a_secret_placed_in_any_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, field: tuple, kind: str
) -> None:
    secret = SECRETS[kind]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(with_secret(field, secret), width=1 << 20))
    for argv in COMMANDS:
        code = main([*argv, "--spec", str(path)])
        out, err = capsys.readouterr()
        assert not leaks(secret, out + err, field), (argv, ".".join(field), out + err)
        assert code in (0, 1, 2)


def test_every_field_is_reached(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Not sampled: the password (the one secret of no shape) in every field, refused by
    ``validate`` naming the field, or accepted nowhere it shows."""
    secret = SECRETS["password"]
    path = tmp_path / "spec.yaml"
    for field in FIELDS:
        path.write_text(yaml.safe_dump(with_secret(field, secret), width=1 << 20))
        code = main(["validate", "--json", "--spec", str(path)])
        out, err = capsys.readouterr()
        assert not leaks(secret, out + err), (".".join(field), out)
        assert code == 1, (".".join(field), out)


def test_every_kind_in_every_field_is_refused_unseen() -> None:
    """The whole cross product, at the loader (what every command's output quotes): each
    secret in each field is refused, and no problem quotes any part of it."""
    from fabric.spec import SpecError, spec_from_mapping

    for field in FIELDS:
        for kind, secret in SECRETS.items():
            with pytest.raises(SpecError) as caught:
                spec_from_mapping(with_secret(field, secret))
            text = "\n".join(f"{p.path}: {p.message}" for p in caught.value.problems)
            assert not leaks(secret, text), (".".join(field), kind, text)
