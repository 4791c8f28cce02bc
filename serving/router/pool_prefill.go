package router

// PoolPrefill names a prefill replica in ReplicaRoute and StageStatus (serving.PoolPrefill).
const PoolPrefill = "prefill"

// decodeOpts are the options of decode replica id's router: the pool's, with its prompt pool
// chosen per completion among the prefill replicas that feed it. A prefill replica streams a
// prompt's KV cache to the holders of one decode replica only, so a decode replica must
// never take a prompt prefilled for another; one that no prefill replica feeds prefills its
// own completions.
func (p *Pool) decodeOpts(id int) Options {
	o := p.opts
	if o.Prefill == nil {
		o.PickPrefill = func() *Router { return p.pickPrefill(id) }
	}
	return o
}

// prefillOpts are a prefill replica's router's: no prompt pool of its own, and no OnDispatch
// (the completion's queueing is reported by its decode replica).
func (p *Pool) prefillOpts() Options {
	o := p.opts
	o.Prefill, o.PickPrefill, o.OnDispatch = nil, nil, nil
	return o
}

// setPrefillLocked sets the prefill replicas' routers as SetReplicas does the decode ones':
// a router for each new one, its stages and the decode replica it feeds, and a drain for each
// no longer listed. p.mu is held.
func (p *Pool) setPrefillLocked(routes []ReplicaRoute) {
	listed := map[int]bool{}
	for _, rt := range routes {
		listed[rt.Replica] = true
		r := p.prefill[rt.Replica]
		if r == nil {
			var err error
			if r, err = New(p.prefillOpts()); err != nil { // only a missing model fails, and NewPool had one
				continue
			}
			p.prefill[rt.Replica] = r
		}
		p.feeds[rt.Replica] = rt.Feeds
		r.SetStages(rt.Stages)
	}
	for id, r := range p.prefill {
		if !listed[id] {
			delete(p.prefill, id)
			delete(p.feeds, id)
			p.drainingPrefill = append(p.drainingPrefill, r)
			p.wg.Add(1)
			go p.drain(r, false)
		}
	}
}

// pickPrefill is the prompt pool for a completion of decode replica decode: among the
// prefill replicas feeding it, a ready one before one that is not, then the least work, then
// the lowest number; nil when none feeds it.
func (p *Pool) pickPrefill(decode int) *Router {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *Router
	bestReady, bestLoad := false, 0
	for _, id := range sortedIDs(p.prefill) {
		if p.feeds[id] != decode {
			continue
		}
		r := p.prefill[id]
		ready, load := r.occupancy()
		if best == nil || (ready && !bestReady) || (ready == bestReady && load < bestLoad) {
			best, bestReady, bestLoad = r, ready, load
		}
	}
	return best
}
