#!/bin/sh
# Microbatch swapping against none on the CPU (schooner_serve/bench_swap.py): a smoke check of
# the mechanism and the bench on the shared 2-core development VM, not a result about GPUs (a
# CPU's decode step grows with the batch, so a larger microbatch buys nothing there). Run from
# the repository root on a machine with python3 + torch; writes the JSON and logs here.
set -eu
out=bench/serving/data-2026-12-06-swap-cpu
cd trainer/python
python3 -m schooner_serve.bench_swap --smoke --out "../../$out/smoke.json" > "../../$out/smoke.log" 2>&1
# the small model (8 layers, hidden 512), four microbatches in flight, 24 MiB of KV room: 96
# blocks of 16 positions, 6 a request
python3 -m schooner_serve.bench_swap --model small --device cpu --depth 4 --prompt 64 --output 32 \
  --kv-gib 0.0234375 --swap-sizes 6 --threads 2 --out "../../$out/small-d4.json" > "../../$out/small-d4.log" 2>&1
