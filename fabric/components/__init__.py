"""Pulumi ComponentResources: ``cluster_component`` picks the spec's target component.

Every target (lab, aws, gcp, baremetal, existing: a running cluster adopted over SSH) is a
:class:`fabric.components.target.TargetCluster` and exports the same
outputs (``TARGET_OUTPUTS``: inventory, hosts, switches, fabric, bmc_endpoints, state_dir).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi

from fabric.spec import ClusterSpec
from fabric.targets import TARGETS, part

if TYPE_CHECKING:
    from fabric.components.target import TargetCluster


def cluster_component(
    name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
) -> TargetCluster:
    """Return the component that builds ``spec`` on ``spec.target`` (a ``TargetCluster``),
    the class :data:`fabric.targets.TARGETS` names in ``fabric/targets/<target>/component.py``
    (imported only here, so a lab run needs no cloud SDK)."""
    if spec.target not in TARGETS:
        from fabric.spec import Problem, SpecError

        raise SpecError(
            [
                Problem(
                    "target",
                    f"{spec.target!r}: no component builds this target; use one of"
                    f" {', '.join(TARGETS)}",
                )
            ]
        )
    cls = TARGETS[spec.target].component
    try:
        factory = getattr(part(spec.target, "component"), cls)
    except (ImportError, AttributeError) as exc:
        raise RuntimeError(
            f"target {spec.target!r} needs fabric.targets.{spec.target}.component.{cls},"
            f" which could not be loaded: {exc}"
        ) from exc
    return factory(name, spec, opts)
