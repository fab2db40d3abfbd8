"""The one secret filter (fabric.redact), against every field of the spec and every command.

Bad input, round 3: a private key pasted as an SSH address, ``import --ssh admin:PASSWORD@host``,
a munge key file given to ``validate`` or ``parse``, a password typed into a host list were all
echoed. Whatever field a secret lands in, no output shows it: its field, its length and a fixed
marker instead. The spec's fields are found by walking the pydantic models, not listed by hand.
"""

from __future__ import annotations

import base64
import copy
import random
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from pydantic import BaseModel

from fabric.cli import main
from fabric.parsers import PARSERS
from fabric.redact import MARKER, redact, shown
from fabric.spec import ClusterSpec

ROOT = Path(__file__).resolve().parents[2]
SPECS = Path(__file__).parent / "specs" / "valid"
FIXTURES = ROOT / "tests" / "fixtures"

#: Made for this test from a fixed seed (so test ids agree between xdist workers).
_RANDOM = random.Random(30)
PEM = (
    ed25519.Ed25519PrivateKey.from_private_bytes(_RANDOM.randbytes(32))
    .private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    .decode()
)
#: A munge key as ``mungekey`` writes it (1024 random bytes), base64-encoded in 76-char lines.
MUNGE = base64.encodebytes(_RANDOM.randbytes(1024)).decode()
PASSWORD = f"Pw-{_RANDOM.randbytes(6).hex()}"
USERINFO = f"admin:{PASSWORD}@bmc01"
SECRETS = {"pem": PEM, "munge": MUNGE.replace("\n", ""), "userinfo": USERINFO}


def secret_parts(secret: str) -> list[str]:
    """Pieces of ``secret`` that must not appear anywhere: each 16-character run of its body."""
    if secret == USERINFO:
        return [PASSWORD]
    body = "".join(line for line in secret.splitlines() if not line.startswith("-----"))
    return [body[i : i + 16] for i in range(0, len(body) - 16, 16)]


def leaked(secret: str, *texts: str) -> list[str]:
    return [part for part in secret_parts(secret) for text in texts if part in text]


# -- the filter --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (PEM, "PEM block"),
        (PEM.splitlines()[0] + "\n" + PEM.splitlines()[1], "PEM block"),  # cut short: no END
        (MUNGE, "base64 key"),
        (MUNGE.replace("\n", "\\n"), "base64 key"),  # as repr() writes it
        (MUNGE[:44], "base64 key"),  # a 256-bit key
        ("f" * 8 + "0123456789abcdef" * 3, "hex key"),
        (USERINFO, "password"),
    ],
    ids=["pem", "pem-cut", "munge", "munge-repr", "key-256", "hex", "userinfo"],
)
def test_secret_shapes_become_the_marker(text: str, kind: str) -> None:
    got = redact(f"field: {text} (end)")
    assert f"{MARKER} {kind}, " in got and got.startswith("field: ") and not leaked(text, got)
    assert got.endswith(" (end)") or "END" not in text  # a PEM block with no END: to the end


def test_userinfo_keeps_the_user_and_host() -> None:
    assert redact(f"--ssh {USERINFO}: failed") == (
        f"--ssh admin:{MARKER} password, {len(PASSWORD)} characters>@bmc01: failed"
    )


@pytest.mark.parametrize(
    "text",
    [
        "gpu[01-04]",
        "0x0002c90300000001",
        "fe80:0000:0000:0000:0002:c903:0000:0001",
        "10.10.0.0/24 10.10.0.11",
        "mlx5_0 ibp1s0f0 enp1s0f0np0 ConnectX-7 MT4129",
        "Pulumi.datacenter.example.yaml: nodes[0].hcas[1].rate_gbps",
        "gpu01:22 https://bmc01.example/redfish/v1/Systems/1 user@host",
        "/redfish/v1/Managers/iDRAC/EthernetInterfaces/NIC1 AuthenticationFailed",
        "00:11:22:33:44:55 0xffff 0x7fff p4d.24xlarge a3-highgpu-8g",
    ],
)
def test_ordinary_values_are_kept(text: str) -> None:
    assert redact(text) == text


def test_shown_quotes_a_secret_as_its_marker() -> None:
    assert shown(PEM) == f"{MARKER} secret, {len(PEM)} characters>"
    assert not leaked(MUNGE, shown([1, MUNGE]))


# -- every field of the spec -------------------------------------------------------------


def _strip(annotation: Any) -> list[Any]:
    """The types a field annotation allows, ``Annotated`` and ``None`` dropped."""
    if get_origin(annotation) is Annotated:
        return _strip(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return [t for arg in get_args(annotation) if arg is not type(None) for t in _strip(arg)]
    return [annotation]


def string_fields(model: type[BaseModel] = ClusterSpec, seen: tuple[type, ...] = ()) -> set[tuple]:
    """Every place a string goes in the spec: field names, ``[]`` for a list entry, ``{}`` for
    a mapping's value and ``{key}`` for its key."""
    found: set[tuple] = set()

    def walk(annotation: Any, path: tuple) -> None:
        for kind in _strip(annotation):
            origin = get_origin(kind)
            if origin in (list, tuple):
                walk(get_args(kind)[0], (*path, "[]"))
            elif origin is dict:
                key, value = get_args(kind)
                if str in _strip(key):
                    found.add((*path, "{key}"))
                walk(value, (*path, "{}"))
            elif origin is Literal:
                continue
            elif isinstance(kind, type) and issubclass(kind, BaseModel) and kind not in seen:
                found.update((*path, *sub) for sub in string_fields(kind, (*seen, model)))
            elif kind is str:
                found.add(path)

    for name, info in model.model_fields.items():
        walk(info.annotation, (name,))
    return found


FIELDS = sorted(string_fields())
BASES = {path.stem: yaml.safe_load(path.read_text()) for path in sorted(SPECS.glob("*.yaml"))}


def _base_for(field: tuple) -> dict[str, Any]:
    """A valid spec that has the field's section (the lab spec when none has it)."""
    for data in BASES.values():
        if field[0] in data:
            return copy.deepcopy(data)
    return copy.deepcopy(BASES["lab"])


def with_secret(field: tuple, secret: str) -> dict[str, Any]:
    """A valid spec with ``secret`` written at ``field`` (sections made where missing)."""
    data = _base_for(field)
    parent: Any = data
    for part, following in zip(field, [*field[1:], None], strict=True):
        empty: Any = [] if following == "[]" else {}
        if part == "[]":
            if not parent:
                parent.append(empty)
            key: Any = 0
        elif part == "{}":
            if not parent:
                parent["x"] = empty
            key = next(iter(parent))
        elif part == "{key}":
            first = next(iter(parent), None)
            value = parent.pop(first) if first is not None else "x"
            parent[secret] = value
            return data
        else:
            key = part
            if following is not None and not isinstance(parent.get(key), (list, dict)):
                parent[key] = empty
        if following is None:
            parent[key] = secret
        else:
            parent = parent[key]
    return data


def test_the_walk_finds_the_fields_that_leaked() -> None:
    assert {("existing", "ssh", "{}"), ("nodes", "[]", "names"), ("bmc", "username")} <= set(FIELDS)
    assert len(FIELDS) > 60


@pytest.mark.parametrize("secret", sorted(SECRETS))
@pytest.mark.parametrize("field", FIELDS, ids=".".join)
def test_no_output_of_a_spec_shows_a_secret_in_any_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, field: tuple, secret: str
) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(with_secret(field, SECRETS[secret]), width=1 << 20))
    outputs = []
    for argv in (
        ["validate", "--spec", str(path)],
        ["validate", "--spec", str(path), "--json"],
        ["check", "--plan", "--spec", str(path)],
        ["check", "--plan", "--spec", str(path), "--json"],
    ):
        main(argv)
        outputs.extend(capsys.readouterr())
    assert not leaked(SECRETS[secret], *outputs), outputs


# -- every command -----------------------------------------------------------------------


def test_import_ssh_password_is_not_shown(capsys: pytest.CaptureFixture[str]) -> None:
    """ssh is run (to loopback, where nothing answers or the login fails); its error names the
    host, the password replaced by the marker."""
    code = main(["import", "--ssh", f"admin:{PASSWORD}@127.0.0.1", "--timeout", "20"])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "--ssh admin:" + MARKER in err, err
    assert PASSWORD not in out + err


@pytest.fixture(params=["base64", "binary"])
def munge_key(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A munge key file: binary as ``mungekey`` writes it, or base64 text (a Kubernetes or
    vault secret's form)."""
    path = tmp_path / "munge.key"
    if request.param == "binary":
        path.write_bytes(base64.decodebytes(MUNGE.encode()))
    else:
        path.write_text(MUNGE)
    return path


def test_munge_key_given_to_validate(capsys: pytest.CaptureFixture[str], munge_key: Path) -> None:
    for argv in (
        ["validate", "--spec", str(munge_key)],
        ["validate", "--spec", str(munge_key), "--json"],
    ):
        main(argv)
        assert not leaked(MUNGE, *capsys.readouterr())
    main(["check", "--plan", "--spec", str(munge_key)])
    assert not leaked(MUNGE, *capsys.readouterr())


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_munge_key_given_to_parse(
    capsys: pytest.CaptureFixture[str], munge_key: Path, tool: str
) -> None:
    main(["parse", tool, str(munge_key)])
    out, err = capsys.readouterr()
    assert not leaked(MUNGE, err), err
    assert not leaked(MUNGE, out) or '"ok"' in out  # a result may carry the text it parsed


def test_password_in_a_host_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = copy.deepcopy(BASES["lab"])
    data["nodes"][0]["names"] = f"gpu[01-02],{USERINFO}"
    data["slurm"]["partitions"] = [{"name": "gpu", "nodes": f"gpu01,root:{PASSWORD}@gpu02"}]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    outputs = []
    for argv in (
        ["validate", "--spec", str(path)],
        ["validate", "--spec", str(path), "--json"],
        ["check", "--plan", "--spec", str(path)],
        ["topology", "--spec", str(path)],
        ["topology", "--spec", str(SPECS / "lab.yaml"), "--nodes", f"gpu01,{USERINFO}"],
    ):
        main(argv)
        outputs.extend(capsys.readouterr())
    assert PASSWORD not in "".join(outputs), outputs


# --- redact_doc: every string of a JSON document, each distinct one judged once ---------------

_KEY = base64.b64encode(bytes(range(7, 55))).decode()  # 64 characters: a munge-key-like blob


def test_redact_doc_hides_a_secret_wherever_it_is_nested() -> None:
    from fabric.redact import redact_doc

    doc = {
        "families": {
            "ib": {"parameters": [{"host": "gpu01", "netdev": _KEY}, {"host": "gpu02"}]},
            "nccl": {"parameters": [{"hosts": ["gpu01", _KEY], "pair": ("gpu01", _KEY)}]},
            _KEY: [(1, (_KEY, None)), 2.5, True],
        }
    }
    out = redact_doc(doc)
    assert _KEY not in repr(out)
    assert out["families"]["ib"]["parameters"][1] == {"host": "gpu02"}
    assert out["families"]["nccl"]["parameters"][0]["hosts"][0] == "gpu01"
    assert out["families"]["nccl"]["parameters"][0]["pair"][1].startswith(MARKER)
    (key,) = (k for k in out["families"] if k not in ("ib", "nccl"))
    assert key.startswith(MARKER)
    assert out["families"][key][0][1][0].startswith(MARKER)
    assert out["families"][key][1:] == [2.5, True]


def test_redact_doc_returns_a_document_without_secrets_as_it_is() -> None:
    from fabric.redact import redact_doc

    doc = {"ib": [{"host": f"gpu{i:04d}", "node_guid": f"0x0002c903020{i:05x}"} for i in range(50)]}
    assert redact_doc(doc) is doc


@dataclass(frozen=True, slots=True)
class _Port:
    """A plan record as the plan holds them: frozen, slotted, no ``__dict__``."""

    host: str
    port: int
    netdev: str | None
    peers: tuple[str, ...] = ()


def test_redact_doc_hides_a_secret_in_one_record_among_many() -> None:
    from fabric.redact import redact_doc

    ports = [_Port(f"gpu{i:04d}", 1, None, (f"gpu{i + 1:04d}",)) for i in range(200)]
    ports[137] = _Port("gpu0137", 1, _KEY)
    ports[150] = _Port("gpu0150", 2, None, ("gpu0151", f"admin:{_KEY}@bmc"))
    doc = {"ib": {"checks": ["test_ib_active_mtu"], "parameters": ports}, "hosts": ["gpu0000"]}
    out = redact_doc(doc)
    assert _KEY not in repr(out)
    params = out["ib"]["parameters"]
    assert params[137] == {
        "host": "gpu0137",
        "port": 1,
        "netdev": params[137]["netdev"],
        "peers": [],
    }
    assert list(params[137]) == ["host", "port", "netdev", "peers"]  # the fields' order
    assert params[137]["netdev"].startswith(MARKER)
    assert params[150]["peers"][0] == "gpu0151" and MARKER in params[150]["peers"][1]
    assert params[0] == {"host": "gpu0000", "port": 1, "netdev": None, "peers": ["gpu0001"]}
    assert out["hosts"] == ["gpu0000"] and doc["ib"]["parameters"] is ports  # ports untouched
    assert ports[137].netdev == _KEY


def test_redact_doc_returns_records_without_secrets_as_they_are() -> None:
    from fabric.redact import redact_doc

    ports = [_Port(f"gpu{i:04d}", i % 8, f"ib{i % 8}", ("0x0002c90302000a1b",)) for i in range(200)]
    doc = {"ib": {"parameters": ports}, "slurm": {"parameters": ["gpu0001"]}, "one": ports[0]}
    out = redact_doc(doc)
    assert out is doc and out["ib"]["parameters"] is ports
    assert all(isinstance(port, _Port) for port in out["ib"]["parameters"])


def test_redact_doc_judges_texts_holding_newlines_whole() -> None:
    """All distinct strings are judged at once, one per line: a string holding a newline is
    judged on its own, and a secret on its second line is found."""
    from fabric.redact import redact_doc

    doc = {"note": f"first line\n{_KEY}", "hosts": ["gpu01", "a\nb"], "plain": "x" * 15}
    out = redact_doc(doc)
    assert out["note"] == "first line\n" + out["note"].split("\n")[1]
    assert out["note"].split("\n")[1].startswith(MARKER)
    assert out["hosts"] == ["gpu01", "a\nb"] and out["plain"] == "x" * 15


@pytest.mark.parametrize(
    "text", ["0x0002c9030204bd5c", "0002c9030204bd5c", "0x" + "a" * 31, "deadbeef" * 3]
)
def test_guid_shaped_hex_is_no_secret(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize("text", ["a1b2" * 8, "f" * 40, "0x" + "A1b2" * 5 + "C3d4E5f6"])
def test_hex_of_key_length_or_mixed_case_is_still_judged(text: str) -> None:
    assert redact(text) != text, text
