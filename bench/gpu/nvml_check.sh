#!/usr/bin/env bash
# Compares the node agent's NVML inventory with nvidia-smi on a GPU machine.
# Usage (on the GPU machine, with a binary built by `task gpu:build` or
#   go build -tags agentonly -o bin/schooner-agent ./cmd/schooner):
#   bash bench/gpu/nvml_check.sh bin/schooner-agent
set -euo pipefail
bin=${1:-bin/schooner-agent}
"$bin" gpu inventory --json > /tmp/schooner-inventory.json
nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version,clocks.sm,power.draw,utilization.gpu,mig.mode.current \
  --format=csv,noheader,nounits > /tmp/nvidia-smi.csv
python3 - <<'PY'
import csv, json, sys
inv = json.load(open("/tmp/schooner-inventory.json"))
rows = list(csv.reader(open("/tmp/nvidia-smi.csv")))
print(f"schooner: {len(inv['gpus'])} GPUs, driver {inv.get('driver_version')}, CUDA {inv.get('cuda_version')}; reason: {inv.get('reason','')}")
print(f"nvidia-smi: {len(rows)} GPUs")
bad = 0
if len(rows) != len(inv["gpus"]):
    print("MISMATCH: GPU count"); bad += 1
for g, r in zip(inv["gpus"], rows):
    r = [c.strip() for c in r]
    checks = [("index", g["index"], int(r[0])), ("uuid", g["uuid"], r[1]), ("name", g["name"], r[2]),
              ("memory_total_mib", g["memory_total_mib"], int(float(r[3]))), ("driver", inv["driver_version"], r[4])]
    for name, ours, theirs in checks:
        status = "ok" if ours == theirs else "MISMATCH"
        bad += status != "ok"
        print(f"  gpu {g['index']} {name:18} schooner={ours!s:45} nvidia-smi={theirs} {status}")
    print(f"  gpu {g['index']} telemetry          schooner: {g['sm_clock_mhz']} MHz, {g['power_w']:.0f} W, {g['utilization_pct']}% util, MIG {g['mig_enabled']}"
          f" | nvidia-smi: {r[5]} MHz, {r[6]} W, {r[7]}% util, MIG {r[8]}")
print("RESULT:", "match" if bad == 0 else f"{bad} mismatches")
sys.exit(1 if bad else 0)
PY
