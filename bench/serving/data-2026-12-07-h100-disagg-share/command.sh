#!/usr/bin/env bash
# device call (2026-12-07, session 28, issue 24): the disaggregated pools' split share, one card:
# the colocated engine once, then green and mps at prompt shares 0.5, 0.25 and 0.75 (8B, 2/s,
# 24 requests of 2048-token prompts and 128-token answers).
set -u
R=/tmp/res111; mkdir -p $R
T0=$(date +%s)
cp .dev/s28b.sh $R/command.sh
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv,noheader > $R/card.txt
git rev-parse HEAD >> $R/card.txt 2>/dev/null
base=1
for share in 0.5 0.25 0.75; do
  HOLDER_BUDGET=24GiB STEPS=disagg DISAGG_REQUESTS=24 DISAGG_SPLITS="green mps" DISAGG_PROMPT_SHARE=$share DISAGG_BASELINE=$base \
    DISAGG_LIMIT=110 timeout 280 bash bench/serving/h200.sh $R/share-$share > $R/share-$share.out 2>&1
  echo "share $share exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
  base=0
done
cat $R/card.txt $R/start.txt
python3 - <<'PY'
import json, glob
for f in sorted(glob.glob('/tmp/res111/share-*/disagg*.json')):
    r = json.load(open(f))
    for m in ("colocated", "disaggregated"):
        x = r.get(m)
        if x:
            print(f.split('/')[-2], f.split('/')[-1], r["split"], m, x["tokens_per_s"], "ttft", x["ttft_ms"], "tbt", x["tbt_ms"], r.get("same_tokens"))
PY
for f in /tmp/res111/share-*/steps.log; do echo "== $f"; cat $f; done
cp -r $R $OUT/
