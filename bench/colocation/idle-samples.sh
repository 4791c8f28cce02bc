#!/usr/bin/env bash
# Issue 18: the runtime's two rules for a timed HP launch that finds its stream idle, side by
# side on one GPU machine, at one or more HP loads:
#   bash bench/colocation/idle-samples.sh OUTDIR        (then: go run ./bench/colocation -dir OUTDIR/thinkN)
# leave-out (the default: such launches stay out of the slowdown signal, so the wait of a
# request's first kernels behind BE work goes unseen) against from-launch
# (SCHOONER_COLOCATE_IDLE_SAMPLES=from-launch: counted from the launch call's return; on an H100
# it held the HP side within 1.10x by driving the BE side down to 8-30%, so it stays opt-in:
# data-2026-12-07-h100-idle-samples/, BENCHMARKS.md). For each
# HP mean think time in THINKS (default "6 2" ms; 2 is the study's load, 6 a third of it):
# decode-chain + gemm, each workload alone and MPS 50% (the study), then the runtime with
# leave-out, with from-launch, and with leave-out again, 500 requests a run, alternating so a
# drift of the card shows. The kernel profiles start from the committed H100 seed
# (SEED, default the 2026-12-06 shimcost run's); the runtime learns the BE side's on top. Each
# step has a time limit; TOTAL (default 280) seconds bound the whole. Needs bin/schooner-agent.gz
# and python3 with torch; CPU_TEST=1 SCALE=tiny runs the plumbing without a GPU.
set -u
out=${1:?usage: $(basename "$0") OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
seed=${SEED:-$here/data-2026-12-06-h100-shimcost/colo-decode/profiles}
pair=decode-chain+gemm
t0=$(date +%s)
left() { echo $(( ${TOTAL:-280} - ($(date +%s) - t0) )); }
mkdir -p "$out"
for think in ${THINKS:-6 2}; do
  dir=$out/think$think
  mkdir -p "$dir/profiles" && cp -r "$seed/$pair" "$dir/profiles/"
  [ "$(left)" -gt 90 ] || break
  SCHOONER_COLOCATE_IDLE_SAMPLES=leave-out PAIRS=$pair MECHANISMS=mps-50 THINK_MS=$think REPEATS=1 REQUESTS=500 \
    BE_WARMUP=${BE_WARMUP:-6} PAIR_LIMIT=45 STUDY_LIMIT=70 timeout 120 bash "$here/h200.sh" "$dir" > "$dir.out" 2>&1
  for run in from-launch leave-out@2; do
    [ "$(left)" -gt 45 ] || break
    SCHOONER_COLOCATE_IDLE_SAMPLES=${run%@*} PAIRS=$pair THINK_MS=$think RUNTIME_TAG=$run SKIP_STUDY=1 REQUESTS=500 \
      BE_WARMUP=${BE_WARMUP:-6} PAIR_LIMIT=40 timeout 42 bash "$here/h200.sh" "$dir" > "$dir-$run.out" 2>&1
  done
done
