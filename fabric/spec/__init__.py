"""The cluster spec: one pydantic model for every target; a target's own section comes from its
folder (``fabric/targets/<name>/section.py``).

The package, in import order (each module imports only the ones above it; ClusterSpec's
validator imports the rules when it runs):

- ``constants``: value ranges and tables (IB_MTUS, FABRIC_LINK_LAYER, SKIP_RULES, ...);
- ``blocks``: the models' base ``Model`` and the blocks several targets' sections share;
- ``problems``: :class:`Problem` (a path and a message) and :class:`SpecError`;
- ``models``: the pydantic models, ClusterSpec at the top;
- ``checker``: :class:`Checker`, through which every rule reads a spec;
- ``common``: what the target rules share (per-host entries, GPU types, stack config values);
- ``targets``: the target rules, each target's own (``fabric/targets/<name>/rules.py``, found
  through the registry ``fabric.targets``) and the shared access and egress rules, and what a
  stack's own config must agree with (:func:`~fabric.spec.targets.stack_config_problems`);
- ``networks``: subnets that must not overlap, addresses that must fit them;
- ``rules``: the general cross-field rules and :func:`cross_field_problems`, which runs
  them, the network rules and the target rules;
- ``load``: reading YAML / Pulumi stack files into a ClusterSpec, every problem at once.

``from fabric.spec import ClusterSpec, SpecError, load_spec`` is the usual entry point.
"""

from __future__ import annotations

from fabric.spec.checker import Checker, path_parts
from fabric.spec.constants import (
    BOOT_TARGETS,
    DSCP_RANGE,
    ETH_MTU_RANGE,
    FABRIC_LINK_LAYER,
    HOSTNAME_PATTERN,
    IB_MTUS,
    PFC_PRIORITY_RANGE,
    SKIP_RULES,
    SM_PRIORITY_RANGE,
    LinkLayer,
)
from fabric.spec.load import (
    STACK_KEY,
    cluster_mapping,
    format_path,
    load_spec,
    problems_of,
    spec_from_mapping,
)
from fabric.spec.models import (
    BmcNetwork,
    Cable,
    CableEnd,
    ClusterSpec,
    EgressSpec,
    FabricKind,
    FabricSpec,
    FatTree,
    HcaSpec,
    HealthSpec,
    InfinibandSpec,
    LabSpec,
    LinkWidth,
    ManagementNetwork,
    Model,
    NodeGroup,
    NodeRole,
    Partition,
    RdmaStack,
    RedfishEndpoint,
    RoceSpec,
    SecretRef,
    SlurmPartition,
    SlurmSpec,
    SubnetManager,
    Switch,
    Target,
)
from fabric.spec.problems import Problem, SpecError
from fabric.spec.rules import cross_field_problems, provision_problems

__all__ = [
    "BOOT_TARGETS",
    "DSCP_RANGE",
    "ETH_MTU_RANGE",
    "FABRIC_LINK_LAYER",
    "HOSTNAME_PATTERN",
    "IB_MTUS",
    "PFC_PRIORITY_RANGE",
    "SKIP_RULES",
    "SM_PRIORITY_RANGE",
    "STACK_KEY",
    "EgressSpec",
    "BmcNetwork",
    "Cable",
    "CableEnd",
    "Checker",
    "ClusterSpec",
    "FabricKind",
    "FabricSpec",
    "FatTree",
    "HcaSpec",
    "HealthSpec",
    "InfinibandSpec",
    "LabSpec",
    "LinkLayer",
    "LinkWidth",
    "ManagementNetwork",
    "Model",
    "NodeGroup",
    "NodeRole",
    "Partition",
    "Problem",
    "RdmaStack",
    "RedfishEndpoint",
    "RoceSpec",
    "SecretRef",
    "SlurmPartition",
    "SlurmSpec",
    "SpecError",
    "SubnetManager",
    "Switch",
    "Target",
    "cluster_mapping",
    "cross_field_problems",
    "format_path",
    "load_spec",
    "path_parts",
    "problems_of",
    "provision_problems",
    "spec_from_mapping",
]
