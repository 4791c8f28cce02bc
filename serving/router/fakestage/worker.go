// Package fakestage is the protocol half of a fake stage worker: it listens on a loopback port,
// answers a router's hello and pings as section 1 of docs/serving-protocol.md asks, refuses
// what a worker would refuse, and hands each submit and cancel to a Model, which is the fake's
// own behaviour (how it admits, when it emits tokens). The router's tests and bench/routerq
// build their fakes on it, so the handshake and the error answers a router relies on are
// written once; it does not import testing, so a benchmark can link it.
package fakestage

import (
	"bufio"
	"net"
	"sync"

	"github.com/schooner-ml/schooner/internal/frame"
)

// Model is what a fake does with a router's requests. The Worker calls it from the goroutine
// of the connection the frame came on, holding none of its own locks.
type Model interface {
	// Load is the load a pong reports.
	Load() map[string]int
	// Submit takes a submit frame that came on c and answers it on c (Accepted, or a
	// RequestError). An error means the frame itself is malformed: the Worker answers
	// bad_request and hangs up, as a worker does on a connection it cannot read.
	Submit(c *Conn, h frame.Header) error
	// Cancel stops and frees the request.
	Cancel(request string)
}

// Worker accepts router connections until Close.
type Worker struct {
	ln    net.Listener
	model Model

	mu     sync.Mutex
	conns  []*Conn
	hellos []frame.Hello
	closed bool
}

// Listen takes a free loopback port; nothing is accepted there before Serve, so a fake can
// keep the Worker (for Latest, say) before any of its methods is called.
func Listen() (*Worker, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &Worker{ln: ln}, nil
}

// Serve accepts router connections for m until Close, in the background.
func (w *Worker) Serve(m Model) {
	w.model = m
	go w.accept()
}

// Addr is the host:port a router dials.
func (w *Worker) Addr() string { return w.ln.Addr().String() }

// Close is the machine going away: the listener and every connection close. Later calls do
// nothing.
func (w *Worker) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	_ = w.ln.Close()
	for _, c := range w.conns {
		_ = c.nc.Close()
	}
}

// Latest is the newest router connection, where a last stage sends its tokens; nil before
// the first.
func (w *Worker) Latest() *Conn {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.conns) == 0 {
		return nil
	}
	return w.conns[len(w.conns)-1]
}

// Hellos are the hellos received so far, in order, refused ones included.
func (w *Worker) Hellos() []frame.Hello {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]frame.Hello(nil), w.hellos...)
}

func (w *Worker) accept() {
	for {
		nc, err := w.ln.Accept()
		if err != nil {
			return
		}
		c := &Conn{nc: nc, bw: bufio.NewWriterSize(nc, 64<<10)}
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

// serve answers one router connection: the hello, then pings, submits and cancels; anything
// else is a bad request that ends the connection.
func (w *Worker) serve(c *Conn) {
	fr := frame.NewReader(c.nc, 0)
	h, _, err := fr.Next()
	if err != nil || h.Op != "hello" {
		_ = c.nc.Close()
		return
	}
	var hello frame.Hello
	err = h.Decode(&hello)
	w.mu.Lock()
	w.hellos = append(w.hellos, hello)
	w.mu.Unlock()
	if err != nil || hello.Role != "router" || hello.Version != frame.Version {
		c.refuse(frame.NewError("bad_request", "unexpected hello %+v", hello))
		return
	}
	if c.Write(helloOK{Op: "hello_ok", Version: frame.Version}) != nil {
		return
	}
	for {
		h, _, err := fr.Next()
		if err != nil {
			return
		}
		switch h.Op {
		case "ping":
			_ = c.Write(pong{Op: "pong", Load: w.model.Load()})
		case "submit":
			if err := w.model.Submit(c, h); err != nil {
				c.refuse(frame.NewError("bad_request", "%v", err))
				return
			}
		case "cancel":
			var m struct {
				Request string `json:"request"`
			}
			_ = h.Decode(&m)
			w.model.Cancel(m.Request)
		default:
			c.refuse(frame.NewError("bad_request", "unknown op %q", h.Op))
			return
		}
	}
}
