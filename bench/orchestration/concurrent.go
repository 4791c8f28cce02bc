package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/schooner-ml/schooner/workflows"
)

var dataConverter = converter.GetDefaultDataConverter()

// benchConcurrent submits n jobs at once and waits for all to complete, reporting wall
// time and what the whole process (server, workers, node agents, trainers) used.
func benchConcurrent(ctx context.Context, n int, scale float64) error {
	s, err := startStack(ctx, scale)
	if err != nil {
		return err
	}
	defer s.stop()
	before := cpuSeconds()
	began := time.Now()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("train-bench-many-%03d", i)
		if err := s.submit(ctx, ids[i], s.spec(fmt.Sprintf("many%03d", i), 100, 25, 1), workflows.JobOptions{}); err != nil {
			return err
		}
	}
	done := map[string]workflows.JobStatus{}
	deadline := time.Now().Add(15 * time.Minute)
	for len(done) < n && time.Now().Before(deadline) {
		for _, id := range ids {
			if _, ok := done[id]; ok {
				continue
			}
			d, err := s.client.DescribeWorkflowExecution(ctx, id, "")
			if err != nil || d.GetWorkflowExecutionInfo().GetCloseTime() == nil {
				continue
			}
			var st workflows.JobStatus
			_ = s.client.GetWorkflow(ctx, id, "").Get(ctx, &st)
			done[id] = st
		}
		fmt.Printf("\rjobs done %d/%d after %s   ", len(done), n, time.Since(began).Round(time.Second))
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Println()
	wall := time.Since(began)
	completed, verified := 0, 0
	for _, st := range done {
		if st.Phase == workflows.PhaseCompleted {
			completed++
		}
		if st.StateVerified {
			verified++
		}
	}
	fmt.Printf("\n| concurrent jobs | completed | state verified | wall | CPU seconds (whole process) | peak RSS |\n|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %d | %d | %s | %.1f | %d MiB |\n", n, completed, verified, wall.Round(time.Second), cpuSeconds()-before, peakRSSMiB())
	if completed < n {
		return fmt.Errorf("%d of %d jobs completed", completed, n)
	}
	return nil
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
