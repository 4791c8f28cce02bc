#!/usr/bin/env bash
# device call 35 (issue 19): the whole training state (weights, Adam's moments, step: 17 GB a
# checkpoint) of the 1.42 B model every 10 iterations by all three methods and none, in one call
# on one card (the earlier full-state rows lacked torch.save); then, in the time left, every 50
# over 110 iterations (agent, async) for a steady median.
set -u
R=/tmp/res35; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s); total=${TOTAL:-570}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
{ lscpu; df -h /var/tmp; free -g; } > $R/machine.txt 2>&1
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
RESULTS=$R/every10 CKPT_STATE=full CKPT_ITERATIONS=30 CKPT_EVERY=10 CKPT_METHODS="agent async torch" \
  timeout $(( $(left) - 20 )) bash bench/gpu/run.sh checkpoint > $R/every10.out 2>&1
took every10 $?
if [ $(left) -gt 200 ]; then
  RESULTS=$R/every50 CKPT_STATE=full CKPT_ITERATIONS=110 CKPT_EVERY=50 CKPT_METHODS="agent async" \
    timeout $(( $(left) - 10 )) bash bench/gpu/run.sh checkpoint > $R/every50.out 2>&1
  took every50 $?
fi
tar czf $OUT/res35.tgz -C /tmp res35
