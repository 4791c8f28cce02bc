#!/usr/bin/env bash
# device call 6 (issue 19): the checkpoint table's rows every 10 on one machine: agent, torch.save, async_save.
set -u
R=/tmp/res; mkdir -p $R
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
RESULTS=$R/ckpt CKPT_ITERATIONS=30 CKPT_EVERY=10 CKPT_METHODS="agent async torch" timeout 560 bash bench/gpu/run.sh checkpoint > $R/ckpt.out 2>&1
echo "ckpt exit $?" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res.tgz -C /tmp res
