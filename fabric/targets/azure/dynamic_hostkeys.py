"""SSH host keys railyard makes for Azure's VMs, so that they are pinned before the first
connection (never recorded on trust, never unchecked).

Azure reports no host key the controller could poll (no console block as on EC2, no guest
attribute as on GCP without boot diagnostics). So railyard makes the key: :class:`HostKeyPair`
generates an ed25519 pair once and keeps the private half a Pulumi secret (encrypted in the
stack state, never in a log or an output); :func:`ssh_keys_config` gives it to cloud-init
(``ssh_keys``: the VM uses this key and no image key, ``ssh_deletekeys``), and the component
pins the public half as declared (``fabric.components.access.pinned_inventory``). A Uniform
scale set boots every instance with one customData, so its instances share one key pair; the
head node has its own.
"""

from __future__ import annotations

import secrets
from typing import Any

import pulumi
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider

__all__ = ["HostKeyPair", "generate", "ssh_keys_config"]


def generate() -> tuple[str, str]:
    """A new ed25519 host key: (private key in OpenSSH PEM, public key as ``type base64``)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, public.decode()


def ssh_keys_config(private: str, public: str) -> dict[str, Any]:
    """The cloud-config keys that make ``private`` the VM's only host key (cloud-init's ssh
    module: given ``ssh_keys``, it writes them and generates none; ``ssh_deletekeys`` removes
    the image's)."""
    return {
        "ssh_deletekeys": True,
        "ssh_genkeytypes": [],
        "ssh_keys": {"ed25519_private": private, "ed25519_public": public},
    }


class HostKeyPairProvider(ResourceProvider):
    """Generates the pair once; it never changes while the resource exists."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        private, public = generate()
        return CreateResult(
            id_=f"hostkey-{secrets.token_hex(4)}",
            outs={"private_key": private, "public_key": public},
        )

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=False)


class HostKeyPair(pulumi.dynamic.Resource):
    """An ed25519 host key pair: ``private_key`` (a secret output) and ``public_key``."""

    private_key: pulumi.Output[str]
    public_key: pulumi.Output[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=["private_key"])
        super().__init__(
            HostKeyPairProvider(),
            name,
            {"private_key": None, "public_key": None},
            pulumi.ResourceOptions.merge(opts, secret),
        )
