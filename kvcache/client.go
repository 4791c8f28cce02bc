package kvcache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schooner-ml/schooner/internal/frame"
)

// Hello says who a client is: its role (RoleWriter or RoleReader; the holder accepts every
// op on either) and the (deployment, stage) whose replicas it writes or reads.
type Hello struct {
	Role       string
	Deployment string
	Stage      int
	// Process (optional) names the client's process: a waiting get (GetAwaiting) is not held
	// for writers of the same process.
	Process string
}

// Put is one layer's run of a request's tokens, sent as prefill computes them.
type Put struct {
	Request string
	Layer   int
	Tokens  [2]int // [t0, t1)
	Layout  Layout
	Data    []byte // [2, kv_heads, t1-t0, head_dim]: K then V

	// Last marks the put that completes the request's cache: after it every layer of Layers
	// holds tokens [0, Tokens[1]) and the cache stands at Step (0 after a prefill; k for a
	// cache re-sent after k decode steps).
	Last   bool
	Layers [2]int
	Step   int
}

// Entry is one sequence of a decode step: its request and the position of its new token.
// Step, when set, is the entry's own step (continuous batching mixes steps in one frame);
// nil stands for the Step's.
type Entry struct {
	Request string
	Token   int
	Step    *int
}

// Step is one decode step's new KV of every local layer and every sequence of the batch,
// gathered into one buffer.
type Step struct {
	Step    int
	Entries []Entry
	Layers  [2]int // [l0, l1)
	Layout  Layout
	Data    []byte // [len(Entries), l1-l0, 2, kv_heads, head_dim]
}

// Ack is the holder's answer about one request of a put or put_step: stored (Err nil) or
// refused (Err matches ErrFull or ErrConflict, or is the connection's end). Step is the
// put_step's step, or for a put the request's acked step after it (-1 until the last put).
type Ack struct {
	Request string
	Step    int
	Err     error
}

// Chunk is a run of tokens of some layers of a request, as a get returns them.
type Chunk struct {
	Request string
	Layers  [2]int // [l0, l1)
	Tokens  [2]int // [t0, t1)
	DType   string
	Shape   []int  // [layers, 2, kv_heads, t1-t0, head_dim]
	Data    []byte // laid out as Shape
}

// End closes a get: the step the chunks stand at, -1 when the holder has nothing complete.
type End struct {
	Request   string
	AckedStep int
	// FromStep is the get's from_step as the holder repeated it: 0 when the chunks start at
	// token 0 (a whole replica, or a holder that ignored the field).
	FromStep int
}

// Dropped is what a drop freed.
type Dropped struct {
	Requests int
	Bytes    int64
}

// ClientMaxPayload bounds the chunks a Client accepts.
const ClientMaxPayload = 1 << 30

// Client speaks section 3 of docs/serving-protocol.md to one holder. Its methods may be called
// from several goroutines; frames go out in call order and the holder answers in that order.
// Callbacks (acks, chunks) run on the client's reading goroutine: keep them short and do not
// call the client's waiting methods (Sync, Get, List, Drop) from them.
type Client struct {
	conn net.Conn
	r    *frame.Reader
	wmu  sync.Mutex // one frame on the wire at a time, in pending's order

	mu      sync.Mutex
	pending []*call
	err     error
	done    chan struct{}
}

// call is a frame waiting for its answers.
type call struct {
	op       string
	requests []string // put, put_step: one answer each
	step     int
	answered int
	onAck    func(Ack)

	onChunk  func(Chunk) error
	chunkErr error
	gone     atomic.Bool // the waiter left; drop further chunks

	end     End
	held    []Held
	dropped Dropped
	err     error
	done    chan struct{}
}

// Dial connects to a holder at addr, a TCP host:port or a unix socket path (anything with a
// slash, or "unix:PATH"), and says hello.
func Dial(ctx context.Context, addr string, h Hello) (*Client, error) {
	network, a := "tcp", addr
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, a = "unix", p
	} else if strings.Contains(addr, "/") {
		network = "unix"
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, a)
	if err != nil {
		return nil, fmt.Errorf("dialing kv-cache holder %s: %w", addr, err)
	}
	c := &Client{conn: conn, r: frame.NewReader(conn, ClientMaxPayload), done: make(chan struct{})}
	if err := c.hello(ctx, h); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("greeting kv-cache holder %s: %w", addr, err)
	}
	go c.read()
	return c, nil
}

func (c *Client) hello(ctx context.Context, h Hello) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.conn.SetDeadline(dl)
	} else {
		_ = c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	}
	defer c.conn.SetDeadline(time.Time{})
	if err := frame.Write(c.conn, helloMsg{Op: opHello, Role: h.Role, Deployment: h.Deployment, Stage: h.Stage, Version: frame.Version, Process: h.Process}, nil); err != nil {
		return err
	}
	hdr, _, err := c.r.Next()
	if err != nil {
		return err
	}
	switch hdr.Op {
	case opHelloOK:
		return nil
	case opError:
		var m errorMsg
		_ = hdr.Decode(&m)
		return &HolderError{Code: m.Code, Message: m.Message}
	}
	return fmt.Errorf("holder answered hello with %q", hdr.Op)
}

// Put sends one layer of a request's prompt. done (may be nil) is called once with the
// holder's answer, or with the connection's error if it ends first — also when Put returns
// an error.
func (c *Client) Put(p Put, done func(Ack)) error {
	m := putMsg{Op: opPut, Request: p.Request, Kind: KindPrompt, Layer: p.Layer, Tokens: p.Tokens, DType: p.Layout.DType,
		Shape: []int{2, p.Layout.KVHeads, p.Tokens[1] - p.Tokens[0], p.Layout.HeadDim}}
	if p.Last {
		layers, step := p.Layers, p.Step
		m.Last, m.Layers, m.Step = true, &layers, &step
	}
	return c.send(&call{op: opPut, requests: []string{p.Request}, step: -1, onAck: done}, m, p.Data)
}

// PutStep sends one decode step of a batch. done (may be nil) is called once per entry, in
// entry order, with the holder's answer or the connection's error.
func (c *Client) PutStep(s Step, done func(Ack)) error {
	entries := make([]entryMsg, len(s.Entries))
	reqs := make([]string, len(s.Entries))
	for i, e := range s.Entries {
		entries[i], reqs[i] = entryMsg(e), e.Request
	}
	m := putStepMsg{Op: opPutStep, Step: s.Step, Entries: entries, Layers: s.Layers, DType: s.Layout.DType,
		Shape: []int{len(s.Entries), s.Layers[1] - s.Layers[0], 2, s.Layout.KVHeads, s.Layout.HeadDim}}
	return c.send(&call{op: opPutStep, requests: reqs, step: s.Step, onAck: done}, m, s.Data)
}

// Sync waits until every frame sent so far is answered (its acks delivered).
func (c *Client) Sync(ctx context.Context) error {
	c.mu.Lock()
	if len(c.pending) == 0 {
		err := c.err
		c.mu.Unlock()
		return err
	}
	last := c.pending[len(c.pending)-1]
	c.mu.Unlock()
	select {
	case <-last.done:
		return last.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Get streams a request's replica to fn, chunk by chunk in token order, and returns the step
// the chunks stand at (-1 and no chunks when the holder has nothing complete). An error from
// fn stops further calls and is returned once the holder has finished the answer.
func (c *Client) Get(ctx context.Context, request string, fn func(Chunk) error) (End, error) {
	return c.GetAwaiting(ctx, request, 0, fn)
}

// GetAwaiting is Get, held by the holder for at most wait (0: not at all) while the replica is short of its
// complete prompt and a writer of this stage in another process is still sending (a stage
// handed over streams what it had queued until it exits).
func (c *Client) GetAwaiting(ctx context.Context, request string, wait time.Duration, fn func(Chunk) error) (End, error) {
	return c.get(ctx, requestMsg{Op: opGet, Request: request, WaitMS: int(wait.Milliseconds())}, fn)
}

// GetExpected is GetAwaiting for a replica the caller knows is on its way (prompt–token
// disaggregation: a prompt worker streams the prompt a token worker restores): held until
// the prompt is complete, at most wait, whether or not a writer of the stage is sending yet.
func (c *Client) GetExpected(ctx context.Context, request string, wait time.Duration, fn func(Chunk) error) (End, error) {
	return c.get(ctx, requestMsg{Op: opGet, Request: request, WaitMS: int(wait.Milliseconds()), Expect: true}, fn)
}

// get sends one get (m) and hands its chunks to fn as they come.
func (c *Client) get(ctx context.Context, m requestMsg, fn func(Chunk) error) (End, error) {
	cl := &call{op: opGet, onChunk: fn}
	if err := c.roundTrip(ctx, cl, m); err != nil {
		return End{}, err
	}
	return cl.end, cl.chunkErr
}

// List returns the requests the holder keeps for this client's (deployment, stage).
func (c *Client) List(ctx context.Context) ([]Held, error) {
	cl := &call{op: opList}
	err := c.roundTrip(ctx, cl, requestMsg{Op: opList})
	return cl.held, err
}

// Drop frees a request's replica (the request ended).
func (c *Client) Drop(ctx context.Context, request string) (Dropped, error) {
	cl := &call{op: opDrop}
	err := c.roundTrip(ctx, cl, requestMsg{Op: opDrop, Request: request})
	return cl.dropped, err
}

// DropDeployment frees every replica of this client's deployment, of every stage.
func (c *Client) DropDeployment(ctx context.Context) (Dropped, error) {
	cl := &call{op: opDropDeployment}
	err := c.roundTrip(ctx, cl, requestMsg{Op: opDropDeployment})
	return cl.dropped, err
}

// Close ends the connection; calls still waiting fail with ErrClosed.
func (c *Client) Close() error {
	c.shutdown(ErrClosed)
	<-c.done
	return nil
}

func (c *Client) roundTrip(ctx context.Context, cl *call, hdr any) error {
	if err := c.send(cl, hdr, nil); err != nil {
		return err
	}
	select {
	case <-cl.done:
		return cl.err
	case <-ctx.Done():
		cl.gone.Store(true)
		return ctx.Err()
	}
}

// send queues the call and writes its frame, both under the write lock so answers come back
// in pending's order.
func (c *Client) send(cl *call, hdr any, payload []byte) error {
	cl.done = make(chan struct{})
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		c.finish(cl, err)
		return err
	}
	c.pending = append(c.pending, cl)
	c.mu.Unlock()
	if err := frame.Write(c.conn, hdr, payload); err != nil {
		err = fmt.Errorf("sending %s: %w", cl.op, err)
		c.shutdown(err)
		return err
	}
	return nil
}

// read dispatches the holder's answers to the waiting calls until the connection ends.
func (c *Client) read() {
	defer close(c.done)
	for {
		hdr, payload, err := c.r.Next()
		if err == nil {
			err = c.dispatch(hdr, payload)
		}
		if err != nil {
			c.shutdown(err)
			return
		}
	}
}

func (c *Client) dispatch(hdr frame.Header, payload []byte) error {
	c.mu.Lock()
	var head *call
	if len(c.pending) > 0 {
		head = c.pending[0]
	}
	c.mu.Unlock()
	expect := func(ops ...string) error {
		if head == nil {
			return fmt.Errorf("kv-cache holder sent %q with nothing asked", hdr.Op)
		}
		for _, op := range ops {
			if head.op == op {
				return nil
			}
		}
		return fmt.Errorf("kv-cache holder sent %q in answer to %q", hdr.Op, head.op)
	}
	// answer checks that the frame answers one of ops and decodes its message into m.
	answer := func(m any, ops ...string) error {
		if err := expect(ops...); err != nil {
			return err
		}
		return hdr.Decode(m)
	}
	switch hdr.Op {
	case opAck, opError:
		var a ackMsg
		var e errorMsg
		var ack Ack
		if hdr.Op == opAck {
			if err := hdr.Decode(&a); err != nil {
				return err
			}
			ack = Ack{Request: a.Request, Step: a.Step}
		} else {
			if err := hdr.Decode(&e); err != nil {
				return err
			}
			he := &HolderError{Code: e.Code, Message: e.Message, Request: e.Request, Step: -1}
			if e.Step != nil {
				he.Step = *e.Step
			}
			if !perRequest(e.Code) {
				return he
			}
			ack = Ack{Request: e.Request, Step: he.Step, Err: he}
		}
		if err := expect(opPut, opPutStep); err != nil {
			return err
		}
		c.answer(head, ack)
	case opChunk:
		var m chunkMsg
		if err := answer(&m, opGet); err != nil {
			return err
		}
		if head.onChunk != nil && head.chunkErr == nil && !head.gone.Load() {
			head.chunkErr = head.onChunk(Chunk{Request: m.Request, Layers: m.Layers, Tokens: m.Tokens, DType: m.DType, Shape: m.Shape, Data: payload})
		}
	case opEnd:
		var m endMsg
		if err := answer(&m, opGet); err != nil {
			return err
		}
		head.end = End{Request: m.Request, AckedStep: m.AckedStep, FromStep: m.FromStep}
		c.complete(head)
	case opHeld:
		var m heldMsg
		if err := answer(&m, opList); err != nil {
			return err
		}
		head.held = m.Requests
		c.complete(head)
	case opDropped:
		var m droppedMsg
		if err := answer(&m, opDrop, opDropDeployment); err != nil {
			return err
		}
		head.dropped = Dropped{Requests: m.Requests, Bytes: m.Bytes}
		c.complete(head)
	default:
		return fmt.Errorf("kv-cache holder sent unknown op %q", hdr.Op)
	}
	return nil
}

// answer delivers one ack of a put or put_step and completes it after its last.
func (c *Client) answer(cl *call, a Ack) {
	c.mu.Lock()
	if len(c.pending) == 0 || c.pending[0] != cl || cl.answered == len(cl.requests) {
		c.mu.Unlock()
		return
	}
	cl.answered++
	last := cl.answered == len(cl.requests)
	if last {
		c.pending = c.pending[1:]
	}
	c.mu.Unlock()
	if cl.onAck != nil {
		cl.onAck(a)
	}
	if last {
		close(cl.done)
	}
}

// complete removes the head call after its final answer.
func (c *Client) complete(cl *call) {
	c.mu.Lock()
	if len(c.pending) == 0 || c.pending[0] != cl {
		c.mu.Unlock()
		return
	}
	c.pending = c.pending[1:]
	c.mu.Unlock()
	close(cl.done)
}

// shutdown ends the connection once and fails every waiting call with err.
func (c *Client) shutdown(err error) {
	c.mu.Lock()
	if c.err == nil {
		if errors.Is(err, ErrClosed) {
			c.err = ErrClosed
		} else {
			c.err = fmt.Errorf("%w: %w", ErrClosed, err)
		}
	}
	calls := c.pending
	c.pending = nil
	err = c.err
	c.mu.Unlock()
	_ = c.conn.Close()
	for _, cl := range calls {
		c.finish(cl, err)
	}
}

// finish fails a call that will get no more answers: its outstanding acks carry err.
func (c *Client) finish(cl *call, err error) {
	c.mu.Lock()
	rest := cl.requests[cl.answered:]
	cl.answered = len(cl.requests)
	c.mu.Unlock()
	if cl.onAck != nil {
		for _, r := range rest {
			cl.onAck(Ack{Request: r, Step: cl.step, Err: err})
		}
	}
	cl.err = err
	close(cl.done)
}
