package serve

import "math"

// replica is one pipeline replica in the simulation.
type replica struct {
	waiting  fifo // a token replica's streamed requests
	running  int
	finish   finishHeap
	iter     int64 // decode iterations done
	state    uint8
	batch    []int32 // the prefill in progress
	runStart float64
	runDT    float64
	runSteps int64
	gen      uint32
}

const (
	idle uint8 = iota
	prefilling
	decoding
)

// load is what the router compares for a token replica: requests queued or decoding.
func (r *replica) load() int { return r.waiting.len() + r.running }

// admit starts decoding req after the current iteration: its last token comes output−1
// iterations on.
func (s *sim) admit(r *replica, req int32) {
	r.running++
	r.finish.push(finishing{iter: r.iter + int64(s.in.output-1), req: req})
}

// poke tells a replica new work is queued: an idle one starts, a decoding one that could
// take it cuts its run short at the next iteration boundary.
func (s *sim) poke(pool, rep int, now float64) {
	r := &s.reps[pool][rep]
	p := &s.in.pools[pool]
	switch {
	case r.state == idle:
		s.next(pool, rep, now)
	case r.state == decoding && r.running < p.maxBatch():
		j := int64(math.Floor((now-r.runStart)/r.runDT)) + 1
		if j < r.runSteps {
			r.runSteps = j
			r.gen++
			s.q.push(event{t: r.runStart + float64(j)*r.runDT, kind: evRunEnd, pool: uint8(pool), rep: int32(rep), gen: r.gen})
		}
	}
}

// next decides what an idle replica does.
func (s *sim) next(pool, rep int, now float64) {
	r := &s.reps[pool][rep]
	p := &s.in.pools[pool]
	r.state = idle
	switch p.role {
	case RoleToken:
		for r.waiting.len() > 0 && r.running < p.maxBatch() {
			s.admit(r, r.waiting.pop())
		}
	case RolePrompt, RoleBoth:
		room := s.queue.len()
		if p.role == RoleBoth {
			room = min(room, p.maxBatch()-r.running)
		}
		if k := min(room, p.prefillCap()); k > 0 {
			for range k {
				r.batch = append(r.batch, s.queue.pop())
			}
			r.state = prefilling
			s.q.push(event{t: now + p.prefill[k], kind: evPrefilled, pool: uint8(pool), rep: int32(rep)})
			return
		}
	}
	if r.running == 0 {
		return
	}
	r.state = decoding
	r.runStart, r.runDT = now, p.decode[r.running]
	r.runSteps = r.finish[0].iter - r.iter
	r.gen++
	s.q.push(event{t: now + float64(r.runSteps)*r.runDT, kind: evRunEnd, pool: uint8(pool), rep: int32(rep), gen: r.gen})
}

// prefilled ends a prefill batch: its first tokens are out; a colocated replica decodes the
// rest itself, a prompt replica streams the KV to the token pool.
func (s *sim) prefilled(pool, rep int, now float64) {
	r := &s.reps[pool][rep]
	p := &s.in.pools[pool]
	for _, req := range r.batch {
		s.reqs[req].first = now
		switch {
		case s.in.output <= 1:
			s.reqs[req].done = now
		case p.role == RoleBoth:
			s.admit(r, req)
		default:
			s.q.push(event{t: now + p.transfer, kind: evKV, req: req})
		}
	}
	r.batch = r.batch[:0]
	s.next(pool, rep, now)
}

// runEnd ends a run of decode iterations (unless a poke replaced it): the sequences whose
// last token it produced are done.
func (s *sim) runEnd(pool, rep int, gen uint32, now float64) {
	r := &s.reps[pool][rep]
	if gen != r.gen || r.state != decoding {
		return
	}
	r.iter += r.runSteps
	for len(r.finish) > 0 && r.finish[0].iter <= r.iter {
		f := r.finish.pop()
		s.reqs[f.req].done = now
		r.running--
	}
	s.next(pool, rep, now)
}
