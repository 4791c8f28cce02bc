#!/usr/bin/env bash
# device call 12 (issue 16) on the H200: the GPU serving tests, the one-process failover table
# at 2k and 8k (batch 1 and 8), 32k x 1 and 2k x 32, then the pipeline at 8k x 1 with step
# traces (where the pipeline's re-prefill loses its extra second).
set -u
R=/tmp/res12; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s)
HOLDER_BUDGET=24GiB STEPS="pytest 2k8k 32k b32" FAILOVER_LIMIT=180 LONG_LIMIT=110 WIDE_LIMIT=110 \
  timeout 450 bash bench/serving/h200.sh $R/one > $R/one.out 2>&1
echo "one exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
left=$(( 560 - ($(date +%s) - T0) ))
[ $left -gt 50 ] && SCHOONER_SERVE_TRACE=1 HOLDER_BUDGET=16GiB STEPS=pipeline PIPELINE_CONTEXTS=8192 PIPELINE_BATCHES=1 PIPELINE_LIMIT=$((left - 10)) \
  timeout $left bash bench/serving/h200.sh $R/pipe > $R/pipe.out 2>&1
echo "pipe exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res12.tgz -C /tmp res12
