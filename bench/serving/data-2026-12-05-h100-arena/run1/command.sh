#!/usr/bin/env bash
# device call 5, reused for call 7 (issue 16): the streamed scatter and the holder's arena on the GPU: the CUDA
# tests, then the two-process pipeline at 8k (batch 1 and 8), then the one-process table.
set -u
R=/tmp/res; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s)

gunzip -c bin/schooner-agent.gz > /tmp/schooner-bench && chmod +x /tmp/schooner-bench
( cd trainer/python && SCHOONER_BIN=/tmp/schooner-bench timeout 150 python3 -m pytest -q -rs tests/test_restore_stream.py tests/test_serve.py > $R/pytest-gpu.log 2>&1 )
echo "pytest exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
HOLDER_BUDGET=16GiB SKIP_PYTEST=1 ONLY_PIPELINE=1 PIPELINE_CONTEXTS=8192 PIPELINE_BATCHES=1,8 PIPELINE_LIMIT=260 timeout 280 bash bench/serving/h200.sh $R/pipe > $R/pipe.out 2>&1
echo "pipe exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
left=$(( 560 - ($(date +%s) - T0) ))
[ $left -gt 60 ] && HOLDER_BUDGET=16GiB SKIP_PYTEST=1 SKIP_FETCH=1 ONLY_2K8K=1 FAILOVER_LIMIT=$((left - 15)) timeout $left bash bench/serving/h200.sh $R/one > $R/one.out 2>&1
echo "one exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res.tgz -C /tmp res
