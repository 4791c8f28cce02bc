#!/usr/bin/env bash
# device call N, two parts on one card, each within its time:
# (a) issue 17: the three CNN pairs under every mechanism as one study (400 requests, one repeat),
#     so their MPS cells compare with a dedicated run of the same card;
# (b) issue 18: decode-chain+gemm at a lighter HP load (THINK_MS, default 6): alone, MPS 50%, the
#     runtime twice; the HP side's busy share and the gap bound come from the report.
set -u
N=${N:?}
R=/tmp/res$N; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-580}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
{ lscpu; free -g; python3 -c 'import torch; print(torch.__version__)'; } > $R/machine.txt 2>&1
bin=/tmp/schooner-bench
gunzip -c bin/schooner-agent.gz > "$bin" && chmod +x "$bin"
export SCHOONER_PYTHONPATH="$PWD/trainer/python" PYTHONPATH="$PWD/trainer/python"
if [ "${CNN:-1}" = 1 ]; then
  mkdir -p $R/cnn/study
  timeout ${CNN_LIMIT:-330} "$bin" gpu interference run --local --resume --pair cnn-infer+copy --pair cnn-infer+gemm \
    --pair cnn-infer+train-step --requests 400 --repeats 1 --out $R/cnn/study > $R/cnn/study.log 2>&1
  took cnn-study $?
fi
S=bench/colocation/data-2026-12-06-h100-shimcost
pair=decode-chain+gemm
out=$R/think${THINK_MS:-6}
mkdir -p $out/profiles && cp -r $S/colo-decode/profiles/$pair $out/profiles/
if [ $(left) -gt 130 ]; then
  PAIRS="$pair" MECHANISMS="mps-50" THINK_MS=${THINK_MS:-6} REPEATS=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=45 STUDY_LIMIT=90 \
    timeout 150 bash bench/colocation/h200.sh $out > $out.out 2>&1
  took think-study-runtime $?
fi
if [ $(left) -gt 50 ]; then
  PAIRS="$pair" THINK_MS=${THINK_MS:-6} RUNTIME_TAG=r2 SKIP_STUDY=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=45 \
    timeout 47 bash bench/colocation/h200.sh $out > $out-r2.out 2>&1
  took think-r2 $?
fi
cp "$0" $R/command.sh; echo "N=$N TOTAL=$total CNN=${CNN:-1} THINK_MS=${THINK_MS:-6}" >> $R/command.sh
tar czf $OUT/res$N.tgz -C /tmp res$N
N=73 TOTAL=570 CNN=1 THINK_MS=6
