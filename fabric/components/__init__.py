"""Pulumi ComponentResources, one per target; ``cluster_component`` picks the spec's.

Every target (lab, aws, gcp, baremetal, existing: a running cluster adopted over SSH) is a
:class:`fabric.components.target.TargetCluster` and exports the same
outputs (``TARGET_OUTPUTS``: inventory, hosts, switches, fabric, bmc_endpoints, state_dir).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import pulumi

from fabric.spec import ClusterSpec

if TYPE_CHECKING:
    from fabric.components.target import TargetCluster

#: target -> (module, class); imported lazily so a lab run needs no cloud SDK.
TARGETS = {
    "lab": ("fabric.components.lab", "LabCluster"),
    "aws": ("fabric.components.aws", "AwsCluster"),
    "gcp": ("fabric.components.gcp", "GcpCluster"),
    "baremetal": ("fabric.components.baremetal", "BaremetalCluster"),
    "existing": ("fabric.components.existing", "ExistingCluster"),
}


def cluster_component(
    name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
) -> TargetCluster:
    """Return the component that builds ``spec`` on ``spec.target`` (a ``TargetCluster``)."""
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
    module, cls = TARGETS[spec.target]
    try:
        factory = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as exc:
        raise RuntimeError(
            f"target {spec.target!r} needs {module}.{cls}, which could not be loaded: {exc}"
        ) from exc
    return factory(name, spec, opts)
