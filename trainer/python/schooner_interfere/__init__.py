"""Interference studies on one GPU: the executor the node agent drives (docs/interference.md).

workloads.py builds the latency-critical and best-effort workloads at a scale (`h200`: the sizes
of the H200 probe; `tiny`: for tests on a CPU); measure.py times requests and counts throughput;
executor.py answers the Go runner's requests as JSON lines; child.py is one side of a pair run
in its own process (time-slicing, MPS); mps.py is the private MPS daemon such a run (and
schooner_serve's bench_disagg) starts and shuts down.
"""
