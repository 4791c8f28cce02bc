package kvcache

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// key names one replica: the holder keeps each stage's copy of each request apart.
type key struct {
	deployment string
	stage      int
	request    string
}

// piece is a run of tokens of one layer: [2, kv_heads, t1-t0, head_dim], K then V. A prompt
// piece the holder keeps in its arena says where (inArena, off); data is then a view of it.
type piece struct {
	t0, t1  int
	data    []byte
	inArena bool
	off     int64
}

// stepRec is one decode step of one request: [layers, 2, kv_heads, head_dim] of one token.
type stepRec struct {
	step int
	data []byte
}

// replica is what the holder keeps of one request. Until a put marked last arrives the cache
// is incomplete (acked = -1) and readers see none of it; afterwards the prompt is frozen and
// decode steps append, each whole or not at all.
type replica struct {
	layout       Layout
	prompt       map[int][]piece // per layer, contiguous from token 0
	complete     bool
	lo, hi       int // the stage's local layers, once complete
	acked        int
	promptTokens int
	steps        []stepRec // step acked-len(steps)+1 .. acked, at positions promptTokens..
	bytes        int64
	// pins counts the connections whose last answer points into this replica's arena pieces;
	// a replica dropped while pinned gives its arena ranges back at the last unpin.
	pins    int
	dropped bool
}

func (r *replica) nextToken() int { return r.promptTokens + len(r.steps) }

func (r *replica) layerEnd(l int) int {
	ps := r.prompt[l]
	if len(ps) == 0 {
		return 0
	}
	return ps[len(ps)-1].t1
}

// store holds every replica inside a byte budget. Only payload bytes count; refusing at the
// budget (never evicting) keeps what was acknowledged true.
type store struct {
	mu       sync.Mutex
	budget   int64
	used     int64
	replicas map[key]*replica
	// arena, once a reader has asked for one (arena.go): new prompt pieces go there. arenaMu
	// serializes making it (seconds for a large budget), apart from mu so puts and gets go on.
	arena   atomic.Pointer[arena]
	arenaMu sync.Mutex
}

func newStore(budget int64) *store {
	return &store{budget: budget, replicas: map[key]*replica{}}
}

// putArgs is one validated put.
type putArgs struct {
	layer  int
	tokens [2]int
	layout Layout
	last   bool
	layers [2]int
	step   int
	data   []byte
	// inArena: data is a view of the arena at off (toArena), given back if the put is refused.
	inArena bool
	off     int64
}

// put stores one layer's run of tokens and returns the request's acked step afterwards.
func (s *store) put(k key, p putArgs) (acked int, herr *HolderError) {
	s.toArena(&p)
	if p.inArena {
		defer func() {
			if herr != nil {
				s.arena.Load().release(p.off, int64(len(p.data)))
			}
		}()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replicas[k]
	fresh := r == nil
	if fresh {
		r = &replica{layout: p.layout, prompt: map[int][]piece{}, acked: -1}
	}
	if r.layout != p.layout {
		return r.acked, refuse(CodeConflict, "request %s holds %s×%d heads×%d, not %s×%d×%d",
			k.request, r.layout.DType, r.layout.KVHeads, r.layout.HeadDim, p.layout.DType, p.layout.KVHeads, p.layout.HeadDim)
	}
	if r.complete {
		return r.acked, refuse(CodeConflict, "the cache of request %s is complete at step %d: send put_step, or drop it first", k.request, r.acked)
	}
	if end := r.layerEnd(p.layer); p.tokens[0] != end {
		return r.acked, refuse(CodeConflict, "layer %d of request %s holds tokens [0,%d): tokens [%d,%d) do not follow",
			p.layer, k.request, end, p.tokens[0], p.tokens[1])
	}
	if p.last {
		if err := r.checkComplete(k.request, p); err != nil {
			return r.acked, err
		}
	}
	n := int64(len(p.data))
	if s.used+n > s.budget {
		return r.acked, refuse(CodeFull, "storing %d bytes of request %s would pass the budget (%d of %d bytes held)", n, k.request, s.used, s.budget)
	}
	if fresh {
		s.replicas[k] = r
	}
	if p.tokens[1] > p.tokens[0] {
		r.prompt[p.layer] = append(r.prompt[p.layer], piece{t0: p.tokens[0], t1: p.tokens[1], data: p.data, inArena: p.inArena, off: p.off})
	}
	r.bytes += n
	s.used += n
	if p.last {
		r.complete, r.lo, r.hi, r.acked, r.promptTokens = true, p.layers[0], p.layers[1], p.step, p.tokens[1]
	}
	return r.acked, nil
}

// checkComplete refuses a last put unless, with it, every local layer holds the same tokens
// [0,T) and no other layer holds any.
func (r *replica) checkComplete(req string, p putArgs) *HolderError {
	lo, hi, want := p.layers[0], p.layers[1], p.tokens[1]
	if p.layer < lo || p.layer >= hi {
		return refuse(CodeConflict, "the last put of request %s is of layer %d, outside its layers [%d,%d)", req, p.layer, lo, hi)
	}
	for l := lo; l < hi; l++ {
		if l == p.layer {
			continue
		}
		if end := r.layerEnd(l); end != want {
			return refuse(CodeConflict, "request %s is not complete: layer %d holds tokens [0,%d), want [0,%d)", req, l, end, want)
		}
	}
	for l, ps := range r.prompt {
		if (l < lo || l >= hi) && len(ps) > 0 {
			return refuse(CodeConflict, "request %s holds layer %d, outside its layers [%d,%d)", req, l, lo, hi)
		}
	}
	return nil
}

// stepArgs is one validated put_step; data holds len(entries) slices of per bytes.
type stepArgs struct {
	step    int
	entries []entryMsg
	layers  [2]int
	layout  Layout
	data    []byte
}

// stepResult answers one entry of a put_step.
type stepResult struct {
	stored bool // false for a step already held (acked again)
	err    *HolderError
}

// putStep stores each entry on its own: one request's step is stored whole or refused, and a
// refusal of one request leaves the others of the frame stored.
func (s *store) putStep(dep string, stage int, a stepArgs) []stepResult {
	per := (a.layers[1] - a.layers[0]) * a.layout.tokenBytes()
	out := make([]stepResult, len(a.entries))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range a.entries {
		step := e.stepOf(a.step)
		r := s.replicas[key{dep, stage, e.Request}]
		switch {
		case r == nil || !r.complete:
			out[i].err = refuse(CodeConflict, "request %s has no complete cache here: put its prompt (the last put marked last) before step %d", e.Request, step)
		case r.layout != a.layout:
			out[i].err = refuse(CodeConflict, "request %s holds %s×%d heads×%d, step %d is %s×%d×%d",
				e.Request, r.layout.DType, r.layout.KVHeads, r.layout.HeadDim, step, a.layout.DType, a.layout.KVHeads, a.layout.HeadDim)
		case r.lo != a.layers[0] || r.hi != a.layers[1]:
			out[i].err = refuse(CodeConflict, "request %s holds layers [%d,%d), step %d carries [%d,%d)", e.Request, r.lo, r.hi, step, a.layers[0], a.layers[1])
		case step <= r.acked:
			// A step sent again (after a reconnect): it is held already.
		case step != r.acked+1:
			out[i].err = refuse(CodeConflict, "request %s is acked to step %d: step %d does not follow", e.Request, r.acked, step)
		case e.Token != r.nextToken():
			out[i].err = refuse(CodeConflict, "request %s holds tokens [0,%d): step %d is at token %d", e.Request, r.nextToken(), step, e.Token)
		case s.used+int64(per) > s.budget:
			out[i].err = refuse(CodeFull, "storing step %d of request %s (%d bytes) would pass the budget (%d of %d bytes held)", step, e.Request, per, s.used, s.budget)
		default:
			data := a.data[i*per : (i+1)*per : (i+1)*per]
			if len(a.entries) > 1 {
				// Copy: the requests of a batch end at different times, and a slice would
				// pin the whole frame until the last of them is dropped.
				data = slices.Clone(data)
			}
			r.steps = append(r.steps, stepRec{step: step, data: data})
			r.acked = step
			r.bytes += int64(per)
			s.used += int64(per)
			out[i].stored = true
		}
	}
	return out
}

// drop frees one replica and returns the bytes it held.
func (s *store) drop(k key) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.replicas[k]
	if !ok {
		return 0, false
	}
	delete(s.replicas, k)
	s.used -= r.bytes
	s.forget(r)
	return r.bytes, true
}

// dropDeployment frees every replica of a deployment, of every stage.
func (s *store) dropDeployment(dep string) (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int
	var b int64
	for k, r := range s.replicas {
		if k.deployment == dep {
			delete(s.replicas, k)
			s.used -= r.bytes
			s.forget(r)
			n++
			b += r.bytes
		}
	}
	return n, b
}

// list returns the replicas of one (deployment, stage), by request.
// ackedStep is the step k's replica stands at: -1 until its prompt is complete.
func (s *store) ackedStep(k key) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replicas[k]
	if r == nil || !r.complete {
		return -1
	}
	return r.acked
}

func (s *store) list(dep string, stage int) []Held {
	s.mu.Lock()
	out := []Held{}
	for k, r := range s.replicas {
		if k.deployment == dep && k.stage == stage {
			out = append(out, Held{Request: k.request, AckedStep: r.acked, Bytes: r.bytes})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Held) int { return strings.Compare(a.Request, b.Request) })
	return out
}

// stats returns the bytes and replicas held.
func (s *store) stats() (int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, len(s.replicas)
}

// snapshot is a consistent view of one complete replica: the prompt is frozen once complete
// and steps only append, so the slices copied under the lock never change under a reader.
type snapshot struct {
	layout       Layout
	lo, hi       int
	acked        int
	promptTokens int
	prompt       map[int][]piece
	steps        []stepRec
	// inArena: every prompt piece lies in the arena (an answer may point at them).
	inArena bool
}

// snapshot returns the replica as of now; acked is -1 (and nothing to send) for an unknown or
// incomplete request. A replica with prompt pieces in the arena is pinned until done is
// called: its ranges are not given back (and written anew) while the snapshot is read.
func (s *store) snapshot(k key) (snap snapshot, done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replicas[k]
	if r == nil || !r.complete {
		return snapshot{acked: -1}, func() {}
	}
	some, all := false, true
	for _, ps := range r.prompt {
		for _, p := range ps {
			some = some || p.inArena
			all = all && p.inArena
		}
	}
	snap = snapshot{layout: r.layout, lo: r.lo, hi: r.hi, acked: r.acked, promptTokens: r.promptTokens,
		prompt: r.prompt, steps: r.steps[:len(r.steps):len(r.steps)], inArena: some && all}
	if !some {
		return snap, func() {}
	}
	r.pins++
	var once sync.Once
	return snap, func() { once.Do(func() { s.unpin(r) }) }
}

// toArena moves a put's payload into the arena when there is one with room (one copy, before
// the store's lock is taken); otherwise it stays where the frame put it.
func (s *store) toArena(p *putArgs) {
	a := s.arena.Load()
	n := int64(len(p.data))
	if a == nil || n == 0 {
		return
	}
	off, ok := a.alloc(n)
	if !ok {
		return
	}
	copy(a.mem[off:off+n], p.data)
	p.data, p.inArena, p.off = a.mem[off:off+n:off+n], true, off
}

// forget gives a dropped replica's arena ranges back, or marks it to do so at its last unpin.
// The store's lock is held.
func (s *store) forget(r *replica) {
	if r.pins > 0 {
		r.dropped = true
		return
	}
	a := s.arena.Load()
	if a == nil {
		return
	}
	for _, ps := range r.prompt {
		for _, p := range ps {
			if p.inArena {
				a.release(p.off, int64(len(p.data)))
			}
		}
	}
	r.prompt = nil
}

// ensureArena makes the arena (the size of the budget) at the first call that needs it; a
// failure is tried again at the next.
func (s *store) ensureArena() (*arena, error) {
	s.arenaMu.Lock()
	defer s.arenaMu.Unlock()
	if a := s.arena.Load(); a != nil {
		return a, nil
	}
	a, err := newArena(s.budget)
	if err != nil {
		return nil, err
	}
	s.arena.Store(a)
	return a, nil
}

// closeArena unmaps the arena (the holder is closing; readers keep their own mappings).
func (s *store) closeArena() {
	if a := s.arena.Swap(nil); a != nil {
		a.close()
	}
}

// unpin ends a pin of snapshot.
func (s *store) unpin(r *replica) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.pins--
	if r.pins == 0 && r.dropped {
		r.dropped = false
		s.forget(r)
	}
}
