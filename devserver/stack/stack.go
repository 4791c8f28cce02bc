// Package stack runs schooner's whole training stack in one process: the embedded Temporal
// server (package devserver), the simulated spot market, the control worker with the training
// activities on that market, one simulated node agent per market instance and the preemption
// relay. `schooner dev`, `schooner demo`, the orchestration benchmarks and the integration
// tests all start it here, so they run the same stack.
//
// It links the Temporal server: only cmd/schooner (outside agentonly builds), integration and
// bench may import it, so the unit tests of everything else stay fast.
package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/devserver"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// Options configure a Stack; the zero value is an in-memory stack on free ports with the UI,
// a market of seed 0 on the bundled traces at wall-clock speed.
type Options struct {
	// DataDir holds the server's SQLite database and the simulated nodes' files under
	// <DataDir>/nodes; empty keeps the database in memory and the nodes' files in a
	// temporary directory.
	DataDir string
	// Database puts the server's state on PostgreSQL instead of SQLite: a postgres:// URL
	// (devserver.Options.Database). The nodes' files stay under DataDir.
	Database string
	// IP to bind (127.0.0.1 when empty).
	IP string
	// Port is the Temporal gRPC port and UIPort the UI's; 0 takes a free one.
	Port, UIPort int
	Headless     bool
	// Namespace is created and used ("default" when empty).
	Namespace string
	// ServerLogLevel filters the server's own logs (error when empty: the stack's users
	// watch jobs, not the server).
	ServerLogLevel string
	// Logger receives the server's, the market's and the node agents' logs.
	Logger zerolog.Logger
	// SDKLogger is the Temporal SDK's logger (Logger's when nil) and Metrics its metrics
	// handler (none when nil).
	SDKLogger *workers.TemporalLogger
	Metrics   client.MetricsHandler

	// CodecKeyFile seals every payload of the stack's client and workers with the keys of
	// this file (workers/codec), as on a cluster configured with --codec-key-file.
	CodecKeyFile string
	// CodecEndpoint is the UI's default codec server (devserver.Options.CodecEndpoint).
	CodecEndpoint string

	// ServerOnly starts the server and its client, nothing else: for tests that bring their
	// own workers.
	ServerOnly bool
	// Seed makes the market reproducible; TimeScale is its simulated seconds per wall second
	// (1 when zero).
	Seed      int64
	TimeScale float64
	// Params set per-provider behaviour of the market (sim.DefaultParams for those missing).
	Params map[string]sim.ProviderParams
	// NoTraces leaves the bundled real AWS spot traces out: every offering gets the seeded
	// on/off capacity model.
	NoTraces bool
	// TraceDir replaces the bundled traces with a SkyPilot spot-traces directory of the
	// user's (sim.LoadSkyPilotDir: "<zone>_<gpu>_<count>.json" files); its offerings replay
	// it, every other offering keeps the seeded model. Files of GPUs the simulated catalog
	// lacks are left out and listed in Stack.TraceSkipped.
	TraceDir string
	// TraceStart replays the traces from this far into them (sim.Config.StartTracesAt).
	TraceStart time.Duration
	// Usage receives the market's usage report, a line per instance that ran
	// (sim.Config.Usage); nil writes none.
	Usage io.Writer
	// StoreRoots are the only directories file:// checkpoint stores may be in (nil:
	// store.DefaultRoots of the data directory). Limits are the largest jobs accepted
	// (zero fields: training.DefaultLimits).
	StoreRoots []string
	// AllowedCommands are the command trainers the simulated nodes may run (node.Supervisor:
	// command prefixes); none refuses every command trainer.
	AllowedCommands []string
	Limits          training.Limits
}

// Stack is a running training stack. Its fields are for reading; Stop ends it all.
type Stack struct {
	Server *devserver.Server
	// Client is connected to Server, Jobs is the typed TrainingJob client on it.
	Client client.Client
	Jobs   *trainingclient.Client
	// Market, Control and Agents are nil with ServerOnly.
	Market  *sim.Market
	Control worker.Worker
	Agents  *workers.SimAgents
	// TraceSkipped names the files of Options.TraceDir that were left out, and why.
	TraceSkipped []string

	server     devserver.Options
	opts       Options
	stopMarket context.CancelFunc
	mu         sync.Mutex
	deferred   []func()
	stopOnce   sync.Once
}

// Start starts the stack and returns once the server accepts clients, schooner's search
// attributes exist and every worker polls. On error, what was started is stopped.
func Start(ctx context.Context, o Options) (*Stack, error) {
	s, err := start(ctx, o)
	if err != nil {
		if s != nil {
			s.stop()
		}
		return nil, err
	}
	return s, nil
}

func start(ctx context.Context, o Options) (*Stack, error) {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.ServerLogLevel == "" {
		o.ServerLogLevel = "error"
	}
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	if o.StoreRoots == nil {
		dir := o.DataDir
		if dir != "" {
			if abs, err := filepath.Abs(dir); err == nil {
				dir = abs
			}
		}
		o.StoreRoots = store.DefaultRoots(dir)
	}
	if o.SDKLogger == nil {
		o.SDKLogger = workers.NewTemporalLogger(o.Logger)
	}
	var err error
	taken := map[int]bool{o.Port: true, o.UIPort: true} // picked free, bound later: never twice
	if o.Port == 0 {
		if o.Port, err = devserver.FreePortExcept(o.IP, taken); err != nil {
			return nil, err
		}
	}
	if o.UIPort == 0 && !o.Headless {
		if o.UIPort, err = devserver.FreePortExcept(o.IP, taken); err != nil {
			return nil, err
		}
	}
	s := &Stack{opts: o, server: devserver.Options{
		IP: o.IP, Port: o.Port, UIPort: o.UIPort, Headless: o.Headless, DataDir: o.DataDir, Database: o.Database,
		Namespace: o.Namespace, Logger: o.Logger, ServerLogLevel: o.ServerLogLevel, CodecEndpoint: o.CodecEndpoint,
	}}
	if s.Server, err = devserver.Start(s.server); err != nil {
		return nil, err
	}
	if s.Client, err = workers.Dial(ctx, workers.ClientConfig{Address: s.Server.Address(), Namespace: s.Server.Namespace(),
		CodecKeyFile: o.CodecKeyFile}, o.SDKLogger, o.Metrics); err != nil {
		return s, err
	}
	s.Jobs = trainingclient.New(s.Client)
	added, err := workers.AddSearchAttributes(ctx, s.Client, s.Server.Namespace())
	if err != nil {
		return s, err
	}
	if added {
		// Every service must see the new attributes before a workflow upserts them, or the
		// first job's first task fails and waits for its retry.
		select {
		case <-time.After(devserver.NamespaceRefresh):
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
	if o.ServerOnly {
		return s, nil
	}
	if err := s.startMarket(); err != nil {
		return s, err
	}
	if err := s.RestartControl(); err != nil {
		return s, err
	}
	s.Agents, err = workers.StartSimAgents(ctx, s.Client, workers.SimNodesOptions{
		Market: s.Market, DataDir: o.DataDir, StoreRoots: o.StoreRoots, AllowedCommands: o.AllowedCommands, Logger: o.Logger,
	})
	return s, err
}

// startMarket builds the market and runs its clock until Stop.
func (s *Stack) startMarket() error {
	m, skipped, err := NewMarket(s.opts)
	if err != nil {
		return err
	}
	s.TraceSkipped = skipped
	s.Market = m
	ctx, cancel := context.WithCancel(context.Background())
	s.stopMarket = cancel
	go func() {
		if err := m.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.opts.Logger.Error().Err(err).Msg("simulated market stopped")
		}
	}()
	return nil
}

// RestartControl stops the control worker, if one runs, and starts a new one: the training
// activities on the market, with VerifyTrainedState against trainer/sim's uninterrupted run.
// Tests use it to kill the control worker mid-job.
func (s *Stack) RestartControl() error {
	if s.Control != nil {
		s.Control.Stop()
	}
	s.Control = workers.NewControlWorkerWith(s.Client, workers.ControlOptions{
		Training: &trainingact.Control{Provider: s.Market, Verify: trainsim.VerifyStep, StoreRoots: s.opts.StoreRoots,
			Limits: s.opts.Limits},
	})
	if err := s.Control.Start(); err != nil {
		s.Control = nil
		return fmt.Errorf("starting control worker: %w", err)
	}
	return nil
}

// RestartServer stops the server and starts it again on the same ports and data directory;
// the clients and workers reconnect by themselves. Tests use it to restart the server mid-job.
func (s *Stack) RestartServer() error {
	s.Server.Stop()
	srv, err := devserver.Start(s.server)
	if err != nil {
		return err
	}
	s.Server = srv
	return nil
}

// Defer has f run when the stack stops, before the stack's own parts, last deferred first:
// what a caller starts on the stack (a node agent, the market's HTTP faces) stops first.
func (s *Stack) Defer(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deferred = append(s.deferred, f)
}

// Stop shuts everything down in order: what was deferred, the node agents and the relay, the
// control worker, the client, the market, then the server. It waits at most within (no bound
// when within is 0) and says so when that was not enough; the shutdown then goes on behind
// the caller's back. Stop may be called more than once.
func (s *Stack) Stop(within time.Duration) error {
	done := make(chan struct{})
	go func() {
		s.stopOnce.Do(s.stop)
		close(done)
	}()
	if within <= 0 {
		<-done
		return nil
	}
	select {
	case <-done:
		return nil
	case <-time.After(within):
		return fmt.Errorf("stopping the stack: not done within %s", within)
	}
}

func (s *Stack) stop() {
	s.mu.Lock()
	deferred := s.deferred
	s.deferred = nil
	s.mu.Unlock()
	for i := len(deferred) - 1; i >= 0; i-- {
		deferred[i]()
	}
	if s.Agents != nil {
		s.Agents.Stop()
	}
	if s.Control != nil {
		s.Control.Stop()
	}
	if s.Client != nil {
		s.Client.Close()
	}
	if s.stopMarket != nil {
		s.stopMarket()
	}
	if s.Server != nil {
		s.Server.Stop()
	}
}
