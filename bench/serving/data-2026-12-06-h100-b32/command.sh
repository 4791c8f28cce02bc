#!/usr/bin/env bash
# Run as: TOTAL=400 bash command.sh, on the device (an H100 came: GPU-5a284c62, driver 580.159.04), carrying bin/schooner-agent.gz built at ddd9371; the worker at ddd9371 (before the held step runs of the next commit).
# device call 27 (issue 16): the restore tests on the GPU, then the failover tables b32 and
# 2k8k with decode steps restored as one piece. Carry bin/schooner-agent.gz and .dev.
set -u
R=/tmp/res27; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-450}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi -L >> $R/start.txt
(cd trainer/python && timeout 40 python3 -m pytest -q tests/test_restore_stream.py > $R/pytest-restore.log 2>&1); took pytest-restore $?
HOLDER_BUDGET=24GiB STEPS="b32" WIDE_LIMIT=$(( $(left) / 2 )) timeout $(( $(left) / 2 + 10 )) bash bench/serving/h200.sh $R/serve > $R/serve.out 2>&1
took serve-b32 $?
if [ $(left) -gt 90 ]; then
  HOLDER_BUDGET=24GiB STEPS="2k8k" FAILOVER_LIMIT=$(( $(left) - 5 )) timeout $(left) bash bench/serving/h200.sh $R/serve > $R/serve2.out 2>&1
  took serve-2k8k $?
fi
tar czf $OUT/res27.tgz -C /tmp res27
