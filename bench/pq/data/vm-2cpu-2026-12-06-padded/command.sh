#!/usr/bin/env bash
# The 2-vCPU dev machine, the same build and flags as the 16-core run beside it
# (bench/pq/data/h100host-16cpu-2026-12-06-padded): go build -o /tmp/pqbench ./bench/pq, then
/tmp/pqbench -machine vm-2cpu -duration 300ms -repeats 5 -out /tmp/pq-vm
