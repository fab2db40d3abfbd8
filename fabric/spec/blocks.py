"""What every spec model and every target's spec section build on: :class:`Model` (unknown
keys are errors, addresses are text) and the blocks more than one target's section shares
(:class:`EgressSpec`). Imports nothing of the spec but the hostlist-free basics, so a target's
``section.py`` (``fabric/targets/<name>/section.py``) and ``fabric.spec.models`` both build on
it without importing each other."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

__all__ = ["EgressSpec", "Model"]


class Model(BaseModel):
    """Base for spec models: unknown keys are errors, so typos are caught; an address or a
    network is text (pydantic would take ``subnet: 5`` as 0.0.0.5/32, ``true`` as 0.0.0.1);
    no number is NaN or infinite (YAML's ``.nan``, ``.inf``: issue 44)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _addresses_are_text(cls, value: Any, info: ValidationInfo) -> Any:
        kind = _address_kind(cls, info.field_name or "")
        if kind is None:
            return value
        items = (
            value
            if isinstance(value, list)
            else value.values()
            if isinstance(value, dict)
            else [value]
        )
        if any(isinstance(item, (bool, int, float)) for item in items):
            raise PydanticCustomError(kind, "an IPv4 address or network is written as text")
        return value


@cache
def _address_kind(model: type[BaseModel], name: str) -> str | None:
    """The pydantic error type for a number given to ``model``'s address or network field
    ``name``, or None when the field holds neither."""
    field = model.model_fields.get(name)
    text = repr(field.annotation) if field is not None else ""
    if "IPv4Network" in text:
        return "ip_v4_network"
    return "ip_v4_address" if "IPv4Address" in text else None


class EgressSpec(Model):
    """How cloud nodes reach package mirrors and registries during the hand-off.

    ``nat`` (default): AWS puts the compute nodes in a private subnet behind a NAT gateway in
    the head node's public subnet (ParallelCluster's layout); GCP adds Cloud NAT (a router and
    a NAT) and Private Google Access on every subnet. ``proxy``: no NAT; every node reads
    ``proxy`` from cloud-init at boot (apt and the environment). ``offline``: no NAT, no proxy;
    the image carries everything, listed in ``image_provides`` (the offline contract), and the
    hand-off refuses to start while the image lacks what the spec needs
    (:func:`fabric.spec.egress.offline_image_lacks`).
    """

    mode: Literal["nat", "proxy", "offline"] = "nat"
    proxy: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="http(s)://host:port of the site proxy; egress.mode proxy only",
    )
    no_proxy: list[str] = Field(
        default_factory=list, description="hosts and domains reached without the proxy"
    )
    image_provides: list[str] = Field(
        default_factory=list,
        description="offline contract: what the image carries (munge, slurmd, slurmctld, ...)",
    )
