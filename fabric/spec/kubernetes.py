"""The orchestrator rules: ``orchestrator`` and the ``kubernetes`` section (its API server and
credentials, the Network Operator's settings, the topology labels).

Each rule records one-line problems naming the field and the fix; they run with the general
rules (fabric.spec.rules), so ``validate`` refuses what the API server or the Network
Operator would refuse later.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

from fabric.spec.checker import Checker, Rule
from fabric.spec.constants import LAB_RANGE, NETDEV_PATTERN
from fabric.targets import line_of

if TYPE_CHECKING:
    from fabric.spec.models import KubernetesSpec, SecondaryNetwork

__all__ = ["KUBERNETES_RULES", "check_kubernetes", "check_orchestrator"]

#: A DNS-1123 label (a namespace, a network attachment's name).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: A DNS-1123 subdomain (a cluster-scoped object's name, such as a Kueue Topology's).
DNS_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
#: The name part of an extended resource (``rdma/<name>``, ``nvidia.com/<name>``).
RESOURCE_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
#: An image repository (``registry[:port]/path``, lower case, no tag) and an image tag.
IMAGE_REPOSITORY = re.compile(
    r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$"
)
IMAGE_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
#: Fabric kinds whose HCAs the NVIDIA Network Operator drives (ConnectX, InfiniBand or RoCE).
OPERATOR_FABRICS = ("infiniband", "roce")
_CREDENTIALS = (
    "set token: {config: kubernetesToken} (a service account's bearer token), or "
    "client_certificate and client_key"
)


def check_orchestrator(c: Checker) -> None:
    """A kubernetes section exactly when the orchestrator names Kubernetes; Slurm settings only
    when it names Slurm; a fabric the Network Operator drives."""
    spec = c.spec
    wants = spec.orchestrator in ("kubernetes", "both")
    if wants and spec.kubernetes is None:
        c.add(
            "kubernetes",
            f"orchestrator is {spec.orchestrator!r} but no kubernetes section is given; add one "
            f"with api_server (https://HOST:6443) and credentials: {_CREDENTIALS}",
            reads=["orchestrator"],
        )
    if not wants and spec.kubernetes is not None:
        c.add(
            "orchestrator",
            "a kubernetes section is given but orchestrator is 'slurm'; set orchestrator: "
            "kubernetes (or both), or remove the kubernetes section",
            reads=["kubernetes"],
        )
    if spec.orchestrator == "kubernetes" and spec.slurm.model_fields_set:
        fields = ", ".join(sorted(spec.slurm.model_fields_set))
        c.add(
            "slurm",
            f"slurm settings ({fields}) are given but orchestrator is 'kubernetes'; set "
            "orchestrator: both to run Slurm too, or remove the slurm section",
            reads=["orchestrator"],
        )
    if wants and spec.fabric.kind not in OPERATOR_FABRICS:
        c.add(
            "orchestrator",
            f"fabric.kind {spec.fabric.kind!r}: railyard configures Kubernetes through the NVIDIA "
            "Network Operator, which drives ConnectX HCAs (infiniband or roce); set "
            "orchestrator: slurm",
            reads=["fabric.kind"],
        )


def _url_problem(url: str) -> str | None:
    """Why ``url`` is not an API server URL, without repeating what could be a secret."""
    try:
        parts: SplitResult | None = urlsplit(url)
    except ValueError:
        parts = None
    fix = "write https://HOST[:PORT], e.g. https://198.18.0.10:6443"
    if parts is None or parts.scheme != "https" or not parts.hostname:
        return (
            f"is not an https URL; {fix}" if "@" in url else f"{url!r} is not an https URL; {fix}"
        )
    if "@" in parts.netloc:
        return f"carries a user name or password; {fix} and give the credentials: {_CREDENTIALS}"
    try:
        port = parts.port  # raises on a port outside 0-65535 or not a number
    except ValueError:
        port = 0
    if port == 0:  # 0 is no port a server listens on (issue 44)
        return f"{url!r} has an invalid port; {fix} with a port 1-65535"
    if parts.query or parts.fragment:
        return f"{url!r} has a query or fragment; {fix}"
    return None


def _address_problem(c: Checker, url: str) -> str | None:
    """On the lab, an API server given by address lies on loopback or in the lab's range."""
    host = urlsplit(url).hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if line_of(c.spec.target).one_machine and not (address.is_loopback or address in LAB_RANGE):
        return (
            f"{address} is neither loopback nor in the lab range {LAB_RANGE}; the lab's API "
            "server listens on 127.0.0.1 or a lab address"
        )
    return None


def _check_credentials(c: Checker, kube: KubernetesSpec) -> None:
    token = kube.token is not None
    cert, key = kube.client_certificate is not None, kube.client_key is not None
    if not token and not (cert or key):
        c.add("kubernetes.token", f"the API server needs credentials; {_CREDENTIALS}")
    elif token and (cert or key):
        c.add(
            "kubernetes.token",
            "a token and a client certificate are both given; keep one way to authenticate",
        )
    elif cert != key:
        missing = "client_key" if cert else "client_certificate"
        c.add(
            f"kubernetes.{missing}",
            f"a client certificate needs both client_certificate and client_key; set "
            f"{missing}: {{config: ...}}, or use a token instead",
        )


def check_kubernetes(c: Checker) -> None:
    """The API server URL and credentials, the Network Operator's settings, the labels."""
    kube = c.spec.kubernetes
    if kube is None:
        return
    problem = _url_problem(kube.api_server) or _address_problem(c, kube.api_server)
    if problem is not None:
        c.add("kubernetes.api_server", problem)
    _check_credentials(c, kube)
    op = kube.network_operator
    path = "kubernetes.network_operator"
    if not DNS_LABEL.match(op.namespace):
        c.add(
            f"{path}.namespace",
            f"{op.namespace!r} is not a namespace name; use lower-case letters, digits and '-' "
            "(at most 63), e.g. nvidia-network-operator",
        )
    if not RESOURCE_NAME.match(op.resource_name):
        c.add(
            f"{path}.resource_name",
            f"{op.resource_name!r} is not a resource name; use letters, digits, '-', '_', '.' "
            "(at most 63, alphanumeric at both ends), e.g. rdma_shared_device_a",
        )
    if op.repository is None:
        c.add(
            f"{path}.repository",
            "the NicClusterPolicy names each component's image; set repository: REGISTRY/PATH "
            "(NVIDIA's mellanox image repository, or your mirror of it)",
        )
    elif not IMAGE_REPOSITORY.match(op.repository):
        c.add(
            f"{path}.repository",
            f"{op.repository!r} is not an image repository; write REGISTRY/PATH without a tag "
            "or a scheme, e.g. registry.example.com/mellanox",
        )
    for field, value in (("version", op.version), ("driver_version", op.driver_version)):
        if value is not None and not IMAGE_TAG.match(value):
            c.add(
                f"{path}.{field}",
                f"{value!r} is not an image tag; use letters, digits, '_', '.', '-' (at most 128)",
            )
    if op.driver == "container" and op.driver_version is None:
        c.add(
            f"{path}.driver_version",
            "driver container runs NVIDIA's DOCA driver image; set driver_version to its tag "
            "(e.g. doca3.4.1-26.04-1.1.0.0-1), or driver: host to keep the nodes' RDMA stack",
            reads=[f"{path}.driver"],
        )
    if op.device_plugin == "sriov" and "hca_max" in op.model_fields_set:
        c.add(
            f"{path}.hca_max",
            "hca_max applies only to device_plugin rdma-shared (an SR-IOV VF is one pod's); "
            "remove it",
            reads=[f"{path}.device_plugin"],
        )
    names: dict[str, int] = {}
    ranges: list[tuple[str, ipaddress.IPv4Network]] = _declared_networks(c)
    for index, net in enumerate(op.secondary_networks):
        npath = f"{path}.secondary_networks[{index}]"
        if net.name in names:
            c.add(
                f"{npath}.name",
                f"{net.name!r} is already secondary_networks[{names[net.name]}]; rename one",
            )
        names.setdefault(net.name, index)
        _check_network(c, npath, net, op.device_plugin)
        _check_ipam(c, f"{npath}.ipam", net, ranges)
    labels = kube.labels
    if labels.kueue_topology is not None and not DNS_SUBDOMAIN.match(labels.kueue_topology):
        c.add(
            "kubernetes.labels.kueue_topology",
            f"{labels.kueue_topology!r} is not an object name; use lower-case letters, digits, "
            "'-' and '.', e.g. fabric",
        )


def _declared_netdevs(c: Checker) -> set[str]:
    return {hca.netdev for group in c.spec.nodes for hca in group.hcas if hca.netdev is not None}


def _check_network(c: Checker, path: str, net: SecondaryNetwork, plugin: str) -> None:
    """The kind fits the fabric and the device plugin; ``master`` names a netdev when needed."""
    kind = c.spec.fabric.kind
    if not DNS_LABEL.match(net.name):
        c.add(
            f"{path}.name",
            f"{net.name!r} is not a network name; use lower-case letters, digits and '-' (at "
            "most 63), e.g. ib-net",
        )
    needs = {"ipoib": "infiniband", "macvlan": "roce"}.get(net.kind)
    if needs is not None and kind in OPERATOR_FABRICS and kind != needs:
        other = "macvlan" if net.kind == "ipoib" else "ipoib"
        c.add(
            f"{path}.kind",
            f"{net.kind} needs fabric.kind {needs}, not {kind!r}; use kind "
            f"{other}, or host-device with device_plugin sriov",
            reads=["fabric.kind"],
        )
    if net.kind == "host-device":
        if plugin != "sriov":
            c.add(
                f"{path}.kind",
                "host-device moves an SR-IOV VF into the pod; set "
                "network_operator.device_plugin: sriov, or use kind ipoib (InfiniBand) or "
                "macvlan (RoCE)",
            )
        if net.master is not None:
            c.add(
                f"{path}.master", "host-device takes its VF from the device plugin; remove master"
            )
        return
    if plugin != "rdma-shared":
        c.add(
            f"{path}.kind",
            f"{net.kind} shares the host's netdev through the RDMA shared device plugin; set "
            "network_operator.device_plugin: rdma-shared, or use kind host-device",
        )
    example = "ib0" if net.kind == "ipoib" else "ens1f0np0"
    if net.master is None:
        c.add(
            f"{path}.master",
            f"{net.kind} needs the host netdev it hangs off, e.g. master: {example}",
        )
    elif not NETDEV_PATTERN.match(net.master):
        c.add(
            f"{path}.master",
            f"{net.master!r} is not a netdev name (letters, digits, '_', '.', '-'; at most 15), "
            f"e.g. {example}",
        )
    elif net.kind == "macvlan":
        declared = _declared_netdevs(c)
        if declared and net.master not in declared:
            c.add(
                f"{path}.master",
                f"{net.master!r} is not a declared HCA netdev; use one of {', '.join(sorted(declared))}",
                reads=["nodes[*].hcas[*].netdev"],
            )


def _declared_networks(c: Checker) -> list[tuple[str, ipaddress.IPv4Network]]:
    """The networks a secondary network's range must stay clear of."""
    spec = c.spec
    nets = [("management.subnet", spec.management.subnet)]
    if spec.bmc is not None and spec.bmc.subnet is not None:
        nets.append(("bmc.subnet", spec.bmc.subnet))
    if spec.lab is not None and spec.lab.roce_subnet is not None:
        nets.append(("lab.roce_subnet", spec.lab.roce_subnet))
    return nets


def _check_ipam(
    c: Checker,
    path: str,
    net: SecondaryNetwork,
    ranges: list[tuple[str, ipaddress.IPv4Network]],
) -> None:
    """The range clears every other network; the gateway and exclusions lie in it."""
    ipam = net.ipam
    clash = next(((p, other) for p, other in ranges if ipam.range.overlaps(other)), None)
    if clash is not None:
        c.add(
            f"{path}.range",
            f"{ipam.range} overlaps {clash[0]} {clash[1]}; give the pods' network its own subnet",
            reads=[clash[0]],
        )
    elif line_of(c.spec.target).one_machine and not ipam.range.subnet_of(LAB_RANGE):
        c.add(
            f"{path}.range",
            f"{ipam.range} is outside the lab range {LAB_RANGE}; pick a subnet inside it",
            reads=["target"],
        )
    ranges.append((f"{path}.range", ipam.range))
    if ipam.range.num_addresses < 4:
        c.add(f"{path}.range", f"{ipam.range} holds no pod address; use a /29 or larger")
    if ipam.gateway is not None and ipam.gateway not in ipam.range:
        c.add(
            f"{path}.gateway", f"{ipam.gateway} is outside range {ipam.range}; pick one inside it"
        )
    for index, excluded in enumerate(ipam.exclude):
        if not excluded.subnet_of(ipam.range):
            c.add(
                f"{path}.exclude[{index}]",
                f"{excluded} is outside range {ipam.range}; exclude addresses inside it",
            )
    if ipam.type == "host-local" and ipam.exclude:
        c.add(
            f"{path}.exclude",
            "host-local cannot exclude addresses; use nv-ipam or whereabouts, or a smaller range",
        )
    if ipam.type == "host-local":
        hosts = sum(1 for group in c.spec.nodes if group.role == "compute" for _ in group.hosts)
        if hosts > 1:
            c.add(
                f"{path}.type",
                f"host-local hands out the same addresses on each of the {hosts} compute nodes; "
                "use nv-ipam or whereabouts (cluster-wide)",
            )


KUBERNETES_RULES: tuple[Rule, ...] = (check_orchestrator, check_kubernetes)
