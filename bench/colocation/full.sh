#!/usr/bin/env bash
# Issue 18's whole GPU run in one command, within a time budget, for one device call:
#   bash bench/colocation/full.sh OUTDIR        (then: go run ./bench/colocation -dir OUTDIR/colo)
# 1. the interference study and the runtime for PAIRS (default the two decode pairs), each
#    pair's kernel profiles seeded from ncu first (h200.sh with SEED_PROFILES=1);
# 2. the runtime again against the same study with every SM open to complementary BE kernels
#    (--sm-share 1: cuBLASLt's Hopper GEMM pieces are as wide as the device, so at the default
#    share none may run beside HP work; be_waits_by in each result says what held them);
# 3. bench/colocation/idle.sh for the training step (what the runtime costs a BE program of
#    many small kernels while HP is idle) in the time left of TOTAL seconds (default 560).
# Needs bin/schooner-agent.gz built at this commit (task gpu:build) and python3 with torch and
# a GPU; ncu on the PATH or in /usr/local/cuda/bin for the profiles. STUDY_LIMIT (default 280)
# bounds step 1's study; REQUESTS (default 500) is each run's request count.
set -u
out=${1:?usage: full.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
export PAIRS="${PAIRS:-decode-chain+gemm decode-chain+train-step}" REPEATS=${REPEATS:-1} REQUESTS=${REQUESTS:-500}
export BE_WARMUP=${BE_WARMUP:-6} PAIR_LIMIT=${PAIR_LIMIT:-50}
study=${STUDY_LIMIT:-280}
t0=$(date +%s)
took() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s" >> "$out/start.txt"; }
STUDY_LIMIT=$study SEED_PROFILES=1 timeout $((study + 140)) bash "$here/h200.sh" "$out/colo" > "$out/colo.out" 2>&1
took study+runtime $?
SKIP_STUDY=1 RUNTIME_TAG=share1 RUNTIME_FLAGS="--sm-share 1" timeout 90 bash "$here/h200.sh" "$out/colo" >> "$out/colo.out" 2>&1
took share1 $?
left=$(( ${TOTAL:-560} - ($(date +%s) - t0) ))
if [ $left -gt 40 ]; then
  BE_WORKLOADS=train-step SECONDS_EACH=10 timeout $left bash "$here/idle.sh" "$out/idle" > "$out/idle.out" 2>&1
  took idle $?
fi
nvidia-smi -L >> "$out/start.txt" 2>&1
