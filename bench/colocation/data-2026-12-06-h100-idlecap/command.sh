#!/usr/bin/env bash
# device call 33 (issues 16, 18): the restore that places a run of prompt layers through one slot
# (restore tests on the GPU, then the failover table 2k8k and b32); then decode+gemm on this card:
# a study (alone, MPS 50%), the runtime, and the runtime with a 1 ms cap on queued BE work while
# the HP side is idle (--idle-budget 1ms).
set -u
R=/tmp/res33; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-560}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv >> $R/start.txt
(cd trainer/python && timeout 40 python3 -m pytest -q tests/test_restore_stream.py > $R/pytest-restore.log 2>&1); took pytest-restore $?
HOLDER_BUDGET=24GiB STEPS="2k8k b32" FAILOVER_LIMIT=150 WIDE_LIMIT=90 timeout 250 bash bench/serving/h200.sh $R/serve > $R/serve.out 2>&1
took serve $?
S=bench/colocation/data-2026-12-06-h100-shimcost
pair=decode-chain+gemm
mkdir -p $R/colo-decode/profiles && cp -r $S/colo-decode/profiles/$pair $R/colo-decode/profiles/
PAIRS="$pair" MECHANISMS="mps-50" REPEATS=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=45 STUDY_LIMIT=90 \
  timeout $(( $(left) - 5 )) bash bench/colocation/h200.sh $R/colo-decode > $R/colo-decode.out 2>&1
took decode-study-runtime $?
if [ $(left) -gt 50 ]; then
  PAIRS="$pair" RUNTIME_FLAGS="--idle-budget 1ms" RUNTIME_TAG=idle1ms SKIP_STUDY=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=45 \
    timeout 48 bash bench/colocation/h200.sh $R/colo-decode > $R/colo-decode-idle1ms.out 2>&1
  took decode-idle1ms $?
fi
tar czf $OUT/res33.tgz -C /tmp res33
