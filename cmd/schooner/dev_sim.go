//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/trainingact"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/cloud/sim/ec2api"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/workers"
)

// simCloud is the simulated spot market `schooner dev` runs, with the EC2 and Compute faces
// that let the real AWS and GCP SDKs (and `schooner cloud --cloud sim`) reach it.
type simCloud struct {
	market *sim.Market
	ec2    *ec2api.Server
	gce    *gceapi.Server
	cancel context.CancelFunc
}

func startSimCloud(ctx context.Context, f *devFlags, log zerolog.Logger) (*simCloud, error) {
	m, err := newSimMarket(f.simSeed, f.timeScale)
	if err != nil {
		return nil, err
	}
	s := &simCloud{market: m}
	s.ec2 = ec2api.New(m, ec2api.Options{Now: m.Now})
	if err := s.ec2.Start(f.simEC2Addr); err != nil {
		return nil, listenError("simulated EC2 API", f.simEC2Addr, "--sim-ec2-addr", err)
	}
	s.gce = gceapi.NewServer(m, gceapi.Options{Project: simGCPProject, Now: m.Now})
	if err := s.gce.Start(f.simGCEAddr); err != nil {
		_ = s.ec2.Close()
		return nil, listenError("simulated Compute API", f.simGCEAddr, "--sim-gce-addr", err)
	}
	s.run(log)
	return s, nil
}

// runSimMarket runs a market's clock with no HTTP faces (what `schooner demo` needs).
func runSimMarket(m *sim.Market, log zerolog.Logger) *simCloud {
	s := &simCloud{market: m}
	s.run(log)
	return s
}

// run advances the market's clock until Stop.
func (s *simCloud) run(log zerolog.Logger) {
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		if err := s.market.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error().Err(err).Msg("simulated market stopped")
		}
	}()
}

func (s *simCloud) Stop() {
	if s == nil {
		return
	}
	s.cancel()
	if s.ec2 != nil {
		_ = s.ec2.Close()
	}
	if s.gce != nil {
		_ = s.gce.Close()
	}
}

// newTrainingControlWorker is the control worker with the training activities on the
// simulated market; VerifyTrainedState compares against trainer/sim's uninterrupted run.
func newTrainingControlWorker(c client.Client, m *sim.Market) worker.Worker {
	return workers.NewControlWorkerWith(c, workers.ControlOptions{
		Training: &trainingact.Control{Provider: m, Verify: trainsim.VerifyStep},
	})
}

func listenError(what, addr, flag string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s port %s is already in use; choose another with %s", what, addr, flag)
	}
	return fmt.Errorf("serving %s on %s: %w", what, addr, err)
}
