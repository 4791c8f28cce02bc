#!/usr/bin/env bash
# device call 50 (issue 16): the two-process pipeline at the cases never run with the frame fix
# (32k x 1, 2k x 32), then a standby's switch pause, cold against preloaded (2k and 8k at batch 1
# and 8), with this build; one card.
set -u
R=/tmp/res50; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s); total=${TOTAL:-575}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
HOLDER_BUDGET=16GiB STEPS=pipeline PIPELINE_CONTEXTS=32768 PIPELINE_BATCHES=1 PIPELINE_LIMIT=140 \
  timeout 150 bash bench/serving/h200.sh $R/pipe32k > $R/pipe32k.out 2>&1
took pipe32k $?
HOLDER_BUDGET=24GiB STEPS=pipeline PIPELINE_CONTEXTS=2048 PIPELINE_BATCHES=32 PIPELINE_LIMIT=140 \
  timeout 150 bash bench/serving/h200.sh $R/pipeb32 > $R/pipeb32.out 2>&1
took pipeb32 $?
if [ $(left) -gt 60 ]; then
  HOLDER_BUDGET=24GiB STEPS=preload PRELOAD_LIMIT=$(( $(left) - 15 )) timeout $(( $(left) - 5 )) bash bench/serving/h200.sh $R/preload > $R/preload.out 2>&1
  took preload $?
fi
tar czf $OUT/res50.tgz -C /tmp res50
