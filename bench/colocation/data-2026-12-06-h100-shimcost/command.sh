#!/usr/bin/env bash
# Run as: TOTAL=560 bash command.sh, on the device (an H100 came: GPU-5a284c62, driver 580.159.04), carrying bin/schooner-agent.gz built at ddd9371 and .dev (the committed H100 studies of 2026-12-06: data-2026-12-06-h100-full/colo/study and data-2026-12-06-h100-cnn/study, taken on another H100, GPU-b833712b).
# device call 26 (issue 18): carry bin/schooner-agent.gz (at HEAD) and .dev.
# On an H100: the idle split; the decode and CNN runtimes against the committed H100 studies,
# each with the default HP baseline (profile) and with SCHOONER_COLOCATE_HP_BASELINE=events.
# On an H200: full.sh (its own study).
set -u
R=/tmp/res26; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-560}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi -L >> $R/start.txt
nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/start.txt
if grep -q H200 $R/start.txt; then
  TOTAL=$(( total - 10 )) bash bench/colocation/full.sh $R/full > $R/full.out 2>&1
  took full $?
else
  BE_WORKLOADS=train-step SECONDS_EACH=9 RUNS="0 auto 5 1;0 auto 5 kernels;0 auto 5 0;10ms auto 5 0" \
    timeout 110 bash bench/colocation/idle.sh $R/idle > $R/idle.out 2>&1
  took idle $?
  common="REPEATS=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=40 SKIP_STUDY=1"
  for fam in decode cnn; do
    if [ $fam = decode ]; then pairs="decode-chain+gemm decode-chain+train-step"; else pairs="cnn-infer+gemm cnn-infer+train-step"; fi
    mkdir -p $R/colo-$fam/study && cp .dev/study-$fam/vm.json $R/colo-$fam/study/
    env $common PAIRS="$pairs" SEED_PROFILES=1 timeout 110 bash bench/colocation/h200.sh $R/colo-$fam > $R/colo-$fam.out 2>&1
    took $fam-runtime $?
    if [ $(left) -gt 80 ]; then
      env $common PAIRS="$pairs" RUNTIME_TAG=events SCHOONER_COLOCATE_HP_BASELINE=events timeout $(( $(left) < 95 ? $(left) : 95 )) \
        bash bench/colocation/h200.sh $R/colo-$fam >> $R/colo-$fam.out 2>&1
      took $fam-runtime-events $?
    fi
  done
fi
tar czf $OUT/res26.tgz -C /tmp res26
