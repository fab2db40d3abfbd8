#!/usr/bin/env bash
# Build the lab's Kubernetes API server once, from Go modules, into the railyard cache:
#
#   scripts/kube-apiserver.sh          # kube-apiserver + etcd + Kueue's published CRDs
#
# Not part of `make bootstrap`; make test runs it as its `build:kube` step, which only
# tests/integration/test_kubernetes_lab.py waits for. The kube-apiserver build compiles about
# 1,900 packages (the measured time: docs/kubernetes.md); run it once, and the lab's Kubernetes
# driver (fabric/lab/kubeapi.py) finds the binaries under $CACHE/kube/v$KUBE_VERSION/bin.
#
# - kube-apiserver: k8s.io/kubernetes is not meant to be a dependency: its go.mod maps the
#   k8s.io/* staging modules to ./staging; a build module maps each of them to its published
#   v0.X.Y release instead and builds cmd/kube-apiserver as a Go tool of that module.
# - etcd: Debian's etcd-server package, unpacked into the cache (apt-get download: no daemon
#   is installed or started on this machine).
# - Kueue's CRDs: the YAML Kueue publishes in its Go module (config/components/crd/bases).
#
# Nice'd and one package at a time (GOFLAGS=-p=1) unless KUBE_BUILD_JOBS says otherwise.
set -euo pipefail

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/railyard"
KUBE_VERSION="1.37.2"
STAGING_VERSION="0.37.2"
KUEUE_VERSION="0.17.0"
OUT="$CACHE/kube/v$KUBE_VERSION"
WORK="$CACHE/kube/build"
JOBS="${KUBE_BUILD_JOBS:-1}"
# Every external call is bounded: module downloads, apt, and the build itself (one core on
# a loaded machine: about 9 CPU-minutes measured, so an hour is a hang, not a slow build).
FETCH_TIMEOUT=900
BUILD_TIMEOUT="${KUBE_BUILD_TIMEOUT:-3600}"

step() { printf '\033[1m==> %s\033[0m\n' "$*"; }

build_apiserver() {
  if [[ -x "$OUT/bin/kube-apiserver" ]]; then
    step "kube-apiserver: v$KUBE_VERSION cached in $OUT/bin"
    return
  fi
  command -v go >/dev/null || { echo "error: no Go toolchain; install Go >= 1.26" >&2; exit 1; }
  step "kube-apiserver: building v$KUBE_VERSION from Go modules (one time, long)"
  mkdir -p "$WORK" "$OUT/bin"
  local gomod
  gomod="$(timeout "$FETCH_TIMEOUT" go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
  {
    printf 'module example.invalid/railyard-kube-apiserver\n\ngo 1.26.0\n\n'
    printf 'require k8s.io/kubernetes v%s\n\nreplace (\n' "$KUBE_VERSION"
    awk -v v="v$STAGING_VERSION" '$1 ~ /^k8s\.io\// && $2 == "=>" && $3 ~ /^\.\/staging\// { printf "\t%s => %s %s\n", $1, $1, v }' "$gomod"
    printf ')\n'
  } >"$WORK/go.mod"
  (cd "$WORK" && timeout "$FETCH_TIMEOUT" go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$KUBE_VERSION")
  (cd "$WORK" && timeout "$BUILD_TIMEOUT" nice -n 15 env GOFLAGS="-p=$JOBS" go build -trimpath -ldflags "-s -w" \
    -o "$OUT/bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
  timeout 60 "$OUT/bin/kube-apiserver" --version
}

unpack_etcd() {
  if [[ -x "$OUT/bin/etcd" ]]; then
    step "etcd: $(timeout 60 "$OUT/bin/etcd" --version | sed -n 1p) cached in $OUT/bin"
    return
  fi
  step "etcd: unpacking Debian's etcd-server into $OUT/bin"
  local deb
  deb="$(mktemp -d)"
  (cd "$deb" && timeout 300 apt-get download etcd-server >/dev/null 2>&1 ||
    { timeout 300 apt-get update -q && timeout 300 apt-get download etcd-server; })
  dpkg-deb -x "$deb"/etcd-server_*.deb "$deb/root"
  mkdir -p "$OUT/bin"
  install -m 0755 "$deb/root/usr/bin/etcd" "$OUT/bin/etcd"
  rm -rf "$deb"
  timeout 60 "$OUT/bin/etcd" --version | sed -n 1p
}

kueue_crds() {
  if [[ -s "$OUT/crds/kueue/kueue.x-k8s.io_topologies.yaml" ]]; then
    step "Kueue CRDs: v$KUEUE_VERSION cached in $OUT/crds/kueue"
    return
  fi
  step "Kueue CRDs: v$KUEUE_VERSION from its Go module"
  local dir
  dir="$(timeout "$FETCH_TIMEOUT" go mod download -json "sigs.k8s.io/kueue@v$KUEUE_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  mkdir -p "$OUT/crds/kueue"
  install -m 0644 "$dir"/config/components/crd/bases/*.yaml "$OUT/crds/kueue/"
}

main() {
  build_apiserver
  unpack_etcd
  kueue_crds
  step "kube done: $OUT"
}

main "$@"
