#!/usr/bin/env bash
# Checks the reference trainer resumes exactly through the checkpoint agent: a tiny GPT (CPU,
# deterministic) trains 30 iterations uninterrupted; then a run stops after 20 with a
# checkpoint every 10, a new process restores step 20 from the agent and trains to 30. The
# losses of iterations 21..30 must agree to 1e-6 relative, and each of the two runs' final
# checkpoint, read back from the agent, must equal its state bit for bit (--verify-restore; the
# whole state: weights, optimizer, generators). LAYOUT="DP PP TP" runs every phase
# with that many ranks (gloo; each saving rank checkpoints its own shard, and the restore reads
# every rank's back), e.g. LAYOUT="2 2 1". CKPT_MODE picks how the trainer saves through the
# agent: overlap (the default: beside the next iteration) or blocking. Needs PyTorch and the
# agent binary ($SCHOONER_BIN, else bin/schooner-agent).
#   bash bench/gpu/restore_check.sh [results-dir]
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
R=${1:-${RESULTS:-gpu-results}}
mkdir -p "$R"
source "$here/bench/gpu/launch.sh"
read -r dp pp tp <<< "${LAYOUT:-1 1 1}"
export SCHOONER_DP=$dp SCHOONER_PP=$pp SCHOONER_TP=$tp
ranks=$((dp * pp * tp))
agent_bin=${SCHOONER_BIN:-bin/schooner-agent}
export PYTHONPATH="$here/trainer/python${PYTHONPATH:+:$PYTHONPATH}" CUDA_VISIBLE_DEVICES="" OMP_NUM_THREADS=1
dims=(--name tiny --layers 4 --hidden 64 --heads 4 --ffn 256 --vocab 128 --seq-len 32 --warmup 0)
mode=${CKPT_MODE:-overlap}
export SCHOONER_MICRO_BATCH=2 SCHOONER_GLOBAL_BATCH=8
out="$R/restore.jsonl"; : > "$out"
dir=$(mktemp -d); sock="$dir/ckpt.sock"
launch $ranks python3 -m schooner_train.train "${dims[@]}" --iterations 30 --measure-out "$out" > "$R/restore-whole.log" 2>&1
"$agent_bin" ckpt agent --mode local --dir "$dir/ckpt" --socket "$sock" --shm-dir "$dir" > "$R/restore-agent.log" 2>&1 &
agent=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.2; done
SCHOONER_CKPT_SOCKET=$sock SCHOONER_CHECKPOINT_EVERY=10 \
  launch $ranks python3 -m schooner_train.train "${dims[@]}" --iterations 20 --ckpt-mode "$mode" --verify-restore --measure-out "$out" > "$R/restore-first.log" 2>&1
SCHOONER_CKPT_SOCKET=$sock SCHOONER_CHECKPOINT_EVERY=10 SCHOONER_RESTORE_STEP=20 \
  launch $ranks python3 -m schooner_train.train "${dims[@]}" --iterations 30 --ckpt-mode "$mode" --verify-restore --measure-out "$out" > "$R/restore-second.log" 2>&1
kill -INT $agent; wait $agent
python3 - "$out" "$mode" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
if len(runs) != 3:
    sys.exit(f"RESULT: {len(runs)} of 3 runs finished")
whole, first, second = runs
print("uninterrupted 21..30:", ", ".join(f"{x:.6f}" for x in whole["losses"][20:]))
print("restored      21..30:", ", ".join(f"{x:.6f}" for x in second["losses"]))
print("first run     1..20 equal to uninterrupted:", first["losses"] == whole["losses"][:20])
d = max(abs(a - b) / abs(b) for a, b in zip(second["losses"], whole["losses"][20:]))
# Each run's final checkpoint, read back from the agent, equals what the trainer held.
verified = [r.get("restore_verified") for r in (first, second)]
print("final checkpoints restored bit for bit (first, second):", verified)
ok = len(second["losses"]) == 10 and d <= 1e-6 and verified == [True, True]
print(f"RESULT: {'resumed exactly' if ok else 'MISMATCH'} (max relative difference {d:.2e}; DP={whole['dp']} PP={whole['pp']} TP={whole['tp']}; saved {sys.argv[2]})")
PY
