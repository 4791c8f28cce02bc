package workers

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/fleetact"
	"github.com/schooner-ml/schooner/activities/nodesact"
	"github.com/schooner-ml/schooner/activities/servingact"
	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workflows"
)

// ControlOptions are the dependencies of the control worker's activities. Training nil
// registers no job activities (a control worker for the node registry only).
type ControlOptions struct {
	Training *trainingact.Control
	// Instances serves the instance activities of every job; nil takes Training's provider.
	Instances *fleetact.Instances
}

// NewControlWorker builds the worker of the schooner-control queue: every workflow, and the
// activities that run in the control plane, without the job activities.
func NewControlWorker(c client.Client) worker.Worker {
	return NewControlWorkerWith(c, ControlOptions{})
}

// NewControlWorkerWith is NewControlWorker with the job activities' dependencies, so one
// `schooner worker control` process serves jobs too.
func NewControlWorkerWith(c client.Client, o ControlOptions) worker.Worker {
	w := worker.New(c, taskqueue.Control, worker.Options{})
	RegisterControl(w, c)
	if o.Training != nil {
		inst := o.Instances
		if inst == nil {
			inst = &fleetact.Instances{Provider: o.Training.Provider, Logger: o.Training.Logger}
		}
		fleetact.Register(w, inst)
		trainingact.RegisterControl(w, o.Training)
		servingact.RegisterControl(w, &servingact.Control{Provider: o.Training.Provider})
	}
	return w
}

// RegisterControl registers every workflow and the node registry's activity on any registry.
func RegisterControl(r worker.Registry, c client.Client) {
	workflows.Register(r)
	nodesact.RegisterControl(r, &nodesact.Registry{Known: KnownNodeIDs(c)})
}
