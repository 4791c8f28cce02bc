package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/devserver/stack"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// benchStack is the embedded training stack the benchmarks drive, with a scratch directory
// for its database and checkpoint stores.
type benchStack struct {
	*stack.Stack
	dir   string
	scale float64
}

// startStack starts a stack in a temporary directory on a market whose instances boot at
// once (1 ms), so a measured recovery holds no simulated boot time.
func startStack(ctx context.Context, scale float64) (*benchStack, error) {
	dir, err := os.MkdirTemp("", "schooner-bench-orch-")
	if err != nil {
		return nil, err
	}
	instant := sim.ProviderParams{BootTime: time.Millisecond, NoticePeriod: 30 * time.Second}
	s, err := stack.Start(ctx, stack.Options{
		DataDir: filepath.Join(dir, "temporal"), Headless: true, Logger: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel),
		Seed: 5, TimeScale: scale, Params: map[string]sim.ProviderParams{"aws": instant, "gcp": instant},
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &benchStack{Stack: s, dir: dir, scale: scale}, nil
}

func (s *benchStack) stop() {
	_ = s.Stop(time.Minute)
	_ = os.RemoveAll(s.dir)
}

// spec is a job on spot V100s anywhere, with a checkpoint store in the stack's directory.
func (s *benchStack) spec(name string, iterations, every int64, maxGPUs int) training.Spec {
	store := (&url.URL{Scheme: "file", Path: filepath.Join(s.dir, "store-"+name)}).String()
	return training.Spec{
		Name: name, Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, Iterations: iterations,
		Resources:  training.Resources{GPUTypes: []string{"V100-16"}, MaxGPUs: maxGPUs},
		Spot:       training.SpotWithFallback,
		Checkpoint: training.Checkpoint{Every: every, Store: store},
		Trainer:    training.Trainer{Kind: training.TrainerSim, Seed: 1},
	}.WithDefaults()
}

// submit starts the job with id at the stack's time scale.
func (s *benchStack) submit(ctx context.Context, id string, spec training.Spec, opts training.JobOptions) error {
	_, err := s.Jobs.Submit(ctx, spec, trainingclient.SubmitOptions{ID: id, Options: opts})
	return err
}
