#!/usr/bin/env bash
# device call 42 (issue 19): the reference trainer reads its losses after the optimizer step
# instead of after each microbatch's forward (a read into pageable memory waits for every
# device-to-host copy in flight: copy_queue.py, calls 40-41). The whole state every 10 over 14
# iterations, iterations 11 and 12 profiled, beside no checkpoint in the same run.
set -u
R=/tmp/res42; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s)
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
RESULTS=$R/every10 CKPT_STATE=full CKPT_ITERATIONS=14 CKPT_EVERY=10 CKPT_METHODS="agent" \
  SCHOONER_PROFILE_STEPS=11,12 SCHOONER_PROFILE_DIR=$R/traces \
  timeout 150 bash bench/gpu/run.sh checkpoint > $R/every10.out 2>&1
took every10 $?
gzip -9 $R/traces/*.json 2>/dev/null
tar czf $OUT/res42.tgz -C /tmp res42
