#!/usr/bin/env bash
# device call 10 (issue 17): one pair's interference study with the fair sequential lock.
set -u
R=/tmp/res10; mkdir -p $R
export PYTHONUNBUFFERED=1
bin=/tmp/schooner-bench
gunzip -c bin/schooner-agent.gz > "$bin" && chmod +x "$bin"
export SCHOONER_PYTHONPATH="$PWD/trainer/python" PYTHONPATH="$PWD/trainer/python"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; python3 -c 'import torch; print(torch.__version__)'; } > $R/machine.txt 2>&1
T0=$(date +%s)
timeout 185 "$bin" gpu interference run --local --pair decode-chain+gemm --requests 300 --repeats 1 --out $R/study > $R/study.log 2>&1
echo "study exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
tar czf $OUT/res10.tgz -C /tmp res10
