# Sourced by the GPU machine's bench scripts (bench/colocation/h200.sh and idle.sh,
# bench/serving/h200.sh): the output folder from the script's first argument (made), the
# repository root, the node agent unpacked from bin/schooner-agent.gz to $bin, and what the
# machine is in $out/machine.txt.
out=${1:?usage: $(basename "$0") OUTDIR}
mkdir -p "$out"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=/tmp/schooner-bench
gunzip -c "$root/bin/schooner-agent.gz" > "$bin" && chmod +x "$bin"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; free -g; python3 -c 'import torch; print(torch.__version__)'; } > "$out/machine.txt" 2>&1
