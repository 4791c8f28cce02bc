#!/usr/bin/env bash
# device call 37 (issues 19, 22): (1) the checkpoint saver's CUDA tests against a real agent and
# a profile of one full-state save (SCHOONER_CKPT_PROFILE_SAVE=20: where the 0.18 s a save holds
# the loop goes), 20 iterations every 10 beside no checkpoint; (2) pq's whole grid on the 16-core
# host with the padded harness and the load-following sampling (same flags as the sampled run).
set -u
R=/tmp/res37; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s)
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
{ lscpu; nproc; } > $R/machine.txt 2>&1
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
for f in bin/pqcall/*.gz; do gunzip -c $f > /tmp/$(basename $f .gz); chmod +x /tmp/$(basename $f .gz); done
mkdir -p /tmp/ut-ckpt
bin/schooner-agent ckpt agent --mode local --dir /tmp/ut-ckpt --socket /tmp/ut-ckpt.sock > $R/ut-agent.log 2>&1 &
ua=$!
for _ in $(seq 50); do [ -S /tmp/ut-ckpt.sock ] && break; sleep 0.2; done
(cd trainer/python && SCHOONER_CKPT_SOCKET=/tmp/ut-ckpt.sock timeout 120 python3 -m unittest -v tests.test_overlap > $R/ckpt-ut.log 2>&1)
took unittests $?
kill -INT $ua; wait $ua
SCHOONER_CKPT_PROFILE_SAVE=20 RESULTS=$R/profile CKPT_STATE=full CKPT_ITERATIONS=30 CKPT_EVERY=10 CKPT_METHODS="agent" \
  timeout 150 bash bench/gpu/run.sh checkpoint > $R/profile.out 2>&1
took ckpt-profile $?
timeout 420 /tmp/pqbench -machine gpuhost-16cpu -duration 300ms -repeats 5 -out $R/pq > $R/pq.log 2>&1
took pq $?
tar czf $OUT/res37.tgz -C /tmp res37
