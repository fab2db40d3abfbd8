"""The target rules: each target's own (``RULES`` of ``fabric/targets/<name>/rules.py``, found
through the registry ``fabric.targets``) and the ones every target shares.

These run with the general rules (fabric.spec.rules) in ClusterSpec's validator, so
``python -m fabric validate`` refuses what ``pulumi up`` would refuse: cloud machine
types and placement, head nodes, bare-metal BMC endpoints and fixed addresses. The
components run them again (fabric.spec.rules.provision_problems) before creating
anything. A stack's own config around the spec is checked by :func:`stack_config_problems`
(secrets stored in plain text here, the rest by the target's ``config_problems``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fabric.spec.checker import Checker, Rule
from fabric.spec.common import ROLES_READ as _ROLES
from fabric.spec.problems import Problem
from fabric.targets import TARGETS, part

if TYPE_CHECKING:
    from fabric.spec.models import ClusterSpec

#: A bastion host: a DNS name or an IPv4 address, nothing ssh would read as options.
_BASTION_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")


# --- access --------------------------------------------------------------------------------


def check_access(c: Checker) -> None:
    """A bastion is a plain host name or address; when it names a node of the spec, that node
    is not a compute node and has an address the controller can reach."""
    bastion = c.spec.access.bastion
    if bastion is None:
        return
    if not _BASTION_HOST.match(bastion.host):
        c.add(
            "access.bastion.host",
            f"{bastion.host!r} is not a host name or address; write e.g. bastion.example.org"
            " (the user goes in access.bastion.user, the port in access.bastion.port)",
        )
        return
    if not re.match(r"^[a-z_][a-z0-9_.-]*$", bastion.user):
        c.add("access.bastion.user", f"{bastion.user!r} is not a login name, e.g. ec2-user")
    group = c.spec.hosts.get(bastion.host) if c.all_hosts_known else None
    if group is None or not c.known("target"):
        return
    if group.role == "compute":
        c.add(
            "access.bastion.host",
            f"{bastion.host} is a compute node; name a login or controller node, or an address",
            reads=[_ROLES],
        )


def check_egress(c: Checker) -> None:
    """A cloud's egress is declared whole: a proxy URL with mode proxy only; with mode offline,
    an image contract that covers what the hand-off would download (fabric.spec.egress)."""
    from fabric.hostlist import compress
    from fabric.spec.egress import egress_of, needs, offline_image_lacks

    egress = egress_of(c.spec) if c.known("target") else None
    if egress is None:
        return
    path = f"{c.spec.target}.egress"
    if egress.mode == "proxy" and egress.proxy is None:
        c.add(f"{path}.proxy", "egress mode proxy needs the proxy, e.g. http://proxy.example:3128")
    if egress.mode != "proxy" and (egress.proxy or egress.no_proxy):
        c.add(f"{path}.proxy", f"set only with mode: proxy (mode is {egress.mode}); drop it")
    if egress.mode != "offline" and egress.image_provides:
        c.add(
            f"{path}.image_provides",
            f"the offline contract applies to mode: offline only (mode is {egress.mode}); drop it",
        )
    known = needs()
    unknown = [n for n in egress.image_provides if n not in known]
    if unknown:
        c.add(f"{path}.image_provides", f"{unknown[0]!r} is none of {', '.join(known)}")
        return
    if egress.mode != "offline" or not c.all_hosts_known:
        return
    for need, hosts in offline_image_lacks(c.spec).items():
        c.add(
            f"{path}.image_provides",
            f"the offline image lacks {need} ({known[need]}), needed on {compress(hosts)}: bake"
            f" it into the image and list {need}, or use mode nat or proxy",
            reads=["nodes", "slurm.controller"],
        )


def _is_secure(value: Any) -> bool:
    """Whether a stack config value is a Pulumi secret (``{secure: v1:...}``)."""
    return isinstance(value, Mapping) and set(value) == {"secure"}


def stack_config_problems(config: Mapping[str, Any], spec: ClusterSpec) -> list[Problem]:
    """Problems of a Pulumi stack's config around its spec: a secret the spec names stored
    in plain text, then what the target's ``config_problems`` finds (bare-metal boot targets
    Redfish does not know, the cloud provider's region, project and zone that contradict the
    spec)."""
    problems: list[Problem] = []
    for field, ref in (
        ("bmc.password", spec.bmc.password if spec.bmc else None),
        ("slurm.munge_key", spec.slurm.munge_key),
    ):
        if ref is None:
            continue
        key = ref.config if ":" in ref.config else f"railyard:{ref.config}"
        if key in config and not _is_secure(config[key]):
            problems.append(
                Problem(
                    f"config {key}",
                    f"{field} names it, but it is stored in plain text in the stack file (value"
                    f" not shown); remove it and run `pulumi config set --secret {ref.config} ...`",
                )
            )
    rules = part(spec.target, "rules") if spec.target in TARGETS else None
    if rules is not None and hasattr(rules, "config_problems"):
        problems += rules.config_problems(config, spec)
    return problems


def target_rules() -> tuple[Rule, ...]:
    """Every target's rules in registry order (each rule reads ``spec.target`` itself: a lab
    block on a cloud stack is a lab rule's finding), then the shared access and egress rules."""
    own = tuple(rule for name in TARGETS for rule in part(name, "rules").RULES)
    return (*own, check_access, check_egress)
