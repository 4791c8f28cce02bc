//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/devserver"
	"github.com/schooner-ml/schooner/workers"
)

// stackOptions configure the embedded stack `schooner demo` runs.
type stackOptions struct {
	DataDir   string
	IP        string
	Port      int // 0: a free port
	UIPort    int // taken: a free one
	Headless  bool
	TimeScale float64
	Seed      int64
	Log       zerolog.Logger
}

// startTrainingStack starts, in this process, what a training job needs: the Temporal
// server, the simulated market, the control worker with the training activities and one
// node agent per simulated instance. The demo serves no simulated EC2 or Compute HTTP API:
// the job talks to the market directly.
func startTrainingStack(ctx context.Context, o stackOptions) (*devStack, error) {
	var err error
	if o.Port == 0 {
		if o.Port, err = devserver.FreePort(o.IP); err != nil {
			return nil, err
		}
	}
	if !o.Headless && !portFree(o.IP, o.UIPort) {
		if o.UIPort, err = devserver.FreePort(o.IP); err != nil {
			return nil, err
		}
	}
	srv, err := devserver.Start(devserver.Options{
		IP: o.IP, Port: o.Port, UIPort: o.UIPort, Headless: o.Headless,
		DataDir: o.DataDir, Logger: o.Log, ServerLogLevel: "error",
	})
	if err != nil {
		return nil, err
	}
	stack := &devStack{server: srv}
	fail := func(err error) (*devStack, error) { stack.Stop(); return nil, err }
	// The SDK logs every trainer a replan cancels as an activity error; in the demo that is
	// the expected path, so its logger speaks only at debug.
	sdkLog := o.Log.Level(zerolog.Disabled)
	if o.Log.GetLevel() <= zerolog.DebugLevel {
		sdkLog = o.Log.With().Str("component", "temporal-sdk").Logger()
	}
	c, err := workers.Dial(ctx, workers.ClientConfig{Address: srv.Address(), Namespace: srv.Namespace()}, workers.NewTemporalLogger(sdkLog), nil)
	if err != nil {
		return fail(err)
	}
	sess := &session{log: o.Log, client: c}
	stack.session = sess
	if err := workers.EnsureSearchAttributes(ctx, sess.client, srv.Namespace()); err != nil {
		return fail(err)
	}
	m, err := newSimMarket(o.Seed, o.TimeScale)
	if err != nil {
		return fail(err)
	}
	stack.sim = runSimMarket(m, o.Log)
	if err := stack.startTraining(ctx, o.TimeScale, o.DataDir, o.Log); err != nil {
		return fail(err)
	}
	return stack, nil
}

// portFree says whether port can be listened on now.
func portFree(ip string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// startTraining starts the control worker with the training activities on the stack's
// market, the simulated node agents (files under <dataDir>/nodes) and the preemption relay.
func (d *devStack) startTraining(ctx context.Context, timeScale float64, dataDir string, log zerolog.Logger) error {
	control := newTrainingControlWorker(d.session.client, d.sim.market)
	if err := control.Start(); err != nil {
		return fmt.Errorf("starting control worker: %w", err)
	}
	d.control = control
	nodes, err := workers.StartSimAgents(ctx, d.session.client,
		workers.SimNodesOptions{Market: d.sim.market, TimeScale: timeScale, DataDir: dataDir, Logger: log})
	if err != nil {
		return err
	}
	d.nodes = nodes
	return nil
}
