package stage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/internal/defaults"
	"github.com/schooner-ml/schooner/internal/procgroup"
	"github.com/schooner-ml/schooner/serving"
)

// Deployment is what the node side needs of the deployment workflow: the stage-ready signal
// and the stages query. It is an interface so this package does not depend on Temporal
// (package workers implements it with the Temporal client) and tests can fake it.
type Deployment interface {
	StageReady(ctx context.Context, deploymentID string, r serving.StageReady) error
	Stages(ctx context.Context, deploymentID string) (serving.Pipeline, error)
}

// Heartbeat is a running stage's state, passed to Run's heartbeat function (the RunStage
// activity records it as its Temporal heartbeat details).
type Heartbeat struct {
	Epoch int `json:"epoch"`
	// State is starting (the worker does not listen yet) or ready.
	State      string `json:"state"`
	PID        int    `json:"pid,omitempty"`
	WorkerAddr string `json:"worker_addr,omitempty"`
	HolderAddr string `json:"holder_addr,omitempty"`
	// Next and NextHolder are the successor addresses the worker was last given.
	Next       string `json:"next,omitempty"`
	NextHolder string `json:"next_holder,omitempty"`
	// Load is the worker's answer to the latest ping (nil until one answered).
	Load *Load `json:"load,omitempty"`
}

// Defaults of the Supervisor's settings.
const (
	DefaultReadyTimeout   = 10 * time.Minute
	DefaultGrace          = 10 * time.Second
	DefaultHeartbeatEvery = time.Second
	DefaultPeersEvery     = 500 * time.Millisecond
	DefaultPeersFastEvery = 100 * time.Millisecond
	DefaultPeersFastFor   = 5 * time.Minute
	signalTimeout         = 5 * time.Second
	queryTimeout          = 2 * time.Second
)

// Errors of Run, checked with errors.Is.
var (
	// ErrBadAssignment marks an assignment this node cannot run.
	ErrBadAssignment = errors.New("bad stage assignment")
	// ErrVanished marks a run ended by Kill: a dead machine reports nothing.
	ErrVanished = errors.New("node killed")
)

// Supervisor runs the inference workers of the stages assigned to one node. Its zero value
// runs the Python worker with the defaults; Deployment is required.
type Supervisor struct {
	NodeID string
	// HolderAddr is the node's KV-cache holder (host:port), reported in stage-ready.
	HolderAddr string
	// Host is the address workers listen on and are reported at (default 127.0.0.1); other
	// nodes must be able to reach it.
	Host       string
	Deployment Deployment
	// Command builds a worker's process from its arguments (WorkerArgs); default
	// PythonCommand(Python, PythonPath). Tests pass a fake worker.
	Command    func(args []string) (*exec.Cmd, error)
	Python     string
	PythonPath string
	// ReadyTimeout bounds the wait for a new worker to listen; Grace is SIGTERM to SIGKILL;
	// HeartbeatEvery the cadence of heartbeats (and load pings); PeersEvery of stages queries
	// while the stage's ring successor is settled, PeersFastEvery while it is not (not ready,
	// moving to a standby, or at addresses the worker does not have yet): the window in which
	// the worker sends to a gone successor and replicates to a gone holder is one fast period,
	// and the queries cost that rate only during a failover or migration, for at most
	// PeersFastFor of one (a successor that cannot be replaced is asked about at the usual rate).
	ReadyTimeout   time.Duration
	Grace          time.Duration
	HeartbeatEvery time.Duration
	PeersEvery     time.Duration
	PeersFastEvery time.Duration
	PeersFastFor   time.Duration
	Logger         zerolog.Logger

	mu     sync.Mutex
	procs  map[procKey]*proc
	killed bool
}

// procKey is a worker's stage; prefill and decode replicas are numbered apart, so the pool
// is part of it.
type procKey struct {
	deployment     string
	pool           string
	replica, stage int
}

// proc is one worker process; the run that owns it supervises it.
type proc struct {
	key    procKey
	cmd    *exec.Cmd
	addr   string
	out    *tail
	exited chan struct{}
	err    error // Wait's, once exited is closed
	// owner is closed when the owning run loses it (another run adopts or replaces it).
	owner    chan struct{}
	stopping bool
	peers    Peers
}

func (s *Supervisor) withDefaults() {
	if s.Host == "" {
		s.Host = "127.0.0.1"
	}
	if s.Command == nil {
		s.Command = PythonCommand(s.Python, s.PythonPath)
	}
	defaults.Positive(&s.ReadyTimeout, DefaultReadyTimeout)
	defaults.Positive(&s.Grace, DefaultGrace)
	defaults.Positive(&s.HeartbeatEvery, DefaultHeartbeatEvery)
	defaults.Positive(&s.PeersEvery, DefaultPeersEvery)
	defaults.Positive(&s.PeersFastEvery, min(DefaultPeersFastEvery, s.PeersEvery))
	defaults.Positive(&s.PeersFastFor, DefaultPeersFastFor)
	if s.procs == nil {
		s.procs = map[procKey]*proc{}
	}
}

func checkAssignment(a serving.StageAssignment) error {
	switch {
	case a.Deployment == "":
		return fmt.Errorf("%w: no deployment id", ErrBadAssignment)
	case a.Depth < 1 || a.Stage < 0 || a.Stage >= a.Depth:
		return fmt.Errorf("%w: stage %d is not in a pipeline of %d stages", ErrBadAssignment, a.Stage, a.Depth)
	case a.Layers.First < 0 || a.Layers.End <= a.Layers.First:
		return fmt.Errorf("%w: empty layer range %d:%d", ErrBadAssignment, a.Layers.First, a.Layers.End)
	}
	return nil
}

// Run runs the inference worker of a: it starts the worker (or, with a.Adopt, takes over the
// one of the same deployment, replica and stage still running here), waits until it listens,
// signals stage-ready, then heartbeats through hb (which must not block) and keeps the
// worker's successor addresses current from the stages query until the worker exits (a
// result whose Reason has the exit status and the end of its output) or ctx ends (the worker
// is stopped: SIGTERM, SIGKILL after Grace; ctx's error). A worker that cannot start or exits
// before it listens is an error; after Kill, Run returns ErrVanished.
func (s *Supervisor) Run(ctx context.Context, a serving.StageAssignment, hb func(Heartbeat)) (serving.StageResult, error) {
	res := serving.StageResult{Replica: a.Replica, Stage: a.Stage, Epoch: a.Epoch}
	if err := checkAssignment(a); err != nil {
		return res, err
	}
	if s.Deployment == nil {
		return res, errors.New("stage supervisor without a deployment to report to")
	}
	s.mu.Lock()
	s.withDefaults()
	s.mu.Unlock()
	log := s.Logger.With().Str("node", s.NodeID).Str("deployment", a.Deployment).Int("replica", a.Replica).
		Int("stage", a.Stage).Int("epoch", a.Epoch).Logger()

	p, owner, adopted, err := s.acquire(a, log)
	if err != nil {
		return res, err
	}
	r := &stageRun{s: s, a: a, p: p, owner: owner, log: log}
	s.mu.Lock()
	peers := p.peers
	s.mu.Unlock()
	r.hb = Heartbeat{Epoch: a.Epoch, State: serving.StateStarting, PID: p.cmd.Process.Pid, WorkerAddr: p.addr,
		HolderAddr: s.HolderAddr, Next: peers.Next, NextHolder: peers.Holder}
	hbCtx, stopHB := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		r.heartbeats(hbCtx, hb)
	}()
	defer func() {
		stopHB()
		<-hbDone
		r.closeConn()
	}()

	if !adopted {
		if err := r.waitListening(ctx); err != nil {
			return res, err
		}
		if a.Depth > 1 {
			// Told before it reports ready: a stage assigned while its successor was still
			// starting (a standby bought while the next stage was itself being replaced) had no
			// holder in its arguments, and a switch to it before the next periodic query told
			// it one found nothing to restore from and re-prefilled its requests.
			r.syncPeers(ctx)
		}
	}
	if err := r.signalReady(ctx); err != nil {
		return r.end(ctx, res, err)
	}
	r.setState(func(h *Heartbeat) { h.State = serving.StateReady })
	if hb != nil {
		hb(r.snapshot())
	}
	log.Info().Str("worker", p.addr).Str("holder", s.HolderAddr).Bool("adopted", adopted).Msg("stage ready")
	return r.supervise(ctx, res)
}

// acquire adopts the running worker of a's stage (a.Adopt) or starts a new one, stopping a
// previous worker of the same stage first.
func (s *Supervisor) acquire(a serving.StageAssignment, log zerolog.Logger) (*proc, chan struct{}, bool, error) {
	key := procKey{a.Deployment, a.Pool, a.Replica, a.Stage}
	s.mu.Lock()
	if s.killed {
		s.mu.Unlock()
		return nil, nil, false, ErrVanished
	}
	old := s.procs[key]
	if old != nil && !old.stopping && !isClosed(old.exited) && a.Adopt {
		close(old.owner)
		old.owner = make(chan struct{})
		owner := old.owner
		s.mu.Unlock()
		log.Info().Str("worker", old.addr).Msg("adopting the running inference worker")
		return old, owner, true, nil
	}
	if old != nil && old.owner != nil {
		close(old.owner)
		old.owner = nil
	}
	s.mu.Unlock()
	if old != nil {
		log.Info().Str("worker", old.addr).Msg("stopping the previous inference worker of this stage")
		s.terminate(old, log)
	}

	peers := Peers{Next: a.NextWorkerAddr, Holder: a.NextHolderAddr}
	if a.Depth == 1 && peers.Holder == "" && a.Pool != serving.PoolPrefill {
		// One stage: its replica stays on its own node. Not a prefill stage's: its prompts
		// belong on its decode replica's node, which the stages query gives it.
		peers.Holder = s.HolderAddr
	}
	port, err := freePort(s.Host)
	if err != nil {
		return nil, nil, false, fmt.Errorf("choosing a port for the inference worker: %w", err)
	}
	addr := net.JoinHostPort(s.Host, strconv.Itoa(port))
	args := WorkerArgs(a, addr, peers)
	cmd, err := s.Command(args)
	if err != nil {
		return nil, nil, false, fmt.Errorf("starting the inference worker of replica %d stage %d: %w", a.Replica, a.Stage, err)
	}
	out := &tail{log: log}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = s.Grace + time.Second
	if err := cmd.Start(); err != nil {
		return nil, nil, false, fmt.Errorf("starting the inference worker of replica %d stage %d (%s): %w", a.Replica, a.Stage, cmd.Path, err)
	}
	p := &proc{key: key, cmd: cmd, addr: addr, out: out, exited: make(chan struct{}), owner: make(chan struct{}), peers: peers}
	s.mu.Lock()
	s.procs[key] = p
	killed := s.killed
	s.mu.Unlock()
	go func() {
		p.err = cmd.Wait()
		s.mu.Lock()
		if s.procs[key] == p {
			delete(s.procs, key)
		}
		s.mu.Unlock()
		close(p.exited)
	}()
	if killed {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	log.Info().Str("listen", addr).Int("pid", cmd.Process.Pid).Str("next", peers.Next).Str("next_holder", peers.Holder).
		Bool("restore", a.Restore).Strs("args", args).Msg("inference worker starting")
	return p, p.owner, false, nil
}

// terminate stops p: SIGTERM to its process group, SIGKILL after the grace; it returns once
// the process is gone.
func (s *Supervisor) terminate(p *proc, log zerolog.Logger) {
	s.mu.Lock()
	p.stopping = true
	s.mu.Unlock()
	if procgroup.Terminate(p.cmd.Process.Pid, s.Grace, p.exited) {
		log.Warn().Dur("grace", s.Grace).Msg("inference worker ignored SIGTERM: killed it")
	}
	<-p.exited
}

// Kill kills every worker of the node at once, as a machine that dies: their runs return
// ErrVanished. Runs started later fail the same way.
func (s *Supervisor) Kill() {
	s.mu.Lock()
	s.killed = true
	procs := make([]*proc, 0, len(s.procs))
	for _, p := range s.procs {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	for _, p := range procs {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	for _, p := range procs {
		<-p.exited
	}
}

// Running counts the workers alive on the node.
func (s *Supervisor) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.procs)
}

func (s *Supervisor) isKilled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killed
}

// freePort asks the kernel for a free TCP port on host. Another process may take it before
// the worker binds it: the worker then fails to start and the stage is restarted.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// exitStatus describes how p ended.
func exitStatus(p *proc) string {
	if p.err == nil {
		return "exit status 0"
	}
	return p.err.Error()
}
