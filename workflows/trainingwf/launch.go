package trainingwf

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// trainerRun is one RunTrainer activity of the running epoch.
type trainerRun struct {
	// Run's Result is what the trainer returned when it finished its assignment.
	jobwf.Run[training.TrainerResult]
	rank       int
	instanceID string
	saver      bool
}

// latestCheckpoint asks the store for the newest durable step (-1: none).
func (j *job) latestCheckpoint(ctx workflow.Context) (int64, error) {
	var step int64
	err := workflow.ExecuteActivity(jobwf.ControlCtx(ctx, "read the latest durable checkpoint of "+j.id, time.Minute),
		training.ActivityLatestCheckpoint, j.status.CheckpointStore).Get(ctx, &step)
	if err != nil {
		return 0, fmt.Errorf("reading the latest durable checkpoint: %w", err)
	}
	return step, nil
}

// planInfo is the running plan as the checkpoint manifest records it: one checkpoint rank
// per stage (its saver writes the stage's shard).
func (j *job) planInfo() checkpoint.PlanInfo {
	p := j.plan.Plan
	info := checkpoint.PlanInfo{World: len(p.Stages), PP: len(p.Stages), DP: p.DP(), Note: j.plan.Summary}
	for _, st := range p.Stages {
		info.Stages = append(info.Stages, checkpoint.StageLayers{First: st.FirstLayer, End: st.LastLayer + 1})
		if len(st.Replicas) > 0 {
			info.TP = max(info.TP, st.Replicas[0].TP)
		}
	}
	return info
}

// launch starts one RunTrainer per rank on its instance's node queue under a new epoch,
// restoring from step restore.
func (j *job) launch(ctx workflow.Context, restore int64) {
	j.status.Epoch++
	if restore >= 0 && j.status.Epoch > 1 {
		j.status.Restores++
	}
	if restore >= 0 && j.status.Iteration > restore {
		j.status.LostIterations += j.status.Iteration - restore
	}
	j.status.Iteration = max(restore, 0)
	j.status.LastCheckpoint = max(j.status.LastCheckpoint, restore)
	ectx, cancel := workflow.WithCancel(ctx)
	j.cancelEpoch = cancel
	j.trainers = nil
	j.rankIter = map[int]int64{}
	j.savers = map[int]bool{}
	info := j.planInfo()
	kind := j.spec.Trainer.Kind
	if kind == "" {
		kind = "sim"
	}
	for _, p := range j.placement {
		st := j.plan.Plan.Stages[p.Stage]
		a := training.Assignment{
			JobID: j.id, Epoch: j.status.Epoch, InstanceID: p.InstanceID, Rank: p.Rank, Stage: p.Stage, Replica: p.Replica,
			Layers: checkpoint.StageLayers{First: st.FirstLayer, End: st.LastLayer + 1}, Plan: info,
			Model: j.plan.Plan.Model, ModelLayers: j.modelLayers, Seed: j.spec.Trainer.Seed, RestoreStep: restore,
			Iterations: j.spec.Iterations, IterSeconds: j.plan.Estimate.IterTime, TimeScale: float64(j.scale),
			CheckpointEvery: j.spec.Checkpoint.Every, Store: j.status.CheckpointStore, Saver: p.Replica == 0, Trainer: j.spec.Trainer,
		}
		if a.Model == "" {
			a.Model = j.spec.Model.Name
		}
		sts := j.opts.ScheduleToStartTimeout
		if j.warm[p.InstanceID] {
			sts = min(sts, j.opts.WarmScheduleToStartTimeout)
		}
		actx := workflow.WithActivityOptions(ectx, workflow.ActivityOptions{
			TaskQueue: taskqueue.Node(p.InstanceID), StartToCloseTimeout: 30 * 24 * time.Hour,
			ScheduleToStartTimeout: sts, HeartbeatTimeout: j.opts.HeartbeatTimeout,
			WaitForCancellation: true, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
			Summary: fmt.Sprintf("%s trainer rank %d (stage %d, replica %d, layers %d-%d) epoch %d from step %d",
				kind, p.Rank, p.Stage, p.Replica, st.FirstLayer, st.LastLayer, j.status.Epoch, restore),
		})
		j.rankIter[p.Rank] = max(restore, 0)
		j.savers[p.Rank] = a.Saver
		j.trainers = append(j.trainers, &trainerRun{rank: p.Rank, instanceID: p.InstanceID, saver: a.Saver,
			Run: jobwf.Run[training.TrainerResult]{Future: workflow.ExecuteActivity(actx, training.ActivityRunTrainer, a)}})
	}
	j.setPhase(ctx, training.PhaseTraining)
	j.event(ctx, fmt.Sprintf("launched %d trainers, epoch %d, from step %d", len(j.trainers), j.status.Epoch, restore))
}

// stopTrainers cancels the epoch, asks the nodes to stop its trainers at once, and waits
// for the trainers on instances not in lost to stop (a new epoch must not share a machine
// with an old trainer), at most about a heartbeat timeout; trainers on lost instances are
// not waited for.
func (j *job) stopTrainers(ctx workflow.Context, lost map[string]bool) {
	if j.cancelEpoch == nil {
		return
	}
	j.cancelEpoch()
	j.cancelEpoch = nil
	j.askNodesToStop(ctx, lost)
	tctx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timer := workflow.NewTimerWithOptions(tctx, j.opts.HeartbeatTimeout+2*time.Second, workflow.TimerOptions{Summary: "wait for trainers to stop"})
	jobwf.AwaitRuns(ctx, timer, j.trainers, func(t *trainerRun) bool { return !lost[t.instanceID] })
	j.trainers = nil
}

// versionRelayNotices: a notice of one machine is passed to the job's trainers on the others;
// runs recorded before did not (only the simulated nodes of `schooner dev` relayed it).
const versionRelayNotices = "relay-notices"

// relayNotice passes a machine's preemption notice to every other node running a trainer of
// this epoch (NoticeTrainers on its queue): a step of a plan of several stages is durable only
// once every stage saved it, so every stage's saver must take the same emergency checkpoints
// as the one whose machine goes. Like askNodesToStop it does not wait for the answers: a node
// that does not pick it up at once is dead or busy, and the job's own recovery covers it.
func (j *job) relayNotice(ctx workflow.Context, n training.PreemptionNotice) {
	j.tellNodes(ctx, map[string]bool{n.InstanceID: true}, training.ActivityNoticeTrainers,
		training.NoticeRequest{JobID: j.id, Instance: n.InstanceID, Deadline: n.Deadline},
		func(string) string {
			return fmt.Sprintf("emergency checkpoints of %s: %s will be preempted", j.id, n.InstanceID)
		})
}

// askNodesToStop sends StopTrainers to every node with a running trainer of this epoch
// outside lost. The cancellation alone would reach a trainer only with its next heartbeat
// reply, seconds later; the node's queue delivers this in milliseconds. A node that does not
// pick it up quickly is dead or stuck, and the cancellation and the wait's bound cover it,
// so the results are not waited for.
func (j *job) askNodesToStop(ctx workflow.Context, lost map[string]bool) {
	j.tellNodes(ctx, lost, training.ActivityStopTrainers, training.StopRequest{JobID: j.id, BeforeEpoch: j.status.Epoch + 1},
		func(instance string) string {
			return fmt.Sprintf("stop trainers of %s before epoch %d on %s", j.id, j.status.Epoch+1, instance)
		})
}

// tellNodes runs activity with arg once on the queue of every node with a running trainer of
// this epoch, except those in skip, without waiting: one try, two seconds to be picked up.
func (j *job) tellNodes(ctx workflow.Context, skip map[string]bool, activity string, arg any, summary func(instance string) string) {
	asked := map[string]bool{}
	for _, t := range j.trainers {
		if t.Done || skip[t.instanceID] || asked[t.instanceID] {
			continue
		}
		asked[t.instanceID] = true
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: taskqueue.Node(t.instanceID), ScheduleToStartTimeout: 2 * time.Second, StartToCloseTimeout: 5 * time.Second,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
			Summary:     summary(t.instanceID),
		})
		workflow.ExecuteActivity(actx, activity, arg)
	}
}
