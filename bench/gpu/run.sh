#!/usr/bin/env bash
# Measures schooner on a GPU machine and prints the tables of BENCHMARKS.md ("GPU" sections).
#
#   bash bench/gpu/run.sh [all|nvml|accuracy|checkpoint]     (default all)
#
# Needs, on the GPU machine: python3 with PyTorch and CUDA, and two Go binaries built on any
# x86-64 Linux machine with Go (task gpu:build does it):
#   CGO_ENABLED=1 go build -tags agentonly -o bin/schooner-agent ./cmd/schooner
#   CGO_ENABLED=0 go build -o bin/accuracy ./bench/gpu/accuracy
# Results go to $RESULTS (default gpu-results/): profiles/, measured.jsonl, checkpoint.jsonl,
# the tables as Markdown, and the logs.
#
# accuracy:   profiles four GPT sizes (schooner_train.profile), trains each at micro-batch 1, 2
#             and 4 (global batch 8) with the reference trainer, and compares the measured
#             iteration time and peak memory with the planner's simulator (bin/accuracy).
# checkpoint: a 1.4B-parameter model (CKPT_LAYERS=28: 1.6B) (fp32, 5.7 GB of weights; CKPT_STATE=full adds Adam's
#             state, 17 GB) trained CKPT_ITERATIONS (100) iterations with no checkpoint, then
#             every CKPT_EVERY ("10 50") iterations by each of CKPT_METHODS: agent (overlapped
#             with the next iteration), agent-blocking, torch (torch.save + fsync, same disk)
#             and async (torch.distributed.checkpoint.async_save, same disk). The agent keeps
#             CKPT_MAX_IN_FLIGHT + 1 slots on disk (default 2 + 1; 1 + 1 with CKPT_STATE=full,
#             so two 17 GB slots fit a 64 GB disk). Each method's final checkpoint is read
#             back and compared with the trainer's state bit for bit (the table's restore
#             column; 15-60 s for 17 GB on an H100 host); CKPT_VERIFY=0 leaves that out.
# nvml:       the node agent's NVML inventory against nvidia-smi.
set -uo pipefail
part=${1:-all}
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
R=${RESULTS:-gpu-results}
mkdir -p "$R/profiles"
export PYTHONPATH="$here/trainer/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

{
  date -u +"date %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'
} | tee "$R/machine.txt"

# name layers hidden heads ffn
MODELS=(
  "gpt-125m 12 768 12 3072"
  "gpt-350m 24 1024 16 4096"
  "gpt-760m 24 1536 16 6144"
  "gpt-1.3b 24 2048 16 8192"
)

run_nvml() {
  bash bench/gpu/nvml_check.sh bin/schooner-agent 2>&1 | tee "$R/nvml.txt"
}

run_accuracy() {
  : > "$R/measured.jsonl"
  for m in "${MODELS[@]}"; do
    read -r name layers hidden heads ffn <<<"$m"
    dims=(--name "$name" --layers "$layers" --hidden "$hidden" --heads "$heads" --ffn "$ffn" --vocab 50272 --seq-len 1024)
    python3 -m schooner_train.profile "${dims[@]}" --mbs 1,2,4 --out "$R/profiles/$name.json" 2>&1 | tee -a "$R/profile.log"
    for mbs in 1 2 4; do
      SCHOONER_MICRO_BATCH=$mbs SCHOONER_GLOBAL_BATCH=8 \
        python3 -m schooner_train.train "${dims[@]}" --iterations 13 --warmup 3 --measure-out "$R/measured.jsonl" \
        > "$R/train-$name-mbs$mbs.log" 2>&1 || { echo "training $name mbs $mbs failed:"; tail -20 "$R/train-$name-mbs$mbs.log"; }
    done
  done
  if [ -x bin/accuracy ]; then
    bin/accuracy -profiles "$R/profiles" -measured "$R/measured.jsonl" -markdown | tee "$R/accuracy.md"
  else
    echo "bin/accuracy missing: build it, or run 'go run ./bench/gpu/accuracy -profiles $R/profiles -measured $R/measured.jsonl -markdown' where Go is"
  fi
}

run_checkpoint() {
  : > "$R/checkpoint.jsonl"
  # CKPT_LAYERS deepens the model for the issue's larger run: 28 layers is 1.62 B parameters,
  # 19.4 GB of whole state, three agent slots 58 GB of a 64 GB disk.
  layers=${CKPT_LAYERS:-24}
  name=gpt-1.3b; [ "$layers" = 24 ] || name=gpt-2048x$layers
  dims=(--name "$name" --layers "$layers" --hidden 2048 --heads 16 --ffn 8192 --vocab 50272 --seq-len 1024)
  common=(--iterations "${CKPT_ITERATIONS:-100}" --warmup 3 --ckpt-state "${CKPT_STATE:-model}" --measure-out "$R/checkpoint.jsonl")
  [ "${CKPT_VERIFY:-1}" = 0 ] || common+=(--verify-restore)
  export SCHOONER_MICRO_BATCH=4 SCHOONER_GLOBAL_BATCH=8
  disk=${CKPT_DIR:-/var/tmp/schooner-ckpt-bench}
  rm -rf "$disk"; mkdir -p "$disk/agent" "$disk/torch" "$disk/async"
  methods=${CKPT_METHODS:-"agent agent-blocking torch async"}
  # The agent's slots on disk are max-in-flight + 1 (the last committed one kept): three 17 GB
  # checkpoints of the full state do not fit a 64 GB disk, two do.
  inflight=${CKPT_MAX_IN_FLIGHT:-2}
  [ "${CKPT_STATE:-model}" = full ] && inflight=${CKPT_MAX_IN_FLIGHT:-1}
  # the disk's own sequential write speed, the bound of any checkpoint method here
  dd if=/dev/zero of="$disk/raw" bs=16M count=256 oflag=direct conv=fsync 2>&1 | tail -1 | tee "$R/disk.txt"
  rm -f "$disk/raw"
  SCHOONER_CHECKPOINT_EVERY=0 python3 -m schooner_train.train "${dims[@]}" "${common[@]}" > "$R/ckpt-none.log" 2>&1
  for every in ${CKPT_EVERY:-10 50}; do
    for m in $methods; do
      log="$R/ckpt-$m-$every.log"
      case $m in
      agent|agent-blocking)
        mode=overlap; [ $m = agent-blocking ] && mode=blocking
        bin/schooner-agent ckpt agent --mode local --dir "$disk/agent" --socket /tmp/schooner-ckpt.sock \
          --max-in-flight "$inflight" --staging-bytes $((12 << 30)) > "$R/agent-$m-$every.log" 2>&1 &
        agent=$!
        for _ in $(seq 50); do [ -S /tmp/schooner-ckpt.sock ] && break; sleep 0.2; done
        SCHOONER_CKPT_SOCKET=/tmp/schooner-ckpt.sock SCHOONER_CHECKPOINT_EVERY=$every \
          python3 -m schooner_train.train "${dims[@]}" "${common[@]}" --ckpt-mode $mode > "$log" 2>&1 || tail -20 "$log"
        kill -INT $agent; wait $agent
        rm -rf "$disk/agent"; mkdir -p "$disk/agent" ;;
      torch)
        SCHOONER_CHECKPOINT_EVERY=$every python3 -m schooner_train.train "${dims[@]}" "${common[@]}" --torch-save-dir "$disk/torch" \
          > "$log" 2>&1 || tail -20 "$log"
        rm -rf "$disk/torch"; mkdir -p "$disk/torch" ;;
      async)
        SCHOONER_CHECKPOINT_EVERY=$every python3 -m schooner_train.train "${dims[@]}" "${common[@]}" --async-save-dir "$disk/async" \
          > "$log" 2>&1 || tail -20 "$log"
        rm -rf "$disk/async"; mkdir -p "$disk/async" ;;
      *) echo "unknown checkpoint method $m (want agent, agent-blocking, torch, async)" >&2; return 2 ;;
      esac
    done
  done
  python3 bench/gpu/checkpoint_table.py "$R/checkpoint.jsonl" | tee "$R/checkpoint.md"
}

case "$part" in
  all) run_nvml; run_accuracy; run_checkpoint ;;
  nvml) run_nvml ;;
  accuracy) run_accuracy ;;
  checkpoint) run_checkpoint ;;
  *) echo "usage: bash bench/gpu/run.sh [all|nvml|accuracy|checkpoint]" >&2; exit 2 ;;
esac
