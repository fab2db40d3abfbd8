"""The Pulumi program's ``Cluster``: the whole pipeline of one stack, as one ComponentResource.

spec -> the target's component (:func:`cluster_component`, a
:class:`fabric.components.target.TargetCluster` found through the registry) ->
``AnsibleHandoff`` (``fabric.handoff.resource``: writes the target's inventory, runs
playbooks/site.yml through ansible-runner) -> ``Verification`` (``fabric.verify.resource``:
the check suite); beside the hand-off, once the target's nodes exist, ``KubernetesObjects``
where the orchestrator is kubernetes or both (``fabric.components.kubernetes``: topology
labels, the Kueue objects, the Network Operator's). Each step depends on the one before, so
a failed hand-off stops the update before the checks, and a failed check fails ``pulumi up``
with its summary. ``outputs`` (the stack's outputs) are the target's
:data:`~fabric.components.target.TARGET_OUTPUTS` plus each step's. The top layer (entry): it
may import every step, and nothing imports it but ``__main__.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from fabric.components.kubernetes import kubernetes_objects, kubernetes_secret
from fabric.components.munge import munge_key
from fabric.components.target import TargetCluster, target_outputs
from fabric.handoff.resource import AnsibleHandoff
from fabric.inventory import inventory_text
from fabric.spec import ClusterSpec, Problem, SpecError
from fabric.spec.targets import stack_config_problems
from fabric.targets import TARGETS, hooks, part
from fabric.verify.resource import Verification


def checked_config() -> tuple[str, ...]:
    """Stack config keys the spec must agree with (besides the secrets the spec names): each
    target's ``CONFIG_KEYS`` (its ``rules.py``), in registry order."""
    return tuple(key for _, keys in hooks("rules", "CONFIG_KEYS") for key in keys)


def program_config(spec: ClusterSpec) -> dict[str, object]:
    """The stack config ``stack_config_problems`` reads, as this update sees it: the same
    check ``python -m fabric validate`` runs on the stack file (a secret stays hidden: only
    whether it is one is passed on)."""
    from pulumi.runtime.config import get_config, is_config_secret

    refs = [spec.slurm.munge_key, spec.bmc.password if spec.bmc else None]
    keys = [*checked_config()]
    keys += [r.config if ":" in r.config else f"railyard:{r.config}" for r in refs if r]
    config: dict[str, object] = {}
    for key in keys:
        if is_config_secret(key):
            config[key] = {"secure": "(hidden)"}
        elif (value := get_config(key)) is not None:
            config[key] = value
    return config


def cluster_component(
    name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
) -> TargetCluster:
    """Return the component that builds ``spec`` on ``spec.target`` (a ``TargetCluster``),
    the class :data:`fabric.targets.TARGETS` names in ``fabric/targets/<target>/component.py``
    (imported only here, so a lab run needs no cloud SDK)."""
    if spec.target not in TARGETS:
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


@dataclass(frozen=True)
class ClusterArgs:
    """What the program passes in: the spec, the stack name, and which steps to run."""

    spec: ClusterSpec
    stack: str
    handoff: bool = True
    verify: bool = True


class Cluster(pulumi.ComponentResource):
    """A provisioned, configured and verified cluster."""

    inventory: pulumi.Output[dict]
    hosts: pulumi.Output[list]

    def __init__(
        self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("railyard:index:Cluster", name, None, opts)
        if problems := stack_config_problems(program_config(args.spec), args.spec):
            raise SpecError(problems, f"stack {args.stack}")
        self.target = cluster_component(name, args.spec, pulumi.ResourceOptions(parent=self))
        self.inventory = self.target.inventory
        self.hosts = self.target.hosts
        spec_json = args.spec.model_dump_json()
        inventory = self.target.inventory.apply(inventory_text)
        outputs: dict[str, pulumi.Input] = dict(target_outputs(self.target))
        after: list[pulumi.Resource] = [self.target]
        recap: pulumi.Input[str] | None = None
        if args.spec.kubernetes is not None:  # orchestrator kubernetes or both
            self.kubernetes, rendered = kubernetes_objects(
                f"{name}-kubernetes",
                args.spec,
                pulumi.ResourceOptions(parent=self, depends_on=[self.target]),
            )
            outputs["kubernetes_missing_nodes"] = self.kubernetes.missing_nodes
            outputs["kubernetes_rendered"] = rendered
        # A lab datacenter only provides powered-off nodes: a baremetal stack hands off.
        datacenter = args.spec.lab is not None and args.spec.lab.datacenter
        if args.handoff and not datacenter:
            key = munge_key(name, args.spec, pulumi.ResourceOptions(parent=self))
            outputs["munge_key"] = key
            kube = args.spec.kubernetes is not None  # railyard-health's taints need its token
            self.handoff = AnsibleHandoff(
                f"{name}-handoff",
                stack=args.stack,
                spec_json=spec_json,
                inventory=inventory,
                munge_key=key,
                kube_token=kubernetes_secret(args.spec, "token") if kube else None,
                kube_ca=kubernetes_secret(args.spec, "ca_certificate") if kube else None,
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )
            after, recap = [self.handoff], self.handoff.recap
            outputs["handoff"] = self.handoff.recap
        if args.verify and not datacenter:
            self.verification = Verification(
                f"{name}-verify",
                stack=args.stack,
                spec_json=spec_json,
                inventory=inventory,
                after=recap,
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )
            outputs["verification"] = self.verification.summary
            outputs["report_dir"] = self.verification.report_dir
        self.outputs = outputs
        self.register_outputs(outputs)
