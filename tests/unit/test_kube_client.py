"""The Kubernetes client's calls (fabric.kube_client) against a small HTTP server on
loopback, and the lab API server's credentials and binaries (fabric.lab.kubeapi): error handling
and redaction only; the calls against a real kube-apiserver: tests/integration/test_kubernetes_lab.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fabric.kube_client import Client, KubeError, object_path
from fabric.lab.kubeapi import _pki, binaries

TOKEN = "sEcReT-token-value-0123456789abcdefghijkl"


class _Handler(BaseHTTPRequestHandler):
    """Answers as an API server would: the body echoes what was sent, 404 for a missing
    object, 422 with a message quoting the request, 401 without the right token."""

    seen: list[tuple[str, str, str, str]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        self.seen.append((self.command, self.path, self.headers.get("Content-Type", ""), body))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            code, reply = 401, {"message": "Unauthorized"}
        elif "missing" in self.path:
            code, reply = 404, {"message": "not found"}
        elif "invalid" in self.path:
            key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
            code, reply = 422, {"message": f"invalid: {key}"}
        else:
            code, reply = 200, {"metadata": {"resourceVersion": "7"}, "echo": body}
        data = json.dumps(reply).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PATCH = do_POST = do_DELETE = _answer

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Handler.seen = []
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_apply_is_a_server_side_apply_by_railyard(server: str) -> None:
    client = Client(server, TOKEN, None, timeout=5)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu01", "labels": {"a": "b"}}}
    assert client.apply(object_path(node), node)["metadata"]["resourceVersion"] == "7"
    method, path, kind, body = _Handler.seen[-1]
    assert (method, kind) == ("PATCH", "application/apply-patch+yaml")
    assert path == "/api/v1/nodes/gpu01?fieldManager=railyard&force=true"
    assert json.loads(body) == node


def test_missing_objects_and_deletes(server: str) -> None:
    client = Client(server, TOKEN, None, timeout=5)
    assert not client.exists("/api/v1/nodes/missing")
    assert client.exists("/api/v1/nodes/gpu01")
    client.delete("/apis/kueue.x-k8s.io/v1beta2/topologies/missing")  # already gone: fine
    client.merge_patch("/api/v1/nodes/gpu01", {"spec": {"taints": None}})
    assert _Handler.seen[-1][2] == "application/merge-patch+json"


def test_errors_name_the_call_and_never_a_secret(server: str) -> None:
    with pytest.raises(KubeError, match="HTTP 401") as refused:
        Client(server, "wrong-token-" + "x" * 30, None, timeout=5).get("/api/v1/nodes")
    assert "wrong-token" not in str(refused.value)
    with pytest.raises(KubeError, match=r"PATCH /api/v1/nodes/invalid: HTTP 422") as invalid:
        Client(server, TOKEN, None, timeout=5).apply("/api/v1/nodes/invalid", {})
    assert "MIIEvQ" not in str(invalid.value) and "redacted" in str(invalid.value)
    assert TOKEN not in str(invalid.value)


def test_object_paths() -> None:
    topology = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "f"},
    }
    pool = {
        "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
        "kind": "IPPool",
        "metadata": {"name": "p", "namespace": "n"},
    }
    policy = {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "x"},
    }
    assert object_path(topology) == "/apis/kueue.x-k8s.io/v1beta2/topologies/f"
    assert object_path(pool) == "/apis/nv-ipam.nvidia.com/v1alpha1/namespaces/n/ippools/p"
    assert object_path(policy) == "/apis/mellanox.com/v1alpha1/nicclusterpolicies/x"


def test_lab_credentials_are_private_and_the_certificate_names_the_address(tmp_path: Path) -> None:
    from cryptography import x509

    _pki(tmp_path, "198.18.0.2")
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert modes == {
        "ca.crt": 0o644,
        "server.crt": 0o644,
        "server.key": 0o600,
        "sa.key": 0o600,
        "token": 0o600,
        "tokens.csv": 0o600,
    }
    cert = x509.load_pem_x509_certificate((tmp_path / "server.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(a) for a in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "198.18.0.2"}
    token = (tmp_path / "token").read_text()
    assert (tmp_path / "tokens.csv").read_text() == f"{token},railyard,railyard,system:masters\n"
    assert len(token) >= 40


def test_missing_binaries_name_the_build_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(
        KubeError, match="kube-apiserver, etcd not built .*scripts/kube-apiserver.sh"
    ):
        binaries()
