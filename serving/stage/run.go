package stage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/internal/pace"
	"github.com/schooner-ml/schooner/serving"
)

// stageRun is one Run in progress.
type stageRun struct {
	s     *Supervisor
	a     serving.StageAssignment
	p     *proc
	owner chan struct{}
	log   zerolog.Logger

	mu sync.Mutex
	hb Heartbeat

	// The node connection to the worker (ping, peers); only the supervise loop uses it.
	conn       *nodeConn
	connRetry  time.Time
	connWarned bool
}

func (r *stageRun) snapshot() Heartbeat {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hb
	if h.Load != nil {
		l := *h.Load
		h.Load = &l
	}
	return h
}

func (r *stageRun) setState(f func(*Heartbeat)) {
	r.mu.Lock()
	f(&r.hb)
	r.mu.Unlock()
}

// heartbeats passes the run's state to hb every HeartbeatEvery until ctx ends.
func (r *stageRun) heartbeats(ctx context.Context, hb func(Heartbeat)) {
	if hb == nil {
		return
	}
	t := time.NewTicker(r.s.HeartbeatEvery)
	defer t.Stop()
	for {
		hb(r.snapshot())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// waitListening waits until the new worker accepts connections. The worker is stopped when
// it does not listen in time or ctx ends; one that exits first is an error with its output.
func (r *stageRun) waitListening(ctx context.Context) error {
	deadline := time.NewTimer(r.s.ReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	d := net.Dialer{Timeout: 500 * time.Millisecond}
	for {
		c, err := d.DialContext(ctx, "tcp", r.p.addr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-r.p.exited:
			if r.s.isKilled() {
				return ErrVanished
			}
			return fmt.Errorf("inference worker of replica %d stage %d exited before listening on %s (%s): %s",
				r.a.Replica, r.a.Stage, r.p.addr, exitStatus(r.p), r.p.out.String())
		case <-ctx.Done():
			r.s.terminate(r.p, r.log)
			return ctx.Err()
		case <-deadline.C:
			r.s.terminate(r.p, r.log)
			return fmt.Errorf("inference worker of replica %d stage %d did not listen on %s within %s: %s",
				r.a.Replica, r.a.Stage, r.p.addr, r.s.ReadyTimeout, r.p.out.String())
		case <-tick.C:
		}
	}
}

// signalReady sends stage-ready until the deployment takes it, the worker exits or ctx ends.
func (r *stageRun) signalReady(ctx context.Context) error {
	m := serving.StageReady{Pool: r.a.Pool, Replica: r.a.Replica, Stage: r.a.Stage, InstanceID: r.a.InstanceID, Epoch: r.a.Epoch,
		WorkerAddr: r.p.addr, HolderAddr: r.s.HolderAddr}
	if m.InstanceID == "" {
		m.InstanceID = r.s.NodeID
	}
	wait := 100 * time.Millisecond
	for {
		sctx, cancel := context.WithTimeout(ctx, signalTimeout)
		err := r.s.Deployment.StageReady(sctx, r.a.Deployment, m)
		cancel()
		if err == nil {
			return nil
		}
		r.log.Warn().Err(err).Msg("signalling stage-ready (retrying)")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-r.p.exited:
			t.Stop()
			return errWorkerExited
		case <-r.owner:
			t.Stop()
			return errTakenOver
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

var (
	errWorkerExited = errors.New("worker exited")
	errTakenOver    = errors.New("worker taken over")
)

// supervise runs the ready stage until its worker exits, ctx ends or a newer run takes the
// worker over.
func (r *stageRun) supervise(ctx context.Context, res serving.StageResult) (serving.StageResult, error) {
	ping := time.NewTicker(r.s.HeartbeatEvery)
	defer ping.Stop()
	var peersC <-chan time.Time
	var peers *time.Timer
	cadence := &pace.Pace{Every: r.s.PeersEvery, Fast: r.s.PeersFastEvery, FastFor: r.s.PeersFastFor}
	if r.a.Depth > 1 {
		peers = time.NewTimer(cadence.Next(r.syncPeers(ctx), time.Now()))
		defer peers.Stop()
		peersC = peers.C
	}
	for {
		select {
		case <-ctx.Done():
			return r.end(ctx, res, ctx.Err())
		case <-r.owner:
			return r.end(ctx, res, errTakenOver)
		case <-r.p.exited:
			return r.end(ctx, res, errWorkerExited)
		case <-ping.C:
			r.ping(ctx)
		case <-peersC:
			peers.Reset(cadence.Next(r.syncPeers(ctx), time.Now()))
		}
	}
}

// end finishes the run for why: ctx's end stops the worker (if this run still owns it); a
// takeover leaves it to its new run; the worker's exit is the result.
func (r *stageRun) end(ctx context.Context, res serving.StageResult, why error) (serving.StageResult, error) {
	switch {
	case errors.Is(why, errTakenOver):
		res.Reason = "the worker was taken over by a newer run of the stage"
		return res, nil
	case errors.Is(why, errWorkerExited):
		if r.s.isKilled() {
			return res, ErrVanished
		}
		res.Reason = fmt.Sprintf("inference worker exited (%s): %s", exitStatus(r.p), r.p.out.String())
		r.log.Warn().Str("status", exitStatus(r.p)).Msg("inference worker exited")
		return res, nil
	}
	if !isClosed(r.owner) {
		r.s.terminate(r.p, r.log)
		r.log.Info().Str("status", exitStatus(r.p)).Msg("inference worker stopped")
	}
	if r.s.isKilled() {
		return res, ErrVanished
	}
	res.Reason = "stopped: " + why.Error()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, why
}

// nodeConn is the run's connection to its worker, dialled on demand; after a failure it is
// tried again only after a pause, so a worker that does not speak the node role costs
// nothing.
func (r *stageRun) nodeConn(ctx context.Context) *nodeConn {
	if r.conn != nil {
		return r.conn
	}
	if time.Now().Before(r.connRetry) {
		return nil
	}
	c, err := dialNode(ctx, r.p.addr, r.a.Deployment, r.a.Stage)
	if err != nil {
		r.connRetry = time.Now().Add(5 * time.Second)
		ev := r.log.Debug()
		if !r.connWarned {
			ev = r.log.Warn()
			r.connWarned = true
		}
		ev.Err(err).Msg("no node connection to the inference worker (no load in heartbeats, no peers updates)")
		return nil
	}
	r.conn = c
	return c
}

func (r *stageRun) dropConn() {
	r.closeConn()
	r.connRetry = time.Now().Add(time.Second)
}

func (r *stageRun) closeConn() {
	if r.conn != nil {
		r.conn.close()
		r.conn = nil
	}
}

// ping asks the worker for its load, for the heartbeats.
func (r *stageRun) ping(ctx context.Context) {
	c := r.nodeConn(ctx)
	if c == nil {
		return
	}
	l, err := c.ping()
	if err != nil {
		r.log.Debug().Err(err).Msg("pinging the inference worker")
		r.dropConn()
		return
	}
	r.setState(func(h *Heartbeat) { h.Load = &l })
}

// Successor is the ring successor of (replica, stage) of a pool in a pipeline of depth
// stages: its ready addresses, ok false while it is not ready. For a prefill replica the
// holder is the one it streams prompts to (serving.ReplicaStages).
func Successor(p serving.Pipeline, pool string, replica, stage, depth int) (Peers, bool) {
	return readyPeers(successorAddr(p, pool, replica, stage, depth))
}

// readyPeers is a stage's addresses as a worker's peers, ok false while it is not ready.
func readyPeers(a serving.StageAddr) (Peers, bool) {
	if !a.Ready || a.Addr == "" {
		return Peers{}, false
	}
	return Peers{Next: a.Addr, Holder: a.Holder}, true
}

// successorAddr is the pipeline's entry for the ring successor of (pool, replica, stage); the zero
// StageAddr (not ready) when the pipeline has none.
func successorAddr(p serving.Pipeline, pool string, replica, stage, depth int) serving.StageAddr {
	next := (stage + 1) % depth
	for _, rs := range p.Replicas {
		if rs.Pool != pool || rs.Replica != replica {
			continue
		}
		for _, st := range rs.Stages {
			if st.Stage == next {
				return st
			}
		}
	}
	return serving.StageAddr{}
}

// syncPeers reads the stages query and sends peers to the worker when its ready successor's
// worker or holder address differs from what the worker has. It says whether the successor
// is settled: ready, not moving, and at the addresses the worker now has. A failed query
// counts as settled, so a struggling server is not asked faster.
func (r *stageRun) syncPeers(ctx context.Context) bool {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	pl, err := r.s.Deployment.Stages(qctx, r.a.Deployment)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			r.log.Debug().Err(err).Msg("querying the deployment's stages")
		}
		return true
	}
	at := successorAddr(pl, r.a.Pool, r.a.Replica, r.a.Stage, r.a.Depth)
	want, ok := readyPeers(at)
	if !ok {
		return false
	}
	r.s.mu.Lock()
	have := r.p.peers
	r.s.mu.Unlock()
	if want.Holder == "" {
		want.Holder = have.Holder
	}
	if want == have {
		return !at.Moving
	}
	c := r.nodeConn(ctx)
	if c == nil {
		return false
	}
	send := Peers{}
	if want.Next != have.Next {
		send.Next = want.Next
	}
	if want.Holder != have.Holder {
		send.Holder = want.Holder
	}
	if err := c.peers(send); err != nil {
		r.log.Warn().Err(err).Str("next", want.Next).Str("next_holder", want.Holder).Msg("sending peers to the inference worker")
		r.dropConn()
		return false
	}
	r.s.mu.Lock()
	r.p.peers = want
	r.s.mu.Unlock()
	r.setState(func(h *Heartbeat) { h.Next, h.NextHolder = want.Next, want.Holder })
	r.log.Info().Str("next", want.Next).Str("next_holder", want.Holder).Msg("inference worker told its new successor")
	return !at.Moving
}
