package router

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/internal/closing"
)

// Router is the front end of one serving deployment. It is an http.Handler; SetStages tells
// it where the pipeline's workers are, Status reports what it is doing, Close stops it.
type Router struct {
	opts Options

	ctx    context.Context // cancelled by Close: dials and loops end
	cancel context.CancelFunc
	wg     sync.WaitGroup

	kickDispatch chan struct{}
	kickConnect  chan struct{}

	mu       sync.Mutex
	closed   bool
	stages   []StageAddr
	info     []stageInfo
	epoch    uint64     // bumped by every change of stages
	first    *stageConn // submits and cancels go here
	last     *stageConn // tokens come from here (== first with one stage)
	reqs     map[string]*request
	waiting  int // live requests in the queue (it may also hold cancelled ones)
	running  int
	paused   int
	busy     bool // the first stage answered "overloaded": wait for a finish or a retry
	counters Counters
}

// New starts a router with no stages: requests queue until SetStages names them.
func New(opts Options) (*Router, error) {
	if opts.Model == "" {
		return nil, errors.New("creating router: a model id is required")
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Router{
		opts:         opts.withDefaults(),
		ctx:          ctx,
		cancel:       cancel,
		kickDispatch: make(chan struct{}, 1),
		kickConnect:  make(chan struct{}, 1),
		reqs:         map[string]*request{},
	}
	r.wg.Add(2)
	go r.dispatchLoop()
	go r.connectLoop()
	return r, nil
}

// Close fails every request still open with a 503, closes the stage connections and stops.
// Stop the HTTP server first so no request arrives meanwhile.
func (r *Router) Close() error {
	if !closing.Begin(&r.mu, &r.closed) {
		return nil
	}
	for _, q := range r.reqs {
		r.finishLocked(q, "", shuttingDown())
	}
	conns := []*stageConn{r.first, r.last}
	r.first, r.last = nil, nil
	r.mu.Unlock()
	for _, c := range conns {
		if c != nil {
			c.close()
		}
	}
	r.cancel()
	r.wg.Wait()
	if c, ok := r.opts.Queue.(interface{ Close() }); ok {
		c.Close()
	}
	return nil
}

// SetStages sets the deployment's pipeline, first stage to last. Connections to stages
// whose address and place are unchanged are kept. Any change pauses the requests in flight:
// once the router is connected to the new first and last stages it resubmits them with
// resume_from, so a replacement continues them. Calling it with an unchanged list makes the
// router retry broken connections at once.
func (r *Router) SetStages(stages []StageAddr) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	if slices.Equal(stages, r.stages) {
		r.mu.Unlock()
		r.kick(r.kickConnect)
		return
	}
	r.opts.Log.Info().Interface("stages", stages).Msg("router: stages changed")
	r.stages = slices.Clone(stages)
	r.info = make([]stageInfo, len(stages))
	for i := range r.info {
		r.info[i].Since = time.Now()
	}
	r.epoch++
	var drop []*stageConn
	keep := func(c *stageConn) *stageConn {
		if c == nil {
			return nil
		}
		if c.stage < len(stages) && stages[c.stage].Addr == c.addr && roleOf(c.stage, len(stages)) == c.role {
			return c
		}
		drop = append(drop, c)
		return nil
	}
	r.first, r.last = keep(r.first), keep(r.last)
	r.pauseRunningLocked("the pipeline changed")
	r.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
	r.kick(r.kickConnect)
}

// routeLocked is the current stages' worker addresses, stage 0 first.
func (r *Router) routeLocked() []string {
	route := make([]string, len(r.stages))
	for i, s := range r.stages {
		route[i] = s.Addr
	}
	return route
}

func (r *Router) kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// readyLocked: the router can submit and receive tokens.
func (r *Router) readyLocked() bool { return r.first != nil && r.last != nil }

// admit queues a new request, or says why not. A request the prompt pool has already
// prefilled (q.expect) is queued past MaxQueue: refusing it would leave its prompt's replica on
// the holder with no one to drop it (roomFor checked the bound before its prefill).
func (r *Router) admit(q *request) *APIError {
	r.mu.Lock()
	defer r.mu.Unlock()
	if aerr := r.roomLocked(); aerr != nil && (aerr.Status != http.StatusTooManyRequests || !q.expect) {
		return aerr
	}
	if r.opts.Queue.Len() >= r.opts.MaxQueue {
		r.compactLocked()
	}
	r.reqs[q.id] = q
	q.state = stateWaiting
	r.waiting++
	r.opts.Queue.Push(Item{Key: q.key, Value: q})
	r.kick(r.kickDispatch)
	return nil
}

// roomLocked says why a new request cannot be queued now, or nil.
func (r *Router) roomLocked() *APIError {
	if r.closed {
		return shuttingDown()
	}
	if r.waiting >= r.opts.MaxQueue {
		return &APIError{Status: http.StatusTooManyRequests, Type: typeRateLimit, Code: strp(codeQueueFull),
			Message: fmt.Sprintf("the request queue is full (%d waiting); retry later", r.waiting)}
	}
	return nil
}

// compactLocked drops cancelled requests from the queue, which only offers Pop.
func (r *Router) compactLocked() {
	var live []Item
	for {
		it, ok := r.opts.Queue.Pop()
		if !ok {
			break
		}
		if it.Value.(*request).state == stateWaiting {
			live = append(live, it)
		}
	}
	for _, it := range live {
		r.opts.Queue.Push(it)
	}
}

// dispatchLoop submits queued requests to the first stage while it can take them.
func (r *Router) dispatchLoop() {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.kickDispatch:
		}
		for r.dispatchOne() {
		}
	}
}

func (r *Router) dispatchOne() bool {
	r.mu.Lock()
	if r.closed || !r.readyLocked() || r.busy || (r.opts.MaxRunning > 0 && r.running >= r.opts.MaxRunning) {
		r.mu.Unlock()
		return false
	}
	var q *request
	for q == nil {
		it, ok := r.opts.Queue.Pop()
		if !ok {
			r.mu.Unlock()
			return false
		}
		if c := it.Value.(*request); c.state == stateWaiting {
			q = c
		}
	}
	r.waiting--
	r.setStateLocked(q, stateRunning)
	msg, c := q.submitLocked(r.routeLocked()), r.first
	r.mu.Unlock()
	if f := r.opts.OnDispatch; f != nil {
		f(q.id, time.Since(q.created))
	}
	// A failed send closes c; its reader then pauses q with every other running request.
	_ = c.send(msg, r.writeTimeout())
	return true
}

// setStateLocked moves q between the counted states.
func (r *Router) setStateLocked(q *request, s reqState) {
	switch q.state {
	case stateRunning:
		r.running--
	case statePaused:
		r.paused--
		if q.pauseTimer != nil {
			q.pauseTimer.Stop()
			q.pauseTimer = nil
		}
	}
	q.state = s
	switch s {
	case stateRunning:
		r.running++
	case statePaused:
		r.paused++
	}
}

// pauseRunningLocked pauses every request in flight: its pipeline is gone or changing.
func (r *Router) pauseRunningLocked(why string) {
	n := 0
	for _, q := range r.reqs {
		if q.state != stateRunning {
			continue
		}
		r.setStateLocked(q, statePaused)
		q.resumeMode = "" // a new pipeline: let it restore again
		q.pauseSeq++
		seq := q.pauseSeq
		q.pauseTimer = time.AfterFunc(r.opts.PauseLimit, func() { r.pauseExpired(q, seq) })
		n++
	}
	if n > 0 {
		r.counters.Pauses += uint64(n)
		r.opts.Log.Warn().Int("requests", n).Str("why", why).Msg("router: requests paused")
	}
	r.busy = false
}

func (r *Router) pauseExpired(q *request, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q.state != statePaused || q.pauseSeq != seq {
		return
	}
	r.finishLocked(q, "", &APIError{Status: http.StatusServiceUnavailable, Type: typeServer, Code: strp(codeWorkerLost),
		Message: fmt.Sprintf("the worker serving this request was lost and no replacement took it over within %s", r.opts.PauseLimit)})
}

// resumeLocked resubmits every paused request, oldest first; the caller sends the messages.
func (r *Router) resumeLocked() []submitMsg {
	var qs []*request
	for _, q := range r.reqs {
		if q.state == statePaused {
			qs = append(qs, q)
		}
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].key < qs[j].key })
	msgs := make([]submitMsg, 0, len(qs))
	for _, q := range qs {
		r.setStateLocked(q, stateRunning)
		msgs = append(msgs, q.submitLocked(r.routeLocked()))
	}
	if len(msgs) > 0 {
		r.counters.Resumes += uint64(len(msgs))
		r.opts.Log.Info().Int("requests", len(msgs)).Msg("router: requests resumed")
	}
	return msgs
}

// finishLocked ends q with a finish reason or an error and wakes its HTTP handler.
func (r *Router) finishLocked(q *request, reason string, err *APIError) {
	if q.state == stateDone {
		return
	}
	if q.state == stateWaiting {
		r.waiting-- // stays in the queue as a tombstone
	}
	r.setStateLocked(q, stateDone)
	q.reason, q.err = reason, err
	delete(r.reqs, q.id)
	switch {
	case err != nil:
		r.counters.Failed++
	case reason == "cancelled":
		r.counters.Cancelled++
	default:
		r.counters.Completed++
	}
	r.busy = false
	r.kick(r.kickDispatch)
	q.wake()
}

// cancelRequest ends q for its client (gone) and tells the worker.
func (r *Router) cancelRequest(q *request) {
	r.mu.Lock()
	if q.state == stateDone {
		r.mu.Unlock()
		return
	}
	inFlight := q.inFlight()
	r.finishLocked(q, "cancelled", nil)
	c := r.first
	r.mu.Unlock()
	if inFlight && c != nil {
		_ = c.send(cancelMsg{Op: "cancel", Request: q.id}, r.writeTimeout())
	}
}

// snapshot returns q's tokens from step `from` on and whether q has ended.
func (r *Router) snapshot(q *request, from int) (toks []int, done bool, reason string, err *APIError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if from < len(q.tokens) {
		toks = append(toks, q.tokens[from:]...)
	}
	return toks, q.state == stateDone, q.reason, q.err
}

// shuttingDown is the 503 of a request that arrives at, or is still open in, a router that is
// closing.
func shuttingDown() *APIError {
	return &APIError{Status: http.StatusServiceUnavailable, Type: typeServer, Code: strp("shutting_down"),
		Message: "the router is shutting down"}
}
