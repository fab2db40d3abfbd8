"""Stacks made before a dynamic provider moved stay refreshable and destroyable.

Pulumi stores each dynamic resource's provider in the stack (``__provider``: dill, base64), its
class by reference to the module it lived in, and loads it from there for every diff, update,
refresh and delete. ``tests/fixtures/pulumi_providers__railyard_lab__1.json`` holds the
providers of a real lab stack made before the hand-off's and the checks' resources moved to
``fabric.handoff.resource`` and ``fabric.verify.resource`` (``SOURCES.md`` says how it was
captured): each must still load, the way Pulumi's dynamic provider host loads it, into the
class that now does the work, through the alias modules left at the old paths.
"""

from __future__ import annotations

import base64
import importlib
import json
import pickletools
import re
from pathlib import Path
from typing import Any

import dill
import pytest

FIXTURE = Path(__file__).parents[1] / "fixtures" / "pulumi_providers__railyard_lab__1.json"
#: Old class path (as a stored provider names it) -> the class that now does its work.
MOVED = {
    "fabric.components.handoff.AnsibleHandoffProvider": (
        "fabric.handoff.resource.AnsibleHandoffProvider"
    ),
    "fabric.components.verify.VerificationProvider": "fabric.verify.resource.VerificationProvider",
}
#: A string a provider's pickle may hold: a module or class name, nothing else.
NAME = re.compile(r"[A-Za-z_][\w.]*")


def stored_providers(export: dict[str, Any]) -> dict[str, str]:
    """Resource name -> its ``__provider`` string, for each dynamic resource of a decrypted
    ``pulumi stack export --show-secrets`` (how the fixture was captured; run it on a stack's
    export to see which old paths its providers still name)."""
    found = {}
    for resource in export["deployment"].get("resources", []):
        if resource["type"] != "pulumi-python:dynamic:Resource":
            continue
        provider = resource.get("outputs", {}).get("__provider")
        provider = provider or resource.get("inputs", {}).get("__provider")
        if isinstance(provider, dict):  # a secret: {"4dabf...": ..., "plaintext": "\"...\""}
            provider = json.loads(provider["plaintext"])
        found[resource["urn"].rpartition("::")[2]] = provider
    return found


def pickle_strings(provider: str) -> list[str]:
    """Every string in a stored provider's pickle."""
    return [
        arg
        for op, arg, _ in pickletools.genops(base64.b64decode(provider))
        if isinstance(arg, str) and "UNICODE" in op.name
    ]


def stored_class(provider: str) -> str:
    """The ``module.Class`` a stored provider's pickle names (the first global it loads that
    is a ``fabric`` class)."""
    strings = pickle_strings(provider)
    for module, name in zip(strings, strings[1:], strict=False):
        if module.startswith("fabric.") and name[:1].isupper():
            return f"{module}.{name}"
    raise AssertionError(f"no fabric class in the pickle: {strings}")


def load(provider: str) -> Any:
    """The provider, deserialized as ``pulumi.dynamic.__main__.get_provider`` does it."""
    from pulumi.runtime._serialization import _deserialize

    return _deserialize(lambda: dill.loads(base64.b64decode(provider)))


def resolve(path: str) -> type:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


PROVIDERS: list[dict[str, str]] = json.loads(FIXTURE.read_text())["providers"]


def test_the_fixture_holds_every_kind_of_the_lab_stack_once():
    kinds = [p["class"] for p in PROVIDERS]
    assert len(kinds) == len(set(kinds))
    assert set(MOVED) <= set(kinds)
    assert "fabric.components.munge.MungeKeyProvider" in kinds


@pytest.mark.parametrize("entry", PROVIDERS, ids=[p["resource"] for p in PROVIDERS])
def test_a_stored_provider_holds_names_only(entry: dict[str, str]):
    """Providers are classes without state: their pickle holds module and class names, never
    a value (a key, a password) of the stack."""
    strings = pickle_strings(entry["provider"])
    assert strings
    assert all(NAME.fullmatch(s) for s in strings), strings
    assert stored_class(entry["provider"]) == entry["class"]


@pytest.mark.parametrize("entry", PROVIDERS, ids=[p["resource"] for p in PROVIDERS])
def test_a_stored_provider_loads_into_the_class_that_does_its_work_now(entry: dict[str, str]):
    provider = load(entry["provider"])
    want = resolve(MOVED.get(entry["class"], entry["class"]))
    assert type(provider) is want
    for method in ("diff", "delete"):
        assert callable(getattr(provider, method))


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_each_alias_names_the_moved_class(old: str, new: str):
    assert resolve(old) is resolve(new)


def test_stored_providers_reads_plain_and_secret_providers():
    export = {
        "deployment": {
            "resources": [
                {
                    "type": "pulumi-python:dynamic:Resource",
                    "urn": "urn:pulumi:lab::railyard::x::a",
                    "outputs": {"__provider": "cGxhaW4="},
                },
                {
                    "type": "pulumi-python:dynamic:Resource",
                    "urn": "urn:pulumi:lab::railyard::x::b",
                    "outputs": {"__provider": {"plaintext": '"c2VjcmV0"'}},
                },
                {"type": "pulumi:pulumi:Stack", "urn": "urn:pulumi:lab::railyard::s::c"},
            ]
        }
    }
    assert stored_providers(export) == {"a": "cGxhaW4=", "b": "c2VjcmV0"}
