#!/usr/bin/env bash
# device call 22 (issue 16): carry this file. The one-process failover table at 2k and 8k
# (batch 1 and 8) and 2k x 32, with the restore's host share counted (restore_parts_ms.place,
# restore_pieces): is the ~6 ms a request of a streamed restore per-piece dispatch?
set -u
R=/tmp/res22; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s)
HOLDER_BUDGET=24GiB STEPS="2k8k b32" FAILOVER_LIMIT=200 WIDE_LIMIT=120 \
  timeout 400 bash bench/serving/h200.sh $R/one > $R/one.out 2>&1
echo "one exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res22.tgz -C /tmp res22
