package router

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/internal/frame"
)

// stageConn is the router's connection to the first or the last stage (or both, with one).
type stageConn struct {
	stage int    // index in the stages it was dialled for
	role  string // roleOf(stage, depth)
	addr  string
	nc    net.Conn
	fr    *frame.Reader

	wmu       sync.Mutex
	closed    chan struct{}
	closeOnce sync.Once
}

// roleOf is what the router uses stage i of n for: "first", "last", "first+last" or nothing.
func roleOf(i, n int) string {
	switch {
	case n == 1 && i == 0:
		return "first+last"
	case i == 0:
		return "first"
	case i == n-1:
		return "last"
	}
	return ""
}

func (c *stageConn) close() {
	c.closeOnce.Do(func() {
		close(c.closed)
		_ = c.nc.Close()
	})
}

// send writes one frame; a failure closes the connection, so its reader reports the loss.
func (c *stageConn) send(header any, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	if err := frame.Write(c.nc, header, nil); err != nil {
		c.close()
		return fmt.Errorf("sending to stage %d at %s: %w", c.stage, c.addr, err)
	}
	return nil
}

type cancelMsg struct {
	Op      string `json:"op"`
	Request string `json:"request"`
}

type pingMsg struct {
	Op string `json:"op"`
}

// Messages from a stage.
type (
	tokenMsg struct {
		Request string `json:"request"`
		Step    int    `json:"step"`
		Token   int    `json:"token"`
	}
	doneMsg struct {
		Request string `json:"request"`
		Reason  string `json:"reason"`
		Steps   int    `json:"steps"`
	}
	errorMsg struct {
		Request string `json:"request"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	pongMsg struct {
		Load Load `json:"load"`
	}
	helloOK struct {
		Version int `json:"version"`
	}
)

// dial connects to stage i at addr and exchanges hellos.
func (r *Router) dial(ctx context.Context, i, n int, addr string) (*stageConn, error) {
	network, a := "tcp", addr
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, a = "unix", p
	}
	d := net.Dialer{Timeout: r.opts.DialTimeout}
	nc, err := d.DialContext(ctx, network, a)
	if err != nil {
		return nil, fmt.Errorf("dialling stage %d at %s: %w", i, addr, err)
	}
	c := &stageConn{stage: i, role: roleOf(i, n), addr: addr, nc: nc, fr: frame.NewReader(nc, 0), closed: make(chan struct{})}
	_ = nc.SetDeadline(time.Now().Add(r.opts.DialTimeout))
	err = frame.Write(nc, frame.Hello{Op: "hello", Role: "router", Deployment: r.opts.Deployment, Stage: i, Version: frame.Version}, nil)
	if err == nil {
		err = readHelloOK(c.fr)
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("greeting stage %d at %s: %w", i, addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

func readHelloOK(fr *frame.Reader) error {
	h, _, err := fr.Next()
	if err != nil {
		return err
	}
	switch h.Op {
	case "hello_ok":
		var ok helloOK
		if err := h.Decode(&ok); err != nil {
			return err
		}
		if ok.Version != frame.Version {
			return fmt.Errorf("stage speaks version %d, router %d", ok.Version, frame.Version)
		}
		return nil
	case "error":
		var e frame.Error
		if err := h.Decode(&e); err != nil {
			return err
		}
		return e
	}
	return fmt.Errorf("expected hello_ok, got %q", h.Op)
}

// connectLoop keeps the router connected to the first and last stages of the current
// pipeline, retrying with backoff, and resumes paused requests once both are up.
func (r *Router) connectLoop() {
	defer r.wg.Done()
	backoff := r.opts.ReconnectBackoff
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	for {
		select {
		case <-r.ctx.Done():
			retry.Stop()
			return
		case <-r.kickConnect:
		case <-retry.C:
		}
		if r.connectOnce() {
			backoff = r.opts.ReconnectBackoff
			continue
		}
		retry.Reset(backoff)
		backoff = min(2*backoff, 20*r.opts.ReconnectBackoff)
	}
}

// connectOnce dials what is missing; true when the pipeline is complete (or empty).
func (r *Router) connectOnce() bool {
	r.mu.Lock()
	stages, epoch := slices0(r.stages), r.epoch
	n := len(stages)
	var want []int
	if n > 0 && r.first == nil {
		want = append(want, 0)
	}
	if n > 1 && r.last == nil {
		want = append(want, n-1)
	}
	for _, i := range want {
		r.info[i].State = ConnConnecting
	}
	r.mu.Unlock()

	ok := true
	for _, i := range want {
		c, err := r.dial(r.ctx, i, n, stages[i].Addr)
		r.mu.Lock()
		if r.epoch != epoch || r.closed {
			r.mu.Unlock()
			if c != nil {
				c.close()
			}
			return false // the stages changed meanwhile: kicked again
		}
		if err != nil {
			r.info[i] = stageInfo{State: ConnDown, Since: time.Now(), LastError: err.Error()}
			r.mu.Unlock()
			r.opts.Log.Warn().Err(err).Msg("router: stage unreachable")
			ok = false
			continue
		}
		if i == 0 {
			r.first = c
		}
		if i == n-1 {
			r.last = c
		}
		r.info[i] = stageInfo{State: ConnConnected, Since: time.Now()}
		r.wg.Add(2)
		go r.readLoop(c)
		go r.pingLoop(c)
		r.mu.Unlock()
		r.opts.Log.Info().Int("stage", i).Str("addr", c.addr).Msg("router: stage connected")
	}
	if !ok {
		return false
	}
	r.mu.Lock()
	if !r.readyLocked() {
		r.mu.Unlock()
		return n == 0
	}
	msgs, c := r.resumeLocked(), r.first
	r.mu.Unlock()
	for _, m := range msgs {
		if c.send(m, r.writeTimeout()) != nil {
			break // its reader pauses them again
		}
	}
	r.kick(r.kickDispatch)
	return true
}

func slices0(s []StageAddr) []StageAddr { return append([]StageAddr(nil), s...) }

func (r *Router) writeTimeout() time.Duration { return 3 * r.opts.PingInterval }

// readLoop handles a stage's frames until the connection fails or goes silent for three
// ping intervals, then pauses what was running.
func (r *Router) readLoop(c *stageConn) {
	defer r.wg.Done()
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(3 * r.opts.PingInterval))
		h, _, err := c.fr.Next()
		if err != nil {
			r.connLost(c, err)
			return
		}
		resend, err := r.handleFrame(c, h)
		if resend != nil {
			r.resubmit(*resend)
		}
		if err != nil {
			_ = c.send(frame.NewError("bad_request", "%v", err), r.writeTimeout())
			r.connLost(c, err)
			return
		}
	}
}

func (r *Router) pingLoop(c *stageConn) {
	defer r.wg.Done()
	t := time.NewTicker(r.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
			if c.send(pingMsg{Op: "ping"}, r.writeTimeout()) != nil {
				return
			}
		}
	}
}

// connLost retires c; if it was current, the requests in flight pause until the pipeline is
// whole again.
func (r *Router) connLost(c *stageConn, err error) {
	c.close()
	r.mu.Lock()
	current := false
	if r.first == c {
		r.first, current = nil, true
	}
	if r.last == c {
		r.last, current = nil, true
	}
	if current {
		if c.stage < len(r.info) {
			r.info[c.stage] = stageInfo{State: ConnDown, Since: time.Now(), LastError: err.Error()}
		}
		r.pauseRunningLocked(fmt.Sprintf("lost stage %d at %s: %v", c.stage, c.addr, err))
	}
	r.mu.Unlock()
	if current && !errors.Is(r.ctx.Err(), context.Canceled) {
		r.opts.Log.Warn().Err(err).Int("stage", c.stage).Str("addr", c.addr).Msg("router: stage connection lost")
		r.kick(r.kickConnect)
	}
}

// resubmit sends a submit to the current first stage; a failed send pauses the request with
// the others of the lost connection.
func (r *Router) resubmit(m submitMsg) {
	r.mu.Lock()
	c := r.first
	r.mu.Unlock()
	if c != nil {
		_ = c.send(m, r.writeTimeout())
	}
}

// handleFrame applies one frame of a stage; an error is a protocol violation. A non-nil
// submit is to be sent to the first stage (a resubmission the frame asked for).
func (r *Router) handleFrame(c *stageConn, h frame.Header) (*submitMsg, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.handleFrameLocked(c, h)
}

// inFlightLocked is the request a stage's frame names, or nil when it is unknown or no
// longer in flight (cancelled or finished while the frame was on its way).
func (r *Router) inFlightLocked(id string) *request {
	if q := r.reqs[id]; q != nil && q.inFlight() {
		return q
	}
	return nil
}

func (r *Router) handleFrameLocked(c *stageConn, h frame.Header) (*submitMsg, error) {
	if c != r.first && c != r.last {
		return nil, nil // a retired connection's last words
	}
	switch h.Op {
	case "accepted":
		return nil, nil
	case "pong":
		var m pongMsg
		if err := h.Decode(&m); err != nil {
			return nil, err
		}
		if c.stage < len(r.info) {
			l := m.Load
			r.info[c.stage].Load = &l
		}
	case "token":
		var m tokenMsg
		if err := h.Decode(&m); err != nil {
			return nil, err
		}
		q := r.inFlightLocked(m.Request)
		if q == nil {
			return nil, nil // cancelled or finished meanwhile
		}
		switch {
		case m.Step < len(q.tokens):
			r.counters.DroppedTokens++ // replayed by a resumed worker
		case m.Step > len(q.tokens) || m.Step >= q.maxTokens:
			r.counters.GapTokens++
			r.opts.Log.Error().Str("request", q.id).Int("step", m.Step).Int("have", len(q.tokens)).
				Msg("router: token out of order dropped")
		default:
			q.tokens = append(q.tokens, m.Token)
			q.wake()
		}
	case "done":
		var m doneMsg
		if err := h.Decode(&m); err != nil {
			return nil, err
		}
		q := r.inFlightLocked(m.Request)
		if q == nil {
			return nil, nil
		}
		if m.Reason == "cancelled" {
			r.finishLocked(q, "", &APIError{Status: http.StatusServiceUnavailable, Type: typeServer,
				Code: strp("cancelled_by_worker"), Message: "the worker cancelled the request"})
			return nil, nil
		}
		if m.Steps != len(q.tokens) {
			r.opts.Log.Error().Str("request", q.id).Int("steps", m.Steps).Int("have", len(q.tokens)).
				Msg("router: done does not match the tokens delivered")
		}
		r.finishLocked(q, m.Reason, nil)
	case "error":
		var m errorMsg
		if err := h.Decode(&m); err != nil {
			return nil, err
		}
		if m.Request == "" {
			// A connection-level error: the stage closes the connection after it.
			r.opts.Log.Error().Str("code", m.Code).Str("message", m.Message).Int("stage", c.stage).Msg("router: stage error")
			return nil, nil
		}
		q := r.reqs[m.Request]
		if q == nil || q.state != stateRunning {
			return nil, nil
		}
		if m.Code == codeRestoreFailed && q.resumeMode != resumeReprefill && len(q.tokens) > 0 {
			// The stages could not restore the request's KV cache (no complete replica):
			// resubmit it once to be recomputed from prompt + generated.
			r.counters.Reprefills++
			q.resumeMode = resumeReprefill
			r.opts.Log.Warn().Str("request", q.id).Str("message", m.Message).Msg("router: restore failed, re-prefilling")
			sub := q.submitLocked(r.routeLocked())
			return &sub, nil
		}
		if m.Code == "overloaded" {
			// Back into the queue at its place; retry after a finish or a short wait.
			r.setStateLocked(q, stateWaiting)
			r.waiting++
			r.opts.Queue.Push(Item{Key: q.key, Value: q})
			if !r.busy {
				r.busy = true
				time.AfterFunc(r.opts.ReconnectBackoff, func() {
					r.mu.Lock()
					r.busy = false
					r.mu.Unlock()
					r.kick(r.kickDispatch)
				})
			}
			return nil, nil
		}
		r.finishLocked(q, "", &APIError{Status: http.StatusBadRequest, Type: typeInvalid, Code: strp(m.Code),
			Message: "the worker refused the request: " + m.Message})
	default:
		return nil, fmt.Errorf("unknown op %q", h.Op)
	}
	return nil, nil
}
