"""``orchestrator: kubernetes`` against a real kube-apiserver (issue 43).

The lab's API server (``fabric.lab.kubeapi``: etcd and kube-apiserver v1.37.2 from the
railyard cache, built once by ``scripts/kube-apiserver.sh``, on loopback, a CA and a token
generated per start) gets the lab's nodes as Node objects and Kueue's published CRDs. A lab
(podman nodes on ibsim, hand-off and checks off: Kubernetes needs only its nodes) comes up as
``orchestrator: slurm``; its spec then turns to ``orchestrator: kubernetes`` with the API
server's token and CA as Pulumi config secrets, and ``pulumi up`` applies the topology labels,
the Kueue ``Topology`` and its ``ResourceFlavor``, read back here from the API server; a second
``up`` changes nothing. On the lab the Network Operator's objects are rendered, not applied;
a ``target: existing`` stack adopting the lab's nodes applies them, and its ``pulumi up``
against the server, which lacks their CRDs, stops with one line naming them. The health
taint is set, kept once, and lifted on the real server, other taints kept (``mark_health``
and railyard-health's own calls driven directly: no kubelet runs here). The
``kubernetes_labels`` check family runs over the lab and names a node whose label disagrees
with the fabric ibnetdiscover finds. railyard-health on the nodes, configured by the hand-off's
node_health part (its timer, no Slurm), taints kn1 within one health interval of its cable
being pulled and lifts the taint once it is re-cabled (a second API server on the lab's
management gateway, where the nodes reach it).

Own stacks ``rykube-<hex>`` and ``rykube-<hex>-adopt``, own subnets 198.18.151-154.0/24
(management) and 198.18.155-158.0/24 (BMC), ports 26000-26007 (Redfish emulator, notifier)
and 26200-26263 (ibsim); the API server's ports are free loopback ports the kernel picks.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.components.kubernetes import CLUSTER_LABEL, cluster_objects
from fabric.kube_client import CONDITION, TAINT_KEY, Client, KubeError, mark_health, node_labels
from fabric.lab.kubeapi import (
    ApiServer,
    install_crds,
    kueue_crds,
    register_nodes,
    start_server,
    stop_server,
)
from fabric.spec import spec_from_mapping
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration

HCA = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}
FOREIGN_TAINT = {"key": "example.com/maintenance", "value": "disk", "effect": "NoExecute"}


def _spec(tag: int) -> dict[str, Any]:
    """Two compute nodes under two leaves (one spine) and the SM node: the lab's spec."""
    return {
        "name": "rykube",
        "target": "lab",
        "nodes": [
            {"names": "kn[1-2]", "role": "compute", "gpus": 2, "gpu_type": "h100", "hcas": [HCA]},
            {"names": "ksm1", "role": "sm", "hcas": [HCA]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 2,
                "spines": 1,
                "ports_per_switch": 8,
                "nodes_per_leaf": 2,
                "uplinks_per_leaf": 2,
            },
            "infiniband": {"subnet_managers": [{"host": "ksm1", "priority": 14}]},
        },
        "management": {"subnet": f"198.18.{151 + tag}.0/24"},
        "bmc": {"subnet": f"198.18.{155 + tag}.0/24"},
        "slurm": {"controller": "ksm1"},
        "lab": {"bmc_port": 26000 + 2 * tag, "ibsim_port": 26200 + 16 * tag},
    }


def _kubernetes_spec(tag: int, url: str) -> dict[str, Any]:
    """The same lab as ``orchestrator: kubernetes`` (no Slurm settings) on ``url``."""
    spec = {k: v for k, v in _spec(tag).items() if k != "slurm"}
    return {
        **spec,
        "orchestrator": "kubernetes",
        "kubernetes": {
            "api_server": url,
            "token": {"config": "kubernetesToken"},
            "ca_certificate": {"config": "kubernetesCa"},
            "network_operator": {
                "repository": "registry.example.com/mellanox",
                "secondary_networks": [
                    {
                        "name": "ib-net",
                        "kind": "ipoib",
                        "master": "ib0",
                        "ipam": {
                            "type": "nv-ipam",
                            "range": f"198.19.{tag}.0/24",  # declared only: no pod runs
                            "gateway": f"198.19.{tag}.1",
                        },
                    }
                ],
            },
            "labels": {"scheme": "topograph", "kueue_topology": "rykube-fabric"},
        },
    }


def _processes(folder: str) -> list[str]:
    found = subprocess.run(
        ["pgrep", "-af", folder], capture_output=True, text=True, check=False, timeout=30
    )
    return [line for line in found.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    api = start_server(tmp_path_factory.mktemp("kubeapi") / "server", timeout=180)
    try:
        yield api
    finally:
        stop_server(api)
    assert _processes(api.folder) == [], "etcd or kube-apiserver left running"


@pytest.fixture(scope="module")
def client(server: ApiServer) -> Client:
    client = Client(server.url, server.token(), server.ca_file)
    install_crds(client, kueue_crds())
    return client


@dataclass
class KubeLab:
    lab: OwnLab
    url: str
    token: str
    up_log: str
    outputs: dict[str, Any]


@pytest.fixture(scope="module")
def kube_lab(
    tmp_path_factory: pytest.TempPathFactory, server: ApiServer, client: Client
) -> Iterator[KubeLab]:
    from pulumi import automation as auto

    with own_lab(tmp_path_factory, "rykube", _spec, tags=4) as lab:
        register_nodes(client, sorted(lab.hosts()))
        lab.set_spec(_kubernetes_spec(lab.tag, server.url))
        lab.stack.set_config("kubernetesToken", auto.ConfigValue(server.token(), secret=True))
        lab.stack.set_config(
            "kubernetesCa", auto.ConfigValue(server.ca_file.read_text(), secret=True)
        )
        log: list[str] = []
        result = lab.stack.up(on_output=log.append)
        yield KubeLab(lab, server.url, server.token(), "".join(log), result.outputs)
    assert lab.leftovers == {}, lab.leftovers
    # the destroy removed what railyard applied: the Kueue objects, the nodes' labels
    assert not client.exists("/apis/kueue.x-k8s.io/v1beta2/topologies/rykube-fabric")
    assert not client.exists("/apis/kueue.x-k8s.io/v1beta2/resourceflavors/rykube-fabric")
    left = node_labels(client)["kn1"]
    assert left == {"kubernetes.io/hostname": "kn1"}, left


def test_up_applies_the_topology_labels(kube_lab: KubeLab, client: Client) -> None:
    spec = spec_from_mapping(_kubernetes_spec(kube_lab.lab.tag, kube_lab.url))
    applied, _ = cluster_objects(spec)
    wanted = {
        o["metadata"]["name"]: o["metadata"]["labels"] for o in applied if o["kind"] == "Node"
    }
    assert set(wanted) == {"kn1", "kn2", "ksm1"}
    found = node_labels(client)
    for node, labels in wanted.items():
        assert {k: found[node].get(k) for k in labels} == labels
        assert found[node]["kubernetes.io/hostname"] == node  # the registration's, kept
    # kn1 and kn2 share leaf01, ksm1 sits under leaf02; one spine above both
    tier0, tier1 = "fabric.topograph.run/tier-0", "fabric.topograph.run/tier-1"
    assert [found[n][tier0] for n in ("kn1", "kn2", "ksm1")] == ["leaf01", "leaf01", "leaf02"]
    assert {found[n][tier1] for n in wanted} == {"spine01"}
    assert all(found[n][CLUSTER_LABEL] == "rykube" for n in wanted)
    assert kube_lab.outputs["kubernetes_missing_nodes"].value == []


def test_up_applies_the_kueue_topology_and_flavor(kube_lab: KubeLab, client: Client) -> None:
    base = "/apis/kueue.x-k8s.io/v1beta2"
    topology = client.get(f"{base}/topologies/rykube-fabric")
    assert [lvl["nodeLabel"] for lvl in topology["spec"]["levels"]] == [
        "fabric.topograph.run/tier-1",
        "fabric.topograph.run/tier-0",
        "kubernetes.io/hostname",
    ]
    flavor = client.get(f"{base}/resourceflavors/rykube-fabric")
    assert flavor["spec"]["topologyName"] == "rykube-fabric"
    assert flavor["spec"]["nodeLabels"] == {"railyard.dev/cluster": "rykube"}


def test_second_up_changes_nothing(kube_lab: KubeLab) -> None:
    result = kube_lab.lab.stack.up(on_output=lambda _: None)
    changes = {k: v for k, v in (result.summary.resource_changes or {}).items() if k != "same"}
    assert changes == {}


def test_the_lab_renders_the_network_operator_objects_only(
    kube_lab: KubeLab, client: Client
) -> None:
    rendered = kube_lab.outputs["kubernetes_rendered"].value
    assert {o["kind"] for o in rendered} >= {"NicClusterPolicy", "IPoIBNetwork", "IPPool"}
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert not client.exists(f"{crds}/nicclusterpolicies.mellanox.com")
    assert kube_lab.token not in kube_lab.up_log
    # the file backend's state as written (``export`` would decrypt the secrets)
    states = list(kube_lab.lab.backend.rglob(f"{kube_lab.lab.name}.json"))
    assert states, "no state file in the backend"
    leaked = any(kube_lab.token in p.read_text() for p in states)
    assert not leaked, "the API server's token is in the stack's state unencrypted"


def test_a_missing_network_operator_crd_stops_the_apply(server: ApiServer, client: Client) -> None:
    """The provider's create, against the real server without the Network Operator's CRDs:
    one line naming the CRD and the install step, and nothing applied."""
    from fabric.components.kubernetes import KubernetesObjectsProvider
    from fabric.model.network_operator import network_operator_objects

    register_nodes(client, ["crd-probe"])
    spec = spec_from_mapping(_kubernetes_spec(0, server.url))
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "crd-probe", "labels": {"railyard.dev/probe": "x"}},
    }
    props = {
        "name": "probe",
        "api_server": server.url,
        "token": server.token(),
        "ca_certificate": server.ca_file.read_text(),
        "objects": [node, *network_operator_objects(spec)],
    }
    with pytest.raises(KubeError) as failed:
        KubernetesObjectsProvider().create(props)
    message = str(failed.value)
    assert "\n" not in message
    assert "no CustomResourceDefinition nicclusterpolicies.mellanox.com" in message
    assert "install the NVIDIA Network Operator" in message
    assert server.token() not in message
    assert "railyard.dev/probe" not in node_labels(client)["crd-probe"]


def test_health_taint_is_set_and_lifted_keeping_other_taints(
    kube_lab: KubeLab, client: Client
) -> None:
    node = "kn2"
    path = f"/api/v1/nodes/{node}"
    before = client.get(path)
    taints = [*(before["spec"].get("taints") or []), FOREIGN_TAINT]
    client.merge_patch(path, {"spec": {"taints": taints}})

    def state() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        current = client.get(path)
        conditions = current["status"].get("conditions") or []
        return current["spec"].get("taints") or [], next(
            c for c in conditions if c["type"] == CONDITION
        )

    assert mark_health(client, node, False, "LinkDown", "mlx5_0 port 1 is Down")
    taints, condition = state()
    assert {"key": TAINT_KEY, "value": "LinkDown", "effect": "NoSchedule"} in taints
    assert FOREIGN_TAINT in taints
    assert (condition["status"], condition["reason"]) == ("False", "LinkDown")
    assert not mark_health(client, node, False, "LinkDown", "mlx5_0 port 1 is Down")

    assert mark_health(client, node, True, "FabricHealthy", "every port up")
    taints, condition = state()
    assert all(t["key"] != TAINT_KEY for t in taints)
    assert FOREIGN_TAINT in taints
    assert (condition["status"], condition["reason"]) == ("True", "FabricHealthy")
    # the labels railyard applied are untouched by the taint's patches
    assert "fabric.topograph.run/tier-0" in node_labels(client)[node]


def test_credentials_stay_in_their_folder(server: ApiServer) -> None:
    folder = Path(server.folder)
    for name in ("token", "tokens.csv", "server.key", "sa.key"):
        assert (folder / name).stat().st_mode & 0o077 == 0, name
    logs = (folder / "kube-apiserver.log").read_text() + (folder / "etcd.log").read_text()
    assert server.token() not in logs


def test_label_check_names_a_node_whose_label_disagrees_with_the_fabric(
    kube_lab: KubeLab, client: Client, server: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``kubernetes_labels`` family over the lab: labels read from the API server, the
    fabric from ibnetdiscover on ksm1 (ibsim). kn1's leaf label is then made to name leaf02
    (what a recabled host's stale label looks like): the check names kn1 and both leaves."""
    monkeypatch.setenv("RAILYARD_KUBE_TOKEN", server.token())
    monkeypatch.setenv("RAILYARD_KUBE_CA", server.ca_file.read_text())
    results = kube_lab.lab.checks("test_topology_labels")
    assert {k: r.outcome for k, r in results.items()} == {
        f"test_topology_labels[{n}]": "passed" for n in ("kn1", "kn2", "ksm1")
    }
    tier0 = "fabric.topograph.run/tier-0"
    client.merge_patch("/api/v1/nodes/kn1", {"metadata": {"labels": {tier0: "leaf02"}}})
    try:
        failed = kube_lab.lab.failed_checks("test_topology_labels")
    finally:  # back to railyard's own label (its field manager), as pulumi up applied it
        client.merge_patch("/api/v1/nodes/kn1", {"metadata": {"labels": {tier0: None}}})
        spec = spec_from_mapping(_kubernetes_spec(kube_lab.lab.tag, kube_lab.url))
        node = next(o for o in cluster_objects(spec)[0] if o["metadata"]["name"] == "kn1")
        client.apply("/api/v1/nodes/kn1", node)
    assert list(failed) == ["test_topology_labels[kn1]"]
    assert (
        f"kn1: label {tier0}=leaf02, but the discovered fabric has it under leaf01"
        in (failed["test_topology_labels[kn1]"])
    )


def test_railyard_health_taints_and_lifts_over_the_api_server(
    kube_lab: KubeLab, client: Client, server: ApiServer
) -> None:
    """railyard-health's own (standard library) calls, as a compute node makes them after its
    verdict: a failing run taints kn1 with the reason in the condition, a healthy run lifts it;
    a foreign taint stays throughout. No Slurm here: ``mark_kubernetes`` is driven directly."""
    from fabric.verify import health

    kube = {
        "api_server": server.url,
        "token_file": str(server.token_file),
        "ca_file": str(server.ca_file),
    }
    path = "/api/v1/nodes/kn1"
    taints = [*(client.get(path)["spec"].get("taints") or []), FOREIGN_TAINT]
    client.merge_patch(path, {"spec": {"taints": taints}})
    failure = "mlx5_0/1 Down (leaf01 p1)"
    assert health.mark_kubernetes(kube, "kn1", [failure]) == "kubernetes: tainted"
    node = client.get(path)
    assert {"key": TAINT_KEY, "value": "FabricUnhealthy", "effect": "NoSchedule"} in (
        node["spec"]["taints"]
    )
    assert FOREIGN_TAINT in node["spec"]["taints"]
    condition = next(c for c in node["status"]["conditions"] if c["type"] == CONDITION)
    # the message is the Slurm drain reason the same verdict writes
    assert (condition["status"], condition["message"]) == ("False", f"railyard: {failure}")
    assert health.mark_kubernetes(kube, "kn1", [failure]) == "kubernetes: taint as it was"
    assert health.mark_kubernetes(kube, "kn1", []) == "kubernetes: untainted"
    node = client.get(path)
    assert all(t["key"] != TAINT_KEY for t in node["spec"]["taints"])
    assert FOREIGN_TAINT in node["spec"]["taints"]
    condition = next(c for c in node["status"]["conditions"] if c["type"] == CONDITION)
    assert condition["status"] == "True"
    # a wrong token is one line naming the call, never the token
    bad = Path(server.folder) / "wrong-token"
    bad.write_text("not-the-token")
    said = health.mark_kubernetes({**kube, "token_file": str(bad)}, "kn1", [failure])
    assert said == "kubernetes: not marked: 401 Unauthorized from /api/v1/nodes/kn1"


#: The pulled-cable test's health interval (s): roles/node_health's timer runs railyard-health
#: this often (no slurmd: orchestrator kubernetes).
HEALTH_INTERVAL = 15
#: What a run may add to the interval: the program's own alarm (fabric.verify.health.RUN_TIMEOUT).
RUN_MARGIN = 20

#: The hand-off's health part, as playbooks/site.yml runs it: the SM, then railyard-health.
HEALTH_PLAYBOOK = """
- name: Run the InfiniBand subnet managers.
  hosts: subnet_managers
  gather_facts: false
  roles:
    - role: {roles}/subnet_manager
- name: Install railyard's health check on the compute nodes.
  hosts: compute
  gather_facts: false
  roles:
    - role: {roles}/node_health
      vars:
        node_health_config: "{{{{ railyard_node_health[inventory_hostname] | default({{}}) }}}}"
"""


def _taints(client: Client, node: str) -> list[dict[str, Any]]:
    return client.get(f"/api/v1/nodes/{node}")["spec"].get("taints") or []


def _wait_for(client: Client, node: str, tainted: bool, seconds: float) -> float:
    """Seconds until ``node``'s fabric taint is there (``tainted``) or gone, read from the
    API server every second; fails past ``seconds``."""
    import time

    start = time.monotonic()
    while True:
        has = any(t["key"] == TAINT_KEY for t in _taints(client, node))
        took = time.monotonic() - start
        if has == tainted:
            return took
        assert took < seconds, (
            f"{node}: taint {'not set' if tainted else 'not lifted'} in {seconds}s"
        )
        time.sleep(1)


#: The most seconds between one run's taint call and its condition call (two API calls).
CONDITION_LAG_S = 15.0


def _condition_when(client: Client, node: str, status: str, seconds: float) -> dict[str, Any]:
    """``node``'s railyard condition once its status is ``status``, read every second; fails
    past ``seconds``."""
    import time

    start = time.monotonic()
    while True:
        conditions = (client.get(f"/api/v1/nodes/{node}").get("status") or {}).get("conditions")
        found = next((c for c in conditions or [] if c["type"] == CONDITION), None)
        if found is not None and found["status"] == status:
            return found
        assert time.monotonic() - start < seconds, (node, found)
        time.sleep(1)


def test_a_pulled_cable_taints_the_node_within_one_health_interval(
    kube_lab: KubeLab, tmp_path: Path
) -> None:
    """railyard-health on the lab's nodes, from the hand-off's configuration of an
    ``orchestrator: kubernetes`` spec: the node_health role (timer every HEALTH_INTERVAL s, the
    API server's token 0600 and CA) and the SM on ksm1, through ``run_playbook`` as the hand-off
    runs it (group_vars from the spec, the token a secret extra variable). The API server here
    listens on the lab's management gateway, where the nodes reach it (as they reach ibsim).
    kn1's cable pulled (``railyard lab fault pull kn1``'s code): the taint is on kn1 within
    one interval plus a run, read back from the API server; kn2 stays untainted; re-cabled,
    the taint is lifted and a foreign taint on kn1 stays throughout. No scontrol runs (no
    Slurm): every action in the journal is the taint's."""
    from fabric.handoff.runner import remove_handoff_files, run_playbook
    from fabric.lab.faults import LabFaults
    from fabric.state import REPO_ROOT

    lab = kube_lab.lab
    gateway = lab.outputs["fabric"].value["ibsim_server"]
    api = start_server(tmp_path / "gateway-server", address=gateway, timeout=180)
    try:
        gate = Client(api.url, api.token(), api.ca_file)
        register_nodes(gate, sorted(lab.hosts()))
        spec_doc = _kubernetes_spec(lab.tag, api.url) | {"health": {"interval": HEALTH_INTERVAL}}
        spec = spec_from_mapping(spec_doc)
        playbook = tmp_path / "health.yml"
        playbook.write_text(HEALTH_PLAYBOOK.format(roles=REPO_ROOT / "roles"))
        lines: list[str] = []
        result = run_playbook(
            playbook,
            stack=lab.name,
            spec=spec,
            emit=lines.append,
            state_root=lab.state_root,
            artifacts_root=lab.root / "artifacts",
            secret_vars={
                "node_health_kube_token": api.token(),
                "node_health_kube_ca": api.ca_file.read_text(),
            },
            timeout=600,
        )
        assert result.ok, "\n".join(lines[-30:])
        assert api.token() not in "\n".join(lines)
        mode = lab.ssh("kn1", "stat -c %a /etc/railyard/kube-token").strip()
        assert mode == "600"
        config = json.loads(lab.ssh("kn1", "cat /etc/railyard/health.json"))
        assert config["slurm"] is False and config["kubernetes"]["api_server"] == api.url
        # one run by hand on each node (as the timer runs it): healthy, so nothing tainted
        for name in ("kn1", "kn2"):
            run = lab.health(name)
            assert (run["failures"], run["harness_errors"]) == ([], []), run
            assert run["action"] in (
                "no slurm; kubernetes: taint as it was",
                "no slurm; kubernetes: untainted",
            ), run
        assert not any(t["key"] == TAINT_KEY for t in _taints(gate, "kn1"))
        gate.merge_patch("/api/v1/nodes/kn1", {"spec": {"taints": [FOREIGN_TAINT]}})

        faults = LabFaults(lab.state)
        faults.inject("pull", "kn1")
        try:
            took = _wait_for(gate, "kn1", True, HEALTH_INTERVAL + RUN_MARGIN)
            # the taint and the condition are two calls of the same run: read both once the
            # second is in (under load, the first was seen before the second came)
            condition = _condition_when(gate, "kn1", "False", CONDITION_LAG_S)
            node = gate.get("/api/v1/nodes/kn1")
            assert FOREIGN_TAINT in node["spec"]["taints"]
            assert condition["message"].startswith("railyard: mlx5_0/1"), condition
            assert not any(t["key"] == TAINT_KEY for t in _taints(gate, "kn2"))
        finally:
            faults.restore("pull", "kn1")
        lifted = _wait_for(gate, "kn1", False, HEALTH_INTERVAL + RUN_MARGIN)
        assert FOREIGN_TAINT in _taints(gate, "kn1")
        journal = lab.ssh("kn1", "journalctl -u railyard-health.service --no-pager -o cat")
        assert "scontrol" not in journal and "slurmctld" not in journal
        assert "kubernetes: tainted" in journal and "kubernetes: untainted" in journal
        print(f"pulled cable tainted kn1 in {took:.1f}s, re-cabled lifted in {lifted:.1f}s")
    finally:
        stop_server(api)
        # what run_playbook wrote (group_vars, the fact cache), as the hand-off's delete does
        remove_handoff_files(lab.name, lab.state_root)


#: The hand-off's subnet manager play alone: the check run below needs a MASTER SM (the
#: pulled-cable test above starts it; run alone, this one does).
SM_PLAYBOOK = """
- name: Run the InfiniBand subnet managers.
  hosts: subnet_managers
  gather_facts: false
  roles:
    - role: {roles}/subnet_manager
"""
#: How long a re-cabled port may take to be Active again (an SM sweep) before the checks pass.
RECABLE_S = 90


def _check_and_mark(
    lab: OwnLab, server: ApiServer, report_dir: Path, *, from_env: bool = True
) -> tuple[int, dict[str, Any]]:
    """``python -m fabric check --limit kn1 --mark-nodes --json`` as an operator runs it, the
    API server's token and CA in the environment (``from_env``), else read from the stack's
    Pulumi config secrets the spec names: (exit code, the JSON result)."""
    import os
    import sys

    from fabric.state import REPO_ROOT

    env = {**os.environ, **lab.env}
    for name in ("RAILYARD_KUBE_TOKEN", "RAILYARD_KUBE_CA"):
        env.pop(name, None)
    if from_env:
        env["RAILYARD_KUBE_TOKEN"] = server.token()
        env["RAILYARD_KUBE_CA"] = server.ca_file.read_text()
    argv = ["check", "--stack", lab.name, "--spec", str(lab.stack_file), "--limit", "kn1"]
    argv += ["-n", "1", "--report-dir", str(report_dir), "--mark-nodes", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "fabric", *argv],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=300,
        check=False,
    )
    assert server.token() not in done.stdout + done.stderr
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    return done.returncode, json.loads(done.stdout)


def test_check_suite_verdict_taints_and_lifts_the_checked_node(
    kube_lab: KubeLab, client: Client, server: ApiServer, tmp_path: Path
) -> None:
    """``railyard check --mark-nodes`` against the real API server: kn1's cable pulled, the
    check run over kn1 (``--limit kn1``) fails its port checks and taints kn1, the condition
    ``False`` naming the first failed check; re-cabled, the next run passes and lifts the
    taint (its token and CA read from the stack's Pulumi config secrets the spec names this
    time, none in the environment). A foreign taint on kn1 stays throughout, and kn2, outside
    the limit, is not touched (its resourceVersion unchanged)."""
    from fabric.lab.faults import LabFaults

    lab = kube_lab.lab
    if lab.ssh("ksm1", "systemctl is-active opensm.service || true").strip() != "active":
        from fabric.handoff.runner import remove_handoff_files, run_playbook
        from fabric.state import REPO_ROOT

        playbook = tmp_path / "sm.yml"
        playbook.write_text(SM_PLAYBOOK.format(roles=REPO_ROOT / "roles"))
        lines: list[str] = []
        try:
            result = run_playbook(
                playbook,
                stack=lab.name,
                spec=spec_from_mapping(_kubernetes_spec(lab.tag, kube_lab.url)),
                emit=lines.append,
                state_root=lab.state_root,
                artifacts_root=lab.root / "artifacts",
                timeout=600,
            )
        finally:
            remove_handoff_files(lab.name, lab.state_root)
        assert result.ok, "\n".join(lines[-30:])
    path = "/api/v1/nodes/kn1"
    kept = [t for t in _taints(client, "kn1") if t["key"] != TAINT_KEY and t != FOREIGN_TAINT]
    client.merge_patch(path, {"spec": {"taints": [*kept, FOREIGN_TAINT]}})
    kn2 = client.get("/api/v1/nodes/kn2")["metadata"]["resourceVersion"]

    faults = LabFaults(lab.state)
    faults.inject("pull", "kn1")
    try:
        code, pulled = _check_and_mark(lab, server, tmp_path / "pulled")
    finally:
        faults.restore("pull", "kn1")
    assert code == 1
    failed = [f"{r['name']}[{r['param']}]" for r in pulled["results"] if r["outcome"] == "failed"]
    assert "test_port_state_active[kn1/mlx5_0/1]" in failed, failed
    marks = pulled["kubernetes"]["nodes"]
    assert [(m["node"], m["action"]) for m in marks] == [("kn1", "tainted")], marks
    assert pulled["kubernetes"]["error"] is None
    node = client.get(path)
    assert {"key": TAINT_KEY, "value": "FabricUnhealthy", "effect": "NoSchedule"} in (
        node["spec"]["taints"]
    )
    assert FOREIGN_TAINT in node["spec"]["taints"]
    condition = next(c for c in node["status"]["conditions"] if c["type"] == CONDITION)
    assert (condition["status"], condition["reason"]) == ("False", "FabricUnhealthy")
    named = condition["message"].removeprefix("railyard check: ").split(": ", 1)[0]
    assert condition["message"].startswith("railyard check: ") and named in failed, condition
    assert condition["message"] == marks[0]["detail"]

    import time

    start = time.monotonic()
    while True:  # re-cabled: the SM brings the port back; the first run that passes lifts it
        code, healed = _check_and_mark(lab, server, tmp_path / "healed", from_env=False)
        if code == 0 or time.monotonic() - start > RECABLE_S:
            break
        time.sleep(3)
    assert code == 0, [r for r in healed["results"] if r["outcome"] != "passed"]
    marks = healed["kubernetes"]["nodes"]
    assert [(m["node"], m["action"]) for m in marks] == [("kn1", "untainted")], marks
    node = client.get(path)
    assert all(t["key"] != TAINT_KEY for t in node["spec"]["taints"])
    assert FOREIGN_TAINT in node["spec"]["taints"]
    condition = next(c for c in node["status"]["conditions"] if c["type"] == CONDITION)
    assert (condition["status"], condition["reason"]) == ("True", "FabricHealthy")
    assert condition["message"].startswith("railyard check: all ")
    assert client.get("/api/v1/nodes/kn2")["metadata"]["resourceVersion"] == kn2
    print(f"check runs: pulled and re-cabled, the second pass {time.monotonic() - start:.1f}s")


def test_pulumi_up_without_the_network_operator_crds_stops_naming_them(
    kube_lab: KubeLab, server: ApiServer
) -> None:
    """A cluster that is not the lab applies the Network Operator's objects: ``pulumi up`` of
    a ``target: existing`` stack adopting the lab's nodes (SSH, host keys pinned at first
    contact; hand-off and checks off) against the API server, which has no
    ``nicclusterpolicies.mellanox.com``, fails with the one line naming it and the install
    step, and no credential in its output."""
    import shutil

    from pulumi import automation as auto
    from pulumi.automation.errors import CommandError

    from fabric.state import REPO_ROOT
    from tests.integration.labkit import PULUMI_BIN

    lab = kube_lab.lab
    work = lab.root / "adopt"
    work.mkdir()
    for file in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO_ROOT / file, work / file)
    lab_block = dict(_spec(lab.tag)["lab"])
    spec = {
        **_kubernetes_spec(lab.tag, server.url),
        "target": "existing",
        "existing": {"ssh": {name: host["address"] for name, host in lab.hosts().items()}},
        "lab": {**lab_block, "datacenter_stack": lab.name},
    }
    name = f"{lab.name}-adopt"
    config = {
        "railyard:cluster": spec,
        "railyard:sshPrivateKeyFile": str(lab.state / "ssh" / "id_ed25519"),
        "railyard:hostKeyTimeout": "60",
        "railyard:handoff": "false",
        "railyard:verify": "false",
    }
    (work / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
    ws = auto.LocalWorkspace(
        work_dir=str(work),
        env_vars=lab.env,
        pulumi_command=auto.PulumiCommand(str(PULUMI_BIN.parent)),
    )
    stack = auto.Stack.create(name, ws)
    try:
        stack.set_config("kubernetesToken", auto.ConfigValue(server.token(), secret=True))
        stack.set_config("kubernetesCa", auto.ConfigValue(server.ca_file.read_text(), secret=True))
        log: list[str] = []
        with pytest.raises(CommandError) as failed:
            stack.up(on_output=log.append)
        said = "".join(log) + str(failed.value)
        want = (
            f"kubernetes.api_server {server.url}: no CustomResourceDefinition "
            "nicclusterpolicies.mellanox.com (and ippools.nv-ipam.nvidia.com, "
            "ipoibnetworks.mellanox.com), so NicClusterPolicy cannot be applied; install the "
            "NVIDIA Network Operator first (its Helm chart network-operator installs the CRDs), "
            "or set orchestrator: slurm"
        )
        assert want in said, said[-2000:]
        assert server.token() not in said
        assert "Traceback" not in "".join(log)
    finally:
        stack.destroy(on_output=lambda _: None)
        ws.remove_stack(name)
