#!/usr/bin/env bash
# device call 40 (issue 19): is the iteration after a save slow because the training stream's
# small copies queue behind the snapshot's 17 GB of host copies? copy_queue.py times a scalar
# read and a small copy-in beside a bulk device-to-host copy queued all at once and paced; then
# the saver's CUDA tests; then the whole state every 10 (30 iterations) and every 50 (110),
# paced (agent) against all at once (agent-unpaced), beside no checkpoint in the same run.
set -u
R=/tmp/res40; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s); total=${TOTAL:-575}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
timeout 60 python3 bench/gpu/copy_queue.py --gib 8 > $R/copy-queue.jsonl 2> $R/copy-queue.err; took copy-queue $?
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
mkdir -p /tmp/ut-ckpt
bin/schooner-agent ckpt agent --mode local --dir /tmp/ut-ckpt --socket /tmp/ut-ckpt.sock > $R/ut-agent.log 2>&1 &
ua=$!
for _ in $(seq 50); do [ -S /tmp/ut-ckpt.sock ] && break; sleep 0.2; done
(cd trainer/python && SCHOONER_CKPT_SOCKET=/tmp/ut-ckpt.sock timeout 120 python3 -m unittest -v tests.test_overlap > $R/ckpt-ut.log 2>&1)
took unittests $?
kill -INT $ua; wait $ua; rm -rf /tmp/ut-ckpt
RESULTS=$R/every10 CKPT_STATE=full CKPT_ITERATIONS=30 CKPT_EVERY=10 CKPT_METHODS="agent agent-unpaced" \
  timeout 200 bash bench/gpu/run.sh checkpoint > $R/every10.out 2>&1
took every10 $?
if [ $(left) -gt 200 ]; then
  RESULTS=$R/every50 CKPT_STATE=full CKPT_ITERATIONS=110 CKPT_EVERY=50 CKPT_METHODS="agent agent-unpaced" \
    timeout $(( $(left) - 8 )) bash bench/gpu/run.sh checkpoint > $R/every50.out 2>&1
  took every50 $?
fi
tar czf $OUT/res40.tgz -C /tmp res40
