#!/usr/bin/env bash
# The serving failover measurements of BENCHMARKS.md on one GPU machine, in one go:
#   bash bench/serving/h200.sh OUTDIR
# Needs bin/schooner-agent.gz (task gpu:build, on a build machine) and python3 with torch and a
# GPU. Starts the Go KV-cache holder on a unix socket, times fetching one replica by each path
# (chunks, a memory file per fetch, memory lent beforehand), then the failover table (restore
# against re-prefill and restart) at 2k and 8k context, batch 1 and 8, then 32k context, then
# the two-process pipeline failover (bench_pipeline), then prompt–token disaggregation against a
# colocated engine under a Poisson load (bench_disagg; DISAGG_RATE, DISAGG_REQUESTS,
# DISAGG_PROMPT, DISAGG_OUTPUT, DISAGG_MODEL, DISAGG_SPLITS, DISAGG_PROMPT_SHARE; DISAGG_BASELINE=0 leaves out the
# colocated run, for a second share against a baseline already measured). STEPS picks some of them, in this order
# (default "pytest fetch 2k8k 32k b32 pipeline disagg preload swap"; preload: a standby's pause at the
# switch, cold against fetching the replicas before it, bench_preload, PRELOAD_CONTEXTS; swap:
# microbatch swapping against none at the largest microbatch each fits, bench_swap, SWAP_DEPTH,
# SWAP_PROMPT, SWAP_OUTPUT, SWAP_KV_GIB, SWAP_SIZES, SWAP_TBT_TARGET_MS);
# ONLY_PIPELINE=1 means STEPS=pipeline and ONLY_2K8K=1 stops after 2k8k (PIPELINE_CONTEXTS, PIPELINE_BATCHES: the pipeline's cases).
# Each step has its own time limit, so what finished comes back even if a later step runs long.
set -u
source "$(dirname "$0")/../gpu/setup.sh"
sock=/tmp/schooner-bench-kv.sock
rm -f "$sock"
# The workers map the holder's arena on the GPU, which commits the whole budget: HOLDER_BUDGET
# sizes it (the largest case, 32k × 1 or 8k × 8, holds 8 GiB of replicas at once).
"$bin" kvcache serve --socket "$sock" --budget "${HOLDER_BUDGET:-32GiB}" > "$out/holder.log" 2>&1 &
holder=$!
trap 'kill $holder 2>/dev/null' EXIT
sleep 2
cd "$root/trainer/python"
steps=${STEPS:-"pytest fetch 2k8k 32k b32 pipeline disagg preload swap"}
[ -n "${ONLY_PIPELINE:-}" ] && steps=pipeline
[ -n "${SKIP_PYTEST:-}" ] && steps=${steps//pytest/}
[ -n "${SKIP_FETCH:-}" ] && steps=${steps//fetch/}
[ -n "${ONLY_2K8K:-}" ] && steps=${steps%%2k8k*}2k8k
wants() { [[ " $steps " == *" $1 "* ]]; }
run() { # run NAME SECONDS MODULE ARGS...: one bench module against the holder, its log in NAME.log
  local name=$1 limit=$2 module=$3; shift 3
  echo "== $name ($(date -u +%T))" >> "$out/steps.log"
  timeout "$limit" python3 -m "schooner_serve.$module" --holder "unix:$sock" "$@" > "$out/$name.log" 2>&1
  echo "   exit $? ($(date -u +%T))" >> "$out/steps.log"
}
step() { local name=$1 limit=$2; shift 2; run "$name" "$limit" bench_failover "$@"; }
# two stages as two worker processes, a standby per failover, the last stage's process killed
pipeline() { local name=$1 limit=$2; shift 2; run "$name" "$limit" bench_pipeline --logs "$out/$name-logs" "$@"; }
# the Python serving tests on the GPU (the CUDA-graph test runs only here), with the Go holder
if wants pytest; then
  SCHOONER_BIN="$bin" timeout 240 python3 -m pytest -q -rs tests/test_serve.py tests/test_restore_stream.py tests/test_disagg.py tests/test_swap.py tests/test_bench_swap.py > "$out/pytest-gpu.log" 2>&1
  echo "== pytest-gpu exit $?" >> "$out/steps.log"
fi
wants fetch && {
  step fetch-1g 90 --fetch-only --fetch-mib 1024 --repeats 3 --out "$out/fetch-1g.json"
  step fetch-4g 120 --fetch-only --fetch-mib 4096 --repeats 2 --out "$out/fetch-4g.json"
}
wants 2k8k && step failover-2k8k "${FAILOVER_LIMIT:-240}" --model 8b --contexts 2048,8192 --batches 1,8 --generated 32 --steps 16 --out "$out/failover-2k8k.json"
wants 32k && step failover-32k "${LONG_LIMIT:-150}" --model 8b --contexts 32768 --batches 1 --generated 32 --steps 16 --out "$out/failover-32k.json"
wants b32 && step failover-b32 "${WIDE_LIMIT:-150}" --model 8b --contexts 2048 --batches 32 --generated 32 --steps 16 --out "$out/failover-b32.json"
wants pipeline && pipeline pipeline-2k8k "${PIPELINE_LIMIT:-420}" --model 8b --contexts "${PIPELINE_CONTEXTS:-2048,8192}" --batches "${PIPELINE_BATCHES:-1,8}" --generated 32 --out "$out/pipeline-2k8k.json"
# a prompt engine and a token engine as two processes on the one GPU, against one colocated engine;
# DISAGG_SPLITS (default time-slice) lists how the two share the GPU (bench_disagg --split), one
# run each: the first with the colocated baseline (disagg.json), the others without (disagg-SPLIT.json)
wants disagg && {
  modes=colocated,disaggregated; name=disagg
  [ "${DISAGG_BASELINE:-1}" = 0 ] && modes=disaggregated
  for split in ${DISAGG_SPLITS:-time-slice}; do
    [ "$modes" = disaggregated ] && name=disagg-$split
    run "$name" "${DISAGG_LIMIT:-480}" bench_disagg --model "${DISAGG_MODEL:-8b}" --rate "${DISAGG_RATE:-2}" --requests "${DISAGG_REQUESTS:-64}" \
      --prompt "${DISAGG_PROMPT:-2048}" --output "${DISAGG_OUTPUT:-128}" --split "$split" --prompt-share "${DISAGG_PROMPT_SHARE:-0.5}" \
      --modes "$modes" --out "$out/$name.json"
    modes=disaggregated
  done
}
# a standby started on a notice: the pause at the switch, cold against preloaded (one engine of all layers)
wants preload && run preload "${PRELOAD_LIMIT:-180}" bench_preload --model 8b --device cuda --contexts "${PRELOAD_CONTEXTS:-2048,8192}" --batches 1,8 --repeats 2 --out "$out/preload.json"
# microbatch swapping against none (one stage of a SWAP_DEPTH-deep pipeline emulated by one engine
# with SWAP_KV_GIB of KV room; no holder), each at its largest microbatch, then SWAP_SIZES between
# (SWAP_TBT_TARGET_MS: each mode's best tokens/s whose TBT p99 meets it);
# a second depth (SWAP_DEPTH2) shows how the gain grows with the microbatches in flight
wants swap && {
  for d in "${SWAP_DEPTH:-4}" ${SWAP_DEPTH2-8}; do
    echo "== swap-d$d ($(date -u +%T))" >> "$out/steps.log"
    timeout "${SWAP_LIMIT:-300}" python3 -m schooner_serve.bench_swap --model "${SWAP_MODEL:-8b}" --device cuda --depth "$d" \
      --prompt "${SWAP_PROMPT:-128}" --output "${SWAP_OUTPUT:-128}" --kv-gib "${SWAP_KV_GIB:-2}" \
      --swap-sizes "${SWAP_SIZES:-20,24,28}" --tbt-target-ms "${SWAP_TBT_TARGET_MS:-0}" \
      --out "$out/swap-d$d.json" > "$out/swap-d$d.log" 2>&1
    echo "   exit $? ($(date -u +%T))" >> "$out/steps.log"
  done
}
exit 0
