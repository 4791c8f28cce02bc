#!/usr/bin/env bash
# device call: the disagg split (gpu_split.py) through its GPU tests, then 8B disaggregation
# under time-slice, mps and green against the colocated engine; the swap test fix too.
set -u
R=/tmp/res102; mkdir -p $R
T0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
git rev-parse HEAD >> $R/start.txt 2>/dev/null
gunzip -c bin/schooner-agent.gz > /tmp/agent && chmod +x /tmp/agent
(cd trainer/python && SCHOONER_BIN=/tmp/agent timeout 150 python3 -m pytest -q -rs tests/test_gpu_split.py tests/test_bench_disagg.py \
  tests/test_bench_swap.py > $R/pytest-gpu.log 2>&1); echo "pytest exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
HOLDER_BUDGET=24GiB STEPS=disagg DISAGG_REQUESTS=${REQ:-32} DISAGG_SPLITS="time-slice mps green" DISAGG_LIMIT=${LIM:-120} \
  timeout ${TOT:-380} bash bench/serving/h200.sh $R/disagg > $R/disagg.out 2>&1
echo "disagg exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
cat $R/start.txt; tail -4 $R/pytest-gpu.log; cat $R/disagg/steps.log
python3 - <<'PY'
import json, glob
for f in sorted(glob.glob('/tmp/res102/disagg/disagg*.json')):
    r = json.load(open(f))
    for m in ("colocated", "disaggregated"):
        x = r.get(m)
        if x:
            print(f.split('/')[-1], r["split"]["kind"], m, x["tokens_per_s"], "ttft", x["ttft_ms"], "tbt", x["tbt_ms"], "tpot", x["tpot_ms"], x.get("handoff", {}).get("restored"), r.get("same_tokens"))
    print("  engines", r.get("engines"))
PY
for f in /tmp/res102/disagg/disagg*.log; do echo "== $f"; tail -5 $f; done
tar czf $OUT/res102.tgz -C /tmp res102
