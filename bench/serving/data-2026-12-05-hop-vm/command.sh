cd trainer/python && python3 -m schooner_serve.bench_hop --trials 7 --frames 6 --out ../../bench/serving/data-2026-12-05-hop-vm/hop.json
