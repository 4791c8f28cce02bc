package router

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/internal/closing"
)

// Pool fronts every pipeline replica of a deployment: one Router per replica, each with its own
// stage connections, queue and failover (a replica's requests restore from its own stages'
// holders, so they stay with it), and each new completion goes to the ready replica with the
// least work (waiting + running + paused requests). It serves the same HTTP API as a Router.
//
// A replica that leaves the deployment (scaled down) takes no new requests and is closed once
// the requests it has are done, or after drainLimit. Replica 0's router exists from the start,
// so requests queue before any replica is ready, as they do with one Router.
//
// A disaggregated deployment's prefill replicas (ReplicaRoute.Pool "prefill") get routers of
// their own that serve no HTTP: each decode replica's router sends its completions' prompts to
// one of the prefill replicas that feed it (pool_prefill.go).
type Pool struct {
	opts Options

	mu       sync.Mutex
	closed   bool
	routers  map[int]*Router
	prefill  map[int]*Router // prefill replica → its router
	feeds    map[int]int     // prefill replica → the decode replica it streams prompts to
	draining []*Router
	past     Counters // of the routers closed after draining
	// pastPrefill: the same of prefill replicas' routers
	pastPrefill     Counters
	drainingPrefill []*Router
	wg              sync.WaitGroup
}

// ReplicaRoute is one replica's pipeline for SetReplicas: its stages in order, or none while
// a stage is not ready (its requests pause until the replacement is). Pool is PoolPrefill for
// a prefill replica, which streams its prompts to decode replica Feeds; prefill and decode
// replicas are numbered apart.
type ReplicaRoute struct {
	Pool    string
	Feeds   int
	Replica int
	Stages  []StageAddr
}

// drainLimit bounds how long a replica that left keeps serving the requests it has.
const drainLimit = 5 * time.Minute

// NewPool starts a pool with replica 0's router and no stages.
func NewPool(opts Options) (*Pool, error) {
	p := &Pool{opts: opts, routers: map[int]*Router{}, prefill: map[int]*Router{}, feeds: map[int]int{}}
	r, err := New(p.decodeOpts(0))
	if err != nil {
		return nil, err
	}
	p.routers[0] = r
	return p, nil
}

// SetReplicas sets every replica's pipeline: a router for each replica not seen before, the
// stages of each (Router.SetStages), and a drain for each replica no longer listed. An empty
// list changes nothing (a deployment between query answers keeps its routers).
func (p *Pool) SetReplicas(routes []ReplicaRoute) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(routes) == 0 {
		return
	}
	listed := map[int]bool{}
	var prefill []ReplicaRoute
	for _, rt := range routes {
		if rt.Pool == PoolPrefill {
			prefill = append(prefill, rt)
			continue
		}
		listed[rt.Replica] = true
		r := p.routers[rt.Replica]
		if r == nil {
			var err error
			if r, err = New(p.decodeOpts(rt.Replica)); err != nil { // only a missing model fails, and NewPool had one
				continue
			}
			p.routers[rt.Replica] = r
		}
		r.SetStages(rt.Stages)
	}
	for id, r := range p.routers {
		if !listed[id] {
			delete(p.routers, id)
			p.draining = append(p.draining, r)
			p.wg.Add(1)
			go p.drain(r, true)
		}
	}
	p.setPrefillLocked(prefill)
}

// drain closes r once it holds no request (or after drainLimit) and keeps its counters if
// count (a prefill replica's are not: its completions are counted by their decode replicas).
func (p *Pool) drain(r *Router, count bool) {
	defer p.wg.Done()
	// A completion may have picked r just before it left: give it a moment to be admitted.
	select {
	case <-r.ctx.Done():
		return
	case <-time.After(time.Second):
	}
	deadline := time.Now().Add(drainLimit)
	for time.Now().Before(deadline) {
		if _, load := r.occupancy(); load == 0 {
			break
		}
		select {
		case <-r.ctx.Done():
			return // the pool closed it
		case <-time.After(100 * time.Millisecond):
		}
	}
	c := r.Status().Counters
	_ = r.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if count {
		p.past = p.past.plus(c)
	} else {
		p.pastPrefill = p.pastPrefill.plus(c)
	}
	p.draining = slices.DeleteFunc(p.draining, func(d *Router) bool { return d == r })
	p.drainingPrefill = slices.DeleteFunc(p.drainingPrefill, func(d *Router) bool { return d == r })
}

// pick is the router a new completion goes to: a ready replica before one that is not, then
// the least work, then the lowest replica number.
func (p *Pool) pick() *Router {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *Router
	bestReady, bestLoad := false, 0
	for _, id := range p.ids() {
		r := p.routers[id]
		ready, load := r.occupancy()
		if best == nil || (ready && !bestReady) || (ready == bestReady && load < bestLoad) {
			best, bestReady, bestLoad = r, ready, load
		}
	}
	return best
}

func (p *Pool) ids() []int { return sortedIDs(p.routers) }

func sortedIDs(m map[int]*Router) []int { return slices.Sorted(maps.Keys(m)) }

// ServeHTTP sends each request to the replica pick chooses: a completion runs there to its end,
// and the models endpoints and errors are the same on every replica.
func (p *Pool) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	r := p.pick()
	if r == nil {
		writeError(w, shuttingDown(), 0)
		return
	}
	r.ServeHTTP(w, hr)
}

// Status sums the replicas' requests and counters (those of replicas drained and closed
// included), lists every replica's stages (StageStatus.Replica) and is Ready when any replica is.
func (p *Pool) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Status{Model: p.opts.Model, Counters: p.past}
	add := func(id int, r *Router) {
		st := r.Status()
		s.Ready = s.Ready || st.Ready
		s.Waiting += st.Waiting
		s.Running += st.Running
		s.Paused += st.Paused
		s.Counters = s.Counters.plus(st.Counters)
		for _, stage := range st.Stages {
			stage.Replica = id
			s.Stages = append(s.Stages, stage)
		}
	}
	for _, id := range p.ids() {
		add(id, p.routers[id])
	}
	for _, r := range p.draining {
		add(-1, r)
	}
	if len(p.prefill) > 0 || len(p.drainingPrefill) > 0 || p.pastPrefill != (Counters{}) {
		pc := p.pastPrefill
		for _, id := range sortedIDs(p.prefill) {
			st := p.prefill[id].Status()
			pc = pc.plus(st.Counters)
			for _, stage := range st.Stages {
				stage.Pool, stage.Replica = PoolPrefill, id
				s.Stages = append(s.Stages, stage)
			}
		}
		for _, r := range p.drainingPrefill {
			pc = pc.plus(r.Status().Counters)
		}
		s.Prefill = &pc
	}
	return s
}

// Close closes every replica's router (failing their open requests with a 503) and waits for
// the drains to end.
func (p *Pool) Close() error {
	if !closing.Begin(&p.mu, &p.closed) {
		return nil
	}
	all := append(slices.Clone(p.draining), p.drainingPrefill...)
	for _, r := range p.routers {
		all = append(all, r)
	}
	for _, r := range p.prefill {
		all = append(all, r)
	}
	p.routers, p.prefill = map[int]*Router{}, map[int]*Router{}
	p.mu.Unlock()
	var errs []error
	for _, r := range all {
		errs = append(errs, r.Close())
	}
	p.wg.Wait()
	return errors.Join(errs...)
}

// occupancy is whether the router can submit and how many requests it holds.
func (r *Router) occupancy() (ready bool, load int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readyLocked(), r.waiting + r.running + r.paused
}

// plus adds two routers' counters.
func (c Counters) plus(o Counters) Counters {
	return Counters{Completed: c.Completed + o.Completed, Failed: c.Failed + o.Failed, Cancelled: c.Cancelled + o.Cancelled,
		Pauses: c.Pauses + o.Pauses, Resumes: c.Resumes + o.Resumes, DroppedTokens: c.DroppedTokens + o.DroppedTokens,
		GapTokens: c.GapTokens + o.GapTokens, Reprefills: c.Reprefills + o.Reprefills}
}
