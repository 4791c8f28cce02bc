"""The hop between two pipeline stages: one hidden-state frame over loopback TCP through
frame.Conn, read into fresh memory (as before frame.PayloadPool) and into the pool's reused
buffers, in alternating trials on one connection. Prints ms per frame, GB/s and the ratio.

    python3 -m schooner_serve.bench_hop --rows 8224 --hidden 4096 --frames 8 --trials 5

The default frame is what an 8k-token prefill of an 8B model (bf16) sends from stage 0 to
stage 1: 8224 × 4096 × 2 bytes, 67 MB."""
import argparse
import json
import socket
import statistics
import threading
import time

from . import frame


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m schooner_serve.bench_hop", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=8224)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--bytes-per-value", type=int, default=2)
    p.add_argument("--frames", type=int, default=8, help="frames per trial")
    p.add_argument("--trials", type=int, default=5, help="trials per way, alternating")
    p.add_argument("--out", help="write the per-trial times as JSON here")
    a = p.parse_args(argv)
    n = a.rows * a.hidden * a.bytes_per_value
    payload = bytes(n)
    srv = socket.create_server(("127.0.0.1", 0))
    times = {"fresh": [], "pooled": []}
    plan = [w for _ in range(a.trials) for w in ("fresh", "pooled")]

    def reader():
        s, _ = srv.accept()
        conn, pool = frame.Conn(s), frame.PayloadPool()
        for way in plan:
            t = time.perf_counter()
            for _ in range(a.frames):
                _, got = conn.recv(pool if way == "pooled" else None)
                if len(got) != n:
                    raise SystemExit(f"a frame of {len(got)} bytes, {n} sent")
                pool.give(got)
            times[way].append((time.perf_counter() - t) / a.frames)
            conn.send({"op": "next"})
    th = threading.Thread(target=reader)
    th.start()
    conn = frame.Conn.connect("127.0.0.1:%d" % srv.getsockname()[1])
    for _ in plan:
        for _ in range(a.frames):
            conn.send({"op": "forward"}, payload)
        conn.recv()  # the reader's go-ahead: trials do not overlap
    th.join()
    med = {w: statistics.median(v) for w, v in times.items()}
    for w in ("fresh", "pooled"):
        print(f"{w:6s}  {1e3 * med[w]:7.1f} ms a frame  {n / med[w] / 1e9:5.2f} GB/s  (trials: "
              + ", ".join(f"{1e3 * x:.1f}" for x in times[w]) + " ms)")
    print(f"pooled is {med['fresh'] / med['pooled']:.2f}x faster than fresh, {n / 1e6:.0f} MB frames")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"bytes": n, "frames_per_trial": a.frames, "seconds_per_frame": times}, f, indent=1)


if __name__ == "__main__":
    main()
