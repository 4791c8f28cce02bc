package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"go.temporal.io/sdk/converter"

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
	before := cpuSeconds()
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
		for _, id := range ids {
			if _, ok := done[id]; ok {
				continue
			}
			if closed, err := s.Jobs.Closed(ctx, id); err != nil || !closed {
				continue
			}
			// The status query answers for closed jobs too, failed ones included (their
			// result is an error, not a status).
			st, err := s.Jobs.Status(ctx, id)
			if err != nil {
				st = training.JobStatus{JobID: id, Error: "querying its status: " + err.Error()}
			}
			done[id] = st
		}
		fmt.Printf("\r%d jobs at once: %d done after %s   ", n, len(done), time.Since(began).Round(time.Second))
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Println()
	r.wall = time.Since(began)
	r.cpu = cpuSeconds() - before
	r.rssMiB = peakRSSMiB()
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

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// peakRSSMiB is the process's maximum resident set (Linux reports KiB).
func peakRSSMiB() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss / 1024
}
