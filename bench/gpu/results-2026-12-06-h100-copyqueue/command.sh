#!/usr/bin/env bash
# device call 41 (issue 19): where the iteration after an overlapped save loses its ~0.27 s.
# copy_queue.py again (a small kernel, a scalar read and a small copy-in beside a bulk copy to
# the host, each slow probe listed with when it began); then the whole state every 10 over 14
# iterations with iterations 11 and 12 profiled (torch.profiler, CPU and CUDA), beside the same
# without checkpoints (also profiled).
set -u
R=/tmp/res41; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s)
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
timeout 45 python3 bench/gpu/copy_queue.py --gib 8 > $R/copy-queue.jsonl 2> $R/copy-queue.err; took copy-queue $?
RESULTS=$R/every10 CKPT_STATE=full CKPT_ITERATIONS=14 CKPT_EVERY=10 CKPT_METHODS="agent" \
  SCHOONER_PROFILE_STEPS=11,12 SCHOONER_PROFILE_DIR=$R/traces \
  timeout 190 bash bench/gpu/run.sh checkpoint > $R/every10.out 2>&1
took every10 $?
gzip -9 $R/traces/*.json 2>/dev/null
tar czf $OUT/res41.tgz -C /tmp res41
