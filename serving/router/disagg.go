package router

import (
	"math"
	"net/http"
)

// Prompt–token disaggregation (DéjàVu; docs/serving.md). A router with Options.Prefill is a
// deployment's token pool; Prefill is its prompt pool. A completion goes first to the prompt
// pool as a request for token 0 alone, marked handoff: its stages stream the prompt's KV cache
// to their KV-cache holders layer by layer as the prefill computes it, and keep that replica
// when the request ends. The router then queues it here with token 0 as already generated,
// marked expect: the token pool's stages restore the prompt's cache from the same holders (the
// failover restore; a get held until the prompt is complete, even if its last layers are still
// on their way) and decode the rest, continuing the same replica, so either pool's loss is a
// failover of its own. The client sees one completion: token 0 from the prompt pool, the rest
// from the token pool.

// roomFor says why q would be refused here, before its prefill is spent on it.
func (r *Router) roomFor(q *request) *APIError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.roomLocked()
}

// prefillRouter is the prompt pool of the next completion: Options.Prefill, else what
// Options.PickPrefill chooses; nil: the completion is prefilled here.
func (r *Router) prefillRouter() *Router {
	if r.opts.Prefill != nil {
		return r.opts.Prefill
	}
	if r.opts.PickPrefill != nil {
		return r.opts.PickPrefill()
	}
	return nil
}

// prefillFirst runs token 0 of q on the prompt pool pre and gives it to q. answered is true when
// q has ended there (token 0 was a stop token, or max_tokens is 1): q is done and its answer is
// due; else q carries token 0 and is to be queued here. An error is the prompt pool's (refused,
// failed, the client gone: then the prefill is cancelled).
func (r *Router) prefillFirst(hr *http.Request, q *request, pre *Router) (answered bool, aerr *APIError) {
	// With max_tokens 1 token 0 is the whole answer: nothing to hand off, nothing to keep.
	first := &request{id: q.id, prompt: q.prompt, maxTokens: 1, temperature: q.temperature, seed: q.seed,
		key: q.key, created: q.created, notify: make(chan struct{}, 1), handoff: q.maxTokens > 1}
	if aerr := pre.admit(first); aerr != nil {
		return false, aerr
	}
	for {
		if _, done, _, _ := pre.snapshot(first, math.MaxInt); done {
			break
		}
		select {
		case <-hr.Context().Done():
			pre.cancelRequest(first)
			return false, &APIError{Status: 499, Type: typeInvalid, Message: "the client closed the request"}
		case <-first.notify:
		}
	}
	toks, _, reason, aerr := pre.snapshot(first, 0)
	if aerr != nil {
		return false, aerr
	}
	q.tokens = toks
	defer q.wake() // the answer starts with token 0 at once
	if reason == "stop" || len(toks) >= q.maxTokens {
		q.state, q.reason = stateDone, reason // never queued here: nothing to count
		return true, nil
	}
	q.expect = true
	return false, nil
}
