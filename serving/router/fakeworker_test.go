package router_test

import (
	"hash/fnv"
	"net"
	"sync"
	"testing"

	"github.com/schooner-ml/schooner/internal/frame"
)

// tokenAt is the fake model: token k of a request is a lowercase letter that depends only on
// (prompt, seed, k), as section 1 requires of a real worker.
func tokenAt(prompt []int, seed int64, k int) int {
	h := fnv.New64a()
	for _, t := range prompt {
		h.Write([]byte{byte(t), byte(t >> 8)})
	}
	var b [16]byte
	for i := range 8 {
		b[i] = byte(seed >> (8 * i))
		b[8+i] = byte(k >> (8 * i))
	}
	h.Write(b[:])
	return 'a' + int(h.Sum64()%26)
}

func expectedText(prompt string, seed int64, n int) string {
	p := []int{}
	for i := 0; i < len(prompt); i++ {
		p = append(p, int(prompt[i]))
	}
	out := make([]byte, n)
	for k := range n {
		out[k] = byte(tokenAt(p, seed, k))
	}
	return string(out)
}

// submitFrame is section 1's submit as the fake reads it.
type submitFrame struct {
	Request     string   `json:"request"`
	Prompt      []int    `json:"prompt"`
	MaxTokens   int      `json:"max_tokens"`
	Temperature float64  `json:"temperature"`
	Seed        int64    `json:"seed"`
	ResumeFrom  int      `json:"resume_from"`
	Generated   []int    `json:"generated"`
	ResumeMode  string   `json:"resume_mode"`
	Route       []string `json:"route"`
}

// fakeWorker speaks section 1 over TCP. With role "first+last" it is a whole one-stage
// deployment; a "first" fake hands each submit to its peer, a "last" fake, which emits the
// tokens on its own router connection.
type fakeWorker struct {
	t    *testing.T
	role string
	ln   net.Listener
	peer *fakeWorker // the last stage, for a "first" fake

	mu            sync.Mutex
	conns         []*fakeConn
	submits       []submitFrame
	cancels       []string
	hellos        []frame.Hello
	hold          int           // generate steps < hold, then wait for release
	release       chan struct{} // closed: generate the rest
	replay        int           // a resumed request re-sends this many earlier steps
	stopAfter     int           // > 0: finish with "stop" after this many tokens
	overloadFirst int           // answer "overloaded" to this many submits
	noReplica     bool          // answer "restore_failed" to a resubmit that does not re-prefill
	stopped       map[string]chan struct{}
	tokensSent    int
	killed        bool
}

type fakeConn struct {
	nc  net.Conn
	wmu sync.Mutex
}

func (c *fakeConn) write(h any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return frame.Write(c.nc, h, nil)
}

func startFake(t *testing.T, role string) *fakeWorker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeWorker{t: t, role: role, ln: ln, release: make(chan struct{}), stopped: map[string]chan struct{}{}}
	go f.accept()
	t.Cleanup(f.kill)
	return f
}

func (f *fakeWorker) addr() string { return f.ln.Addr().String() }

// kill is the machine going away: listener and connections close, generation stops.
func (f *fakeWorker) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killed {
		return
	}
	f.killed = true
	_ = f.ln.Close()
	for _, c := range f.conns {
		_ = c.nc.Close()
	}
	for _, ch := range f.stopped {
		close(ch)
	}
	f.stopped = map[string]chan struct{}{}
}

func (f *fakeWorker) accept() {
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		c := &fakeConn{nc: nc}
		f.mu.Lock()
		if f.killed {
			f.mu.Unlock()
			_ = nc.Close()
			return
		}
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		go f.serve(c)
	}
}

// routerConn is the fake's latest router connection, where a last stage sends tokens.
func (f *fakeWorker) routerConn() *fakeConn {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.conns) == 0 {
		return nil
	}
	return f.conns[len(f.conns)-1]
}

func (f *fakeWorker) serve(c *fakeConn) {
	fr := frame.NewReader(c.nc, 0)
	h, _, err := fr.Next()
	if err != nil || h.Op != "hello" {
		_ = c.nc.Close()
		return
	}
	var hello frame.Hello
	_ = h.Decode(&hello)
	f.mu.Lock()
	f.hellos = append(f.hellos, hello)
	f.mu.Unlock()
	if hello.Role != "router" || hello.Version != frame.Version {
		_ = c.write(frame.NewError("bad_request", "unexpected hello %+v", hello))
		_ = c.nc.Close()
		return
	}
	if c.write(map[string]any{"op": "hello_ok", "version": frame.Version}) != nil {
		return
	}
	for {
		h, _, err := fr.Next()
		if err != nil {
			return
		}
		switch h.Op {
		case "ping":
			_ = c.write(map[string]any{"op": "pong", "load": map[string]int{"running": 0, "waiting": 0, "kv_blocks_free": 100}})
		case "submit":
			var s submitFrame
			if err := h.Decode(&s); err != nil {
				f.t.Errorf("fake: %v", err)
				return
			}
			f.mu.Lock()
			f.submits = append(f.submits, s)
			overload := f.overloadFirst > 0
			if overload {
				f.overloadFirst--
			}
			f.mu.Unlock()
			if overload {
				_ = c.write(map[string]any{"op": "error", "request": s.Request, "code": "overloaded", "message": "full"})
				continue
			}
			f.mu.Lock()
			noReplica := f.noReplica
			f.mu.Unlock()
			if noReplica && s.ResumeFrom > 0 && s.ResumeMode != "reprefill" {
				_ = c.write(map[string]any{"op": "accepted", "request": s.Request})
				_ = c.write(map[string]any{"op": "error", "request": s.Request, "code": "restore_failed", "message": "no replica"})
				continue
			}
			_ = c.write(map[string]any{"op": "accepted", "request": s.Request})
			gen := f
			if f.role == "first" {
				f.mu.Lock()
				gen = f.peer
				f.mu.Unlock()
			}
			go gen.generate(s)
		case "cancel":
			var m struct {
				Request string `json:"request"`
			}
			_ = h.Decode(&m)
			f.mu.Lock()
			f.cancels = append(f.cancels, m.Request)
			f.mu.Unlock()
			f.stop(m.Request)
			f.mu.Lock()
			peer := f.peer
			f.mu.Unlock()
			if peer != nil {
				peer.stop(m.Request)
			}
		default:
			_ = c.write(frame.NewError("bad_request", "unknown op %q", h.Op))
			_ = c.nc.Close()
			return
		}
	}
}

func (f *fakeWorker) stop(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.stopped[id]; ok {
		close(ch)
		delete(f.stopped, id)
	}
}

// generate emits the request's tokens from resume_from (minus replay) on, on this fake's
// router connection; it checks that a resumption carries the tokens the fake model makes.
func (f *fakeWorker) generate(s submitFrame) {
	f.mu.Lock()
	stop := make(chan struct{})
	if old, ok := f.stopped[s.Request]; ok {
		close(old) // a resubmission replaces the request
	}
	f.stopped[s.Request] = stop
	hold, release, replay, stopAfter := f.hold, f.release, f.replay, f.stopAfter
	f.mu.Unlock()
	c := f.routerConn()
	if c == nil {
		return
	}
	for k, tok := range s.Generated {
		if want := tokenAt(s.Prompt, s.Seed, k); tok != want {
			f.t.Errorf("fake: resumed %s with generated[%d] = %d, want %d", s.Request, k, tok, want)
		}
	}
	if len(s.Generated) != s.ResumeFrom {
		f.t.Errorf("fake: resume_from %d with %d generated tokens", s.ResumeFrom, len(s.Generated))
	}
	n := s.MaxTokens
	reason := "length"
	if stopAfter > 0 && stopAfter < n {
		n, reason = stopAfter, "stop"
	}
	for k := max(0, s.ResumeFrom-replay); k < n; k++ {
		if hold > 0 && k >= hold {
			select {
			case <-release:
			case <-stop:
				return
			}
		}
		select {
		case <-stop:
			return
		default:
		}
		if c.write(map[string]any{"op": "token", "request": s.Request, "step": k, "token": tokenAt(s.Prompt, s.Seed, k)}) != nil {
			return
		}
		f.mu.Lock()
		f.tokensSent++
		f.mu.Unlock()
	}
	_ = c.write(map[string]any{"op": "done", "request": s.Request, "reason": reason, "steps": n})
	f.stop(s.Request)
}

func (f *fakeWorker) submitted() []submitFrame {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]submitFrame(nil), f.submits...)
}

func (f *fakeWorker) cancelled() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cancels...)
}

// set changes the fake's behaviour under its lock.
func (f *fakeWorker) set(change func(*fakeWorker)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeWorker) hello(i int) frame.Hello {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hellos[i]
}

func (f *fakeWorker) sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokensSent
}
