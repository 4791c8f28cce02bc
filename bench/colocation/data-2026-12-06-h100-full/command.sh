#!/usr/bin/env bash
# The device call that produced this folder (2026-12-06, NVIDIA H100 80GB HBM3, carry
# bin/schooner-agent.gz built at 562df22): issue 18's run in one command.
export PATH="$PATH:/usr/local/cuda/bin"; bash bench/colocation/full.sh /tmp/res20 > /tmp/full.out 2>&1; echo rc $?; tail -5 /tmp/full.out; cp /tmp/full.out /tmp/res20/; nvidia-smi -L >> /tmp/res20/start.txt; tar czf $OUT/res20.tgz -C /tmp res20
