#!/usr/bin/env bash
# device call 34 (issue 18): decode+gemm on one card: a study (alone, MPS 50%), the runtime, the
# runtime with an HP idle grace of 200 µs and of 500 µs (--hp-idle-grace: BE work only once the
# HP side has launched and completed nothing for that long), then the runtime again.
set -u
R=/tmp/res34; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-300}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv >> $R/start.txt
S=bench/colocation/data-2026-12-06-h100-shimcost
pair=decode-chain+gemm
mkdir -p $R/colo-decode/profiles && cp -r $S/colo-decode/profiles/$pair $R/colo-decode/profiles/
PAIRS="$pair" MECHANISMS="mps-50" REPEATS=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=45 STUDY_LIMIT=90 \
  timeout 150 bash bench/colocation/h200.sh $R/colo-decode > $R/colo-decode.out 2>&1
took decode-study-runtime $?
for run in "grace200 --hp-idle-grace 200us" "grace500 --hp-idle-grace 500us" "r2"; do
  set -- $run; tag=$1; shift
  [ $(left) -gt 40 ] || break
  PAIRS="$pair" RUNTIME_FLAGS="$*" RUNTIME_TAG=$tag SKIP_STUDY=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=40 \
    timeout 42 bash bench/colocation/h200.sh $R/colo-decode > $R/colo-decode-$tag.out 2>&1
  took decode-$tag $?
done
tar czf $OUT/res34.tgz -C /tmp res34
