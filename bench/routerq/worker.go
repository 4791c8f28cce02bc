package main

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/internal/frame"
)

// worker is a fake stage worker, one stage that is both first and last, speaking section 1 of
// docs/serving-protocol.md as the router's test fake does (serving/router/fakeworker_test.go),
// but shaped like a decoding engine with continuous batching: it holds up to slots requests
// and every step it emits one token of each; a submit while every slot is taken is answered
// "overloaded". Its capacity is slots / (max_tokens × step) requests a second, so a burst
// above that waits in the router's queue (the router runs with MaxRunning = slots).
type worker struct {
	ln    net.Listener
	slots int
	step  time.Duration

	mu        sync.Mutex
	conns     []*workerConn
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
	conn *workerConn // the router connection it came on; tokens go back there
}

// workerConn is one router connection; the reader and the step loop both write to it.
type workerConn struct {
	nc  net.Conn
	wmu sync.Mutex
	bw  *bufio.Writer
}

// Frames the worker sends. Structs, not maps: the step loop encodes thousands a second.
type (
	tokenFrame struct {
		Op      string `json:"op"`
		Request string `json:"request"`
		Step    int    `json:"step"`
		Token   int    `json:"token"`
	}
	doneFrame struct {
		Op      string `json:"op"`
		Request string `json:"request"`
		Reason  string `json:"reason"`
		Steps   int    `json:"steps"`
	}
	requestFrame struct {
		Op      string `json:"op"`
		Request string `json:"request"`
		Code    string `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	pongFrame struct {
		Op   string         `json:"op"`
		Load map[string]int `json:"load"`
	}
	helloOKFrame struct {
		Op      string `json:"op"`
		Version int    `json:"version"`
	}
	// submitFrame is the part of section 1's submit the worker reads.
	submitFrame struct {
		Request    string `json:"request"`
		MaxTokens  int    `json:"max_tokens"`
		Seed       int64  `json:"seed"`
		ResumeFrom int    `json:"resume_from"`
	}
)

// startWorker listens on a free loopback port and serves until close.
func startWorker(slots int, step time.Duration) (*worker, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &worker{ln: ln, slots: slots, step: step, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.accept()
	go w.stepLoop()
	return w, nil
}

func (w *worker) addr() string { return w.ln.Addr().String() }

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
	_ = w.ln.Close()
	for _, c := range w.conns {
		_ = c.nc.Close()
	}
	w.mu.Unlock()
	w.kick()
	<-w.done
}

func (w *worker) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) accept() {
	for {
		nc, err := w.ln.Accept()
		if err != nil {
			return
		}
		c := &workerConn{nc: nc, bw: bufio.NewWriterSize(nc, 64<<10)}
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			_ = nc.Close()
			return
		}
		w.conns = append(w.conns, c)
		w.mu.Unlock()
		go w.serve(c)
	}
}

// write sends frames in one flush.
func (c *workerConn) write(frames ...any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for _, f := range frames {
		if err := frame.Write(c.bw, f, nil); err != nil {
			return err
		}
	}
	return c.bw.Flush()
}

// serve answers one router connection: hello, pings, submits and cancels.
func (w *worker) serve(c *workerConn) {
	fr := frame.NewReader(c.nc, 0)
	h, _, err := fr.Next()
	if err != nil || h.Op != "hello" {
		_ = c.nc.Close()
		return
	}
	var hello frame.Hello
	if err := h.Decode(&hello); err != nil || hello.Role != "router" || hello.Version != frame.Version {
		_ = c.write(frame.NewError("bad_request", "unexpected hello %+v", hello))
		_ = c.nc.Close()
		return
	}
	if c.write(helloOKFrame{Op: "hello_ok", Version: frame.Version}) != nil {
		return
	}
	for {
		h, _, err := fr.Next()
		if err != nil {
			return
		}
		switch h.Op {
		case "ping":
			w.mu.Lock()
			load := map[string]int{"running": len(w.running), "waiting": 0, "kv_blocks_free": w.slots - len(w.running)}
			w.mu.Unlock()
			_ = c.write(pongFrame{Op: "pong", Load: load})
		case "submit":
			var s submitFrame
			if err := h.Decode(&s); err != nil {
				_ = c.write(frame.NewError("bad_request", "%v", err))
				_ = c.nc.Close()
				return
			}
			if !w.admit(s, c) {
				_ = c.write(requestFrame{Op: "error", Request: s.Request, Code: "overloaded", Message: "every slot is taken"})
				continue
			}
			_ = c.write(requestFrame{Op: "accepted", Request: s.Request})
		case "cancel":
			var m struct {
				Request string `json:"request"`
			}
			_ = h.Decode(&m)
			w.cancel(m.Request)
		default:
			_ = c.write(frame.NewError("bad_request", "unknown op %q", h.Op))
			_ = c.nc.Close()
			return
		}
	}
}

// admit takes s into a free slot; false when there is none.
func (w *worker) admit(s submitFrame, c *workerConn) bool {
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

func (w *worker) cancel(id string) {
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
	out := map[*workerConn][]any{}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errors.New("closed")
	}
	keep := w.running[:0]
	for _, j := range w.running {
		out[j.conn] = append(out[j.conn], tokenFrame{Op: "token", Request: j.id, Step: j.next, Token: tokenOf(j.seed, j.next)})
		j.next++
		if j.next >= j.n {
			out[j.conn] = append(out[j.conn], doneFrame{Op: "done", Request: j.id, Reason: "length", Steps: j.n})
			continue
		}
		keep = append(keep, j)
	}
	clear(w.running[len(keep):])
	w.running = keep
	w.mu.Unlock()
	for c, frames := range out {
		_ = c.write(frames...) // a broken connection: the router pauses its requests; the run reports them failed
	}
	return nil
}
