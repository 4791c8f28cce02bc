#!/usr/bin/env bash
# Device calls of session 24. MODE=swap (default): the pageable-index probe, the GPU tests of the
# swap path, bench_swap at depth 8 (new, then the build before) and depth 4 (new).
# MODE=ckpt: issue 19's larger model every CK_EVERY over CK_ITERS.
set -u
N=${N:-90}; R=/tmp/res$N; mkdir -p $R
export PYTHONUNBUFFERED=1
T0=$(date +%s); total=${TOTAL:-570}
took() { echo "$1 exit $2 at $(( $(date +%s) - T0 )) s" >> $R/start.txt; }
left() { echo $(( total - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv >> $R/start.txt
echo "mode ${MODE:-swap}" >> $R/start.txt
gunzip -c bin/schooner-agent.gz > bin/schooner-agent && chmod +x bin/schooner-agent
SW="--model 8b --device cuda --prompt 128 --output 128 --kv-gib 2"
if [ "${MODE:-swap}" = swap ]; then
  timeout 60 python3 .dev/pageable_probe.py > $R/probe.txt 2>&1; took probe $?
  (cd trainer/python && SCHOONER_BIN=$PWD/../../bin/schooner-agent timeout 150 python3 -m pytest -q -rs tests/test_devindex.py \
     tests/test_swap.py tests/test_swap_worker.py tests/test_bench_swap.py > $R/pytest-gpu.log 2>&1); took pytest $?
  (cd trainer/python && timeout $(( $(left) > 260 ? 240 : $(left) - 20 )) python3 -m schooner_serve.bench_swap $SW --depth 8 \
     --swap-sizes ${NEW_SIZES:-10,12,14,16,20,24} --tbt-target-ms 125 --out $R/swap-d8-new.json > $R/swap-d8-new.log 2>&1); took d8new $?
  if [ $(left) -gt 100 ]; then
    (cd .dev/base && PYTHONPATH=$PWD timeout $(( $(left) - 60 > 170 ? 170 : $(left) - 60 )) python3 -m schooner_serve.bench_swap $SW --depth 8 \
       --swap-sizes 12,16 --tbt-target-ms 125 --out $R/swap-d8-before.json > $R/swap-d8-before.log 2>&1); took d8before $?
  fi
  if [ $(left) -gt 70 ]; then
    (cd trainer/python && timeout $(( $(left) - 10 )) python3 -m schooner_serve.bench_swap $SW --depth 4 \
       --swap-sizes 20,24 --tbt-target-ms 60 --out $R/swap-d4-new.json > $R/swap-d4-new.log 2>&1); took d4new $?
  fi
fi
if [ "${MODE:-swap}" = ckpt ]; then
  RESULTS=$R/larger${CK_EVERY:-50} CKPT_LAYERS=${CKPT_LAYERS:-28} CKPT_STATE=full CKPT_ITERATIONS=${CK_ITERS:-150} \
    CKPT_EVERY=${CK_EVERY:-50} CKPT_METHODS="${CK_METHODS:-agent async torch}" timeout $(( $(left) - 10 )) bash bench/gpu/run.sh checkpoint \
    > $R/ckpt.out 2>&1
  took larger${CK_EVERY:-50} $?
fi
if [ "${MODE:-swap}" = ab ]; then
  (cd trainer/python && SCHOONER_BIN=$PWD/../../bin/schooner-agent timeout 120 python3 -m pytest -q -rs tests/test_decode_host.py \
     tests/test_swap.py tests/test_bench_swap.py tests/test_serve.py -k "decode or swap or graph or greedy or index or temperature" > $R/pytest-gpu.log 2>&1); took pytest $?
  # BUILDS: new (the working tree), sync (the working tree with --sync-steps) or a copy under
  # .dev/; a build named again runs again (-2, -3, ...).
  seen=""
  for build in ${BUILDS:-new base}; do
    dir=trainer/python; [ $build = new ] || [ $build = sync ] || dir=.dev/$build
    k=$(( $(printf '%s\n' $seen | grep -cx "$build") + 1 )); seen="$seen $build"
    name=$build; [ $k -gt 1 ] && name=$build-$k
    [ $(left) -gt 60 ] || break
    (cd $dir && PYTHONPATH=$PWD timeout $(( $(left) - 10 )) python3 -m schooner_serve.bench_swap $SW --depth 8 --max-microbatch 16 \
       --swap-sizes ${AB_SIZES:-12} --tbt-target-ms 125 $( [ $build = sync ] && echo --sync-steps ) \
       --out $R/swap-d8-$name.json > $R/swap-d8-$name.log 2>&1); took d8$name $?
  done
fi
if [ "${MODE:-swap}" = overlap ]; then
  (cd trainer/python && timeout 60 python3 -m pytest -q -rs tests/test_swap.py tests/test_bench_swap.py -k overlap > $R/pytest-gpu.log 2>&1); took pytest $?
  for ov in "" --overlap; do
    [ $(left) -gt 50 ] || break
    (cd trainer/python && timeout $(( $(left) - 5 )) python3 -m schooner_serve.bench_swap $SW --depth 8 --max-microbatch 16 \
       --swap-sizes 12 --tbt-target-ms 125 $ov --out $R/swap-d8${ov:+-overlap}.json > $R/swap-d8${ov:+-overlap}.log 2>&1); took d8$ov $?
  done
fi
if [ "${MODE:-swap}" = prof ]; then
  timeout $(( $(left) - 10 )) python3 .dev/swap_profile.py $R > $R/prof.txt 2>&1; took prof $?
  gzip $R/trace-*.json
fi
tar czf $OUT/res$N.tgz -C /tmp res$N
