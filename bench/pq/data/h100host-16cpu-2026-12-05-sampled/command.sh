#!/usr/bin/env bash
# device call 18 (issue 22), CPU only, prepared for the next session: carry bin/pqcall (rebuild:
# go build -o /tmp/pqbench ./bench/pq && gzip -c /tmp/pqbench > bin/pqcall/pqbench.gz) and this
# file. The whole grid with 1-in-128 sampling, the clock read 1 in 512, 5 trials a cell; then
# the stage-to-stage hop (bench_hop) on that host.
set -u
R=/tmp/res18; mkdir -p $R
for f in bin/pqcall/*.gz; do gunzip -c $f > /tmp/$(basename $f .gz); chmod +x /tmp/$(basename $f .gz); done
{ lscpu; nproc; } > $R/machine.txt 2>&1
T0=$(date +%s)
timeout 480 /tmp/pqbench -machine gpuhost-16cpu -duration 300ms -repeats 5 -out $R/pq > $R/pq.log 2>&1
echo "pq exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
( cd trainer/python && timeout 60 python3 -m schooner_serve.bench_hop --trials 7 --frames 6 --out $R/hop.json > $R/hop.txt 2>&1 )
echo "hop exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
tar czf $OUT/res18.tgz -C /tmp res18
