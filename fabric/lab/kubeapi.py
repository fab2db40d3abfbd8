"""A real Kubernetes API server for the lab: etcd and kube-apiserver on loopback (or a lab
address), built once by ``scripts/kube-apiserver.sh`` into the railyard cache.

No kubelet runs: the lab's nodes are registered as Node objects, and Kueue's CRDs, as Kueue
publishes them in its Go module, are installed, so labels, Topology objects and node taints
can be applied and read back as on a real cluster. Credentials are generated per start: a CA,
the server's certificate, a service-account signing key and a random bearer token (a member
of ``system:masters``), written 0600 into the server's folder and never printed. Proven
against the real server by ``tests/integration/test_kubernetes_lab.py`` (docs/kubernetes.md).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import socket
import time
from pathlib import Path

from pydantic import BaseModel

from fabric.kube_client import Client, KubeError, object_path
from fabric.lab.process import Helper, alive, start, stop

KUBE_VERSION = "1.37.2"
#: Service (cluster) addresses: allocated, never routed (no kubelet, no proxy).
SERVICE_RANGE = "198.19.255.0/24"


def cache_dir() -> Path:
    """Where ``scripts/kube-apiserver.sh`` puts the binaries and Kueue's CRDs."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "railyard" / "kube" / f"v{KUBE_VERSION}"


def binaries() -> tuple[Path, Path]:
    """(kube-apiserver, etcd) from the cache; a KubeError naming the build script if absent."""
    found = tuple(cache_dir() / "bin" / name for name in ("kube-apiserver", "etcd"))
    missing = [p.name for p in found if not os.access(p, os.X_OK)]
    if missing:
        raise KubeError(
            f"{', '.join(missing)} not built in {cache_dir() / 'bin'}; run "
            "scripts/kube-apiserver.sh once (a long Go build)"
        )
    return found[0], found[1]


def kueue_crds() -> list[Path]:
    """Kueue's published CRD files in the cache."""
    files = sorted((cache_dir() / "crds" / "kueue").glob("*.yaml"))
    if not files:
        raise KubeError(f"no Kueue CRDs in {cache_dir() / 'crds'}; run scripts/kube-apiserver.sh")
    return files


class ApiServer(BaseModel):
    """A started API server: its URL, its folder (CA, token), and the two processes."""

    url: str
    folder: str
    etcd: Helper
    apiserver: Helper

    @property
    def ca_file(self) -> Path:
        return Path(self.folder) / "ca.crt"

    @property
    def token_file(self) -> Path:
        return Path(self.folder) / "token"

    def token(self) -> str:
        return self.token_file.read_text().strip()


def _free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def _private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _pki(folder: Path, address: str) -> None:
    """A CA, the server's certificate for ``address`` and loopback, a service-account key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    pem = serialization.Encoding.PEM
    key_format = serialization.PrivateFormat.PKCS8
    none = serialization.NoEncryption()

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("railyard-lab-kube-ca"))
        .issuer_name(name("railyard-lab-kube-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    addresses = {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address(address)}
    sans = [x509.IPAddress(a) for a in sorted(addresses)] + [x509.DNSName("localhost")]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("kube-apiserver"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (folder / "ca.crt").write_bytes(ca.public_bytes(pem))
    (folder / "server.crt").write_bytes(cert.public_bytes(pem))
    _private(folder / "server.key", key.private_bytes(pem, key_format, none))
    _private(folder / "sa.key", sa_key.private_bytes(pem, key_format, none))
    token = secrets.token_urlsafe(32)
    _private(folder / "token", token.encode())
    _private(folder / "tokens.csv", f"{token},railyard,railyard,system:masters\n".encode())


def start_server(folder: Path, address: str = "127.0.0.1", timeout: float = 120.0) -> ApiServer:
    """Start etcd and kube-apiserver with state under ``folder``; wait until ready."""
    apiserver_bin, etcd_bin = binaries()
    folder.mkdir(parents=True, exist_ok=True)
    _pki(folder, address)
    client, peer, secure = (_free_port("127.0.0.1"), _free_port("127.0.0.1"), _free_port(address))
    etcd = start(
        [
            str(etcd_bin),
            "--data-dir", str(folder / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer}",
            "--listen-metrics-urls", "",
        ],
        folder / "etcd.log",
    )  # fmt: skip
    server = start(
        [
            str(apiserver_bin),
            "--etcd-servers", f"http://127.0.0.1:{client}",
            "--bind-address", address,
            "--advertise-address", address,
            "--secure-port", str(secure),
            "--tls-cert-file", str(folder / "server.crt"),
            "--tls-private-key-file", str(folder / "server.key"),
            "--client-ca-file", str(folder / "ca.crt"),
            "--token-auth-file", str(folder / "tokens.csv"),
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(folder / "sa.key"),
            "--service-account-signing-key-file", str(folder / "sa.key"),
            "--service-cluster-ip-range", SERVICE_RANGE,
            "--authorization-mode", "RBAC",
            "--endpoint-reconciler-type", "none",
        ],
        folder / "kube-apiserver.log",
    )  # fmt: skip
    api = ApiServer(
        url=f"https://{address}:{secure}", folder=str(folder), etcd=etcd, apiserver=server
    )
    _wait_ready(api, timeout)
    return api


def _wait_ready(api: ApiServer, timeout: float) -> None:
    import requests

    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {api.token()}"}
    while time.monotonic() < deadline:
        for helper in (api.etcd, api.apiserver):
            if not alive(helper):
                stop_server(api)
                raise KubeError(
                    f"{Path(helper.argv[0]).name} exited while starting; see {helper.log}"
                )
        try:
            reply = requests.get(
                f"{api.url}/readyz", headers=headers, verify=api.ca_file, timeout=5
            )
            if reply.status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(1)
    stop_server(api)
    raise KubeError(f"kube-apiserver not ready within {timeout:.0f}s; see {api.apiserver.log}")


def stop_server(api: ApiServer) -> None:
    """Stop kube-apiserver, then etcd; reap them when this process started them."""
    for helper in (api.apiserver, api.etcd):
        stop(helper)
        try:
            os.waitpid(helper.pid, os.WNOHANG)
        except ChildProcessError:
            pass


def register_nodes(client: Client, hosts: list[str]) -> None:
    """Create a Node object per host (with the kubelet's hostname label), once."""
    existing = {n["metadata"]["name"] for n in client.get("/api/v1/nodes")["items"]}
    for host in hosts:
        if host in existing:
            continue
        client.create(
            "/api/v1/nodes",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": host, "labels": {"kubernetes.io/hostname": host}},
            },
        )


def install_crds(client: Client, files: list[Path], timeout: float = 60.0) -> list[str]:
    """Apply each CRD file and wait until every CRD is established; return their names."""
    import yaml

    names = []
    for path in files:
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd:
                continue
            client.apply(object_path(crd), crd)
            names.append(crd["metadata"]["name"])
    deadline = time.monotonic() + timeout
    for name in names:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        while True:
            conditions = (client.get(path).get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise KubeError(f"CRD {name} not established within {timeout:.0f}s")
            time.sleep(0.5)
    return names
