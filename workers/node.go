package workers

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/nodesact"
	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/gpu/nvml"
	"github.com/schooner-ml/schooner/nodes"
	"github.com/schooner-ml/schooner/taskqueue"
)

// NodeAgent is the worker that runs on every machine with (or without) GPUs: it serves the
// machine's own task queue and keeps the node registry informed.
type NodeAgent struct {
	ID       string
	Hostname string
	GPUs     nvml.Library
	Client   client.Client
	Logger   zerolog.Logger
	// Trainer, when set, runs the training jobs' RunTrainer activities on this machine.
	Trainer *trainingact.Trainer

	worker  worker.Worker
	started time.Time
}

// Start registers the node's activities, starts polling its queue and announces the node.
// The GPU discovery result is logged once, so a node without a driver says why at start.
func (a *NodeAgent) Start(ctx context.Context) error {
	if a.ID == "" {
		return fmt.Errorf("node agent needs an id")
	}
	node := &nodesact.Node{ID: a.ID, Hostname: a.Hostname, GPUs: a.GPUs}
	inv, _ := node.Inventory(ctx)
	ev := a.Logger.Info().Str("node", a.ID).Int("gpus", len(inv.GPUs))
	if len(inv.GPUs) == 0 {
		ev = a.Logger.Warn().Str("node", a.ID).Int("gpus", 0).Str("reason", inv.Reason)
	} else {
		ev = ev.Str("model", inv.Model()).Str("driver", inv.DriverVersion)
	}
	ev.Msg("node agent discovered GPUs")

	a.worker = worker.New(a.Client, taskqueue.Node(a.ID), worker.Options{})
	nodesact.RegisterNode(a.worker, node)
	if a.Trainer != nil {
		trainingact.RegisterNode(a.worker, a.Trainer)
	}
	if err := a.worker.Start(); err != nil {
		return fmt.Errorf("starting node worker %s: %w", a.ID, err)
	}
	a.started = time.Now().UTC()
	return RegisterNode(ctx, a.Client, nodes.Record{
		ID: a.ID, Hostname: a.Hostname, Queue: taskqueue.Node(a.ID), StartedAt: a.started,
	})
}

// Stop stops polling. With deregister the node is also removed from the registry: a clean
// shutdown of a machine that will not come back.
func (a *NodeAgent) Stop(deregister bool) {
	if a.worker != nil {
		a.worker.Stop()
	}
	if deregister {
		if err := DeregisterNode(a.Client, a.ID); err != nil {
			a.Logger.Warn().Err(err).Msg("node agent could not deregister")
		}
	}
}
