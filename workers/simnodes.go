package workers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/servingact"
	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/internal/defaults"
	"github.com/schooner-ml/schooner/serving/stage"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/trainer/node"
	"github.com/schooner-ml/schooner/training"
)

// SimMarket is what SimNodes and the PreemptionRelay need of the simulated market
// (*sim.Market): its event log and its clock.
type SimMarket interface {
	cloud.EventSource
	LastSeq() int64
	Now() time.Time
	// TimeScale converts the market's notice deadlines (simulated times) to wall-clock
	// times for the checkpoint agents and the job.
	TimeScale() cloud.TimeScale
}

// NodeStarter starts the worker of a simulated node's queue with the node's Trainer
// registered, and returns how to stop it.
type NodeStarter func(instanceID string, t *trainingact.Trainer) (stop func(), err error)

// SimNodesOptions configure SimNodes.
type SimNodesOptions struct {
	Market SimMarket
	// DataDir holds each node's files under <DataDir>/nodes/<id> (a temporary directory,
	// removed by Stop, when empty).
	DataDir string
	// Reporter signals the jobs (NewReporter(client) when nil).
	Reporter trainingact.JobReporter
	// OpenStore opens checkpoint store URLs (store.Open when nil).
	OpenStore func(ctx context.Context, url string) (store.Store, error)
	// StoreRoots are the directories file:// checkpoint stores must lie under
	// (store.DefaultRoots of the node's data dir when nil).
	StoreRoots []string
	// AllowedCommands are the command trainers the nodes may run (node.Supervisor); none
	// refuses every command trainer.
	AllowedCommands []string
	// StartNode starts a node's worker (NodeWorkerStarter(client) when nil); tests pass their
	// own to run SimNodes without a Temporal server.
	StartNode NodeStarter
	// StartServingNode starts a node's worker with the serving activities registered too
	// (NodeWorkerStarterWithServing(client) when neither it nor StartNode is set); with only
	// StartNode set, the nodes run their KV-cache holders but serve no RunStage.
	StartServingNode ServingNodeStarter
	// HolderBudget is each node's KV-cache holder budget (SimHolderBudget when 0).
	HolderBudget int64
	// Deployments is what the nodes' RunStage reports to (a ServingReporter over the client
	// when nil).
	Deployments stage.Deployment
	// PollInterval is how often the market's event log is read (50 ms when 0), which bounds
	// how late a node boots, hears a notice or dies.
	PollInterval time.Duration
	// Heartbeat and progress cadences of the nodes' trainers (the activities' defaults when 0).
	HeartbeatEvery, ProgressEvery time.Duration
	Logger                        zerolog.Logger
}

// SimNodes runs one simulated node agent per running instance of the simulated market, the
// way a real machine runs its node agent from boot to loss: when the market boots an instance
// a worker starts on its schooner-node-<id> queue with RunTrainer registered; a preemption
// notice goes to its checkpoint agents (emergency checkpoint) and to the instance's job; a
// preemption or termination kills it with no goodbye (its trainers stop heartbeating and
// return nothing, its local files are deleted). Simulated nodes are not announced in the node
// registry: they live seconds to minutes, and the jobs address them by instance id.
type SimNodes struct {
	o       SimNodesOptions
	log     zerolog.Logger
	tempDir string

	cancel context.CancelFunc
	loop   sync.WaitGroup
	bg     sync.WaitGroup // kills and reports in flight

	mu     sync.Mutex
	nodes  map[string]*simNode
	seq    int64
	closed bool
}

// simNode is one live simulated node agent.
type simNode struct {
	inst    cloud.Instance
	trainer *trainingact.Trainer
	serving *servingact.Node
	holder  *NodeHolder
	stop    func()
	dir     string
}

// NewSimNodes builds the node agents of a simulated market; c is the Temporal client their
// workers and signals use (nil only when Options.StartNode and Options.Reporter are both set).
func NewSimNodes(c client.Client, o SimNodesOptions) (*SimNodes, error) {
	if o.Market == nil {
		return nil, fmt.Errorf("simulated nodes need a market")
	}
	if o.Reporter == nil {
		if c == nil {
			return nil, fmt.Errorf("simulated nodes need a Temporal client or a reporter")
		}
		o.Reporter = NewReporter(c)
	}
	if o.StartNode == nil && o.StartServingNode == nil {
		if c == nil {
			return nil, fmt.Errorf("simulated nodes need a Temporal client or a node starter")
		}
		o.StartServingNode = NodeWorkerStarterWithServing(c, worker.Options{})
	}
	if o.Deployments == nil && c != nil {
		o.Deployments = &ServingReporter{Client: c}
	}
	defaults.Positive(&o.HolderBudget, SimHolderBudget)
	defaults.Positive(&o.PollInterval, 50*time.Millisecond)
	s := &SimNodes{o: o, log: o.Logger.With().Str("component", "sim-nodes").Logger(), nodes: map[string]*simNode{}}
	if o.DataDir == "" {
		d, err := os.MkdirTemp("", "schooner-simnodes")
		if err != nil {
			return nil, fmt.Errorf("creating the simulated nodes' directory: %w", err)
		}
		s.o.DataDir, s.tempDir = d, d
	}
	return s, nil
}

// NodeWorkerStarter is the NodeStarter of real Temporal workers: one worker per node queue,
// serving the trainer activities only.
func NodeWorkerStarter(c client.Client, opts worker.Options) NodeStarter {
	return func(id string, t *trainingact.Trainer) (func(), error) {
		o := opts
		if o.Identity == "" {
			o.Identity = "sim-node-" + id
		}
		w := worker.New(c, taskqueue.Node(id), o)
		trainingact.RegisterNode(w, t)
		if err := w.Start(); err != nil {
			return nil, fmt.Errorf("starting the worker of node %s: %w", id, err)
		}
		return w.Stop, nil
	}
}

// Start follows the market until ctx ends or Stop: every PollInterval it reads the new events
// and boots, warns or kills nodes. Instances already running when it starts get their nodes
// at once.
func (s *SimNodes) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	startPolling(ctx, &s.loop, s.o.PollInterval, s.Poll)
}

// Stop stops following the market, kills every node and waits for them to be gone.
func (s *SimNodes) Stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.loop.Wait()
	s.mu.Lock()
	s.closed = true
	ids := make([]string, 0, len(s.nodes))
	for id := range s.nodes {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		_ = s.kill(id, "stopping")
	}
	s.bg.Wait()
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
}

// KillNode kills the node agent of instance id with no notice and no change at the provider:
// the instance keeps running and billing, but nothing answers on it. It is the "node agent
// died" fault of the tests and the demo, which the job must detect by heartbeat timeout and
// confirm with the provider.
func (s *SimNodes) KillNode(id string) error {
	return s.kill(id, "killed on request")
}

// Nodes lists the instances with a live node agent, sorted.
func (s *SimNodes) Nodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.nodes))
	for id := range s.nodes {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Poll reads the market's new events once and acts on them. Start calls it on a ticker; a
// test may call it directly.
func (s *SimNodes) Poll(ctx context.Context) {
	s.mu.Lock()
	from := s.seq
	s.mu.Unlock()
	events := s.o.Market.EventsSince(from)
	if len(events) == 0 {
		return
	}
	// A node whose instance is gone by the end of this batch is never started.
	last := map[string]cloud.EventKind{}
	for _, e := range events {
		last[e.Instance.ID] = e.Kind
	}
	for _, e := range events {
		switch e.Kind {
		case cloud.EventRunning:
			if k := last[e.Instance.ID]; k != cloud.EventPreempted && k != cloud.EventTerminated {
				s.boot(e.Instance)
			}
		case cloud.EventNotice:
			s.notice(ctx, e.Instance)
		case cloud.EventPreempted, cloud.EventTerminated:
			_ = s.kill(e.Instance.ID, string(e.Kind))
		}
	}
	s.mu.Lock()
	s.seq = events[len(events)-1].Seq
	s.mu.Unlock()
}

// boot starts the node agent of a running instance.
func (s *SimNodes) boot(inst cloud.Instance) {
	s.mu.Lock()
	if s.closed || s.nodes[inst.ID] != nil {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	dir := filepath.Join(s.o.DataDir, "nodes", inst.ID)
	t := &trainingact.Trainer{Supervisor: &node.Supervisor{NodeID: inst.ID, DataDir: dir, Reporter: s.o.Reporter,
		OpenStore: s.o.OpenStore, StoreRoots: s.o.StoreRoots, AllowedCommands: s.o.AllowedCommands, HeartbeatEvery: s.o.HeartbeatEvery, ProgressEvery: s.o.ProgressEvery,
		Logger: s.o.Logger.With().Str("node", inst.ID).Logger()}}
	log := s.o.Logger.With().Str("node", inst.ID).Logger()
	holder, err := StartHolder(HolderOptions{Budget: s.o.HolderBudget, Logger: log.With().Str("component", "kv-cache-holder").Logger()})
	if err != nil {
		s.log.Error().Err(err).Str("instance", inst.ID).Msg("starting a simulated node's kv-cache holder")
		return
	}
	sv := newServingNode(inst.ID, holder, s.o.Deployments, log)
	var stop func()
	if s.o.StartServingNode != nil {
		stop, err = s.o.StartServingNode(inst.ID, t, sv)
	} else {
		stop, err = s.o.StartNode(inst.ID, t)
	}
	if err != nil {
		_ = holder.Close()
		s.log.Error().Err(err).Str("instance", inst.ID).Msg("starting a simulated node agent")
		return
	}
	s.mu.Lock()
	s.nodes[inst.ID] = &simNode{inst: inst, trainer: t, serving: sv, holder: holder, stop: stop, dir: dir}
	s.mu.Unlock()
	s.log.Info().Str("instance", inst.ID).Str("zone", inst.Zone).Str("type", inst.InstanceType).Str("job", inst.JobID).
		Msg("simulated node agent up")
}

// notice passes a preemption notice to the node's checkpoint agents and to the job.
func (s *SimNodes) notice(ctx context.Context, inst cloud.Instance) {
	s.mu.Lock()
	n := s.nodes[inst.ID]
	s.mu.Unlock()
	if n == nil || inst.Interruption == nil {
		return
	}
	deadline := s.wallDeadline(inst.Interruption.Deadline)
	jobs := n.trainer.Notice(deadline)
	if inst.JobID != "" && !slices.Contains(jobs, inst.JobID) {
		jobs = append(jobs, inst.JobID)
	}
	// The job's trainers on other nodes save on the same emergency grid, so the stages meet on
	// a durable step. A real deployment relays this through the job; the simulated nodes share
	// a process and relay it directly (a simulation shortcut).
	s.mu.Lock()
	others := make([]*simNode, 0, len(s.nodes))
	for id, o := range s.nodes {
		if id != inst.ID {
			others = append(others, o)
		}
	}
	s.mu.Unlock()
	for _, o := range others {
		for _, job := range jobs {
			o.trainer.NoticeJob(job, deadline)
		}
	}
	s.log.Warn().Str("instance", inst.ID).Time("deadline", deadline).Strs("jobs", jobs).Msg("simulated node heard a preemption notice")
	note := training.PreemptionNotice{InstanceID: inst.ID, Kind: cloud.Notice, Deadline: deadline}
	for _, job := range jobs {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.o.Reporter.Notice(rctx, job, note); err != nil {
				s.log.Debug().Err(err).Str("job", job).Msg("telling the job of a preemption notice")
			}
		}()
	}
}

// wallDeadline converts a simulated deadline to wall-clock time at the market's time scale.
func (s *SimNodes) wallDeadline(sim time.Time) time.Time {
	left := sim.Sub(s.o.Market.Now())
	return time.Now().Add(s.o.Market.TimeScale().Wall(max(left, 0)))
}

// kill stops a node as a dead machine: its trainers stop without a result, its worker stops,
// its files go.
func (s *SimNodes) kill(id, why string) error {
	s.mu.Lock()
	n := s.nodes[id]
	delete(s.nodes, id)
	s.mu.Unlock()
	if n == nil {
		return fmt.Errorf("killing node %s: no simulated node agent runs there", id)
	}
	n.trainer.Kill()
	n.serving.Kill()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		n.stop()
		_ = n.holder.Close()
		if err := os.RemoveAll(n.dir); err != nil {
			s.log.Warn().Err(err).Str("instance", id).Msg("removing a dead node's files")
		}
	}()
	s.log.Info().Str("instance", id).Str("why", why).Msg("simulated node agent gone")
	return nil
}

// HolderAddr is the address of the KV-cache holder of instance id's node ("" when no node
// agent runs there).
func (s *SimNodes) HolderAddr(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.nodes[id]; n != nil {
		return n.holder.Addr()
	}
	return ""
}
