#!/usr/bin/env bash
# device call 51 (issue 19): call 49 did not reach torch.save: the whole state every 50 over 110
# iterations by the agent (its restore now viewing the agent's file instead of copying it) and
# torch.save + fsync, beside no checkpoint, each final checkpoint read back bit for bit.
set -u
R=/tmp/res51; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s); total=${TOTAL:-575}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
{ lscpu; df -h /var/tmp; free -g; } > $R/machine.txt 2>&1
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
RESULTS=$R/every50 CKPT_STATE=full CKPT_ITERATIONS=110 CKPT_EVERY=50 CKPT_METHODS="agent torch" \
  timeout $(( $(left) - 15 )) bash bench/gpu/run.sh checkpoint > $R/every50.out 2>&1
took every50 $?
if [ $(left) -gt 150 ]; then
  RESULTS=$R/every10long CKPT_STATE=full CKPT_ITERATIONS=60 CKPT_EVERY=10 CKPT_METHODS="agent" \
    timeout $(( $(left) - 10 )) bash bench/gpu/run.sh checkpoint > $R/every10long.out 2>&1
  took every10long $?
fi
tar czf $OUT/res51.tgz -C /tmp res51
