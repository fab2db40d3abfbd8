"""Kubernetes: each node's topology labels on the API server name the switches the discovered
fabric (``ibnetdiscover`` from the discovery host) puts it under, judged by
``fabric.verify.families.kubernetes.label_problems``. The API server's bearer token comes from
``RAILYARD_KUBE_TOKEN`` and its CA (PEM) from ``RAILYARD_KUBE_CA``; without them, or when the
server or ibnetdiscover cannot be read, the check is a harness error, never a label failure.
"""

from __future__ import annotations

import os

import pytest

from fabric.verify.facts import Facts
from fabric.verify.families.kubernetes import label_problems
from fabric.verify.harness_error import HarnessError
from fabric.verify.plan import CheckPlan

pytestmark = pytest.mark.family("kubernetes_labels")

TOKEN_ENV = "RAILYARD_KUBE_TOKEN"
CA_ENV = "RAILYARD_KUBE_CA"


def _labels(facts: Facts, plan: CheckPlan) -> dict[str, dict[str, str]]:
    """Every Node's labels, read once per run."""
    k8s = plan.spec.kubernetes
    assert k8s is not None  # the family is not generated without it

    def read() -> dict[str, dict[str, str]]:
        from fabric.components.kubernetes import read_node_labels

        token = os.environ.get(TOKEN_ENV)
        if not token:
            raise HarnessError(
                f"no API server token to read the labels with: set {TOKEN_ENV} (and {CA_ENV}, "
                "the API server's CA as PEM)"
            )
        try:
            return read_node_labels(k8s.api_server, token, os.environ.get(CA_ENV))
        except RuntimeError as err:  # fabric.kube_client.KubeError: the call, never a secret
            raise HarnessError(f"reading the nodes' labels: {err}") from None

    return facts._once(("kubernetes_labels",), read)


def test_topology_labels(host, facts: Facts, plan: CheckPlan, kubernetes_node: str) -> None:
    """The node's topology labels name the leaf (and the switches above) it is cabled to."""
    k8s = plan.spec.kubernetes
    assert k8s is not None
    labels = _labels(facts, plan)
    try:
        discovered = facts.discovered()
    except RuntimeError as err:
        raise HarnessError(f"ibnetdiscover: {err}") from None
    problems = label_problems(
        kubernetes_node, labels.get(kubernetes_node.lower()), discovered, k8s.labels.scheme
    )
    assert not problems, "; ".join(problems)
