package trainingact

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/training"
)

// Notice passes a preemption notice of this machine to every running trainer's checkpoint
// agent (which asks the saver for an emergency checkpoint) and returns the jobs concerned, so
// the node agent can tell them. deadline is wall-clock time.
func (t *Trainer) Notice(deadline time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var jobs []string
	for r := range t.runs {
		r.agent.Notice(deadline)
		jobs = append(jobs, r.a.JobID)
	}
	return sortedJobs(jobs)
}

// NoticeJob passes a preemption notice of another machine of job to this node's trainers of
// that job, so every stage's saver takes the same emergency checkpoints (a step is durable
// only when all stages saved it). It says whether any trainer of the job runs here.
func (t *Trainer) NoticeJob(jobID string, deadline time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	found := false
	for r := range t.runs {
		if r.a.JobID == jobID {
			r.agent.Notice(deadline)
			found = true
		}
	}
	return found
}

// StopTrainers stops this node's trainers of req.JobID from epochs before req.BeforeEpoch:
// each ends as its job asked (graceful: uploads in flight get the shutdown grace) and its
// RunTrainer returns a TrainerStopped error at once. It returns how many it stopped.
func (t *Trainer) StopTrainers(_ context.Context, req training.StopRequest) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for r := range t.runs {
		if r.a.JobID == req.JobID && r.a.Epoch < req.BeforeEpoch {
			r.stopped.Store(true)
			r.cancel()
			n++
		}
	}
	return n, nil
}

// Kill makes this node behave as a machine that vanished: every running trainer stops at once,
// its agent closes without flushing uploads, and RunTrainer returns no result
// (activity.ErrResultPending), so the job sees only missing heartbeats. Later RunTrainer calls
// fail. It is for the simulated node agents (workers.SimNodes), which call it before stopping
// the node's worker.
func (t *Trainer) Kill() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.killed = true
	for r := range t.runs {
		r.cancel()
	}
}

// Running lists the assignments running on this node, by job, then rank.
func (t *Trainer) Running() []training.Assignment {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]training.Assignment, 0, len(t.runs))
	for r := range t.runs {
		out = append(out, r.a)
	}
	slices.SortFunc(out, func(x, y training.Assignment) int {
		if c := strings.Compare(x.JobID, y.JobID); c != 0 {
			return c
		}
		return x.Rank - y.Rank
	})
	return out
}

func (t *Trainer) track(r *trainerRun) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.killed {
		return false
	}
	if t.runs == nil {
		t.runs = map[*trainerRun]struct{}{}
	}
	t.runs[r] = struct{}{}
	return true
}

func (t *Trainer) untrack(r *trainerRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.runs, r)
}

func (t *Trainer) isKilled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.killed
}

// epochInUse says whether a trainer of the job's epoch runs here now (its directory must
// stay).
func (t *Trainer) epochInUse(jobID string, epoch int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for r := range t.runs {
		if r.a.JobID == jobID && r.a.Epoch == epoch {
			return true
		}
	}
	return false
}
