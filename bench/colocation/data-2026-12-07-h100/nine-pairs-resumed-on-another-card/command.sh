#!/usr/bin/env bash
# device call N: (a) issue 17 -- on the card and driver of the committed nine-pair study, continue
# it with --resume (adds only the dedicated-process baseline runs; STUDY=0 skips it); (b) issue 19:
# the whole state (17 GB: weights, Adam, step, random generators) every CK_EVERY over CK_ITERS
# iterations by each of CK_METHODS, beside no checkpoint, each final checkpoint read back bit
# for bit.
set -u
N=${N:?}
R=/tmp/res$N; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-585}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
{ lscpu; df -h /var/tmp; free -g; python3 -c 'import torch; print(torch.__version__)'; } > $R/machine.txt 2>&1
card=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
bin=/tmp/schooner-bench
gunzip -c bin/schooner-agent.gz > "$bin" && chmod +x "$bin" && cp "$bin" bin/schooner-agent
export SCHOONER_PYTHONPATH="$PWD/trainer/python"
PAIRS="prefill-gemm+copy prefill-gemm+gemm decode-chain+copy cnn-infer+copy prefill-gemm+train-step decode-chain+gemm decode-chain+train-step cnn-infer+gemm cnn-infer+train-step"
flags=""; for p in $PAIRS; do flags="$flags --pair $p"; done
study() {
  PYTHONPATH="$PWD/trainer/python" timeout $1 "$bin" gpu interference run --local --resume $flags \
    --requests 400 --repeats 1 --out $R/study > $R/study.log 2>&1
  took study $?
}
ck() {
  RESULTS=$R/every${CK_EVERY:?} CKPT_STATE=full CKPT_ITERATIONS=${CK_ITERS:?} CKPT_EVERY=$CK_EVERY CKPT_METHODS="${CK_METHODS:?}" \
    timeout $1 bash bench/gpu/run.sh checkpoint > $R/every$CK_EVERY.out 2>&1
  took every$CK_EVERY $?
}
mkdir -p $R/study
if [ "${STUDY:-1}" = 1 ] && [ "$card" = "NVIDIA H100 80GB HBM3, 580.159.04" ]; then
  cp bench/colocation/data-2026-12-06-h100-nine-pairs/call2-all-nine/study/vm.json $R/study/$(hostname).json
  study 120
fi
ck $(( $(left) - 12 ))
cp "$0" $R/command.sh
echo "N=$N TOTAL=$total STUDY=${STUDY:-1} CK_EVERY=$CK_EVERY CK_ITERS=$CK_ITERS CK_METHODS=\"$CK_METHODS\" card=\"$card\"" >> $R/command.sh
tar czf $OUT/res$N.tgz -C /tmp res$N
N=70 TOTAL=585 STUDY=1 CK_EVERY=10 CK_ITERS=30 CK_METHODS="agent async torch" card="NVIDIA H100 80GB HBM3, 580.159.04"
