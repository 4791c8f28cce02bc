package serve

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The discrete-event simulation that checks a configuration: Poisson arrivals, a router
// that sends each request to the replica with the least work queued or running, and
// replicas that batch:
//
//   - prompts wait in one queue per pool at the router, and a replica takes the next batch of
//     them when it can (the router holds work until a replica is free, as a central queue
//     does, so one long prefill does not trap a prompt behind it);
//   - a colocated replica runs one thing at a time: a prefill batch of queued prompts when
//     any wait and memory has room (prefill first, as vLLM schedules without chunked
//     prefill), else decode iterations of every running sequence;
//   - a prompt replica prefills batches of queued prompts and streams their KV to the token
//     replica with the least work, chosen when the prefill ends;
//   - a token replica admits streamed requests at iteration boundaries and decodes.
//
// Durations come from the cost model's tables, so the simulation adds queueing and batching
// to the roofline, not another hardware model. Prompt and output lengths are fixed. Decode
// iterations between two events are advanced in one step, so a run costs a few events per
// request, not one per token.

// simPool is one pool as the simulation runs it.
type simPool struct {
	role     Role
	replicas int
	// prefill[k] is a batch of k prompts (k ≤ prefillCap), decode[n] an iteration of n
	// running sequences (n ≤ maxBatch); index 0 is unused.
	prefill, decode []float64
	transfer        float64
}

// simPoolOf tabulates p for the simulation.
func simPoolOf(p *poolModel, replicas int) simPool {
	s := simPool{role: p.role, replicas: replicas, transfer: p.transfer}
	if p.prefillCap > 0 {
		s.prefill = make([]float64, p.prefillCap+1)
		for k := 1; k <= p.prefillCap; k++ {
			s.prefill[k] = p.prefill(k)
		}
	}
	if p.maxBatch > 0 {
		s.decode = make([]float64, p.maxBatch+1)
		for n := 1; n <= p.maxBatch; n++ {
			s.decode[n] = p.decode(n)
		}
	}
	return s
}

func (s *simPool) maxBatch() int   { return max(len(s.decode)-1, 0) }
func (s *simPool) prefillCap() int { return max(len(s.prefill)-1, 0) }

// simInput is one simulation: the pools (one colocated, or prompt then token), the load and
// the output length.
type simInput struct {
	pools    []simPool
	rate     float64
	output   int
	requests int
	// warmup is how long after the first arrival the replicas take to fill: requests that
	// arrive before it (at most half of them) are left out of the percentiles.
	warmup float64
	seed   uint64
}

// request is one simulated request's times.
type request struct {
	arrive, first, done float64
}

// simulate runs in and returns the percentiles over the requests after the warm-up.
func simulate(in simInput) Latency {
	s := newSim(in)
	s.run()
	skip := 0
	for skip < in.requests/2 && s.reqs[skip].arrive-s.reqs[0].arrive < in.warmup {
		skip++
	}
	ttft := make([]float64, 0, in.requests-skip)
	tpot := make([]float64, 0, in.requests-skip)
	for _, r := range s.reqs[skip:] {
		ttft = append(ttft, r.first-r.arrive)
		if in.output > 1 {
			tpot = append(tpot, (r.done-r.first)/float64(in.output-1))
		}
	}
	return Latency{TTFTP50: percentile(ttft, 50), TTFTP99: percentile(ttft, 99),
		TPOTP50: percentile(tpot, 50), TPOTP99: percentile(tpot, 99), Requests: len(ttft)}
}

// percentile is the nearest-rank p-th percentile of xs (0 for none); it sorts xs.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(math.Ceil(p/100*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// sim is a simulation in progress.
type sim struct {
	in    simInput
	q     eventQueue
	reqs  []request
	reps  [][]replica // by pool
	queue fifo        // prompts waiting for the front pool
	rng   *rand.Rand
	nextT float64
}

func newSim(in simInput) *sim {
	s := &sim{in: in, reqs: make([]request, in.requests), rng: rand.New(rand.NewPCG(in.seed, in.seed^0x9e3779b97f4a7c15))}
	for _, p := range in.pools {
		s.reps = append(s.reps, make([]replica, p.replicas))
	}
	return s
}

func (s *sim) run() {
	s.arrival(0)
	for len(s.q.items) > 0 {
		e := s.q.pop()
		switch e.kind {
		case evArrive:
			s.reqs[e.req].arrive = e.t
			if int(e.req)+1 < s.in.requests {
				s.arrival(int(e.req) + 1)
			}
			s.arrive(e.req, e.t)
		case evKV:
			s.route(e.req, e.t)
		case evPrefilled:
			s.prefilled(int(e.pool), int(e.rep), e.t)
		case evRunEnd:
			s.runEnd(int(e.pool), int(e.rep), e.gen, e.t)
		}
	}
}

// arrival schedules request i an exponential gap after the previous one.
func (s *sim) arrival(i int) {
	s.nextT += s.rng.ExpFloat64() / s.in.rate
	s.q.push(event{t: s.nextT, kind: evArrive, req: int32(i)})
}

// arrive queues a prompt at the front pool and wakes a replica that can take it: an idle
// one, else (colocated) every decoding one with room, whichever reaches an iteration
// boundary first.
func (s *sim) arrive(req int32, now float64) {
	s.queue.push(req)
	reps := s.reps[0]
	for i := range reps {
		if reps[i].state == idle {
			s.next(0, i, now)
			return
		}
	}
	for i := range reps {
		s.poke(0, i, now)
	}
}

// route sends a streamed request to the token replica with the least work and lets it act.
func (s *sim) route(req int32, now float64) {
	reps := s.reps[1]
	best := 0
	for i := range reps {
		if reps[i].load() < reps[best].load() {
			best = i
		}
	}
	reps[best].waiting.push(req)
	s.poke(1, best, now)
}

// fifo is a queue of requests.
type fifo struct {
	items []int32
	head  int
}

func (q *fifo) push(r int32) { q.items = append(q.items, r) }
func (q *fifo) len() int     { return len(q.items) - q.head }

func (q *fifo) pop() int32 {
	r := q.items[q.head]
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return r
}
