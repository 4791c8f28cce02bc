package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/schooner-ml/schooner/checkpoint"
)

// rankState is what the agent keeps for one rank: its engine and the saves it has not yet seen
// committed (or, in remote mode, uploaded).
type rankState struct {
	rank int
	eng  engine // nil in remote mode

	conns int // connections bound to the rank by hello; guarded by Agent.opening

	mu            sync.Mutex
	plan          checkpoint.PlanInfo
	saving        map[int64]pending // local and both modes: saves whose commit is not yet seen
	latest        *checkpoint.ShardMeta
	previous      *checkpoint.ShardMeta  // the committed step before latest (emergency fallback)
	emergencyStep int64                  // first step saved after the notice, -1 before
	queued        map[int64]*queuedShard // handed to the uploader, outcome not yet reported
	uploaded      int64                  // newest step of this rank uploaded, -1 for none
	skipped       map[int64]string       // emergency steps not uploaded, with why
}

// rankFor returns rank's state, opening its engine on first use, and counts one more
// connection bound to it (leave undoes that). A later hello with another plan replaces the plan
// for the saves that follow.
func (a *Agent) rankFor(rank int, plan checkpoint.PlanInfo) (*rankState, error) {
	if rank < 0 {
		return nil, fmt.Errorf("rank %d is negative", rank)
	}
	a.opening.Lock() // one open at a time, without holding a.mu through the engine's recovery
	defer a.opening.Unlock()
	if r := a.rank(rank); r != nil {
		r.mu.Lock()
		if !planEqual(r.plan, plan) {
			a.log.Info().Int("rank", rank).Interface("plan", plan).Msg("rank changed its plan")
			r.plan = plan
		}
		r.mu.Unlock()
		r.conns++
		return r, nil
	}
	r, err := a.openRankLocked(rank, plan)
	if err != nil {
		return nil, err
	}
	r.conns++
	a.log.Info().Int("rank", rank).Int64("latest", r.latestStep()).Msg("rank joined")
	return r, nil
}

// openRankLocked opens a rank's engine and registers it, refusing one rank more than
// MaxRanks. a.opening is held.
func (a *Agent) openRankLocked(rank int, plan checkpoint.PlanInfo) (*rankState, error) {
	if a.isClosed() {
		return nil, checkpoint.ErrClosed
	}
	if n := a.rankCount(); n >= a.opts.MaxRanks {
		return nil, fmt.Errorf("the agent already holds the engines of %d ranks, its maximum (MaxRanks); a rank's engine is released once its last connection closes and its saves are committed and uploaded", n)
	}
	r := &rankState{rank: rank, plan: plan, saving: map[int64]pending{}, emergencyStep: -1,
		queued: map[int64]*queuedShard{}, uploaded: -1, skipped: map[int64]string{}}
	if a.opts.Mode != ModeRemote {
		eng, err := a.w.openEngine(engineOptions{
			Dir: a.opts.Dir, Rank: rank, Agent: a.opts,
			OnCommit: func(m checkpoint.ShardMeta) { a.committed(r, m) },
		})
		if err != nil {
			return nil, fmt.Errorf("opening the engine of rank %d: %w", rank, err)
		}
		// The latest a trainer is told it can resume from is one that verifies: a step whose
		// bytes rotted on disk is skipped, as a restore would skip it.
		m, err := eng.Intact(a.ctx)
		if err != nil && !errors.Is(err, checkpoint.ErrNoCheckpoint) {
			_ = eng.Close()
			return nil, fmt.Errorf("opening the engine of rank %d: %w", rank, err)
		}
		r.mu.Lock()
		r.eng = eng
		if err == nil && r.latest == nil {
			r.latest = &m
		}
		r.mu.Unlock()
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		_ = r.close()
		return nil, checkpoint.ErrClosed
	}
	a.ranks[rank] = r
	a.mu.Unlock()
	return r, nil
}

// leave is the end of a connection bound to r: when it was the last one, the rank's engine is
// released in the background once nothing needs it any more.
func (a *Agent) leave(r *rankState) {
	a.opening.Lock()
	r.conns--
	last := r.conns == 0
	a.opening.Unlock()
	if last {
		a.releaseWhenIdle(r)
	}
}

// releaseWhenIdle closes r's engine and forgets the rank once its saves committed and its
// uploads finished, unless a connection binds it again first. A rank that says hello later
// reopens its engine, which recovers everything from disk.
func (a *Agent) releaseWhenIdle(r *rankState) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return // Shutdown closes the engines
	}
	a.releasing.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.releasing.Done()
		for !r.idle() {
			changed := a.changes()
			if r.idle() {
				break
			}
			select {
			case <-changed:
			case <-r.nextDone():
			case <-a.ctx.Done():
				return
			}
		}
		a.opening.Lock() // a hello of the rank waits until the engine has let go of its directory
		defer a.opening.Unlock()
		a.mu.Lock()
		if r.conns > 0 || a.closed || a.ranks[r.rank] != r {
			a.mu.Unlock()
			return
		}
		delete(a.ranks, r.rank)
		a.mu.Unlock()
		if err := r.close(); err != nil {
			a.log.Warn().Err(err).Int("rank", r.rank).Msg("releasing a rank's engine")
			return
		}
		a.log.Debug().Int("rank", r.rank).Msg("released the engine of a rank with no connection")
	}()
}

// idle reports whether the rank has no save being persisted and no shard with the uploader.
func (r *rankState) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.saving {
		if !isDone(p) {
			return false
		}
	}
	return len(r.queued) == 0
}

// nextDone is closed when one of the rank's saves in progress finishes (never, with none).
func (r *rankState) nextDone() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.saving {
		if !isDone(p) {
			return p.Done()
		}
	}
	return nil
}

// rankCount is the number of ranks with state (an open engine, in local and both modes).
func (a *Agent) rankCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ranks)
}

// rank returns the state of a rank that said hello, or nil.
func (a *Agent) rank(rank int) *rankState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ranks[rank]
}

// allRanks returns the ranks in rank order.
func (a *Agent) allRanks() []*rankState {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*rankState, 0, len(a.ranks))
	for _, r := range a.ranks {
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y *rankState) int { return x.rank - y.rank })
	return out
}

// latestStep is the newest committed (remote mode: uploaded) step, -1 for none.
func (r *rankState) latestStep() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latestLocked()
}

func (r *rankState) latestLocked() int64 {
	if r.latest == nil {
		return -1
	}
	return r.latest.Step
}

// currentPlan is the plan of the rank's last hello.
func (r *rankState) currentPlan() checkpoint.PlanInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.plan
}

// status reports the rank for Status.
func (r *rankState) status() RankStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := RankStatus{Rank: r.rank, Latest: r.latestLocked(), EmergencyStep: r.emergencyStep}
	for step := range r.saving {
		s.Saving = append(s.Saving, step)
	}
	if r.eng == nil {
		for step := range r.queued {
			s.Saving = append(s.Saving, step)
		}
	}
	slices.Sort(s.Saving)
	return s
}

// settle waits until the saves handed to the engine committed or failed, or ctx ends.
func (r *rankState) settle(ctx context.Context) {
	r.mu.Lock()
	ps := make([]pending, 0, len(r.saving))
	for _, p := range r.saving {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	for _, p := range ps {
		select {
		case <-p.Done():
		case <-ctx.Done():
			return
		}
	}
}

// close closes the rank's engine, which finishes the saves it holds.
func (r *rankState) close() error {
	if r.eng == nil {
		return nil
	}
	if err := r.eng.Close(); err != nil {
		return fmt.Errorf("closing the engine of rank %d: %w", r.rank, err)
	}
	return nil
}

func planEqual(a, b checkpoint.PlanInfo) bool {
	return a.World == b.World && a.PP == b.PP && a.DP == b.DP && a.TP == b.TP && a.Note == b.Note &&
		slices.Equal(a.Stages, b.Stages)
}

// replan is a repeated hello on a connection already bound to r: the plan may change.
func (a *Agent) replan(r *rankState, plan checkpoint.PlanInfo) error {
	if a.isClosed() {
		return checkpoint.ErrClosed
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !planEqual(r.plan, plan) {
		a.log.Info().Int("rank", r.rank).Interface("plan", plan).Msg("rank changed its plan")
		r.plan = plan
	}
	return nil
}
