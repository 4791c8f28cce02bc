#!/usr/bin/env bash
# device call 19 (issues 17, 16), prepared for the next session: carry this file only. The CUDA
# microbenchmarks (first run on a GPU: nvcc 13 builds micro.cu), then the stage hop on that host.
set -u
R=/tmp/res19; mkdir -p $R
T0=$(date +%s)
timeout 300 bash bench/gpu/micro.sh $R/micro > $R/micro.out 2>&1
echo "micro exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
( cd trainer/python && timeout 60 python3 -m schooner_serve.bench_hop --trials 7 --frames 6 --out $R/hop.json > $R/hop.txt 2>&1 )
echo "hop exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res19.tgz -C /tmp res19
