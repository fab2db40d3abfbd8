"""The cluster's munge key, a Pulumi secret: the spec's config secret or one made once.

``slurm.munge_key: {config: mungeKey}`` names a config secret (``pulumi config set --secret
mungeKey ...``); without it a ``MungeKey`` resource generates a random key on first ``up`` and
keeps it in the (encrypted) stack state, so every later run and every added node gets the same
key. The hand-off passes it to the ``slurm`` role as ``slurm_munge_key``; it never reaches a
log (the role's tasks are ``no_log``) or a file on the controller.
"""

from __future__ import annotations

import secrets
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider

from fabric.components.config_secret import config_secret
from fabric.spec import ClusterSpec

#: Random bytes behind a generated key (munge needs at least 32; its own default is 1024 bits).
KEY_BYTES = 96
MIN_KEY_LENGTH = 32


class MungeKeyProvider(ResourceProvider):
    """Generates the key once; it never changes while the resource exists."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(
            id_=f"munge-key-{secrets.token_hex(4)}", outs={"key": secrets.token_urlsafe(KEY_BYTES)}
        )

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=False)


class MungeKey(pulumi.dynamic.Resource):
    """A random munge key (URL-safe text of ``KEY_BYTES`` random bytes), a secret output."""

    key: pulumi.Output[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=["key"])
        super().__init__(
            MungeKeyProvider(), name, {"key": None}, pulumi.ResourceOptions.merge(opts, secret)
        )


def _checked(key: str, where: str) -> str:
    if len(key.encode()) < MIN_KEY_LENGTH:
        raise ValueError(
            f"{where}: the munge key is {len(key.encode())} bytes; munge needs at least "
            f'{MIN_KEY_LENGTH} (e.g. `pulumi config set --secret KEY "$(openssl rand -base64 96)"`)'
        )
    return key


def munge_key(
    name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
) -> pulumi.Output[str]:
    """The stack's munge key as a secret Output: ``slurm.munge_key``'s config secret, or generated."""
    ref = spec.slurm.munge_key
    if ref is None:
        return pulumi.Output.secret(MungeKey(f"{name}-munge-key", opts=opts).key)
    value = config_secret(
        ref.config,
        "slurm.munge_key.config",
        '"$(openssl rand -base64 96)"` or drop slurm.munge_key to let the stack generate one',
    )
    return pulumi.Output.secret(value.apply(lambda k: _checked(k, "slurm.munge_key.config")))
