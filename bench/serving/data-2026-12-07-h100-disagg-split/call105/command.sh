#!/usr/bin/env bash
# device call: the green split after the primary-context fix, then the 8B green run.
set -u
R=/tmp/res103; mkdir -p $R
T0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
gunzip -c bin/schooner-agent.gz > /tmp/agent && chmod +x /tmp/agent
(cd trainer/python && timeout 100 python3 -m pytest -q -rs tests/test_bench_disagg.py tests/test_bench_swap.py -k "split or freed" > $R/pytest-gpu.log 2>&1); echo "pytest exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
HOLDER_BUDGET=24GiB STEPS=disagg DISAGG_REQUESTS=24 DISAGG_SPLITS="green" DISAGG_LIMIT=110 \
  timeout 130 bash bench/serving/h200.sh $R/disagg > $R/disagg.out 2>&1
echo "disagg exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
cat $R/start.txt; tail -3 $R/pytest-gpu.log; cat $R/disagg/steps.log; tail -6 $R/disagg/disagg.log
python3 -c "
import json; r=json.load(open('$R/disagg/disagg.json')); print(r['split'], r.get('engines'))" 2>&1 | tail -2
tar czf $OUT/res103.tgz -C /tmp res103
