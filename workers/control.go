package workers

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/activities"
	"github.com/schooner-ml/schooner/workflows"
)

// ControlOptions are the dependencies of the control worker's activities. Training nil
// registers no training activities (a control worker for the node registry only).
type ControlOptions struct {
	Training *activities.Training
}

// NewControlWorker builds the worker of the schooner-control queue: every workflow, and the
// activities that run in the control plane, without the training activities.
func NewControlWorker(c client.Client) worker.Worker {
	return NewControlWorkerWith(c, ControlOptions{})
}

// NewControlWorkerWith is NewControlWorker with the training activities' dependencies, so
// one `schooner worker control` process serves jobs too.
func NewControlWorkerWith(c client.Client, o ControlOptions) worker.Worker {
	w := worker.New(c, workflows.ControlQueue, worker.Options{})
	RegisterControl(w, c)
	if o.Training != nil {
		RegisterTraining(w, o.Training)
	}
	return w
}

// RegisterControl registers the control workflows and activities on any registry; the
// replay tests use it to be sure they replay exactly what production runs.
func RegisterControl(r worker.Registry, c client.Client) {
	RegisterWorkflows(r)
	reg := &activities.Registry{Known: KnownNodeIDs(c)}
	r.RegisterActivityWithOptions(reg.ListNodes, activity.RegisterOptions{Name: workflows.ActivityListNodes})
}

// RegisterTraining registers the training job's control activities, PlanJob included (the
// workflow runs it as a local activity, which needs it registered on the same worker).
func RegisterTraining(r worker.ActivityRegistry, t *activities.Training) {
	for name, fn := range map[string]any{
		workflows.ActivityJobOfferings:       t.JobOfferings,
		workflows.ActivityPlanJob:            t.PlanJob,
		workflows.ActivityAcquireInstances:   t.AcquireInstances,
		workflows.ActivityDescribeInstances:  t.DescribeInstances,
		workflows.ActivityReleaseInstances:   t.ReleaseInstances,
		workflows.ActivityListJobInstances:   t.ListJobInstances,
		workflows.ActivityLatestCheckpoint:   t.LatestDurableCheckpoint,
		workflows.ActivityVerifyTrainedState: t.VerifyTrainedState,
	} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

// RegisterWorkflows registers every workflow under its stable name.
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(workflows.NodeRegistry, workflow.RegisterOptions{Name: "NodeRegistry"})
	r.RegisterWorkflowWithOptions(workflows.NodeInventory, workflow.RegisterOptions{Name: "NodeInventory"})
	r.RegisterWorkflowWithOptions(workflows.TrainingJob, workflow.RegisterOptions{Name: workflows.WorkflowTrainingJob})
	r.RegisterWorkflowWithOptions(workflows.Fleet, workflow.RegisterOptions{Name: workflows.WorkflowFleet})
}
