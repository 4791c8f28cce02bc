package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/devserver"
	"github.com/schooner-ml/schooner/taskqueue"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
)

// stack is the embedded training stack the benchmarks drive.
type stack struct {
	dir     string
	server  *devserver.Server
	client  client.Client
	market  *sim.Market
	control worker.Worker
	agents  *workers.SimAgents
	cancel  context.CancelFunc
	scale   float64
}

// startStack starts a server in a temporary directory and a market whose instances boot at
// once (1 ms), so a measured recovery holds no simulated boot time.
func startStack(ctx context.Context, scale float64) (*stack, error) {
	dir, err := os.MkdirTemp("", "schooner-bench-orch-")
	if err != nil {
		return nil, err
	}
	log := zerolog.New(os.Stderr).Level(zerolog.ErrorLevel)
	port, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	s := &stack{dir: dir, scale: scale}
	s.server, err = devserver.Start(devserver.Options{Port: port, Headless: true, DataDir: filepath.Join(dir, "temporal"), Logger: log, ServerLogLevel: "error"})
	if err != nil {
		return nil, err
	}
	s.client, err = workers.Dial(ctx, workers.ClientConfig{Address: s.server.Address(), Namespace: s.server.Namespace()}, workers.NewTemporalLogger(log), nil)
	if err != nil {
		s.stop()
		return nil, err
	}
	if err := workers.EnsureSearchAttributes(ctx, s.client, s.server.Namespace()); err != nil {
		s.stop()
		return nil, err
	}
	instant := sim.ProviderParams{BootTime: time.Millisecond, NoticePeriod: 30 * time.Second}
	cfg := sim.Config{Seed: 5, TimeScale: scale, Params: map[string]sim.ProviderParams{"aws": instant, "gcp": instant}}
	if err := cfg.UseBundledTraces(); err != nil {
		s.stop()
		return nil, err
	}
	if s.market, err = sim.New(cfg); err != nil {
		s.stop()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { _ = s.market.Run(runCtx) }()
	s.control = workers.NewControlWorkerWith(s.client, workers.ControlOptions{
		Training: &trainingact.Control{Provider: s.market, Verify: trainsim.VerifyStep},
	})
	if err := s.control.Start(); err != nil {
		s.stop()
		return nil, fmt.Errorf("starting control worker: %w", err)
	}
	if s.agents, err = workers.StartSimAgents(ctx, s.client, workers.SimNodesOptions{Market: s.market, TimeScale: scale, Logger: log}); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *stack) stop() {
	if s.agents != nil {
		s.agents.Stop()
	}
	if s.control != nil {
		s.control.Stop()
	}
	if s.cancel != nil {
		s.cancel()
	}
	if s.client != nil {
		s.client.Close()
	}
	if s.server != nil {
		s.server.Stop()
	}
	_ = os.RemoveAll(s.dir)
}

// spec is a job on spot V100s anywhere, with a checkpoint store in the stack's directory.
func (s *stack) spec(name string, iterations, every int64, maxGPUs int) training.Spec {
	store := (&url.URL{Scheme: "file", Path: filepath.Join(s.dir, "store-"+name)}).String()
	return training.Spec{
		Name: name, Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, Iterations: iterations,
		Resources:  training.Resources{GPUTypes: []string{"V100-16"}, MaxGPUs: maxGPUs},
		Spot:       training.SpotWithFallback,
		Checkpoint: training.Checkpoint{Every: every, Store: store},
		Trainer:    training.Trainer{Kind: training.TrainerSim, Seed: 1},
	}.WithDefaults()
}

func (s *stack) submit(ctx context.Context, id string, spec training.Spec, opts training.JobOptions) error {
	_, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskqueue.Control},
		training.WorkflowTrainingJob, training.JobInput{Spec: spec, TimeScale: s.scale, SubmittedAt: time.Now().UTC(), Options: opts})
	if err != nil {
		return fmt.Errorf("starting %s: %w", id, err)
	}
	return nil
}

func (s *stack) status(ctx context.Context, id string) (training.JobStatus, error) {
	var st training.JobStatus
	v, err := s.client.QueryWorkflow(ctx, id, "", training.QueryStatus)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}
