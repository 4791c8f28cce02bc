package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/training"
)

// fault is one SIGKILL of the run: which process, and at what share of the jobs' total
// iterations it strikes. Points are progress, not wall time, so every kill lands while jobs
// run however fast the machine is.
type fault struct {
	what string // faultServer, faultControl or faultNode
	at   float64
}

const (
	faultServer  = "server"
	faultControl = "control worker"
	faultNode    = "node agent"
)

// planFaults gives each kind of fault one point between 10% and 60% of the jobs' total
// progress, in the order they strike.
func planFaults(rng *rand.Rand) []fault {
	fs := []fault{{what: faultServer}, {what: faultControl}, {what: faultNode}}
	for i := range fs {
		fs[i].at = 0.1 + 0.5*rng.Float64()
	}
	slices.SortFunc(fs, func(a, b fault) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	return fs
}

// progress follows the jobs' iterations (the most each has reached: a restore steps back) and
// whether they closed, reading their status as any client does; a failed read (the server or
// a control worker being killed) is read again at the next tick.
type progress struct {
	c     *cluster
	specs map[string]training.Spec

	mu     sync.Mutex
	most   map[string]int64
	closed map[string]bool
}

func newProgress(c *cluster, specs map[string]training.Spec) *progress {
	return &progress{c: c, specs: specs, most: map[string]int64{}, closed: map[string]bool{}}
}

// follow reads every open job's status every interval until ctx ends.
func (p *progress) follow(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for id := range p.specs {
			p.read(ctx, id)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *progress) read(ctx context.Context, id string) {
	p.mu.Lock()
	done := p.closed[id]
	p.mu.Unlock()
	if done {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	closed, err := p.c.jobs.Closed(rctx, id)
	if err != nil {
		return
	}
	st, err := p.c.jobs.Status(rctx, id)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && st.Iteration > p.most[id] {
		p.most[id] = st.Iteration
	}
	if closed {
		p.closed[id] = true
		p.most[id] = p.specs[id].Iterations
	}
}

// share is the jobs' progress: iterations reached over iterations asked, 0 to 1.
func (p *progress) share() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var done, total int64
	for id, s := range p.specs {
		done += p.most[id]
		total += s.Iterations
	}
	return float64(done) / float64(total)
}

// allClosed says whether every job's workflow has ended.
func (p *progress) allClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.closed) == len(p.specs)
}

// strike waits until the jobs reach f's point, then SIGKILLs a process of f's kind and starts
// it again, returning once it is back. It fails when the point is not reached by deadline.
func (c *cluster) strike(ctx context.Context, f fault, rng *rand.Rand, prog *progress, nodes *nodeAgents) error {
	for prog.share() < f.at {
		if prog.allClosed() {
			return fmt.Errorf("every job ended before the %s fault at %.0f%%", f.what, 100*f.at)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the jobs did not reach %.0f%% for the %s fault: %w", 100*f.at, f.what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	began := time.Now()
	switch f.what {
	case faultServer:
		pid := c.server.pid()
		c.server.kill()
		c.t.Logf("fault at %.0f%%: SIGKILLed the Temporal server (pid %d)", 100*prog.share(), pid)
		if err := c.restart(c.server, "is ready", 90*time.Second); err != nil {
			return err
		}
	case faultControl:
		p := c.controls[rng.IntN(len(c.controls))]
		pid := p.pid()
		p.kill()
		c.t.Logf("fault at %.0f%%: SIGKILLed %s (pid %d)", 100*prog.share(), p.name, pid)
		if err := c.restart(p, "control worker running", 30*time.Second); err != nil {
			return err
		}
	case faultNode:
		var id string
		var restart func() error
		for ok := false; !ok; {
			if id, restart, ok = nodes.killOne(rng); !ok {
				// Between plans no instance of a job runs: wait for the next one.
				select {
				case <-ctx.Done():
					return fmt.Errorf("no running node agent to kill: %w", ctx.Err())
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		c.t.Logf("fault at %.0f%%: SIGKILLed the node agent of %s (its instance runs on)", 100*prog.share(), id)
		if err := restart(); err != nil {
			return err
		}
	}
	c.t.Logf("  %s back after %s", f.what, time.Since(began).Round(10*time.Millisecond))
	return nil
}
