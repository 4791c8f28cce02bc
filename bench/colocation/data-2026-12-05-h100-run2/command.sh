#!/usr/bin/env bash
# device call 9 (issues 17/18): one pair's interference study with time to finish, then the runtime.
set -u
R=/tmp/res9; mkdir -p $R
export PYTHONUNBUFFERED=1
PAIRS="decode-chain+gemm" REPEATS=1 STUDY_LIMIT=400 PAIR_LIMIT=110 BE_WARMUP=8 REQUESTS=300 \
  timeout 530 bash bench/colocation/h200.sh $R/colo > $R/colo.out 2>&1
echo "colo exit $?" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res9.tgz -C /tmp res9
