#!/bin/sh
# The pause at a migration's switch with and without a preload, on the CPU with the tiny model
# (schooner_serve/bench_preload.py), against the Go KV-cache holder over its unix socket (lent
# memory, streamed) and over TCP (chunks). Run from the repository root on a machine with
# python3 + torch; writes preload-unix.json, preload-tcp.json and their logs here.
set -eu
out=bench/serving/data-2026-12-06-preload-cpu
go build -o /tmp/preload-schooner ./cmd/schooner
sock=$(mktemp -u /tmp/kv-preload-XXXX.sock)
/tmp/preload-schooner kvcache serve --listen 127.0.0.1:0 --socket "$sock" --budget 4GiB > "$out/holder.log" 2>&1 &
holder=$!
trap 'kill $holder' EXIT
sleep 1
tcp=$(sed -n 's/.*listening on tcp \([^ ]*\).*/\1/p' "$out/holder.log" | head -1)
cd trainer/python
args="--contexts 256,1024,2048 --batches 1,8 --pre 16 --delta 8 --repeats 3"
SCHOONER_SERVE_THREADS=2 python3 -m schooner_serve.bench_preload $args --holder "unix:$sock" \
  --out "../../$out/preload-unix.json" > "../../$out/preload-unix.log" 2>&1
SCHOONER_SERVE_THREADS=2 python3 -m schooner_serve.bench_preload $args --holder "$tcp" \
  --out "../../$out/preload-tcp.json" > "../../$out/preload-tcp.log" 2>&1
