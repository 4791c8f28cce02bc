#!/usr/bin/env bash
# device call 32 (issue 18): the shim whose tracker polls through gaps between launches (no
# wake-up a launch): what the runtime costs the HP side with no BE work (hpcost.sh), then for
# cnn+gemm and decode+gemm a study on this same card (alone, MPS 25% and 50%) and the runtime,
# then the runtime again (a second run of each, RUNTIME_TAG=r2).
set -u
R=/tmp/res32; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-570}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv >> $R/start.txt
HP_WORKLOADS="cnn-infer decode-chain" REPEATS=1 REQUESTS=500 timeout 150 bash bench/colocation/hpcost.sh $R/hpcost > $R/hpcost.out 2>&1
took hpcost $?
S=bench/colocation/data-2026-12-06-h100-shimcost
for fam in cnn decode; do
  if [ $fam = cnn ]; then pair=cnn-infer+gemm; else pair=decode-chain+gemm; fi
  mkdir -p $R/colo-$fam/profiles && cp -r $S/colo-$fam/profiles/$pair $R/colo-$fam/profiles/
  [ $(left) -gt 100 ] || break
  PAIRS="$pair" MECHANISMS="mps-25 mps-50" REPEATS=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=45 STUDY_LIMIT=$(( $(left) - 60 < 130 ? $(left) - 60 : 130 )) \
    timeout $(( $(left) - 5 )) bash bench/colocation/h200.sh $R/colo-$fam > $R/colo-$fam.out 2>&1
  took $fam-study-runtime $?
done
for fam in cnn decode; do
  if [ $fam = cnn ]; then pair=cnn-infer+gemm; else pair=decode-chain+gemm; fi
  [ $(left) -gt 50 ] || break
  PAIRS="$pair" RUNTIME_TAG=r2 SKIP_STUDY=1 REPEATS=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=45 \
    timeout 48 bash bench/colocation/h200.sh $R/colo-$fam > $R/colo-$fam-r2.out 2>&1
  took $fam-r2 $?
done
tar czf $OUT/res32.tgz -C /tmp res32
