package node

import (
	"slices"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/training"
)

// Notice passes a preemption notice of this machine to every running trainer's checkpoint
// agent (which asks the saver for an emergency checkpoint) and returns the jobs concerned, so
// the node agent can tell them. deadline is wall-clock time.
func (s *Supervisor) Notice(deadline time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var jobs []string
	for r := range s.runs {
		r.agent.Notice(deadline)
		jobs = append(jobs, r.a.JobID)
	}
	return sortedJobs(jobs)
}

// NoticeJob passes a preemption notice of another machine of job to this node's trainers of
// that job, so every stage's saver takes the same emergency checkpoints (a step is durable
// only when all stages saved it). It says whether any trainer of the job runs here.
func (s *Supervisor) NoticeJob(jobID string, deadline time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for r := range s.runs {
		if r.a.JobID == jobID {
			r.agent.Notice(deadline)
			found = true
		}
	}
	return found
}

// Stop stops this node's trainers of req.JobID from epochs before req.BeforeEpoch: each ends
// as its job asked (graceful: uploads in flight get the shutdown grace) and its Run returns an
// ErrStopped error at once. It returns how many it stopped.
func (s *Supervisor) Stop(req training.StopRequest) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for r := range s.runs {
		if r.a.JobID == req.JobID && r.a.Epoch < req.BeforeEpoch {
			r.stopped.Store(true)
			r.cancel()
			n++
		}
	}
	return n
}

// Kill makes this node behave as a machine that vanished: every running trainer stops at once,
// its agent closes without flushing uploads, and Run returns ErrVanished (the activity answers
// no result), so the job sees only missing heartbeats. Later Run calls fail. It is for the
// simulated node agents (workers.SimNodes), which call it before stopping the node's worker.
func (s *Supervisor) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killed = true
	for r := range s.runs {
		r.cancel()
	}
}

// Running lists the assignments running on this node, by job, then rank.
func (s *Supervisor) Running() []training.Assignment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]training.Assignment, 0, len(s.runs))
	for r := range s.runs {
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

func (s *Supervisor) track(r *run) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed {
		return false
	}
	if s.runs == nil {
		s.runs = map[*run]struct{}{}
	}
	s.runs[r] = struct{}{}
	return true
}

func (s *Supervisor) untrack(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.runs, r)
}

func (s *Supervisor) isKilled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killed
}

// epochInUse says whether a trainer of the job's epoch runs here now (its directory must
// stay).
func (s *Supervisor) epochInUse(jobID string, epoch int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r := range s.runs {
		if r.a.JobID == jobID && r.a.Epoch == epoch {
			return true
		}
	}
	return false
}

// sortedJobs lists distinct job ids in order.
func sortedJobs(ids []string) []string {
	slices.Sort(ids)
	return slices.Compact(ids)
}
