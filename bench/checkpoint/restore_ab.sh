#!/usr/bin/env bash
# How long the checkpoint agent takes to answer a restore (the load request: the slot read and
# verified, the selection copied into the shared-memory file the client maps), two agent builds
# alternated on one checkpoint, with the page cache dropped before each cold load (root only;
# otherwise both loads are warm):
#   bash bench/checkpoint/restore_ab.sh BASELINE_BIN NEW_BIN [GIB] [ROUNDS] > results.txt
# The checkpoint (GIB, default 2, of float32 tensors of 128 MiB each) is written once by the new
# build through the Python client. Needs python3 with torch and trainer/python on PYTHONPATH.
set -euo pipefail
base=${1:?usage: restore_ab.sh BASELINE_BIN NEW_BIN [GIB] [ROUNDS]} new=${2:?new binary}
gib=${3:-2} rounds=${4:-2}
here=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH="$here/trainer/python${PYTHONPATH:+:$PYTHONPATH}"
dir=$(mktemp -d); trap 'pkill -INT -f "ckpt agent --mode local --dir $dir" || true; rm -rf "$dir"' EXIT
agent() { rm -f "$dir/s.sock"; "$1" ckpt agent --mode local --dir "$dir/ckpt" --socket "$dir/s.sock" --shm-dir /dev/shm > "$dir/agent.log" 2>&1 &
  for _ in $(seq 50); do [ -S "$dir/s.sock" ] && return; sleep 0.1; done; echo "agent $1 did not start" >&2; exit 1; }
stop() { pkill -INT -f "ckpt agent --mode local --dir $dir" || true; sleep 1; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null && echo cold || echo warm; }
agent "$new"
python3 - "$dir/s.sock" "$gib" <<'PY'
import sys, torch, schooner_ckpt
c = schooner_ckpt.Client(sys.argv[1], timeout=600)
c.hello(rank=0, world=1, plan={"world": 1})
schooner_ckpt.save({"model": {f"t{i}": torch.full((32 << 20,), float(i)) for i in range(int(sys.argv[2]) * 8)}, "iteration": 1}, 1, client=c)
c.wait(1)
PY
stop
load() { python3 - "$dir/s.sock" <<'PY'
import os, sys, time, schooner_ckpt
c = schooner_ckpt.Client(sys.argv[1], timeout=600)
c.hello(rank=0, world=1, plan={"world": 1})
t = time.perf_counter(); r = c._call({"op": "load", "step": 1}); dt = time.perf_counter() - t
os.unlink(r["shm"])
print(f"{dt:.2f}")
PY
}
echo "# $gib GiB checkpoint, $(nproc) cores; seconds for the agent's load reply"
echo "round build cache seconds"
for r in $(seq "$rounds"); do
  for b in "$base" "$new"; do
    agent "$b"; cache=$(drop); echo "$r $b $cache $(load)"; echo "$r $b warm $(load)"; stop
  done
done
