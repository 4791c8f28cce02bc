#!/usr/bin/env bash
# device call 14 (issue 22), CPU only: the one-word sampling and the occupancy bits against the
# build before them (dedf388) on the sparse cells, alternating binaries; the per-operation cost
# of adaptive against direct (go test -bench); then the whole grid with 3 trials a cell.
set -u
R=/tmp/res14; mkdir -p $R
for f in bin/pqcall/*.gz; do gunzip -c $f > /tmp/$(basename $f .gz); chmod +x /tmp/$(basename $f .gz); done
{ lscpu; nproc; free -g; } > $R/machine.txt 2>&1
T0=$(date +%s)
/tmp/pq.test -test.run XXX -test.bench 'Mixed/(direct|adaptive)$' -test.cpu 1,4,16 -test.count 3 > $R/gobench.txt 2>&1
echo "gobench exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
for t in 1 2 3; do
  for b in pqbench-dedf388 pqbench; do
    /tmp/$b -machine sparse-$b-$t -duration 500ms -threads 1,16 -sizes 1K -inserts 0,25 -impls heap,direct,adaptive -switches 0 \
      $([ $b = pqbench ] && echo -repeats 1) -out $R/sparse-$b-$t > $R/sparse-$b-$t.log 2>&1
  done
done
echo "sparse exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
left=$(( 540 - ($(date +%s) - T0) ))
timeout $left /tmp/pqbench -machine h100host-16cpu -duration 400ms -repeats 3 -out $R/grid > $R/grid.log 2>&1
echo "grid exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
tar czf $OUT/res14.tgz -C /tmp res14
