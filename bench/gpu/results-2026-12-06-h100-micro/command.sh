#!/usr/bin/env bash
# The device call that produced this folder and its sibling (2026-12-06, NVIDIA H100 80GB HBM3,
# carry bin/schooner-agent.gz built at 562df22): the CUDA microbenchmarks after the tensor-core
# count and L2 sweep fixes, then the study and the runtime for the CNN pairs.
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1; R=/tmp/res23; mkdir -p $R; T0=$(date +%s); timeout 200 bash bench/gpu/micro.sh $R/micro --ms 100 --repeats 3 > $R/micro.out 2>&1; echo "micro exit $? at $(( $(date +%s) - T0 ))" >> $R/start.txt; PAIRS="cnn-infer+gemm cnn-infer+train-step" REPEATS=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=50 STUDY_LIMIT=200 SEED_PROFILES=1 timeout 330 bash bench/colocation/h200.sh $R/colo > $R/colo.out 2>&1; echo "cnn exit $? at $(( $(date +%s) - T0 ))" >> $R/start.txt; nvidia-smi -L >> $R/start.txt; tar czf $OUT/res23.tgz -C /tmp res23
