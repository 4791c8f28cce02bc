#!/usr/bin/env bash
# device call N (issue 17): the interference study for the pairs in PAIRS (LC+BE ...), every
# mechanism, REQUESTS Poisson requests a run (default 400), one repeat, within LIMIT seconds.
#   N=52 PAIRS="decode-chain+gemm decode-chain+copy" bash .dev/study.sh
set -u
N=${N:?}
R=/tmp/res$N; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s)
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
{ lscpu; free -g; python3 -c 'import torch; print(torch.__version__)'; } > $R/machine.txt 2>&1
bin=/tmp/schooner-bench
gunzip -c bin/schooner-agent.gz > "$bin" && chmod +x "$bin"
export SCHOONER_PYTHONPATH="$PWD/trainer/python" PYTHONPATH="$PWD/trainer/python"
flags=""; for p in ${PAIRS:-}; do flags="$flags --pair $p"; done
# FROM: a folder holding an earlier call's NODE.json of this card, continued with --resume
mkdir -p $R/study; [ -n "${FROM:-}" ] && cp $FROM/*.json $R/study/$(hostname).json
timeout ${LIMIT:-560} "$bin" gpu interference run --local --resume $flags --requests ${REQUESTS:-400} --repeats ${REPEATS:-1} \
  ${COUNTERS:+--counters} --out $R/study > $R/study.log 2>&1
took study $?
cp "$0" $R/command.sh; echo "N=$N FROM=${FROM:-} PAIRS=\"${PAIRS:-}\" REQUESTS=${REQUESTS:-400} REPEATS=${REPEATS:-1} LIMIT=${LIMIT:-560}" >> $R/command.sh
tar czf $OUT/res$N.tgz -C /tmp res$N
N=74 FROM=/tmp/res73/cnn/study PAIRS="prefill-gemm+copy prefill-gemm+gemm decode-chain+copy cnn-infer+copy prefill-gemm+train-step decode-chain+gemm decode-chain+train-step cnn-infer+gemm cnn-infer+train-step" REQUESTS=400 REPEATS=1 LIMIT=540
