"""The lab target's spec rules: its Redfish emulator and ibsim ports apart, root logins, and
the lab-only blocks (``lab.datacenter``, ``lab.hca_guids``) on no other target."""

from __future__ import annotations

from fabric.spec.checker import Checker, Rule
from fabric.spec.constants import IBSIM_PORT_SPAN
from fabric.spec.storage_rules import check_storage_kinds


def check_lab(c: Checker) -> None:
    """The lab's Redfish emulator and ibsim listen on different ports; lab nodes log in as
    root."""
    if c.spec.target == "lab" and c.spec.management.ssh_user != "root":
        c.add(
            "management.ssh_user",
            f"{c.spec.management.ssh_user!r}: lab nodes log in as root; set ssh_user: root",
            reads=["target"],
        )
    lab = c.spec.lab
    if lab is not None and lab.datacenter and c.spec.target != "lab":
        c.add(
            "lab.datacenter",
            f"only a target lab stack provides the datacenter (this is target "
            f"{c.spec.target}); drop it here",
            reads=["target"],
        )
    if lab is not None and lab.hca_guids and c.spec.target != "lab":
        c.add(
            "lab.hca_guids",
            f"only a target lab stack simulates HCAs (this is target {c.spec.target}); "
            "drop it here",
            reads=["target"],
        )
    for host in lab.hca_guids if lab is not None else {}:
        group = c.spec.hosts.get(host)
        if group is None or not any(h.link_layer == "InfiniBand" for h in group.hcas):
            c.add(
                f"lab.hca_guids.{host}",
                f"{host!r} is not a node with an InfiniBand HCA; name one of the spec's nodes "
                "that has one",
                reads=["nodes"],
            )
    if lab is not None:
        ibsim_ports = range(lab.ibsim_port, lab.ibsim_port + IBSIM_PORT_SPAN)
        clash = [p for p in (lab.bmc_port, lab.bmc_port + 1) if p in ibsim_ports]
        if clash:
            c.add(
                "lab.ibsim_port",
                f"ibsim binds {ibsim_ports.start}-{ibsim_ports.stop - 1} (control + one per "
                f"client slot), which holds {clash[0]}, lab.bmc_port"
                f"{'' if clash[0] == lab.bmc_port else ' + 1 (the power notifier)'}; "
                f"move one so the ranges do not meet",
                reads=["lab.bmc_port"],
            )


def check_lab_storage(c: Checker) -> None:
    """Target lab creates no file system: it mounts existing NFS servers only."""
    check_storage_kinds(c, "lab", ("nfs",))


#: The lab's rules, in the order their problems are reported.
RULES: tuple[Rule, ...] = (check_lab, check_lab_storage)
