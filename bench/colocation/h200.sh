#!/usr/bin/env bash
# Issue 18's colocation table on one GPU machine, in one run:
#   bash bench/colocation/h200.sh OUTDIR        (then, on the build machine: go run ./bench/colocation -dir OUTDIR)
# Needs bin/schooner-agent.gz (task gpu:build) and python3 with torch and a GPU. For each pair
# (HP: decode-chain and cnn-infer with Poisson arrivals; BE: train-step and gemm) it runs the
# interference study's mechanisms (dedicated, streams, priority, MPS 100% and 50%, green
# context, time-slicing), then the same two workloads as two unmodified programs under
# `schooner colocate run` (the launch shim, the supervisor, the GEMM splitter, MPS where it
# works). The HP program sleeps BE_WARMUP seconds first (default 15), so its requests meet the
# BE program in its steady state. Every step has a time limit, so what finished comes back.
# CPU_TEST=1 SCALE=tiny runs the plumbing on a machine without a GPU (no kernel is gated there).
# COUNTERS=1 adds each workload's Nsight Compute counters to the study (ncu on the PATH, or
# SCHOONER_NCU). SEED_PROFILES=1 first writes each runtime pair's kernel profiles from ncu
# (python3 -m schooner_interfere.kernel_profiles: every kernel shape's bound, measured), so the
# runtime knows from the first launch which kernels complement each other instead of guessing
# from names. RUNTIME_FLAGS adds flags to every runtime run (e.g. "--idle-budget 2ms"),
# RUNTIME_TAG names those runs apart (runtime-LC-BE@TAG), and SKIP_STUDY=1 runs only the runtime
# into an OUTDIR that already has the study: two variants of the runtime against one baseline.
# MECHANISMS narrows the study's mechanisms (e.g. "mps-25 mps-50"; each workload alone, the
# dedicated baseline, always runs). THINK_MS is the HP side's mean think time between requests
# (default 2, the study's): a longer one is a lighter HP load, with more idle time for BE work.
set -u
source "$(dirname "$0")/../gpu/setup.sh"
export SCHOONER_PYTHONPATH="$root/trainer/python" PYTHONPATH="$root/trainer/python${PYTHONPATH:+:$PYTHONPATH}"
requests=${REQUESTS:-400}
think=${THINK_MS:-2}
request="{\"requests\":$requests,\"warmup\":50,\"think_ms\":$think,\"seed\":1}"
pairs=${PAIRS:-"decode-chain+train-step decode-chain+gemm cnn-infer+train-step cnn-infer+gemm"}
scale=${SCALE:-h200}
log() { echo "$* ($(date -u +%T))" >> "$out/steps.log"; }

pairflags=""
for p in $pairs; do pairflags="$pairflags --pair $p"; done
for m in ${MECHANISMS:-}; do pairflags="$pairflags --mechanism $m"; done
if [ -z "${SKIP_STUDY:-}" ]; then
  log "== study"
  timeout "${STUDY_LIMIT:-900}" "$bin" gpu interference run --local $pairflags --requests "$requests" --think-ms "$think" --repeats "${REPEATS:-3}" \
    --out "$out/study" ${CPU_TEST:+--cpu-test} ${COUNTERS:+--counters} > "$out/study.log" 2>&1
  log "   exit $?"
fi

for p in $pairs; do
  lc=${p%+*} be=${p#*+}
  dir="$out/runtime-$lc-$be${RUNTIME_TAG:+@$RUNTIME_TAG}"
  mkdir -p "$dir"
  device=${CPU_TEST:+--device cpu}
  if [ -n "${SEED_PROFILES:-}" ]; then
    mkdir -p "$out/profiles/$p"
    for side in "hp $lc" "be $be"; do
      set -- $side
      [ -s "$out/profiles/$p/$1.tsv" ] && continue  # seeded, or learned by an earlier run
      log "== kernel profiles of $2 from ncu"
      timeout 200 python3 -m schooner_interfere.kernel_profiles --workload "$2" --scale "$scale" $device \
        --out "$out/profiles/$p/$1.tsv" >> "$out/profiles/$p/seed.log" 2>&1
      log "   exit $?"
    done
  fi
  log "== runtime $p"
  timeout "${PAIR_LIMIT:-300}" "$bin" colocate run ${RUNTIME_FLAGS:-} --json --out "$dir/result.json" --profiles "$out/profiles/$p" \
    --hp "sleep ${BE_WARMUP:-15}; python3 -m schooner_interfere.child lc --workload $lc --scale $scale $device --timeline --request '$request' > $dir/hp.json" \
    --be "python3 -m schooner_interfere.child be --workload $be --scale $scale $device --until-signal --timeline > $dir/be.json" \
    > "$dir/run.log" 2>&1
  log "   exit $?"
done
