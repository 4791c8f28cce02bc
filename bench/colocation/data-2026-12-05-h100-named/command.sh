#!/usr/bin/env bash
# device call 20 (issue 18), prepared for the next session: carry bin/schooner-agent.gz (rebuild
# it first: CGO_ENABLED=1 go build -tags agentonly -ldflags="-s -w" -o /tmp/a ./cmd/schooner &&
# gzip -c /tmp/a > bin/schooner-agent.gz) and this file. The study and the runtime for both
# pairs with what changed since call 17: the BE rate read over the HP window (--timeline), 1000
# requests a run, cuBLASLt's kernels named (CUkernel handles), each pair's kernel profiles
# seeded from ncu (their bounds measured), the BE side below normal MPS priority; then the
# runtime again with a 2 ms idle budget, and with a 1.05 target, against the same study. Check runtime-*/result.json:
# be_admitted_beside > 0. Report: go run ./bench/colocation -dir OUT.
set -u
R=/tmp/res20; mkdir -p $R
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
export PAIRS="decode-chain+gemm decode-chain+train-step" REPEATS=1 REQUESTS=1000 BE_WARMUP=6 PAIR_LIMIT=50
T0=$(date +%s)
STUDY_LIMIT=240 SEED_PROFILES=1 timeout 370 bash bench/colocation/h200.sh $R/colo > $R/colo.out 2>&1
echo "colo exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
SKIP_STUDY=1 RUNTIME_TAG=idle2ms RUNTIME_FLAGS="--idle-budget 2ms" timeout 85 bash bench/colocation/h200.sh $R/colo >> $R/colo.out 2>&1
echo "idle2ms exit $? at $(( $(date +%s) - T0 )) s" >> $R/start.txt
# The supervisor holds the HP kernels' time-weighted slowdown at --target; a request's p99 sits
# above that mean (its first kernel waits for a running BE piece): a lower target for a p99 goal.
nvidia-smi -L >> $R/start.txt
tar czf $OUT/res20.tgz -C /tmp res20
