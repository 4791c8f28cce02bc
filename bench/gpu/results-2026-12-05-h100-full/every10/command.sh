#!/usr/bin/env bash
# device call 15 (issue 19): the checkpoint rows with the optimizer state (CKPT_STATE=full),
# every 10, agent and async_save against no checkpoint.
set -u
R=/tmp/res15; mkdir -p $R
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
T0=$(date +%s)
RESULTS=$R/ckpt CKPT_STATE=full CKPT_ITERATIONS=30 CKPT_EVERY=10 CKPT_METHODS="agent async" timeout 530 bash bench/gpu/run.sh checkpoint > $R/ckpt.out 2>&1
echo "ckpt exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res15.tgz -C /tmp res15
