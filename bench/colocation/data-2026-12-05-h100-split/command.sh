#!/usr/bin/env bash
# device call 17 (issues 17, 18), prepared for the next session: carry bin/schooner-agent.gz
# (rebuild it first) and this file. The study and the runtime for decode beside the GEMM loop
# and beside a training step, with the two fixes found after call 13: the GEMM splitter entered
# in every thread (the BE child's loop runs in one: every earlier runtime run kept its GEMMs
# whole) and the shim's stub lookup leaving no runtime error (the training step died of it).
# Check runtime-*/../profiles/*/be.tsv: split GEMMs show more than one shape. The study also
# asks for ncu counters (the first run of counters.py with a real ncu).
set -u
R=/tmp/res17; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s)
export PATH="$PATH:/usr/local/cuda/bin"  # ncu, for the study's counters
COUNTERS=1 PAIRS="decode-chain+gemm decode-chain+train-step" REPEATS=1 STUDY_LIMIT=300 PAIR_LIMIT=90 BE_WARMUP=8 REQUESTS=300 \
  timeout 540 bash bench/colocation/h200.sh $R/colo > $R/colo.out 2>&1
echo "colo exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res17.tgz -C /tmp res17
