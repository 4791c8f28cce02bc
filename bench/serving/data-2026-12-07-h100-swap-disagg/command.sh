#!/usr/bin/env bash
# session 29 device calls (2026-12-07), only on an H200 (FORCE=1 runs anywhere): the phases in
# PHASES within TOTAL seconds. study: issue 17's nine pairs, continued with --resume across
# calls (the file stays in /tmp/keep on a warm machine, else comes from .dev/keep/study.json);
# ck10 / ck50: issue 19's whole-state checkpoint table; swap / disagg: issue 24's H200 rows.
set -u
N=${N:?}; PHASES=${PHASES:?}; R=/tmp/res$N; K=/tmp/keep; mkdir -p $R $K/study
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-585}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
cp "$0" $R/command.sh; echo "N=$N TOTAL=$total PHASES=\"$PHASES\" REQUESTS=${REQUESTS:-400}" >> $R/command.sh
echo "# call $N" >> $R/start.txt
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
card=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
if [[ "$card" != *H200* ]] && [ -z "${FORCE:-}" ]; then echo "not an H200: $card"; cat $R/start.txt; exit 3; fi
{ lscpu; df -h /var/tmp; free -g; python3 -c 'import torch; print(torch.__version__)'; } > $R/machine.txt 2>&1
bin=/tmp/schooner-bench
[ -x $bin ] || { gunzip -c bin/schooner-agent.gz > "$bin" && chmod +x "$bin"; }
cp "$bin" bin/schooner-agent
export SCHOONER_PYTHONPATH="$PWD/trainer/python"
host=$(hostname)
if [ ! -f $K/study/$host.json ] && [ -f .dev/keep/study.json ]; then
  cp .dev/keep/study.json $K/study/$host.json; echo "study seeded from .dev/keep" >> $R/start.txt
fi
PAIRS="prefill-gemm+copy prefill-gemm+gemm decode-chain+copy cnn-infer+copy prefill-gemm+train-step decode-chain+gemm decode-chain+train-step cnn-infer+gemm cnn-infer+train-step"
flags=""; for p in $PAIRS; do flags="$flags --pair $p"; done
ck() { # every iterations
  RESULTS=$R/every$1 CKPT_STATE=full CKPT_ITERATIONS=$2 CKPT_EVERY=$1 CKPT_METHODS="agent async torch" \
    timeout $(( $(left) - 10 )) bash bench/gpu/run.sh checkpoint > $R/every$1.out 2>&1
  took every$1 $?
}
for ph in $PHASES; do
  l=$(left); if [ $l -lt 45 ]; then echo "$ph skipped: $l s left" >> $R/start.txt; continue; fi
  case $ph in
  study)
    PYTHONPATH="$PWD/trainer/python" timeout $(( l - 15 )) "$bin" gpu interference run --local --resume $flags \
      --requests ${REQUESTS:-400} --repeats 1 --out $K/study >> $R/study.log 2>&1
    took study $?; cp -r $K/study $R/ ;;
  ck10) ck 10 30 ;;
  ck50) ck 50 105 ;;
  swap)
    RESULTS=$R/swap BUILDS="new" SIZES=14 TOTAL=120 timeout $(( l - 10 )) bash bench/serving/swap_ab.sh > $R/swap.out 2>&1
    took swap $? ;;
  disagg)
    HOLDER_BUDGET=24GiB STEPS=disagg DISAGG_REQUESTS=24 DISAGG_SPLITS="time-slice mps green" DISAGG_LIMIT=110 \
      timeout $(( l - 10 )) bash bench/serving/h200.sh $R/disagg > $R/disagg.out 2>&1
    took disagg $? ;;
  esac
done
cat $R/start.txt; tail -4 $R/study.log 2>/dev/null
tar czf $OUT/res$N.tgz -C /tmp res$N
N=4 TOTAL=420 PHASES="disagg" REQUESTS=400
