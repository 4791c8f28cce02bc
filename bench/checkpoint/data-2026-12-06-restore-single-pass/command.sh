#!/usr/bin/env bash
# The agent's restore reply before and after reading the selected tensors straight into the
# shared-memory restore file (one pass) instead of into fresh buffers and then copying
# (dev VM: 2 vCPUs, AMD EPYC, 24 GiB, /dev/shm tmpfs; run as root, so "cold" loads follow a
# page-cache drop). Baseline (/tmp/h48-bin/base): d9efa1a; new (/tmp/h48-bin/new): b7d3d9f.
git checkout d9efa1a && go build -o /tmp/h48-bin/base ./cmd/schooner   # before the change
git checkout b7d3d9f && go build -o /tmp/h48-bin/new ./cmd/schooner
cd bench/checkpoint/data-2026-12-06-restore-single-pass
PATH=/usr/bin:$PATH bash ../restore_ab.sh /tmp/h48-bin/base /tmp/h48-bin/new 2 3 > results.txt
