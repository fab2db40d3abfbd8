"""The GCP target's host-key source: the ``hostkeys/`` guest attributes the guest agent
publishes (``gcloud compute instances get-guest-attributes``; the instance has metadata
``enable-guest-attributes=TRUE``), polled by :func:`fabric.hostkeys.reported_host_keys`
through ``fabric.components.dynamic_hostkeys``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from fabric.hostkeys import key_line


def command(source: dict[str, Any]) -> list[str]:
    """The CLI call that reports ``{"cloud": "gcp", "name", "zone", "project"}``'s keys."""
    return [
        "gcloud", "compute", "instances", "get-guest-attributes", source["name"],
        "--zone", source["zone"], "--project", source["project"],
        "--query-path=hostkeys/", "--format=json",
    ]  # fmt: skip


def guest_attribute_host_keys(items: Iterable[Any]) -> list[str]:
    """The host keys in GCP guest attributes (``query_values`` of ``hostkeys/``: items with
    ``namespace``, ``key`` = key type, ``value`` = ``type base64``), as the guest agent
    publishes them; other namespaces are ignored."""
    keys = []
    for item in items:
        get = item.get if isinstance(item, dict) else lambda name, i=item: getattr(i, name, None)
        if get("namespace") != "hostkeys":
            continue
        value = str(get("value") or "")
        keys.append(key_line(value, f"guest attribute hostkeys/{get('key')}"))
    return keys


def parse(out: str) -> list[str]:
    """The host keys in ``command``'s JSON output."""
    return guest_attribute_host_keys(json.loads(out))
