"""Issue 17 diagnostic: is the CNN request's spread between runs the host (CPU idle states, cold
caches after a sleep) rather than the GPU? The CNN request alone, 400 requests at 2 ms mean think
time, in rounds, under variants: sleep (the study's), spin (busy-wait the think time), sleep with
a CPU-busy process (or four) beside (no GPU work), sleep with the GPU kept awake by one-SM
spin kernels on a side stream of this process, and back to back (no think time). Prints one JSON
line a run. Call 80 ran it with ROUNDS=3 and stopped at the first back-to-back run (a division by
zero for a think time of 0, fixed here): one round of the first five variants is its data.
    PYTHONPATH=trainer/python python3 cnn_host.py > cnn_host.jsonl"""
import json, os, random, subprocess, sys, time
import torch
from schooner_interfere import workloads
from schooner_interfere.measure import percentile

dev = torch.device("cuda")
w = workloads.build("cnn-infer", dev, "h200", 0)
def run(think_ms, spin, n=400, warm=20, seed=0):
    rng = random.Random(seed); lat = []
    s = torch.cuda.current_stream(dev)
    for i in range(warm + n):
        d = rng.expovariate(1 / think_ms) / 1000 if think_ms > 0 else 0.0
        if spin:
            end = time.perf_counter() + d
            while time.perf_counter() < end: pass
        else:
            time.sleep(d)
        t0 = time.perf_counter(); w.run(); s.synchronize(); t1 = time.perf_counter()
        if i >= warm: lat.append((t1 - t0) * 1e3)
    lat.sort()
    return {"p50_ms": round(percentile(lat, 50), 4), "p99_ms": round(percentile(lat, 99), 4), "min_ms": round(lat[0], 4)}
burn = [sys.executable, "-c", "while True: pass"]
import threading
class Awake(threading.Thread):
    """Keeps the GPU from idling: one-thread spin kernels (torch.cuda._sleep, one SM) back to back
    on a side stream of this process, so the CNN's kernels run beside them, not after them."""
    def __init__(self):
        super().__init__(daemon=True); self.stop = threading.Event()
        self.s = torch.cuda.Stream(dev, priority=0)
    def run(self):
        while not self.stop.is_set():
            with torch.cuda.stream(self.s):
                torch.cuda._sleep(2_000_000)
            self.s.synchronize()
for rnd in range(int(os.environ.get("ROUNDS", "3"))):
    for variant in ["sleep", "spin", "sleep+burner", "sleep+4burners", "sleep+gpu-awake", "back-to-back"]:
        procs = []
        if "burner" in variant:
            k = 4 if "4burners" in variant else 1
            procs = [subprocess.Popen(burn) for _ in range(k)]; time.sleep(0.3)
        aw = None
        if variant == "sleep+gpu-awake":
            aw = Awake(); aw.start(); time.sleep(0.1)
        r = run(0.0 if variant == "back-to-back" else 2.0, variant == "spin")
        for p in procs: p.kill(); p.wait()
        if aw is not None: aw.stop.set(); aw.join()
        print(json.dumps({"round": rnd, "variant": variant, **r}), flush=True)
