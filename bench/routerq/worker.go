package main

import (
	"errors"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/internal/frame"
	"github.com/schooner-ml/schooner/serving/router/fakestage"
)

// worker is a fake stage worker, one stage that is both first and last, speaking section 1 of
// docs/serving-protocol.md through serving/router/fakestage as the router's test fake does,
// but shaped like a decoding engine with continuous batching: it holds up to slots requests
// and every step it emits one token of each; a submit while every slot is taken is answered
// "overloaded". Its capacity is slots / (max_tokens × step) requests a second, so a burst
// above that waits in the router's queue (the router runs with MaxRunning = slots).
type worker struct {
	srv   *fakestage.Worker
	slots int
	step  time.Duration

	mu        sync.Mutex
	running   []*job // in submit order, so a step serves them in that order
	overloads int
	closed    bool
	wake      chan struct{} // capacity 1: a job arrived or the worker closed
	done      chan struct{} // closed when the step loop has returned
}

// job is one request in a slot: the next step to emit and how many it has.
type job struct {
	id   string
	seed int64
	next int
	n    int
	conn *fakestage.Conn // the router connection it came on; tokens go back there
}

// startWorker listens on a free loopback port and serves until close.
func startWorker(slots int, step time.Duration) (*worker, error) {
	srv, err := fakestage.Listen()
	if err != nil {
		return nil, err
	}
	w := &worker{srv: srv, slots: slots, step: step, wake: make(chan struct{}, 1), done: make(chan struct{})}
	srv.Serve(w)
	go w.stepLoop()
	return w, nil
}

func (w *worker) addr() string { return w.srv.Addr() }

// overloaded is how many submits found every slot taken.
func (w *worker) overloaded() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.overloads
}

// close stops the worker: listener, connections and step loop.
func (w *worker) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	w.srv.Close()
	w.kick()
	<-w.done
}

func (w *worker) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Load reports the slots taken and free, for a pong.
func (w *worker) Load() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return map[string]int{"running": len(w.running), "waiting": 0, "kv_blocks_free": w.slots - len(w.running)}
}

// Submit takes the request into a free slot, or answers "overloaded" when there is none.
func (w *worker) Submit(c *fakestage.Conn, h frame.Header) error {
	var s fakestage.Submit
	if err := h.Decode(&s); err != nil {
		return err
	}
	if !w.admit(s, c) {
		_ = c.Write(fakestage.RequestError(s.Request, "overloaded", "every slot is taken"))
		return nil
	}
	_ = c.Write(fakestage.Accepted(s.Request))
	return nil
}

// admit takes s into a free slot; false when there is none.
func (w *worker) admit(s fakestage.Submit, c *fakestage.Conn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.running) >= w.slots {
		w.overloads++
		return false
	}
	w.running = append(w.running, &job{id: s.Request, seed: s.Seed, next: s.ResumeFrom, n: s.MaxTokens, conn: c})
	w.kick()
	return true
}

// Cancel frees the request's slot.
func (w *worker) Cancel(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, j := range w.running {
		if j.id == id {
			w.running = append(w.running[:i], w.running[i+1:]...)
			return
		}
	}
}

// tokenOf is the fake model: a lowercase letter that depends only on (seed, step), so a
// request's text is known in advance.
func tokenOf(seed int64, k int) int { return 'a' + int((uint64(seed)*31+uint64(k))%26) }

// stepLoop is the engine: while any slot is taken it runs one decode step every w.step (on a
// fixed cadence, so a slow step does not shift the later ones), emitting one token of every
// running request and "done" for those that reached max_tokens. A finished request's slot is
// free before its "done" leaves, so the router never dispatches into a full worker.
func (w *worker) stepLoop() {
	defer close(w.done)
	var next time.Time
	for {
		w.mu.Lock()
		closed, idle := w.closed, len(w.running) == 0
		w.mu.Unlock()
		if closed {
			return
		}
		if idle {
			<-w.wake
			next = time.Time{}
			continue
		}
		now := time.Now()
		if next.IsZero() || now.Sub(next) > w.step {
			next = now.Add(w.step) // idle before, or fell more than a step behind: restart the cadence
		}
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		next = next.Add(w.step)
		if err := w.runStep(); err != nil {
			return
		}
	}
}

// runStep emits one token of every running job and retires the finished ones.
func (w *worker) runStep() error {
	out := map[*fakestage.Conn][]any{}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errors.New("closed")
	}
	keep := w.running[:0]
	for _, j := range w.running {
		out[j.conn] = append(out[j.conn], fakestage.NewToken(j.id, j.next, tokenOf(j.seed, j.next)))
		j.next++
		if j.next >= j.n {
			out[j.conn] = append(out[j.conn], fakestage.NewDone(j.id, "length", j.n))
			continue
		}
		keep = append(keep, j)
	}
	clear(w.running[len(keep):])
	w.running = keep
	w.mu.Unlock()
	for c, frames := range out {
		_ = c.Write(frames...) // a broken connection: the router pauses its requests; the run reports them failed
	}
	return nil
}
