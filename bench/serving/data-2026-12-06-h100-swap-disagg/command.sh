#!/usr/bin/env bash
# device call 45 (issues 24, 16): the serving code never run on a GPU (microbatch swapping,
# disaggregation, preload) through its tests, then measured: swapping against none at depth 4,
# the two-process pipeline at 32k x 1, a standby's switch pause cold against preloaded, swapping
# at depth 8, prompt-token disaggregation against colocated, as time allows.
set -u
R=/tmp/res45; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s); total=${TOTAL:-575}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
(cd trainer/python && SCHOONER_BIN=$PWD/../../bin/schooner-agent timeout 150 python3 -m pytest -q -rs tests/test_swap.py tests/test_swap_worker.py \
  tests/test_bench_swap.py tests/test_disagg.py tests/test_preload.py > $R/pytest-gpu.log 2>&1)
took pytest $?
STEPS=swap SWAP_DEPTH=4 SWAP_DEPTH2= SWAP_LIMIT=130 timeout 140 bash bench/serving/h200.sh $R/swap4 > $R/swap4.out 2>&1
took swap4 $?
HOLDER_BUDGET=16GiB STEPS=pipeline PIPELINE_CONTEXTS=32768 PIPELINE_BATCHES=1 PIPELINE_LIMIT=110 \
  timeout 120 bash bench/serving/h200.sh $R/pipe32k > $R/pipe32k.out 2>&1
took pipe32k $?
if [ $(left) -gt 60 ]; then
  HOLDER_BUDGET=24GiB STEPS=preload PRELOAD_LIMIT=$(( $(left) > 110 ? 100 : $(left) - 15 )) timeout $(( $(left) - 5 )) bash bench/serving/h200.sh $R/preload > $R/preload.out 2>&1
  took preload $?
fi
if [ $(left) -gt 70 ]; then
  STEPS=swap SWAP_DEPTH=8 SWAP_DEPTH2= SWAP_LIMIT=$(( $(left) - 15 )) timeout $(( $(left) - 5 )) bash bench/serving/h200.sh $R/swap8 > $R/swap8.out 2>&1
  took swap8 $?
fi
tar czf $OUT/res45.tgz -C /tmp res45

# device call 46, on the same warm machine right after (prompt-token disaggregation, 48 requests):
#   mkdir -p /tmp/res46; HOLDER_BUDGET=24GiB STEPS=disagg DISAGG_REQUESTS=48 DISAGG_LIMIT=320 \
#     timeout 335 bash bench/serving/h200.sh /tmp/res46/disagg  (results in disagg46/)
# call 45 ran with TOTAL=430.
