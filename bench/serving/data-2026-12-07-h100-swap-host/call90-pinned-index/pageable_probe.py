"""Does a small index copy from pageable memory hold the host behind copies queued on its stream?
Host time of the call, after 512 MiB of pinned H2D copies were queued on the same stream."""
import time, torch
dev = torch.device("cuda")
side = torch.cuda.Stream(dev)
big = torch.empty(512 << 20, dtype=torch.uint8, pin_memory=True)
dst = torch.empty(512 << 20, dtype=torch.uint8, device=dev)
small = torch.arange(4000, dtype=torch.long)
def trial(kind):
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        t0 = time.perf_counter()
        for i in range(16):
            dst[i << 25:(i + 1) << 25].copy_(big[i << 25:(i + 1) << 25], non_blocking=True)
        t1 = time.perf_counter()
        if kind == "pageable":
            x = small.to(dev, non_blocking=True)
        elif kind == "pinned":
            x = small.pin_memory().to(dev, non_blocking=True)
        elif kind == "torch.tensor":
            x = torch.tensor(list(range(4000)), device=dev)
        t2 = time.perf_counter()
    side.synchronize()
    t3 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t0) * 1e3
for kind in ["pageable", "pinned", "torch.tensor"] * 2:
    for _ in range(2):
        trial(kind)
    rs = [trial(kind) for _ in range(5)]
    rs.sort(key=lambda r: r[1])
    q, c, tot = rs[2]
    print(f"{kind:13s} queue 512 MiB {q:6.2f} ms; the small copy's host call {c:7.3f} ms; all done {tot:6.2f} ms (median of 5)")
