#!/usr/bin/env bash
# The agent's restore reply before and after reading a shard's chunks and copying the restore
# file in parallel (dev VM: 2 vCPUs, AMD EPYC, 24 GiB, /dev/shm tmpfs). Baseline: the agent built
# at 88c1862 (sequential); new: a3fe07a, which added the parallel reads (since in internal/parallel).
git worktree add /tmp/base 88c1862 && (cd /tmp/base && go build -o /tmp/schooner-base ./cmd/schooner)
go build -o /tmp/schooner-new ./cmd/schooner
PATH=/usr/bin:$PATH bash bench/checkpoint/restore_ab.sh /tmp/schooner-base /tmp/schooner-new 2 2 > results.txt
