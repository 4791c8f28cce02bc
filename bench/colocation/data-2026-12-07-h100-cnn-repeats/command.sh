#!/usr/bin/env bash
# device calls of session 23. The card decides the work unless MODE is set:
#   H200 (MODE=study): issue 17's nine pairs, every mechanism, 400 requests, one repeat, --resume
#     from FROM (an earlier call's study folder) within LIMIT.
#   H100 (MODE=ab): issue 18's idle-sample A/B (bench/colocation/idle-samples.sh, ~280 s), then
#     issue 17's three CNN pairs with REPEATS (default 3), --resume from FROM, in the time left.
#   MODE=cnn: only the CNN study. MODE=ckpt: issue 19's larger model (CKPT_LAYERS, default 28),
#     the whole state every CK_EVERY over CK_ITERS by agent, async and torch.
set -u
N=${N:?}
R=/tmp/res$N; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-585}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
{ lscpu; free -g; df -h /var/tmp; python3 -c 'import torch; print(torch.__version__)'; } > $R/machine.txt 2>&1
bin=/tmp/schooner-bench
gunzip -c bin/schooner-agent.gz > "$bin" && chmod +x "$bin" && cp "$bin" bin/schooner-agent
export SCHOONER_PYTHONPATH="$PWD/trainer/python" PYTHONPATH="$PWD/trainer/python"
mode=${MODE:-}
if [ -z "$mode" ]; then
  if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then mode=study; else mode=ab; fi
fi
echo "mode $mode" >> $R/start.txt
study() { # pairs repeats limit
  flags=""; for p in $1; do flags="$flags --pair $p"; done
  mkdir -p $R/study; [ -n "${FROM:-}" ] && cp $FROM/*.json $R/study/$(hostname).json
  timeout $3 "$bin" gpu interference run --local --resume $flags --requests 400 --repeats $2 --out $R/study >> $R/study.log 2>&1
  took "study-r$2" $?
}
CNN="cnn-infer+copy cnn-infer+gemm cnn-infer+train-step"
ALL="prefill-gemm+copy prefill-gemm+gemm decode-chain+copy cnn-infer+copy prefill-gemm+train-step decode-chain+gemm decode-chain+train-step cnn-infer+gemm cnn-infer+train-step"
# the CNN request's host sensitivity (issue 17), ~30 s
[ $mode = ckpt ] || [ -n "${SKIP_HOST:-}" ] || { timeout 90 python3 .dev/cnn_host.py > $R/cnn_host.jsonl 2> $R/cnn_host.err; took cnn-host $?; }
case $mode in
study) study "$ALL" 1 $(( $(left) - 10 )) ;;
ab)
  TOTAL=280 bash bench/colocation/idle-samples.sh $R/idle > $R/idle.log 2>&1; took idle-samples $?
  [ $(left) -gt 60 ] && study "$CNN" ${REPEATS:-3} $(( $(left) - 10 )) ;;
cnn) study "$CNN" ${REPEATS:-3} $(( $(left) - 10 )) ;;
ckpt)
  RESULTS=$R/larger$CK_EVERY CKPT_LAYERS=${CKPT_LAYERS:-28} CKPT_STATE=full CKPT_ITERATIONS=${CK_ITERS:?} CKPT_EVERY=${CK_EVERY:?} \
    CKPT_METHODS="${CK_METHODS:-agent async torch}" timeout $(( $(left) - 10 )) bash bench/gpu/run.sh checkpoint > $R/larger$CK_EVERY.out 2>&1
  took larger$CK_EVERY $? ;;
esac
cp "$0" $R/command.sh; echo "N=$N MODE=$mode FROM=${FROM:-} REPEATS=${REPEATS:-} CK_EVERY=${CK_EVERY:-} CK_ITERS=${CK_ITERS:-} TOTAL=$total" >> $R/command.sh
tar czf $OUT/res$N.tgz -C /tmp res$N
# The four calls of 2026-12-07 on one H100 (GPU-e9f87f88), chained while it was warm; on the GPU
# machine .dev/ is this folder (cnn_host.py beside this script), bin/schooner-agent.gz the
# agentonly build of this commit's parent:
#   N=80 bash .dev/s23.sh                                                   (mode ab: an H100)
#   N=81 MODE=cnn SKIP_HOST=1 FROM=/tmp/res80/study TOTAL=160 bash .dev/s23.sh
#   N=82 MODE=ckpt CK_EVERY=10 CK_ITERS=30 TOTAL=410 bash .dev/s23.sh      (bench/gpu/results-2026-12-07-h100-larger)
#   N=83 MODE=cnn SKIP_HOST=1 FROM=/tmp/res81/study TOTAL=95 bash .dev/s23.sh
