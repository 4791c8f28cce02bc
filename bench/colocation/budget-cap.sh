#!/usr/bin/env bash
# Issue 18: at a light HP load the runtime's p99 is set by the wait of an arriving request for the
# BE work already queued or running (the budget: 92-269 µs in the runs of 2026-12-07 at 6 ms of
# think time, p99 1.35-1.52x). This caps that work with the supervisor's largest budget and asks
# whether the BE side still keeps 75% over the HP window:
#   bash bench/colocation/budget-cap.sh OUTDIR        (then: go run ./bench/colocation -dir OUTDIR/thinkN)
# For each HP mean think time in THINKS (default 6 ms): decode-chain + gemm, each workload alone
# and MPS 50% (the study) with the runtime at its defaults, then the runtime with --max-budget (and
# the starting budget) at each of CAPS (default "80us 40us"), the defaults again and each cap
# again, so a drift of the card shows; 500 requests a run. Kernel profiles start from the committed H100 seed (SEED), as in
# idle-samples.sh. Each step has a time limit; TOTAL (default 420) seconds bound the whole. Needs
# bin/schooner-agent.gz and python3 with torch; CPU_TEST=1 SCALE=tiny runs the plumbing without a
# GPU.
set -u
out=${1:?usage: $(basename "$0") OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
seed=${SEED:-$here/data-2026-12-06-h100-shimcost/colo-decode/profiles}
pair=decode-chain+gemm
t0=$(date +%s)
left() { echo $(( ${TOTAL:-420} - ($(date +%s) - t0) )); }
mkdir -p "$out"
for think in ${THINKS:-6}; do
  dir=$out/think$think
  mkdir -p "$dir/profiles" && cp -r "$seed/$pair" "$dir/profiles/"
  [ "$(left)" -gt 90 ] || break
  PAIRS=$pair MECHANISMS=mps-50 THINK_MS=$think REPEATS=1 REQUESTS=500 \
    BE_WARMUP=${BE_WARMUP:-6} PAIR_LIMIT=45 STUDY_LIMIT=70 timeout 120 bash "$here/h200.sh" "$dir" > "$dir.out" 2>&1
  # The study's call ran the runtime at its defaults once; then each cap, the defaults again,
  # each cap again.
  for tag in $(for c in ${CAPS:-80us 40us}; do echo cap$c; done) default@2 \
             $(for c in ${CAPS:-80us 40us}; do echo cap$c@2; done); do
    [ "$(left)" -gt 45 ] || break
    flags=""
    case $tag in cap*) cap=${tag#cap}; cap=${cap%@*}; flags="--max-budget $cap --budget $cap" ;; esac
    PAIRS=$pair THINK_MS=$think RUNTIME_TAG=$tag RUNTIME_FLAGS="$flags" SKIP_STUDY=1 REQUESTS=500 \
      BE_WARMUP=${BE_WARMUP:-6} PAIR_LIMIT=40 timeout 42 bash "$here/h200.sh" "$dir" > "$dir-$tag.out" 2>&1
  done
done
