#!/usr/bin/env bash
# device call 30 (issues 18, 16): the shim whose poll queries without the launch path's lock
# (cnn+gemm and decode+gemm against the committed studies, kernel profiles of call 26 copied in),
# the restore tests on the GPU, then the failover table 2k8k and b32 with decode runs held
# across landings (restore_pieces should fall from 33 a request).
set -u
R=/tmp/res30; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
T0=$(date +%s); total=${TOTAL:-560}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi -L >> $R/start.txt; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv >> $R/start.txt
S=bench/colocation/data-2026-12-06-h100-shimcost
for fam in cnn decode; do
  if [ $fam = cnn ]; then pair=cnn-infer+gemm; else pair=decode-chain+gemm; fi
  mkdir -p $R/colo-$fam/study $R/colo-$fam/profiles && cp .dev/study-$fam/vm.json $R/colo-$fam/study/
  cp -r $S/colo-$fam/profiles/$pair $R/colo-$fam/profiles/
  PAIRS="$pair" REPEATS=1 REQUESTS=500 BE_WARMUP=6 PAIR_LIMIT=45 SKIP_STUDY=1 timeout 55 bash bench/colocation/h200.sh $R/colo-$fam > $R/colo-$fam.out 2>&1
  took $fam-runtime $?
done
(cd trainer/python && timeout 40 python3 -m pytest -q tests/test_restore_stream.py > $R/pytest-restore.log 2>&1); took pytest-restore $?
HOLDER_BUDGET=24GiB STEPS="2k8k" FAILOVER_LIMIT=150 timeout 160 bash bench/serving/h200.sh $R/serve > $R/serve.out 2>&1
took serve-2k8k $?
if [ $(left) -gt 80 ]; then
  HOLDER_BUDGET=24GiB STEPS="b32" WIDE_LIMIT=$(( $(left) - 8 )) timeout $(( $(left) - 3 )) bash bench/serving/h200.sh $R/serve > $R/serve2.out 2>&1
  took serve-b32 $?
fi
tar czf $OUT/res30.tgz -C /tmp res30
