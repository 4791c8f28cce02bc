// Package trainingact implements a TrainingJob's activities (package training's
// ControlActivities and NodeActivities). They stay thin: the planner, the checkpoint store and
// the trainers do the work. The instance activities are package fleetact's.
package trainingact

import (
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/internal/register"
	"github.com/schooner-ml/schooner/training"
)

var (
	_ training.ControlActivities = (*Control)(nil)
	_ training.NodeActivities    = (*Trainer)(nil)
)

// RegisterControl registers the job's control-queue activities, PlanJob included (the
// workflow runs it as a local activity, which needs it registered on the same worker).
// Tests pass a stand-in of the same interface, so signatures cannot drift from production's.
func RegisterControl(r worker.ActivityRegistry, a training.ControlActivities) {
	register.Named(r, map[string]any{
		training.ActivityJobOfferings:       a.JobOfferings,
		training.ActivityPlanJob:            a.PlanJob,
		training.ActivityDecideSpot:         a.DecideSpot,
		training.ActivityBestOnDemand:       a.BestOnDemand,
		training.ActivityLatestCheckpoint:   a.LatestDurableCheckpoint,
		training.ActivityVerifyTrainedState: a.VerifyTrainedState,
		training.ActivityAdmissionLimits:    a.AdmissionLimits,
	})
}

// RegisterNode registers the trainer activities on a node agent's own queue.
func RegisterNode(r worker.ActivityRegistry, a training.NodeActivities) {
	register.Named(r, map[string]any{
		training.ActivityRunTrainer:     a.RunTrainer,
		training.ActivityStopTrainers:   a.StopTrainers,
		training.ActivityNoticeTrainers: a.NoticeTrainers,
	})
}
