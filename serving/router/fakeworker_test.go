package router_test

import (
	"hash/fnv"
	"sync"
	"testing"

	"github.com/schooner-ml/schooner/internal/frame"
	"github.com/schooner-ml/schooner/serving/router/fakestage"
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

// fakeWorker is a fake stage worker over fakestage. With role "first+last" it is a whole
// one-stage deployment; a "first" fake hands each submit to its peer, a "last" fake, which
// emits the tokens on its own router connection.
type fakeWorker struct {
	t    *testing.T
	role string
	srv  *fakestage.Worker
	peer *fakeWorker // the last stage, for a "first" fake

	mu            sync.Mutex
	submits       []fakestage.Submit
	cancels       []string
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

func startFake(t *testing.T, role string) *fakeWorker {
	t.Helper()
	srv, err := fakestage.Listen()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeWorker{t: t, role: role, srv: srv, release: make(chan struct{}), stopped: map[string]chan struct{}{}}
	srv.Serve(f)
	t.Cleanup(f.kill)
	return f
}

func (f *fakeWorker) addr() string { return f.srv.Addr() }

// kill is the machine going away: listener and connections close, generation stops.
func (f *fakeWorker) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killed {
		return
	}
	f.killed = true
	f.srv.Close()
	for _, ch := range f.stopped {
		close(ch)
	}
	f.stopped = map[string]chan struct{}{}
}

// Load is an idle worker's.
func (f *fakeWorker) Load() map[string]int {
	return map[string]int{"running": 0, "waiting": 0, "kv_blocks_free": 100}
}

// Submit records the submit, answers it as the fake is set to and starts generating.
func (f *fakeWorker) Submit(c *fakestage.Conn, h frame.Header) error {
	var s fakestage.Submit
	if err := h.Decode(&s); err != nil {
		f.t.Errorf("fake: %v", err)
		return err
	}
	f.mu.Lock()
	f.submits = append(f.submits, s)
	overload := f.overloadFirst > 0
	if overload {
		f.overloadFirst--
	}
	f.mu.Unlock()
	if overload {
		_ = c.Write(fakestage.RequestError(s.Request, "overloaded", "full"))
		return nil
	}
	f.mu.Lock()
	noReplica := f.noReplica
	f.mu.Unlock()
	if noReplica && s.ResumeFrom > 0 && s.ResumeMode != "reprefill" {
		_ = c.Write(fakestage.Accepted(s.Request))
		_ = c.Write(fakestage.RequestError(s.Request, "restore_failed", "no replica"))
		return nil
	}
	_ = c.Write(fakestage.Accepted(s.Request))
	gen := f
	if f.role == "first" {
		f.mu.Lock()
		gen = f.peer
		f.mu.Unlock()
	}
	go gen.generate(s)
	return nil
}

// Cancel records the cancel and stops the request here and on the peer.
func (f *fakeWorker) Cancel(id string) {
	f.mu.Lock()
	f.cancels = append(f.cancels, id)
	f.mu.Unlock()
	f.stop(id)
	f.mu.Lock()
	peer := f.peer
	f.mu.Unlock()
	if peer != nil {
		peer.stop(id)
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
func (f *fakeWorker) generate(s fakestage.Submit) {
	f.mu.Lock()
	stop := make(chan struct{})
	if old, ok := f.stopped[s.Request]; ok {
		close(old) // a resubmission replaces the request
	}
	f.stopped[s.Request] = stop
	hold, release, replay, stopAfter := f.hold, f.release, f.replay, f.stopAfter
	f.mu.Unlock()
	c := f.srv.Latest()
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
		if c.Write(fakestage.NewToken(s.Request, k, tokenAt(s.Prompt, s.Seed, k))) != nil {
			return
		}
		f.mu.Lock()
		f.tokensSent++
		f.mu.Unlock()
	}
	_ = c.Write(fakestage.NewDone(s.Request, reason, n))
	f.stop(s.Request)
}

func (f *fakeWorker) submitted() []fakestage.Submit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakestage.Submit(nil), f.submits...)
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

func (f *fakeWorker) hello(i int) frame.Hello { return f.srv.Hellos()[i] }

func (f *fakeWorker) sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokensSent
}
