"""One training iteration of one pipeline stage under the 1F1B schedule.

Stage s of P runs min(P-s-1, M) forward passes to fill the pipeline, then alternates one
forward and one backward, then drains the remaining backwards. Sends and receives between
neighbours that cross in the steady phase go in one batch_isend_irecv, so neither side
blocks the other (blocking send then receive on both sides would deadlock).
"""

from __future__ import annotations

import torch
import torch.distributed as dist


class Neighbours:
    """The previous and next stage's ranks (None at the ends) and the activation shape."""

    def __init__(self, prev, nxt, shape, device, dtype=torch.float32):
        self.prev, self.next, self.shape, self.device, self.dtype = prev, nxt, shape, device, dtype

    def _buf(self):
        return torch.empty(self.shape, device=self.device, dtype=self.dtype)

    def _run(self, ops):
        if ops:
            for w in dist.batch_isend_irecv(ops):
                w.wait()

    def _recv(self, peer, send=None):
        """Receives a tensor of the activation shape from peer (None at an end of the pipeline:
        nothing comes), sending send to the same peer in the same batch when given, so two
        neighbours that cross do not block each other."""
        if peer is None:
            return None
        buf = self._buf()
        ops = [] if send is None else [dist.P2POp(dist.isend, send.contiguous(), peer)]
        self._run(ops + [dist.P2POp(dist.irecv, buf, peer)])
        return buf

    def _send(self, t, peer):
        if peer is not None:
            self._run([dist.P2POp(dist.isend, t.contiguous(), peer)])

    def recv_forward(self):
        return self._recv(self.prev)

    def send_forward(self, y):
        self._send(y, self.next)

    def recv_backward(self):
        return self._recv(self.next)

    def send_backward(self, g):
        if g is not None:
            self._send(g, self.prev)

    def send_forward_recv_backward(self, y):
        return self._recv(self.next, send=y)

    def send_backward_recv_forward(self, g):
        return self._recv(self.prev, send=g)


def one_f_one_b(stage, nb: Neighbours, pp: int, s: int, inputs, targets, scale: float):
    """Runs one iteration's forward and backward passes of stage s over the microbatches.

    inputs[i] are the token ids of microbatch i (used by the first stage), targets[i] its
    targets (used by the last); scale divides the loss (1 / microbatches). Returns this stage's
    microbatch losses as detached GPU tensors (none unless it is the last): read them after the
    optimizer step and before a save starts (loss_sum). Reading one back here would hold the host until every
    device-to-host copy in flight had finished, an overlapped checkpoint's 17 GB included (the
    driver orders a read into pageable memory behind them): on an H100 that added 0.27 s to
    the iteration after each save (BENCHMARKS.md, Checkpoints).
    """
    m = len(targets)
    first, last = nb.prev is None, nb.next is None
    warm = min(pp - s - 1, m)
    pending = []  # (input, output) of forwards whose backward has not run, oldest first
    losses = []

    def forward(i, x):
        inp = inputs[i] if first else x.requires_grad_()
        out = stage(inp, targets[i]) if last else stage(inp)
        if last:
            losses.append(out.detach())
            out = out * scale
        pending.append((None if first else inp, out))
        return out

    def backward(grad):
        inp, out = pending.pop(0)
        if last:
            out.backward()
        else:
            out.backward(grad)
        return None if inp is None else inp.grad

    for i in range(warm):
        nb.send_forward(forward(i, nb.recv_forward()).detach())
    rest = m - warm
    x = nb.recv_forward() if rest > 0 else None
    for j in range(rest):
        out = forward(warm + j, x)
        grad = nb.send_forward_recv_backward(out.detach()) if not last else None
        gin = backward(grad)
        if j == rest - 1:
            x = None
            nb.send_backward(gin)
        else:
            x = nb.send_backward_recv_forward(gin)  # None on the first stage: it reads token ids
    for _ in range(warm):
        nb.send_backward(backward(nb.recv_backward()))
    return losses


def loss_sum(losses) -> float:
    """The sum of one_f_one_b's microbatch losses, read back in order (a float sum, as a host
    loop adds them, so the reported loss does not depend on when it is read)."""
    total = 0.0
    for part in losses:
        total += float(part)
    return total
