#!/usr/bin/env bash
# device call 16 (issue 19): the checkpoint rows with the optimizer state (CKPT_STATE=full),
# every 50, agent and async_save against no checkpoint.
set -u
R=/tmp/res16; mkdir -p $R
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
T0=$(date +%s)
RESULTS=$R/ckpt CKPT_STATE=full CKPT_ITERATIONS=60 CKPT_EVERY=50 CKPT_METHODS="agent async" timeout 320 bash bench/gpu/run.sh checkpoint > $R/ckpt.out 2>&1
echo "ckpt exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res16.tgz -C /tmp res16
