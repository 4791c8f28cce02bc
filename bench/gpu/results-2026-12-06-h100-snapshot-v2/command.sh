#!/usr/bin/env bash
# device call 38 (issue 19): as call 36 (the saver CUDA tests, then the full state every 10 over
# 30 iterations and every 50 over 110, through the agent, beside no checkpoint), with the device
# snapshot taken in one _foreach_copy_ and copied to the host in 1 GiB pieces (call 37 profiled
# the 0.18 s stall: 2,380 copy_ calls of ~60 µs host time each).
set -u
R=/tmp/res38; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s); total=${TOTAL:-320}
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
  timeout $(( $(left) - 20 )) bash bench/gpu/run.sh checkpoint > $R/every10.out 2>&1
took every10 $?
if [ $(left) -gt 170 ]; then
  RESULTS=$R/every50 CKPT_STATE=full CKPT_ITERATIONS=110 CKPT_EVERY=50 CKPT_METHODS="agent" \
    timeout $(( $(left) - 10 )) bash bench/gpu/run.sh checkpoint > $R/every50.out 2>&1
  took every50 $?
fi
tar czf $OUT/res38.tgz -C /tmp res38
