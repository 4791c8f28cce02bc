#!/usr/bin/env bash
# device call N (issue 17): the probe's pair (decode chain beside a large GEMM) under every
# mechanism with --repeats 3, a study of its own, within LIMIT seconds (a cut study keeps its steps).
set -u
N=${N:?}
R=/tmp/res$N; mkdir -p $R/study
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
bin=/tmp/schooner-bench
gunzip -c bin/schooner-agent.gz > "$bin" && chmod +x "$bin"
export SCHOONER_PYTHONPATH="$PWD/trainer/python" PYTHONPATH="$PWD/trainer/python"
timeout ${LIMIT:-270} "$bin" gpu interference run --local --resume --pair decode-chain+gemm --requests 400 --repeats 3 \
  --out $R/study > $R/study.log 2>&1
echo "study exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
cp "$0" $R/command.sh; echo "N=$N LIMIT=${LIMIT:-270}" >> $R/command.sh
tar czf $OUT/res$N.tgz -C /tmp res$N
N=72 LIMIT=265
