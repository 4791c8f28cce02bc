package kvcache

import "context"

// A replacement brought up ahead of a switch (a migration on a preemption notice) preloads
// every replica of its stage while the stage it replaces keeps decoding and replicating. At
// the switch it needs only what came since: a get with from_step f sends the tokens of steps
// f, f+1, ... (step k's KV is that of position P+k-1, P the prompt's tokens) and no prompt,
// so the pause at the switch is a few steps' bytes, not the whole cache. The answer repeats
// from_step, so a reader can tell a holder that honoured it from one that predates it and sent
// everything from token 0 (whose chunks say so too: their tokens start at 0).

// startOf is the first token a get from fromStep sends: 0 for a whole replica (fromStep <= 0),
// else the position step fromStep wrote, at most the replica's end (nothing to send).
func (s snapshot) startOf(fromStep int) int {
	if fromStep <= 0 || s.acked < 0 {
		return 0
	}
	return min(s.promptTokens+fromStep-1, s.tokens())
}

// GetFrom is Get of the decode steps from fromStep on, without the prompt (fromStep <= 0: the
// whole replica). End.FromStep says whether the holder honoured it.
func (c *Client) GetFrom(ctx context.Context, request string, fromStep int, fn func(Chunk) error) (End, error) {
	return c.get(ctx, requestMsg{Op: opGet, Request: request, FromStep: fromStep}, fn)
}
