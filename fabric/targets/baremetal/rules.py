"""The bare-metal target's spec rules: every node has a Redfish endpoint and a fixed address,
the BMC password is a secret sent over https, managed switches have addresses; and the stack
config's boot targets (:func:`baremetal_settings_problems`, which the component calls, and
:func:`config_problems`, which ``validate`` runs on the stack file)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from fabric.spec.checker import Checker, Rule
from fabric.spec.common import missing_per_host
from fabric.spec.constants import BOOT_TARGETS
from fabric.spec.problems import Problem
from fabric.spec.storage_rules import check_storage_kinds

if TYPE_CHECKING:
    from fabric.spec.models import ClusterSpec


def check_baremetal(c: Checker) -> None:
    """Every bare-metal node has a Redfish endpoint and a fixed address; the BMC password is a
    Pulumi secret, sent over https unless verify_tls is off; managed switches have addresses."""
    spec = c.spec
    if spec.target != "baremetal" or not c.known("target"):
        return
    bmc = spec.bmc
    if bmc is None:
        c.add("bmc", "target baremetal needs a bmc block with endpoints")
    else:
        if bmc.password is None:
            c.add(
                "bmc.password",
                "set {config: bmcPassword} and `pulumi config set --secret bmcPassword ...`",
            )
        missing_per_host(
            c,
            "bmc.endpoints",
            [host for host in c.hosts if host not in bmc.endpoints],
            "every node needs a Redfish endpoint url",
            "{host}: {url: https://BMC-ADDRESS/redfish/v1/Systems/1}",
        )
    missing_per_host(
        c,
        "management.addresses",
        [host for host in c.hosts if host not in spec.management.addresses],
        "every bare-metal node needs a fixed address",
        "{host}: 10.10.0.11",
    )
    if bmc is not None:
        for host, endpoint in bmc.endpoints.items():
            if endpoint.boot_once is not None and endpoint.boot_once not in BOOT_TARGETS:
                c.add(
                    f"bmc.endpoints.{host}.boot_once",
                    f"{endpoint.boot_once!r}; use one of {', '.join(BOOT_TARGETS)}, or drop it",
                )
            for index, line in enumerate(endpoint.host_keys):
                parts = line.split()
                if len(parts) < 2 or not parts[0].startswith(("ssh-", "ecdsa-sha2-")):
                    c.add(
                        f"bmc.endpoints.{host}.host_keys[{index}]",
                        f"{line[:40]!r} is not a host key; write 'ssh-ed25519 AAAA...' as in "
                        "the node's /etc/ssh/ssh_host_ed25519_key.pub",
                    )
            if endpoint.url.startswith("http://") and bmc.verify_tls:
                c.add(
                    f"bmc.endpoints.{host}.url",
                    "plain http sends the BMC password unencrypted; use https://, or set "
                    "bmc.verify_tls: false to accept it knowingly (lab BMCs)",
                    reads=["bmc.verify_tls"],
                )
    for index, switch in enumerate(spec.fabric.switches):
        if switch.os != "unmanaged" and not switch.address:
            c.add(
                f"fabric.switches[{index}].address",
                f"{switch.os} switch {switch.name!r} needs a management address",
                reads=[f"fabric.switches[{index}].os", f"fabric.switches[{index}].name"],
            )


class BootSettings(Protocol):
    """The bare-metal provisioning settings read from stack config, not from the spec
    (fabric.targets.baremetal.component.BareMetalSettings)."""

    @property
    def boot_target(self) -> str | None: ...

    @property
    def settle_target(self) -> str: ...


def baremetal_settings_problems(settings: BootSettings) -> list[Problem]:
    """Problems of the bare-metal stack config: boot targets Redfish does not know (an unset
    ``bootTarget`` asks for no one-time boot)."""
    values = (("bootTarget", settings.boot_target), ("settleBootTarget", settings.settle_target))
    return [
        _boot_target_problem(key, value)
        for key, value in values
        if value is not None and value not in BOOT_TARGETS
    ]


def _boot_target_problem(key: str, value: Any) -> Problem:
    return Problem(f"config railyard:{key}", f"{value!r}; use one of {', '.join(BOOT_TARGETS)}")


def config_problems(config: Mapping[str, Any], spec: ClusterSpec) -> list[Problem]:
    """Boot targets in the stack config (``railyard:bootTarget``, ``settleBootTarget``) that
    Redfish does not know."""
    problems = []
    for key in ("bootTarget", "settleBootTarget"):
        value = config.get(f"railyard:{key}")
        if value is not None and value not in BOOT_TARGETS:
            problems.append(_boot_target_problem(key, value))
    return problems


def check_baremetal_storage(c: Checker) -> None:
    """Target baremetal creates no file system: it mounts existing NFS servers only."""
    check_storage_kinds(c, "baremetal", ("nfs",))


#: The bare-metal rules, in the order their problems are reported.
RULES: tuple[Rule, ...] = (check_baremetal, check_baremetal_storage)

#: Stack config keys the spec must agree with (``config_problems``), read by the program.
CONFIG_KEYS: tuple[str, ...] = ("railyard:bootTarget", "railyard:settleBootTarget")
