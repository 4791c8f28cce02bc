#!/usr/bin/env bash
# Microbatch swapping against none, several builds side by side on one GPU (BENCHMARKS.md,
# "Serving": the swapping step). Run on the GPU machine from the repository root, with
# bin/schooner-agent.gz (task gpu:build) for the GPU tests of the swap path:
#
#   RESULTS=DIR BUILDS="new nofreeze new nofreeze" SIZES=14 bash bench/serving/swap_ab.sh
#
# BUILDS, run in order (a build named again runs again: -2, -3, ...):
#   new       the working tree
#   sync      the working tree with --sync-steps (a step waits for the whole device)
#   nofreeze  the working tree with --no-gc-freeze (the collector walks the warm-up's objects)
#   NAME      a copy of schooner_serve under .dev/NAME/ (a build before a change)
# Each: bench_swap, 8B, 128-token prompts and outputs, 2 GiB of KV room, depth 8, microbatches
# up to 16 and SIZES (comma-separated) with swapping, TBT p99 target 125 ms. TOTAL (570 s)
# bounds the whole; a build that no longer has a minute left is not started.
set -u
R=${RESULTS:-swap-ab}; mkdir -p "$R"; R=$(cd "$R" && pwd)
export PYTHONUNBUFFERED=1
T0=$(date +%s); total=${TOTAL:-570}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> "$R/start.txt"; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> "$R/start.txt"
git rev-parse HEAD >> "$R/start.txt" 2>/dev/null
if [ -f bin/schooner-agent.gz ]; then gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent; fi
(cd trainer/python && SCHOONER_BIN=$PWD/../../bin/schooner-agent timeout 120 python3 -m pytest -q -rs tests/test_decode_host.py \
   tests/test_swap.py tests/test_bench_swap.py tests/test_gcpause.py tests/test_serve.py \
   -k "decode or swap or graph or greedy or index or temperature or gc or pauses or frozen" > "$R/pytest-gpu.log" 2>&1); took pytest $?
SW="--model 8b --device cuda --prompt 128 --output 128 --kv-gib 2 --depth 8 --max-microbatch 16 --tbt-target-ms 125"
seen=""
for build in ${BUILDS:-new nofreeze}; do
  dir=trainer/python; flag=""
  case $build in
    new) ;;
    sync) flag=--sync-steps ;;
    nofreeze) flag=--no-gc-freeze ;;
    *) dir=.dev/$build ;;
  esac
  k=$(( $(printf '%s\n' $seen | grep -cx "$build") + 1 )); seen="$seen $build"
  name=$build; [ $k -gt 1 ] && name=$build-$k
  [ "$(left)" -gt 60 ] || break
  (cd "$dir" && PYTHONPATH=$PWD timeout $(( $(left) - 10 )) python3 -m schooner_serve.bench_swap $SW \
     --swap-sizes "${SIZES:-12}" $flag --out "$R/swap-d8-$name.json" > "$R/swap-d8-$name.log" 2>&1); took "d8$name" $?
done
