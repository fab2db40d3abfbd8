#!/usr/bin/env bash
# Issue 41: capture a GPU machine's real tool output as fixtures, in one device run.
#
#   run(command="timeout -k 10 400 bash bench/gpu_capture.sh", carry=["bench/out/gpucap_debs"], timeout_s=420)
#
# Every command runs under `timeout`; its stdout and stderr are kept apart, byte for byte, as
# NN_name.out / NN_name.err in /tmp/gpucap, and INDEX.tsv gives each file's exit status, seconds
# and exact command line (rc 124 = timed out, 127 = not installed). What comes back ($OUT, at most
# 8 files): gpucap.tar.gz (all of /tmp/gpucap), INDEX.tsv, all.txt (every output with a header,
# for reading) and nccl_rxe.txt (the Soft-RoCE/NCCL try, also inside the tar).
#
# bench/out/gpucap_debs (ignored; optional) holds Debian 12 packages fetched on the helper with
# `apt-get download` (rdma-core 44 libibverbs1/ibverbs-providers/ibverbs-utils, libnl, iproute2,
# pciutils, kmod and their libraries). They are unpacked into /tmp/gpucap_root, never into /, and
# used only where the machine lacks the tool; INDEX.tsv shows which binary ran.
#
# The Soft-RoCE try touches only a network namespace of its own (ryns) holding a dummy device
# with 198.18.0.1/24 (RFC 2544 benchmarking space); it is deleted at the end.
set -u
OUT=${OUT:-/tmp/gpucap_out}
mkdir -p "$OUT"
CAP=/tmp/gpucap
ROOT=/tmp/gpucap_root
rm -rf "$CAP" "$ROOT"
mkdir -p "$CAP" "$ROOT"
IDX=$CAP/INDEX.tsv
printf 'file\trc\tseconds\tcommand\n' >"$IDX"
T_START=$(date +%s)
DEADLINE=${GPUCAP_DEADLINE_S:-370}
n=0

# cap NAME TIMEOUT 'command line' : run it with bash -c under timeout, keep stdout/stderr apart.
cap() {
  local name=$1 t=$2
  shift 2
  local cmd="$*"
  n=$((n + 1))
  local base
  base=$(printf '%02d_%s' "$n" "$name")
  local now=$(($(date +%s) - T_START))
  if [ "$now" -gt "$DEADLINE" ]; then
    printf '%s\t%s\t%s\t%s\n' "$base" "skipped(deadline)" 0 "$cmd" >>"$IDX"
    return 99
  fi
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout -k 5 "$t" bash -c "$cmd" >"$CAP/$base.out" 2>"$CAP/$base.err" </dev/null
  rc=$?
  t1=$(date +%s.%N)
  [ -s "$CAP/$base.err" ] || rm -f "$CAP/$base.err"
  printf '%s\t%s\t%.1f\t%s\n' "$base" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" "$cmd" >>"$IDX"
  return $rc
}

# The machine's own tool if it has one, else the carried Debian one.
if [ -d bench/out/gpucap_debs ]; then
  for f in bench/out/gpucap_debs/*.deb; do dpkg -x "$f" "$ROOT" 2>/dev/null || true; done
  mkdir -p "$ROOT/sbin"
  for c in modprobe lsmod modinfo; do ln -sf ../bin/kmod "$ROOT/sbin/$c"; done
fi
CLIB="$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/lib/x86_64-linux-gnu"
tool() { # tool NAME -> command prefix
  local p
  if p=$(command -v "$1" 2>/dev/null); then echo "$p"; return; fi
  for d in usr/bin bin usr/sbin sbin; do
    if [ -x "$ROOT/$d/$1" ]; then echo "env LD_LIBRARY_PATH=$CLIB $ROOT/$d/$1"; return; fi
  done
  echo "$1" # not there: the run records 127
}
LSPCI=$(tool lspci)
case "$LSPCI" in *gpucap_root*) LSPCI="$LSPCI -i $ROOT/usr/share/misc/pci.ids" ;; esac
MODPROBE=$(tool modprobe); LSMOD=$(tool lsmod); MODINFO=$(tool modinfo)
IP=$(tool ip); RDMA=$(tool rdma)
# Verbs: the machine's libibverbs if it has one, else the carried rdma-core 44 with its providers.
if ldconfig -p 2>/dev/null | grep -q 'libibverbs.so.1 '; then
  VERBS_ENV=""
  IBV_DEVINFO=$(tool ibv_devinfo); IBV_PP=$(tool ibv_rc_pingpong)
else
  # only libibverbs and libnl on the path, so Python and CUDA keep the machine's own libraries
  mkdir -p "$ROOT/verbslib"
  for l in "$ROOT"/usr/lib/x86_64-linux-gnu/libibverbs.so.1* "$ROOT"/lib/x86_64-linux-gnu/libnl-3.so.200* "$ROOT"/lib/x86_64-linux-gnu/libnl-route-3.so.200* "$ROOT"/usr/lib/x86_64-linux-gnu/libnl-3.so.200* "$ROOT"/usr/lib/x86_64-linux-gnu/libnl-route-3.so.200*; do
    [ -e "$l" ] && ln -sf "$l" "$ROOT/verbslib/"
  done
  VERBS_ENV="LD_LIBRARY_PATH=$ROOT/verbslib RDMAV_DRIVERS=$ROOT/usr/lib/x86_64-linux-gnu/libibverbs/librxe"
  IBV_DEVINFO="env $VERBS_ENV $ROOT/usr/bin/ibv_devinfo"
  IBV_PP="env $VERBS_ENV $ROOT/usr/bin/ibv_rc_pingpong"
fi

# --- versions and the machine --------------------------------------------------------------
cap uname 10 'uname -a'
cap os_release 10 'cat /etc/os-release'
cap nvidia_driver_version 10 'cat /proc/driver/nvidia/version'
cap nvidia_smi_version 20 'nvidia-smi --version'
cap nvcc_version 20 'nvcc --version'
cap torch_versions 60 'python3 -c "import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"nccl\", torch.cuda.nccl.version(), \"gpu\", torch.cuda.get_device_name(0))"'
cap nvidia_smi 30 'nvidia-smi'
cap nvidia_smi_L 30 'nvidia-smi -L'

# --- nvidia-smi ----------------------------------------------------------------------------
cap nvidia_smi_q 60 'nvidia-smi -q'
cap nvidia_smi_q_ecc 60 'nvidia-smi -q -d ECC'
cap nvidia_smi_q_row_remapper 60 'nvidia-smi -q -d ROW_REMAPPER'
cap nvidia_smi_q_performance 60 'nvidia-smi -q -d PERFORMANCE'
cap nvidia_smi_q_page_retirement 60 'nvidia-smi -q -d PAGE_RETIREMENT'
cap nvidia_smi_nvlink_s 60 'nvidia-smi nvlink -s'
cap nvidia_smi_nvlink_status 60 'nvidia-smi nvlink --status'
cap nvidia_smi_topo_m 60 'nvidia-smi topo -m'
cap nvidia_smi_topo_p2p_r 60 'nvidia-smi topo -p2p r'
cap nvidia_smi_query_gpu 60 'nvidia-smi --query-gpu=index,name,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,persistence_mode,clocks_throttle_reasons.active,ecc.errors.uncorrected.volatile.total,retired_pages.pending --format=csv'
cap nvidia_smi_query_gpu_event_reasons 60 'nvidia-smi --query-gpu=index,name,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,persistence_mode,clocks_event_reasons.active,ecc.errors.uncorrected.volatile.total,retired_pages.pending --format=csv'
cap nvidia_smi_q_grep_fabric 60 'nvidia-smi -q | grep -i -A4 fabric'
cap fabricmanager_status 30 'if command -v systemctl >/dev/null; then systemctl status nvidia-fabricmanager; else echo "systemctl: not installed"; exit 127; fi'
cap fabricmanager_binary 10 'command -v nv-fabricmanager || ls /usr/bin/nv-fabricmanager /usr/sbin/nv-fabricmanager'

# --- kernel log ----------------------------------------------------------------------------
cap dmesg 30 'dmesg'
cap dmesg_grep_nvrm_xid_nvidia 30 'dmesg | grep -iE "NVRM|Xid|nvidia"'
cap dmesg_grep_xid 30 'dmesg | grep -i xid'
cap journalctl_k 30 'journalctl -k --no-pager'

# --- modules, PCIe, IOMMU ------------------------------------------------------------------
cap lsmod 20 "$LSMOD"
cap lsmod_grep 20 "$LSMOD | grep -iE 'nvidia|peermem|rxe|ib_|rdma|mlx'"
cap proc_modules 10 'cat /proc/modules'
cap sys_module_grep 10 "ls /sys/module | grep -iE 'nvidia|peermem|rxe|ib_|rdma|mlx|dummy|veth'"
cap lib_modules 10 'ls /lib/modules/$(uname -r)'
cap kernel_config_grep 10 'f=/boot/config-$(uname -r); if [ -r /proc/config.gz ]; then zcat /proc/config.gz; elif [ -r "$f" ]; then cat "$f"; else echo "no kernel config (/proc/config.gz, $f)"; exit 1; fi | grep -E "CONFIG_(INFINIBAND|RDMA_RXE|RDMA_SIW|DUMMY|VETH|NET_NS|IOMMU|INTEL_IOMMU|AMD_IOMMU|PCI_P2PDMA|DMABUF)"'
cap modinfo_nvidia_peermem 20 "$MODINFO nvidia_peermem"
cap modinfo_nvidia 20 "$MODINFO nvidia"
cap modprobe_n_rdma_rxe 20 "$MODPROBE -n -v rdma_rxe"
cap modprobe_n_nvidia_peermem 20 "$MODPROBE -n -v nvidia_peermem"
cap lspci_nvidia_vvv 30 "$LSPCI -d 10de: -vvv"
cap lspci_nvidia_grep_lnk_acs 30 "$LSPCI -d 10de: -vvv | grep -E 'LnkCap|LnkSta|ACSCap|ACSCtl'"
cap lspci_all_grep_acs 30 "$LSPCI -vvv | grep -E '^[0-9a-f]|ACSCap|ACSCtl'"
cap lspci_tv 30 "$LSPCI -tv"
cap sysfs_pci_link_nvidia 10 'for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor)" = 0x10de ] && grep -H . $d/current_link_speed $d/current_link_width $d/max_link_speed $d/max_link_width $d/numa_node; done; true'
cap proc_cmdline 10 'cat /proc/cmdline'
cap iommu_groups 10 'ls /sys/kernel/iommu_groups'

# --- DCGM ----------------------------------------------------------------------------------
cap dcgmi_which 10 'command -v dcgmi nv-hostengine'
if command -v dcgmi >/dev/null 2>&1; then
  command -v nv-hostengine >/dev/null 2>&1 && cap nv_hostengine_start 30 'nv-hostengine'
  cap dcgmi_discovery_l 60 'dcgmi discovery -l'
  cap dcgmi_diag_r1 120 'dcgmi diag -r 1'
fi

# --- RDMA as found -------------------------------------------------------------------------
cap ls_dev_infiniband 10 'ls -la /dev/infiniband'
cap ls_sys_class_infiniband 10 'ls -la /sys/class/infiniband /sys/class/infiniband_verbs'
cap rdma_link 20 "$RDMA link"
cap rdma_dev 20 "$RDMA dev"
cap rdma_system 20 "$RDMA system"
cap ibv_devinfo 20 "$IBV_DEVINFO"
cap ip_link 10 "$IP -br link"

# --- Soft-RoCE (rdma_rxe) and NCCL's NET/IB over it ----------------------------------------
NCCL_LOG=$CAP/nccl_rxe.txt
note() { echo "[gpu_capture $(($(date +%s) - T_START))s] $*" | tee -a "$NCCL_LOG"; }
: >"$NCCL_LOG"
RXE=0
if [ -n "${GPUCAP_NO_RXE:-}" ]; then
  note "GPUCAP_NO_RXE set: Soft-RoCE try skipped"
elif ! command -v nvidia-smi >/dev/null 2>&1; then
  note "no nvidia-smi: not the device machine, Soft-RoCE try skipped"
else
  cap modprobe_rdma_rxe 30 "$MODPROBE -v rdma_rxe"
  cap sys_module_rdma_rxe 10 'ls -d /sys/module/rdma_rxe /sys/module/rdma_rxe/parameters/* 2>&1'
  cap modprobe_dummy 30 "$MODPROBE -v dummy"
  cap netns_add 10 "$IP netns add ryns"
  cap netns_lo_up 10 "$IP -n ryns link set lo up"
  if cap netns_dummy_add 10 "$IP -n ryns link add ry0 type dummy"; then :; else
    cap netns_veth_add 10 "$IP -n ryns link add ry0 type veth peer name ry1 && $IP -n ryns link set ry1 up"
  fi
  cap netns_addr_add 10 "$IP -n ryns addr add 198.18.0.1/24 dev ry0"
  cap netns_link_up 10 "$IP -n ryns link set ry0 up"
  cap netns_addr_show 10 "$IP -n ryns addr show"
  if cap rdma_link_add_rxe0 30 "$IP netns exec ryns $RDMA link add rxe0 type rxe netdev ry0"; then RXE=1; fi
  cap rdma_link_after 20 "$IP netns exec ryns $RDMA link"
  note "rdma link add rxe0: $([ $RXE = 1 ] && echo worked || echo failed, see INDEX.tsv)"
  if [ $RXE = 1 ]; then
    cap ibv_devinfo_rxe0_v 20 "$IP netns exec ryns $IBV_DEVINFO -d rxe0 -v"
    cap sys_rxe0_gids 10 'grep -H . /sys/class/infiniband/rxe0/ports/1/gids/* /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/* 2>/dev/null | grep -v ":0000:0000:0000:0000:0000:0000:0000:0000$" | grep -v "types/.*:$"; true'
    # verbs sanity: an RC ping-pong from rxe0 to itself (GID 1 is the IPv4-mapped 198.18.0.1)
    cap ibv_rc_pingpong_rxe0 40 "ulimit -l unlimited; $IP netns exec ryns $IBV_PP -d rxe0 -g 1 -n 100 & sleep 2; $IP netns exec ryns $IBV_PP -d rxe0 -g 1 -n 100 198.18.0.1; rc=\$?; wait; exit \$rc"
    PY='
import os, time, torch, torch.distributed as dist
r = int(os.environ["RY_RANK"]); w = int(os.environ["RY_WORLD"])
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method="tcp://198.18.0.1:29517", rank=r, world_size=w, device_id=torch.device("cuda", 0))
k = 0
for nbytes in (1 << 10, 1 << 20, 1 << 26):
    x = torch.ones(nbytes // 4, device="cuda")
    dist.all_reduce(x); torch.cuda.synchronize(); k += 1
    t = time.perf_counter()
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize(); dt = (time.perf_counter() - t) / 5
    print(f"ry rank {r}/{w} allreduce {nbytes} B float32: {dt*1e6:.1f} us/iter, x[0]={x[0].item()} expected {float(w**6)}", flush=True)
dist.destroy_process_group()
'
    printf '%s' "$PY" >"$CAP/ry_allreduce.py"
    NENV="NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV NCCL_IB_HCA=rxe0 NCCL_SOCKET_IFNAME=ry0 $VERBS_ENV"
    # one rank, one GPU: NCCL's network choice at init (no data crosses it with one rank)
    cap nccl_rxe_1rank 90 "ulimit -l unlimited; $IP netns exec ryns env $NENV RY_RANK=0 RY_WORLD=1 python3 $CAP/ry_allreduce.py"
    # two ranks on the one GPU, told apart as two hosts (NCCL_HOSTID), so the data goes over NET/IB (rxe0)
    cap nccl_rxe_2rank_hostid 150 "ulimit -l unlimited; $IP netns exec ryns env $NENV NCCL_HOSTID=ryhostA RY_RANK=0 RY_WORLD=2 python3 $CAP/ry_allreduce.py > $CAP/nccl_rxe_rank0.log 2>&1 & p0=\$!; $IP netns exec ryns env $NENV NCCL_HOSTID=ryhostB RY_RANK=1 RY_WORLD=2 python3 $CAP/ry_allreduce.py > $CAP/nccl_rxe_rank1.log 2>&1; rc1=\$?; wait \$p0; rc0=\$?; echo rank0_rc=\$rc0 rank1_rc=\$rc1; [ \$rc0 = 0 ] && [ \$rc1 = 0 ]"
  fi
  # clean up what was made (best effort; the machine is given back anyway)
  [ $RXE = 1 ] && cap rdma_link_delete_rxe0 20 "$IP netns exec ryns $RDMA link delete rxe0"
  cap netns_del 10 "$IP netns del ryns"
fi

# --- pack ----------------------------------------------------------------------------------
{
  tail -n +2 "$IDX" | while IFS=$'\t' read -r b rc secs cmd; do
    echo "===== $b  rc=$rc  ${secs}s  \$ $cmd"
    [ -e "$CAP/$b.out" ] && cat "$CAP/$b.out"
    [ -e "$CAP/$b.err" ] && { echo "----- stderr of $b"; cat "$CAP/$b.err"; }
    echo
  done
  for f in "$CAP"/*.log; do [ -e "$f" ] && { echo "===== $(basename "$f")"; cat "$f"; echo; }; done
} >"$OUT/all.txt" 2>/dev/null
{ cat "$NCCL_LOG"; for f in "$CAP"/*_nccl_rxe_* "$CAP"/nccl_rxe_rank* "$CAP"/*rdma_link_add* "$CAP"/*modprobe_rdma_rxe*; do [ -e "$f" ] && { echo "===== $(basename "$f")"; cat "$f"; }; done; } >"$OUT/nccl_rxe.txt" 2>/dev/null
cp "$IDX" "$OUT/INDEX.tsv"
tar -C /tmp -czf "$OUT/gpucap.tar.gz" gpucap
echo "gpu_capture: $n commands in $(($(date +%s) - T_START)) s"
column -t -s $'\t' "$IDX" 2>/dev/null | cut -c1-160 || cut -c1-160 "$IDX"
