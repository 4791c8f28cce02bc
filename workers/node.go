package workers

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/colocationact"
	"github.com/schooner-ml/schooner/activities/interferenceact"
	"github.com/schooner-ml/schooner/activities/nodesact"
	"github.com/schooner-ml/schooner/activities/servingact"
	"github.com/schooner-ml/schooner/activities/trainingact"
	gi "github.com/schooner-ml/schooner/gpu/interference"
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
	// Holder configures the node's KV-cache holder, which runs from Start to Stop (on
	// 127.0.0.1:0 with DefaultHolderBudget when zero: set Listen/Advertise to an address the
	// other nodes reach).
	Holder HolderOptions
	// Serving, when set, runs the serving deployments' RunStage activities; Start makes one
	// (the Python inference worker, signals through Client) when nil. Its HolderAddr is the
	// holder's address when empty.
	Serving *servingact.Node
	// Interference runs interference studies on this machine's GPU (ProfileInterference); nil
	// answers every study that this node has no executor.
	Interference gi.Executor
	// Colocation runs colocated pairs on this machine's GPU (RunColocated); nil answers every
	// pair that this node has no GPU.
	Colocation colocationact.PairRunner

	worker  worker.Worker
	holder  *NodeHolder
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

	if err := a.startHolder(); err != nil {
		return err
	}
	a.worker = worker.New(a.Client, taskqueue.Node(a.ID), worker.Options{})
	nodesact.RegisterNode(a.worker, node)
	if a.Trainer != nil {
		trainingact.RegisterNode(a.worker, a.Trainer)
	}
	servingact.RegisterNode(a.worker, a.Serving)
	interferenceact.RegisterNode(a.worker, &interferenceact.Profiler{NodeID: a.ID, Executor: a.Interference})
	colocationact.RegisterNode(a.worker, &colocationact.Node{NodeID: a.ID, Runner: a.Colocation})
	if err := a.worker.Start(); err != nil {
		a.stopServing()
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
	a.stopServing()
	if deregister {
		if err := DeregisterNode(a.Client, a.ID); err != nil {
			a.Logger.Warn().Err(err).Msg("node agent could not deregister")
		}
	}
}

// startHolder starts the node's KV-cache holder and, unless given, its serving side.
func (a *NodeAgent) startHolder() error {
	o := a.Holder
	o.Logger = a.Logger.With().Str("node", a.ID).Str("component", "kv-cache-holder").Logger()
	h, err := StartHolder(o)
	if err != nil {
		return fmt.Errorf("node agent %s: %w", a.ID, err)
	}
	a.holder = h
	if a.Serving == nil {
		a.Serving = newServingNode(a.ID, h, &ServingReporter{Client: a.Client}, a.Logger.With().Str("node", a.ID).Logger())
	} else if a.Serving.HolderAddr == "" {
		a.Serving.HolderAddr = h.Addr()
	}
	return nil
}

// stopServing kills the node's inference workers still running and stops its holder.
func (a *NodeAgent) stopServing() {
	if a.Serving != nil && a.Serving.Supervisor != nil {
		a.Serving.Kill()
	}
	if a.holder != nil {
		if err := a.holder.Close(); err != nil {
			a.Logger.Warn().Err(err).Msg("stopping the kv-cache holder")
		}
	}
}

// HolderAddr is the address of the node's KV-cache holder ("" before Start).
func (a *NodeAgent) HolderAddr() string {
	if a.holder == nil {
		return ""
	}
	return a.holder.Addr()
}
