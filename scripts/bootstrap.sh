#!/usr/bin/env bash
# Bootstrap everything railyard needs on a Debian 12 machine, idempotently.
#
#   scripts/bootstrap.sh            # Debian packages, .venv, Pulumi CLI, IMDS mock
#   scripts/bootstrap.sh base       # Debian packages, .venv (what scripts/run-tests.sh needs first)
#   scripts/bootstrap.sh pulumi     # the Pulumi CLI only (a Go build)
#   scripts/bootstrap.sh imds       # the IMDS mock only (a Go build)
#                                   # (run-tests.sh builds each as a step beside the others)
#
# Each step checks before it acts, so a warm run takes a few seconds.
# Build output (the Pulumi CLI) is cached outside the repo under
# ${XDG_CACHE_HOME:-~/.cache}/railyard so fresh clones reuse it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/railyard"
PULUMI_VERSION="3.259.0"
# The Python language host left the sdk/v3 module after v3.79.0 and its own
# module is not served by the Go module proxy; the v3.79.0 host speaks the same
# LanguageRuntime protocol and runs programs with the pinned Python SDK.
PULUMI_PYHOST_SDK_VERSION="3.79.0"
PULUMI_BIN="$CACHE/pulumi/v$PULUMI_VERSION/bin"
# The EC2 instance metadata service the cloud-shaped tests read (IMDSv2): AWS's own mock,
# amazon-ec2-metadata-mock, built from its Go module as the Pulumi CLI is.
IMDS_MOCK_VERSION="1.13.0"
IMDS_MOCK_BIN="$CACHE/imds-mock/v$IMDS_MOCK_VERSION/bin"

APT_PACKAGES=(
  podman runc debootstrap uidmap slirp4netns fuse-overlayfs
  ibsim-utils libumad2sim0 opensm infiniband-diags
  slurmctld slurmd slurm-client munge
  graphviz iproute2 openssh-client python3-venv git make curl ca-certificates
  prometheus
  gcc libc6-dev python3-dev
)

step() { printf '\033[1m==> %s\033[0m\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }

install_debian_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    step "Debian packages: all ${#APT_PACKAGES[@]} present"
    return
  fi
  step "Debian packages: installing ${missing[*]}"
  local sudo=""
  [[ $EUID -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  # The distribution starts these daemons on install; railyard runs its own.
  for unit in slurmctld slurmd munge opensm prometheus; do
    $sudo systemctl disable --now "$unit" >/dev/null 2>&1 || true
  done
}

# The checkout on sys.path through a plain .pth line: setuptools' default editable finder costs
# every interpreter start about 9 ms (bench/topology/README.md), a third of a topology run.
EDITABLE="editable_mode=compat"

create_venv() {
  local stamp="$ROOT/.venv/.railyard-stamp"
  local want
  # The install also builds the compiled ibnetdiscover scanner (setup.py): its C sources and
  # headers (fabric/parsers/ibnetdiscover/*.c, *.h, found wherever they live under fabric/) count.
  want="$({ echo "$EDITABLE"; cat "$ROOT/pyproject.toml" "$ROOT/setup.py"; find "$ROOT/fabric" \( -name '*.c' -o -name '*.h' \) -print0 | sort -z | xargs -0 cat; } | sha256sum | cut -c1-16)"
  # ... and the built scanner must be there (a `git clean -x` removes it but keeps .venv), and
  # the `railyard` command the install writes ([project.scripts]).
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$ROOT/.venv/bin/railyard" ]] &&
    compgen -G "$ROOT/fabric/parsers/ibnetdiscover/_ibnetdiscover_scan*.so" >/dev/null; then
    step "Python venv: .venv up to date"
    return
  fi
  step "Python venv: installing railyard and its dependencies into .venv"
  [[ -x "$ROOT/.venv/bin/python" ]] || python3 -m venv "$ROOT/.venv"
  "$ROOT/.venv/bin/python" -m pip install -q --upgrade pip
  "$ROOT/.venv/bin/python" -m pip install -q --config-settings "$EDITABLE" -e "$ROOT[lab,cloud,dev]"
  echo "$want" >"$stamp"
}

pulumi_usable() {
  # A usable Pulumi: the CLI and the Python language host on PATH.
  have pulumi && have pulumi-language-python
}

build_pulumi() {
  if [[ -x "$PULUMI_BIN/pulumi" && -x "$PULUMI_BIN/pulumi-language-python" ]]; then
    step "Pulumi CLI: v$PULUMI_VERSION cached in $PULUMI_BIN"
    return
  fi
  if ! have go; then
    echo "error: no Pulumi CLI on PATH and no Go toolchain to build one." >&2
    echo "  fix: install Pulumi the usual way (https://www.pulumi.com/docs/install/)," >&2
    echo "       or install Go >= 1.24 and run this script again." >&2
    exit 1
  fi
  step "Pulumi CLI: building v$PULUMI_VERSION from Go modules (one time, a few minutes)"
  local work="$CACHE/pulumi/build"
  mkdir -p "$work/cli" "$work/pyhost" "$PULUMI_BIN"
  cat >"$work/cli/go.mod" <<EOF
module example.invalid/railyard-pulumi-cli
go 1.25
require (
	github.com/pulumi/pulumi/pkg/v3 v$PULUMI_VERSION
	github.com/pulumi/pulumi/sdk/v3 v$PULUMI_VERSION
)
replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e
EOF
  cat >"$work/pyhost/go.mod" <<EOF
module example.invalid/railyard-pulumi-python-host
go 1.21
require github.com/pulumi/pulumi/sdk/v3 v$PULUMI_PYHOST_SDK_VERSION
EOF
  (cd "$work/cli" && GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
    -o "$PULUMI_BIN/" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
  (cd "$work/pyhost" && GOFLAGS=-mod=mod go build -trimpath \
    -o "$PULUMI_BIN/" github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python)
  local sdk
  sdk="$(cd "$work/cli" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)"
  install -m 0755 "$sdk/python/cmd/pulumi-language-python-exec" "$PULUMI_BIN/"
  install -m 0755 "$sdk/python/dist/pulumi-resource-pulumi-python" "$PULUMI_BIN/"
  "$PULUMI_BIN/pulumi" version
}

install_pulumi() {
  if pulumi_usable; then
    step "Pulumi CLI: using $(command -v pulumi) ($(pulumi version))"
    return
  fi
  build_pulumi
}

build_imds_mock() {
  if [[ -x "$IMDS_MOCK_BIN/ec2-metadata-mock" ]]; then
    step "amazon-ec2-metadata-mock: v$IMDS_MOCK_VERSION cached in $IMDS_MOCK_BIN"
    return
  fi
  if ! have go; then
    echo "error: no Go toolchain to build amazon-ec2-metadata-mock (tests/integration/test_imds_mock.py)." >&2
    echo "  fix: install Go >= 1.23 and run this script again." >&2
    exit 1
  fi
  step "amazon-ec2-metadata-mock: building v$IMDS_MOCK_VERSION from Go modules (one time)"
  local work="$CACHE/imds-mock/build"
  mkdir -p "$work" "$IMDS_MOCK_BIN"
  cat >"$work/go.mod" <<EOF
module example.invalid/railyard-imds-mock
go 1.23
require github.com/aws/amazon-ec2-metadata-mock v$IMDS_MOCK_VERSION
EOF
  (cd "$work" && GOFLAGS="-mod=mod -buildvcs=false" nice -n 15 go build -trimpath \
    -o "$IMDS_MOCK_BIN/ec2-metadata-mock" \
    github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock)
}

raise_inotify_limit() {
  # Every lab node runs systemd, which holds several inotify instances; the kernel's
  # default of 128 per user leaves nodes of a 32-node lab without sshd.
  local want=1024 have
  have="$(sysctl -n fs.inotify.max_user_instances 2>/dev/null || echo 0)"
  if ((have >= want)); then
    step "inotify: max_user_instances=$have"
    return
  fi
  step "inotify: raising max_user_instances $have -> $want (for systemd in lab nodes)"
  local sudo=""
  [[ $EUID -eq 0 ]] || sudo="sudo"
  $sudo sysctl -q -w fs.inotify.max_user_instances=$want
}

main() {
  local what="${1:-all}"
  case "$what" in
    all | base | pulumi | imds) ;;
    *)
      echo "usage: scripts/bootstrap.sh [all|base|pulumi|imds]" >&2
      exit 2
      ;;
  esac
  if [[ "$what" == all || "$what" == base ]]; then
    install_debian_packages
    raise_inotify_limit
    create_venv
  fi
  if [[ "$what" == all || "$what" == pulumi ]]; then
    install_pulumi
  fi
  if [[ "$what" == all || "$what" == imds ]]; then
    build_imds_mock
  fi
  step "bootstrap ($what) done"
}

main "$@"
