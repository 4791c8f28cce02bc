#!/usr/bin/env bash
# What the colocation runtime costs a best-effort program while the latency-critical side is
# idle, on one GPU machine:
#   bash bench/colocation/idle.sh OUTDIR
# For each BE workload (BE_WORKLOADS, default "train-step gemm"): the program alone, then under
# `schooner colocate run` beside an HP side that only sleeps, with the cap on queued BE work
# while HP is idle at the budget's 100 µs (the default) and at 10 ms (--idle-budget), MPS where
# it works, and at 10 ms with MPS off, once more with the shim's completion poll every 50 µs
# instead of 5 (its tracker used to hold the lock the launch path takes while it polled); and at the
# default cap with the GEMM splitter as registered kernels (SCHOONER_COLOCATE_SPLIT=kernels)
# instead of a dispatch mode, which costs every operator a call into Python; and with the
# splitter off (SCHOONER_COLOCATE_SPLIT=0) at both caps, which leaves the shim's and the cap's
# cost alone. Outside the runtime, the program alone with the splitter on (its boot folder on
# PYTHONPATH, no shim, pieces cut to a fixed 100 µs), as a dispatch mode and as kernels: the
# splitter's cost alone. RUNS narrows the runtime's runs ("budget mps poll split", separated
# by ';', e.g. RUNS="0 auto 5 0;10ms auto 5 0"); SPLIT_ALONE=0 skips the splitter-alone runs.
# Each BE child prints its units per second after its warm-up (be-*.json). With HP idle the
# runtime admits every BE kernel the cap allows, so what separates these runs is the cap, the
# shim's and the splitter's own costs and MPS. Needs bin/schooner-agent.gz and python3 with
# torch.
set -u
source "$(dirname "$0")/../gpu/setup.sh"
export SCHOONER_PYTHONPATH="$root/trainer/python" PYTHONPATH="$root/trainer/python${PYTHONPATH:+:$PYTHONPATH}"
secs=${SECONDS_EACH:-14}
scale=${SCALE:-h200}
device=${DEVICE:+--device $DEVICE}  # DEVICE=cpu SCALE=tiny runs the plumbing without a GPU
log() { echo "$* ($(date -u +%T))" >> "$out/steps.log"; }

# alone NAME [VAR=value ...]: the BE child $be outside the runtime for $secs seconds, with
# those variables set, its rate in $out/NAME.json.
alone() {
  local name=$1 pid
  shift
  env "$@" python3 -m schooner_interfere.child be --workload "$be" --scale "$scale" $device --until-signal > "$out/$name.json" 2> "$out/$name.err" &
  pid=$!
  sleep "$secs"; kill -TERM $pid; wait $pid
  log "   exit $?"
}

for be in ${BE_WORKLOADS:-train-step gemm}; do
  log "== $be alone"
  alone "be-$be-alone"
  if [ "${SPLIT_ALONE:-1}" != 0 ]; then
    for how in 1 kernels; do
      log "== $be alone with the splitter ($how), no shim, pieces of 100 µs"
      alone "be-$be-alone-split-$how" PYTHONPATH="$root/trainer/python/schooner_colocate/boot:$PYTHONPATH" \
        SCHOONER_COLOCATE_ROLE=be SCHOONER_COLOCATE_SPLIT=$how
    done
  fi
  IFS=';' read -ra runs <<< "${RUNS:-0 auto 5 1;0 auto 5 kernels;0 auto 5 0;10ms auto 5 0;10ms auto 5 1;10ms off 5 1;10ms off 50 1}"
  for run in "${runs[@]}"; do
    set -- $run
    name="be-$be-runtime-idle-budget-$1-mps-$2-poll-$3us-split-$4"
    log "== $be under the runtime, HP idle, idle budget $1 (0: the 100 µs budget), MPS $2, shim poll $3 µs, splitter $4"
    SCHOONER_COLOCATE_POLL_US=$3 SCHOONER_COLOCATE_SPLIT=$4 timeout 120 "$bin" colocate run --json --out "$out/$name.result.json" --profiles "$out/profiles-$be" \
      --idle-budget "$1" --mps "$2" --hp "sleep $secs" \
      --be "python3 -m schooner_interfere.child be --workload $be --scale $scale $device --until-signal > $out/$name.json" \
      > "$out/$name.log" 2>&1
    log "   exit $?"
  done
done
# One line a run: the BE rate and its share of the same workload alone.
for f in "$out"/be-*.json; do
  case $f in *.result.json) continue ;; esac
  printf '%s\t%s\n' "$(basename "$f" .json)" "$(tail -n 1 "$f")"
done | tee "$out/summary.tsv"
