#!/usr/bin/env bash
# device call 13 (issues 17, 18) on the H200: the interference study for two pairs and, in the
# same run, the colocation runtime on each (the table's baseline and the runtime together).
set -u
R=/tmp/res13; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s)
PAIRS="decode-chain+gemm decode-chain+train-step" REPEATS=1 STUDY_LIMIT=300 PAIR_LIMIT=90 BE_WARMUP=8 REQUESTS=300 \
  timeout 520 bash bench/colocation/h200.sh $R/colo > $R/colo.out 2>&1
echo "colo exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res13.tgz -C /tmp res13
