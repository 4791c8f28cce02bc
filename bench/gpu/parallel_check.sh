#!/usr/bin/env bash
# Checks the reference trainer's parallel modes compute the same training as one process: a
# tiny GPT on CPUs (gloo), 3 iterations, single process against PP=2, TP=2, DP=2 and
# PP=2×DP=2×TP=2 (8 processes); the per-iteration losses must agree to 1e-4 relative. Needs
# only PyTorch (no GPU): run it anywhere torch is installed.
#   bash bench/gpu/parallel_check.sh [results-dir]
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
R=${1:-${RESULTS:-gpu-results}}
mkdir -p "$R"
source "$here/bench/gpu/launch.sh"
export PYTHONPATH="$here/trainer/python${PYTHONPATH:+:$PYTHONPATH}" CUDA_VISIBLE_DEVICES="" OMP_NUM_THREADS=1
out="$R/parallel.jsonl"
: > "$out"
dims=(--name tiny --layers 4 --hidden 64 --heads 4 --ffn 256 --vocab 128 --seq-len 32 --iterations 3 --warmup 0 --measure-out "$out")
run() { # dp pp tp
  local n=$(($1 * $2 * $3))
  SCHOONER_DP=$1 SCHOONER_PP=$2 SCHOONER_TP=$3 SCHOONER_MICRO_BATCH=2 SCHOONER_GLOBAL_BATCH=8 \
    launch $n python3 -m schooner_train.train "${dims[@]}" \
    > "$R/parallel-dp$1-pp$2-tp$3.log" 2>&1 || { echo "dp=$1 pp=$2 tp=$3 failed:"; tail -30 "$R/parallel-dp$1-pp$2-tp$3.log"; }
}
run 1 1 1; run 1 2 1; run 1 1 2; run 2 1 1; run 2 2 2
python3 - "$out" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ref = next(r for r in runs if (r["dp"], r["pp"], r["tp"]) == (1, 1, 1))
bad = 0
print("| layout | losses per iteration | max relative difference to one process |")
print("|---|---|---|")
for r in runs:
    d = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], ref["losses"]))
    ok = d <= 1e-4 and len(r["losses"]) == len(ref["losses"])
    bad += not ok
    print(f"| DP={r['dp']} PP={r['pp']} TP={r['tp']} | {', '.join(f'{x:.6f}' for x in r['losses'])} | {d:.2e} {'ok' if ok else 'MISMATCH'} |")
print("RESULT:", "all layouts agree" if bad == 0 and len(runs) == 5 else f"{bad} mismatches, {len(runs)} of 5 runs")
PY
