#!/usr/bin/env bash
# What the colocation runtime itself costs a latency-critical program, with no best-effort work
# at all, on one GPU machine:
#   bash bench/colocation/hpcost.sh OUTDIR
# For each HP workload (HP_WORKLOADS, default "cnn-infer decode-chain"): its Poisson requests
# alone (no shim, no MPS), then under `schooner colocate run` beside a BE side that only sleeps
# (so no BE kernel ever runs): with MPS where it works, and with MPS off. Alone against MPS off
# is the launch shim's cost; MPS off against MPS on is MPS's. A program of kernels shorter than
# their launches pays the shim's host time at every kernel, which no admission rule can win
# back, so this is the floor under the runtime's HP rows (bench/colocation h200.sh), measured on
# the same machine as them; a dedicated run on another machine is no baseline for a launch-bound
# program (its host sets the pace). REQUESTS (default 500) requests a run, REPEATS (default 2)
# runs of each, alternating. Each run's p50/p99 is in NAME.json; summary.tsv has one line a
# run. DEVICE=cpu SCALE=tiny runs the plumbing without a GPU. Needs bin/schooner-agent.gz and
# python3 with torch.
set -u
source "$(dirname "$0")/../gpu/setup.sh"
export SCHOONER_PYTHONPATH="$root/trainer/python" PYTHONPATH="$root/trainer/python${PYTHONPATH:+:$PYTHONPATH}"
scale=${SCALE:-h200}
device=${DEVICE:+--device $DEVICE}
request="{\"requests\":${REQUESTS:-500},\"warmup\":50,\"think_ms\":2,\"seed\":1}"
log() { echo "$* ($(date -u +%T))" >> "$out/steps.log"; }
hp() { echo "python3 -m schooner_interfere.child lc --workload $1 --scale $scale $device --request '$request'"; }

for lc in ${HP_WORKLOADS:-cnn-infer decode-chain}; do
  mkdir -p "$out/profiles-$lc"
  for r in $(seq 1 "${REPEATS:-2}"); do
    log "== $lc alone ($r)"
    eval "timeout 120 $(hp "$lc")" > "$out/$lc-alone-$r.json" 2> "$out/$lc-alone-$r.err"
    log "   exit $?"
    for mps in auto off; do
      name="$lc-runtime-mps-$mps-$r"
      log "== $lc under the runtime, BE asleep, MPS $mps ($r)"
      timeout 150 "$bin" colocate run --json --out "$out/$name.result.json" --profiles "$out/profiles-$lc" --mps "$mps" \
        --hp "$(hp "$lc") > $out/$name.json" --be "sleep 600" > "$out/$name.log" 2>&1
      log "   exit $?"
    done
  done
done
# One line a run: its name, p50 and p99 (ms).
for f in "$out"/*.json; do
  case $f in *.result.json) continue ;; esac
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%s\t%.4f\t%.4f" % (sys.argv[1].rsplit("/",1)[-1][:-5], d["p50_ms"], d["p99_ms"]))' "$f" 2>/dev/null
done | tee "$out/summary.tsv"
