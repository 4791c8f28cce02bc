package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint"
)

// Agent is a node's checkpoint agent. Make one with New, serve it on a Unix socket with
// ListenAndServe (or Serve), and stop it with Shutdown or Close.
type Agent struct {
	opts   Options
	log    zerolog.Logger
	w      wiring
	local  checkpoint.Source // nil in remote mode
	remote checkpoint.Source // nil in local mode
	up     uploader          // nil in local mode

	ctx    context.Context // ends at Close: stops the watcher and pending waits
	cancel context.CancelFunc
	bg     sync.WaitGroup // the watcher
	served sync.WaitGroup // the connections

	opening   sync.Mutex     // serialises opening and releasing rank engines, and counts rankState.conns
	releasing sync.WaitGroup // releases of idle ranks in progress

	mu        sync.Mutex
	ranks     map[int]*rankState
	conns     map[*conn]struct{}
	listeners []net.Listener
	closed    bool
	notice    *Notice
	decision  string
	changed   chan struct{} // closed and replaced whenever a commit, upload or notice happens
}

// New makes an agent: it opens the remote tier and starts the uploader and the notice watcher.
// Rank engines are opened by the first hello of each rank.
//
// What a previous agent killed on this machine left behind is taken care of first: its
// clients' shared-memory files whose process is gone are removed, and, in both mode, the
// leftovers of abandoned uploads are swept from the store and every rank's newest intact local
// step that the store does not yet hold as durable is uploaded again (in the background).
func New(opts Options) (*Agent, error) {
	return newAgent(opts, defaultWiring())
}

// newAgent is New with the dependencies given (tests replace some).
func newAgent(opts Options, w wiring) (*Agent, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.ShmDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating shared-memory directory: %w", err)
	}
	a := &Agent{
		opts:    o,
		log:     o.Logger.With().Str("component", "ckpt-agent").Logger(),
		w:       w,
		ranks:   map[int]*rankState{},
		conns:   map[*conn]struct{}{},
		changed: make(chan struct{}),
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	if o.Mode != ModeRemote {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating checkpoint directory: %w", err)
		}
		a.local = w.localSource(o.Dir, a.log)
	}
	if o.Mode != ModeLocal {
		if a.remote, err = w.newRemote(o); err != nil {
			return nil, fmt.Errorf("opening remote tier: %w", err)
		}
		if a.up, err = w.newUploader(a.remote, o, a.uploaded); err != nil {
			return nil, fmt.Errorf("starting uploader: %w", err)
		}
	}
	if n := SweepDead(o.ShmDir, shmPrefix); n > 0 {
		a.log.Info().Int("removed", n).Str("dir", o.ShmDir).Msg("removed shared-memory files of processes that are gone")
	}
	if a.up != nil {
		a.bg.Add(1)
		go a.recover()
	}
	if o.Watcher != nil {
		a.bg.Add(1)
		go a.watch(o.Watcher)
	}
	return a, nil
}

// wake tells every waiter that something changed (a commit, an upload, a notice).
func (a *Agent) wake() {
	a.mu.Lock()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// changes returns the channel closed by the next wake.
func (a *Agent) changes() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}

// Shutdown stops the agent gracefully: it stops accepting, closes the connections (a request in
// progress is cancelled), lets the saves handed over commit, gives the uploader until ctx ends
// to flush, and closes the engines. Engines close last because uploads read from their slots.
func (a *Agent) Shutdown(ctx context.Context) error {
	ranks, first := a.stop()
	if !first {
		return nil
	}
	a.served.Wait()
	a.releasing.Wait() // they stop at a.ctx's end, leaving their rank to close below
	ranks = a.allRanks()
	var errs []error
	for _, r := range ranks {
		r.settle(ctx)
	}
	if a.up != nil && ctx.Err() == nil {
		if err := a.up.Flush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flushing uploads: %w", err))
		}
	}
	if a.up != nil {
		if err := a.up.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing uploader: %w", err))
		}
	}
	for _, r := range ranks {
		if err := r.close(); err != nil {
			errs = append(errs, err)
		}
	}
	a.bg.Wait()
	a.log.Info().Msg("checkpoint agent stopped")
	return errors.Join(errs...)
}

// Close stops the agent without waiting for uploads.
func (a *Agent) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return a.Shutdown(ctx)
}

// stop marks the agent closed, closes listeners and connections, and returns the ranks to
// close; first is false when it was already stopped.
func (a *Agent) stop() (ranks []*rankState, first bool) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, false
	}
	a.closed = true
	a.cancel()
	ls, cs := a.listeners, a.conns
	a.conns = map[*conn]struct{}{}
	for _, r := range a.ranks {
		ranks = append(ranks, r)
	}
	a.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
	for c := range cs {
		c.close()
	}
	return ranks, true
}
