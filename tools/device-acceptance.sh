#!/usr/bin/env bash
# What clusterforge runs on a machine with NVIDIA GPUs, in one go, to capture real outputs as
# fixtures: nvidia-smi -q and -q -x, nvidia-smi topo -m, a CUDA program (tools/device/cuda_probe.cu),
# nccl-tests all_reduce_perf on all the GPUs, and the acceptance training job with NCCL on this node.
# Every output is saved as OUT/<kind>/<host>.<ext> with <host>.source beside it (what ran, where, when,
# which GPU and driver), the layout of tests/fixtures; a step whose tool is missing is recorded as
# "skipped: <why>" in OUT/summary.txt, never as a pass.
#
#   tools/device-acceptance.sh [--dry-run] [--out DIR]
#
#   --dry-run  print each step's command and where its output would go; run nothing
#   --out DIR  where the outputs go (default: device-acceptance-<host>-<UTC time>)
#
# Environment: NCCL_TESTS_BIN (directory of all_reduce_perf; default: PATH, then
# /opt/nccl-tests/build), NVCC (default: nvcc on PATH, then /usr/local/cuda/bin/nvcc),
# TORCHRUN (default: torchrun on PATH), DDP_SMOKE (the acceptance job's script; default
# roles/pytorch/files/ddp_smoke.py beside this checkout), STEP_TIMEOUT (seconds per step, default 600).
# Without a GPU (no nvidia-smi, or it lists none) it says "skipped: no hardware" and exits 0.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dry_run=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "device-acceptance: unknown argument $1 (expected --dry-run or --out DIR)" >&2; exit 2 ;;
  esac
  shift
done
host=$(hostname -s 2>/dev/null || hostname)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=${out:-device-acceptance-$host-$stamp}
timeout_s=${STEP_TIMEOUT:-600}

first() { for candidate in "$@"; do [ -n "$candidate" ] && [ -x "$candidate" ] && { echo "$candidate"; return; }; done; }
nvidia_smi=$(first "$(command -v nvidia-smi)")
nccl_bin=$(first "${NCCL_TESTS_BIN:+$NCCL_TESTS_BIN/all_reduce_perf}" "$(command -v all_reduce_perf)" /opt/nccl-tests/build/all_reduce_perf)
nvcc=$(first "${NVCC:-}" "$(command -v nvcc)" /usr/local/cuda/bin/nvcc)
torchrun=$(first "${TORCHRUN:-}" "$(command -v torchrun)")
ddp_smoke=${DDP_SMOKE:-$here/../roles/pytorch/files/ddp_smoke.py}

gpus=0
if [ -n "$nvidia_smi" ]; then
  gpus=$("$nvidia_smi" --query-gpu=index --format=csv,noheader 2>/dev/null | grep -c '^[0-9]') || gpus=0
fi
gpu_model=$([ "$gpus" -gt 0 ] && "$nvidia_smi" --query-gpu=name,driver_version --format=csv,noheader | head -1 || true)

# step KIND FILE TOOL COMMAND...: run COMMAND (TOOL empty: a tool is missing) into OUT/KIND/FILE.
step() {
  local kind=$1 file=$2 tool=$3
  shift 3
  local target="$out/$kind/$file"
  if [ -z "$tool" ]; then
    if [ "$dry_run" = 1 ]; then echo "skipped: $kind: $1"; else echo "skipped: $kind: $1" | tee -a "$out/summary.txt"; fi
    return
  fi
  if [ "$dry_run" = 1 ]; then
    echo "would run: $* > $target"
    return
  fi
  mkdir -p "$out/$kind"
  local rc=0
  timeout "$timeout_s" "$@" >"$target" 2>&1 || rc=$?
  cat >"${target%.*}.source" <<SOURCE
Captured by clusterforge's tools/device-acceptance.sh on $host ($gpu_model; $gpus GPUs) at $stamp.
Command: $*
Exit status: $rc$([ "$rc" = 124 ] && echo " (ran past the step limit of ${timeout_s} s)")
SOURCE
  echo "$([ "$rc" = 0 ] && echo ran || echo "failed (exit $rc)"): $kind -> $target" | tee -a "$out/summary.txt"
}

if [ "$gpus" = 0 ]; then
  why=$([ -n "$nvidia_smi" ] && echo "nvidia-smi lists no GPU" || echo "nvidia-smi not found")
  if [ "$dry_run" = 0 ]; then
    echo "skipped: no hardware ($why); nothing was run"
    exit 0
  fi
  echo "dry run on a machine without a GPU ($why): the steps a GPU machine would run, with 8 GPUs assumed"
  gpus=8
  nvidia_smi=${nvidia_smi:-nvidia-smi}
fi
[ "$dry_run" = 0 ] && mkdir -p "$out"

step nvidia-smi_query "$host.txt" "$nvidia_smi" "$nvidia_smi" -q
step nvidia-smi_xml "$host.xml" "$nvidia_smi" "$nvidia_smi" -q -x
step nvidia-smi_topo "$host.txt" "$nvidia_smi" "$nvidia_smi" topo -m
probe=${TMPDIR:-/tmp}/clusterforge-cuda-probe-$$
if [ -n "$nvcc" ] && [ "$dry_run" = 1 ]; then
  echo "would run: $nvcc -o $probe $here/device/cuda_probe.cu"
  step cuda_probe "$host.txt" "$probe" "$probe"
elif [ -n "$nvcc" ] && "$nvcc" -o "$probe" "$here/device/cuda_probe.cu" >/dev/null 2>&1; then
  step cuda_probe "$host.txt" "$probe" "$probe"
else
  step cuda_probe "$host.txt" "" "nvcc not found or tools/device/cuda_probe.cu did not compile (set NVCC)"
fi
if [ -n "$nccl_bin" ]; then
  step nccl_all_reduce_perf "$host-${gpus}gpu.txt" "$nccl_bin" "$nccl_bin" -b 8 -e 8G -f 2 -g "$gpus"
else
  step nccl_all_reduce_perf "$host-${gpus}gpu.txt" "" "all_reduce_perf not found (set NCCL_TESTS_BIN)"
fi
# The acceptance job twice through torchrun's c10d rendezvous (a TCPStore: the pip torch has libuv):
# uninterrupted, then with the last rank killed before step 23, which torchrun restarts (every rank
# resumes from step 20). training_check judges the pair as its torchrun launcher's recordings
# (training-reference.txt, training-elastic.txt).
job=(--backend nccl --steps 40 --checkpoint-every 5)
if [ -n "$torchrun" ] && [ -f "$ddp_smoke" ]; then
  step training_smoke "$host-nccl-reference.txt" "$torchrun" "$torchrun" --standalone --nproc_per_node="$gpus" \
    "$ddp_smoke" "${job[@]}" --checkpoint-dir "$out/training_smoke/checkpoints-reference"
  step training_smoke "$host-nccl-elastic.txt" "$torchrun" "$torchrun" --standalone --nproc_per_node="$gpus" \
    --max-restarts=1 "$ddp_smoke" "${job[@]}" --checkpoint-dir "$out/training_smoke/checkpoints-elastic" \
    --kill-rank $((gpus - 1)) --kill-at-step 23
else
  step training_smoke "$host-nccl.txt" "" "torchrun not found (set TORCHRUN) or no acceptance job script at $ddp_smoke"
fi
rm -f "$probe"
[ "$dry_run" = 0 ] && echo "outputs: $out (copy each kind into tests/fixtures/<kind>/ with its .source)"
exit 0
