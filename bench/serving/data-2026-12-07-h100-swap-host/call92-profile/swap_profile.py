"""Profile a few steady decode steps of bench_swap's swapping run (depth 8, mb 16) and of the
no-swap run (mb 8): a chrome trace each, plus host timings of each phase of the step."""
import json, sys, time, torch
sys.path.insert(0, "trainer/python")
from schooner_serve import bench_swap as bs
from schooner_serve.config import CONFIGS
from schooner_serve.engine import StageEngine
from schooner_serve.microbatch import Microbatches
from schooner_serve.model import StageModel
from torch.profiler import profile, ProfilerActivity
out = sys.argv[1]
a = bs.main.__globals__  # noqa
class A: pass
a = A(); a.model="8b"; a.seed=7; a.depth=8; a.prompt=128; a.output=128; a.kv_gib=2.0; a.host_gib=0.0; a.max_microbatch=256; a.block=16; a.device="cuda"
c = CONFIGS[a.model]; dev = torch.device("cuda")
model = StageModel(c, a.seed, 0, c.layers, dev, torch.bfloat16)
sz = bs.sizes(a, c.kv_bytes_per_token(2) * a.block)
for swap, m in ((True, 16), (False, 8)):
    per_pos = c.kv_bytes_per_token(2)
    host = (a.depth * m + m) * (a.prompt + a.output + a.block) * per_pos if swap else 0
    eng = StageEngine(c, a.seed, 0, c.layers, device=dev, dtype=model.dtype, kv_blocks=sz["pool_blocks"], block=a.block, model=model, swap_host=host or None)
    eng.graphs.prepare([m], [a.prompt + 1])
    reqs = bs.make_requests(a, a.depth * m)
    mb = Microbatches(eng, a.depth, m)
    for g, group in enumerate(mb.admit(reqs)):
        if group: mb.prefill(g, group)
    for _ in range(40): mb.step(); torch.cuda.synchronize()
    ts = []
    for _ in range(16):
        t0 = time.perf_counter(); mb.step(); t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
        ts.append((round((t1 - t0) * 1e3, 2), round((t2 - t0) * 1e3, 2)))
    print("swap" if swap else "off", m, "host step / with sync ms:", ts, flush=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(8): mb.step(); torch.cuda.synchronize()
    prof.export_chrome_trace(f"{out}/trace-{'swap' if swap else 'off'}-{m}.json")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25), flush=True)
    eng.close(); del eng, mb; import gc; gc.collect(); torch.cuda.empty_cache()
