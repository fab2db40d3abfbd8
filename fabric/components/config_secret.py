"""Secrets a spec names by Pulumi config key (``{config: KEY}``): read them, or say how to set them."""

from __future__ import annotations

import pulumi


def config_secret(key: str, field: str, fix: str) -> pulumi.Output[str]:
    """The Pulumi config secret ``key`` that spec field ``field`` names; a clear error when unset.

    The key is read in the project's namespace (``railyard:<key>``) unless it names its own
    (``<namespace>:<key>``), as ``pulumi config set --secret <key> ...`` stores it.
    """
    namespace, _, name = key.rpartition(":")
    value = pulumi.Config(namespace or None).get_secret(name)
    if value is None:
        raise ValueError(
            f"{field}: no config value {key!r} in this stack; set it with "
            f"`pulumi config set --secret {key} {fix}"
        )
    return value
