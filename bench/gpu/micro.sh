#!/usr/bin/env bash
# The interference microbenchmarks (gpu/interference/micro/micro.cu) on the GPU machine: build
# with nvcc, run every benchmark alone, the L2 footprint sweep, every pair back to back and
# colocated, and write the tables:
#   bash bench/gpu/micro.sh OUTDIR [micro's flags, e.g. --ms 100 --repeats 3]
# Writes OUTDIR/micro.jsonl (raw), OUTDIR/micro.md (tables), OUTDIR/machine.txt.
set -eu
out=${1:?usage: micro.sh OUTDIR [micro flags]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
arch=${MICRO_ARCH:-sm_90}
nvcc -O3 -std=c++17 -arch="$arch" -o "$out/micro" "$root/gpu/interference/micro/micro.cu"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nvcc --version | tail -1; } > "$out/machine.txt" 2>&1
"$out/micro" "$@" | tee "$out/micro.jsonl"
( cd "$root/trainer/python" && python3 -m schooner_interfere.micro_table "$out/micro.jsonl" ) > "$out/micro.md"
rm -f "$out/micro"
cat "$out/micro.md"
