package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/schooner-ml/schooner/bench/internal/jobs"
	"github.com/schooner-ml/schooner/bench/internal/process"
	"github.com/schooner-ml/schooner/training"
)

var dataConverter = converter.GetDefaultDataConverter()

// benchConcurrent runs one job alone (the baseline), then n copies of it submitted at once
// to the same kind of stack, and reports wall time and what the whole process (server,
// workers, node agents, trainers) used for each.
func benchConcurrent(ctx context.Context, n int, scale float64) error {
	one, err := runJobs(ctx, 1, scale)
	if err != nil {
		return err
	}
	many, err := runJobs(ctx, n, scale)
	if err != nil {
		return err
	}
	fmt.Printf("\n| jobs at once | completed | state verified | wall | CPU seconds (whole process) | CPU s per job | peak RSS |\n|---|---|---|---|---|---|---|\n")
	for _, r := range []jobsRun{one, many} {
		fmt.Printf("| %d | %d | %d | %s | %.1f | %.2f | %d MiB |\n", r.n, r.completed, r.verified, r.wall.Round(100*time.Millisecond),
			r.cpu, r.cpu/float64(r.n), r.rssMiB)
	}
	fmt.Printf("\n%d jobs at once against one alone: wall %.2fx, CPU per job %.2fx\n", n,
		many.wall.Seconds()/one.wall.Seconds(), (many.cpu/float64(many.n))/(one.cpu/float64(one.n)))
	for _, r := range []jobsRun{one, many} {
		if r.completed < r.n {
			return fmt.Errorf("%d of %d jobs completed; %s", r.completed, r.n, r.failure)
		}
	}
	return nil
}

// jobsRun is what one runJobs measured.
type jobsRun struct {
	n, completed, verified int
	wall                   time.Duration
	cpu                    float64
	rssMiB                 int64
	failure                string // why the first job that did not complete ended
}

// runJobs submits n jobs at once to a fresh stack and waits for all to close.
func runJobs(ctx context.Context, n int, scale float64) (jobsRun, error) {
	r := jobsRun{n: n}
	s, err := startStack(ctx, scale)
	if err != nil {
		return r, err
	}
	defer s.stop()
	before := process.CPUSeconds()
	began := time.Now()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("train-bench-many-%03d", i)
		if err := s.submit(ctx, ids[i], s.spec(fmt.Sprintf("many%03d", i), 100, 25, 2), training.JobOptions{}); err != nil {
			return r, err
		}
	}
	done := map[string]training.JobStatus{}
	deadline := time.Now().Add(15 * time.Minute)
	for len(done) < n && time.Now().Before(deadline) {
		jobs.CollectClosed(ctx, s.Jobs, ids, done)
		fmt.Printf("\r%d jobs at once: %d done after %s   ", n, len(done), time.Since(began).Round(time.Second))
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Println()
	r.wall = time.Since(began)
	r.cpu = process.CPUSeconds() - before
	r.rssMiB = process.PeakRSSKiB() / 1024 // Linux reports KiB
	for _, st := range done {
		if st.Phase == training.PhaseCompleted {
			r.completed++
		}
		if st.StateVerified {
			r.verified++
		}
		if st.Phase != training.PhaseCompleted && r.failure == "" {
			r.failure = fmt.Sprintf("%s ended %s: %s", st.JobID, st.Phase, st.Error)
		}
	}
	return r, nil
}
