package kvcache

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/internal/defaults"
)

// Options configure a Holder. Only Budget is required.
type Options struct {
	// Budget is the bytes of KV data the holder keeps at most; a put beyond it is refused
	// with the error code "full". Nothing is ever evicted to make room.
	Budget int64
	// MaxPayload bounds one frame's payload (default 256 MiB); a bigger frame is a
	// bad_request and closes its connection.
	MaxPayload uint64
	// QueueDepth is how many frames of one connection wait to be stored (default 8): with
	// MaxPayload it bounds the memory a connection holds beyond the budget.
	QueueDepth int
	// NewQueue makes each connection's queue (default NewFIFO).
	NewQueue NewQueueFunc
	// MaxConns bounds open connections (default 1024); more are answered "overloaded".
	MaxConns int
	// ChunkTokens is the tokens per chunk of a get (default DefaultChunkTokens).
	ChunkTokens int
	// HelloTimeout is how long a new connection has to say hello (default 10 s).
	HelloTimeout time.Duration
	// WriteTimeout bounds one write to a peer (default 30 s), so a peer that stops reading
	// cannot hold its connection's goroutines forever.
	WriteTimeout time.Duration
	// WriterIdle is how long a writer may send nothing and still count as streaming for a
	// get that waits for it (default 250 ms); MaxGetWait caps what a get may ask to wait
	// (default 10 s).
	WriterIdle time.Duration
	MaxGetWait time.Duration
	// Logger gets connection events; the zero value logs nothing.
	Logger zerolog.Logger
}

func (o *Options) setDefaults() error {
	if o.Budget <= 0 {
		return fmt.Errorf("kv-cache holder budget must be positive, got %d", o.Budget)
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = 256 << 20
	}
	defaults.Positive(&o.QueueDepth, 8)
	if o.NewQueue == nil {
		o.NewQueue = func(depth int) Queue { return NewFIFO(depth) }
	}
	defaults.Positive(&o.MaxConns, 1024)
	defaults.Positive(&o.ChunkTokens, DefaultChunkTokens)
	defaults.Positive(&o.HelloTimeout, 10*time.Second)
	defaults.Positive(&o.WriteTimeout, 30*time.Second)
	defaults.Positive(&o.WriterIdle, 250*time.Millisecond)
	defaults.Positive(&o.MaxGetWait, 10*time.Second)
	return nil
}

// Holder is the KV-cache holder service: it keeps replicas for the stage workers that
// connect to it, on as many listeners (TCP, unix socket) as it is given.
type Holder struct {
	opts    Options
	store   *store
	m       counters
	writers writerSet

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
}

// New makes a holder; call Serve with each listener.
func New(opts Options) (*Holder, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	return &Holder{opts: opts, store: newStore(opts.Budget), listeners: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}}, nil
}

// ErrHolderClosed is returned by Serve once the holder is closed.
var ErrHolderClosed = errors.New("kv-cache holder closed")

// Serve accepts connections on l until the holder is closed (ErrHolderClosed) or l fails.
func (h *Holder) Serve(l net.Listener) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrHolderClosed
	}
	h.listeners[l] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.listeners, l)
		h.mu.Unlock()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			h.mu.Lock()
			closed := h.closed
			h.mu.Unlock()
			if closed {
				return ErrHolderClosed
			}
			return fmt.Errorf("accepting kv-cache connections on %s: %w", l.Addr(), err)
		}
		if !h.track(c) {
			continue
		}
		go h.serveConn(c)
	}
}

// track registers a connection; false (and the connection closed) once the holder is closed.
func (h *Holder) track(c net.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		_ = c.Close()
		return false
	}
	h.conns[c] = struct{}{}
	h.wg.Add(1)
	return true
}

func (h *Holder) untrack(c net.Conn) {
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
	h.wg.Done()
}

func (h *Holder) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

func (h *Holder) connCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// Close stops every listener and connection and waits for their goroutines. Frames fully
// read before are stored; the replicas go with the holder.
func (h *Holder) Close() error {
	h.mu.Lock()
	h.closed = true
	var errs []error
	for l := range h.listeners {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for c := range h.conns {
		_ = c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
	h.store.closeArena()
	return errors.Join(errs...)
}

// Stats is a holder's state at one moment.
type Stats struct {
	BytesHeld    int64
	RequestsHeld int
	Budget       int64
	Connections  int
	// GetWaits counts gets held back for another process's writer (writers.go).
	GetWaits int64
}

// Stats returns what the holder keeps now.
func (h *Holder) Stats() Stats {
	b, n := h.store.stats()
	return Stats{BytesHeld: b, RequestsHeld: n, Budget: h.opts.Budget, Connections: h.connCount(), GetWaits: h.m.getWaits.Load()}
}

// ListenUnix listens on a unix socket at path, replacing a stale socket file that nobody
// answers on (left by a holder that was killed) but never one in use.
func ListenUnix(path string) (net.Listener, error) {
	if _, err := os.Stat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("listening on %s: another holder answers there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	return l, nil
}
