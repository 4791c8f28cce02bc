#!/usr/bin/env bash
# device call 39 (issues 19, 16): call 38 again with the snapshot copied in 8-byte elements (the
# saver CUDA tests, then the whole state every 10 over 30 iterations and every 50 over 110,
# through the agent, beside no checkpoint); then serving: 2k x 32 with the prompts' replicas
# drained before the timed decode steps, and the two-process pipeline untraced at 2k and 8k
# (batch 1 and 8), then 32k x 1, as time allows.
set -u
R=/tmp/res39; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s); total=${TOTAL:-575}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
mkdir -p /tmp/ut-ckpt
bin/schooner-agent ckpt agent --mode local --dir /tmp/ut-ckpt --socket /tmp/ut-ckpt.sock > $R/ut-agent.log 2>&1 &
ua=$!
for _ in $(seq 50); do [ -S /tmp/ut-ckpt.sock ] && break; sleep 0.2; done
(cd trainer/python && SCHOONER_CKPT_SOCKET=/tmp/ut-ckpt.sock timeout 120 python3 -m unittest -v tests.test_overlap > $R/ckpt-ut.log 2>&1)
took unittests $?
kill -INT $ua; wait $ua
RESULTS=$R/every10 CKPT_STATE=full CKPT_ITERATIONS=30 CKPT_EVERY=10 CKPT_METHODS="agent" \
  timeout 130 bash bench/gpu/run.sh checkpoint > $R/every10.out 2>&1
took every10 $?
RESULTS=$R/every50 CKPT_STATE=full CKPT_ITERATIONS=110 CKPT_EVERY=50 CKPT_METHODS="agent" \
  timeout 175 bash bench/gpu/run.sh checkpoint > $R/every50.out 2>&1
took every50 $?
rm -rf /tmp/ut-ckpt
if [ $(left) -gt 80 ]; then
  HOLDER_BUDGET=24GiB STEPS="b32" WIDE_LIMIT=75 timeout 80 bash bench/serving/h200.sh $R/serve-b32 > $R/serve-b32.out 2>&1
  took serve-b32 $?
fi
if [ $(left) -gt 60 ]; then
  HOLDER_BUDGET=16GiB STEPS=pipeline PIPELINE_CONTEXTS=2048,8192 PIPELINE_BATCHES=1,8 PIPELINE_LIMIT=$(( $(left) - 15 )) \
    timeout $(( $(left) - 10 )) bash bench/serving/h200.sh $R/pipe > $R/pipe.out 2>&1
  took pipe $?
fi
tar czf $OUT/res39.tgz -C /tmp res39
