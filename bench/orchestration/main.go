// Command orchestration measures the training control plane on the embedded stack (Temporal
// server, simulated market, control worker and simulated node agents, all in this process):
//
//   - recovery: from a preemption without notice (sim.Market.Preempt) to every trainer of the
//     job's new epoch running (its first heartbeat seen by the server), p50 and p99 over
//     -preemptions preemptions. The market boots instances instantly, so simulated boot time
//     is excluded by construction; the time left is schooner's: noticing the loss,
//     confirming it with the provider, replanning, acquiring, dispatching and restoring.
//
//   - concurrency: -jobs jobs submitted at once to one server, with the process's CPU
//     seconds and peak RSS while they ran.
//
//     go run ./bench/orchestration [-preemptions 50] [-jobs 50]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/schooner-ml/schooner/bench/internal/machine"
)

func main() {
	preemptions := flag.Int("preemptions", 50, "preemptions to time (0 to skip)")
	jobs := flag.Int("jobs", 50, "concurrent jobs (0 to skip)")
	scale := flag.Float64("time-scale", 120, "simulated seconds per wall second")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	fmt.Printf("machine: %s/%s, %d CPUs, %s, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), machine.CPUModel(), runtime.Version())
	if *preemptions > 0 {
		if err := benchRecovery(ctx, *preemptions, *scale); err != nil {
			fmt.Fprintln(os.Stderr, "recovery bench:", err)
			os.Exit(1)
		}
	}
	if *jobs > 0 {
		if err := benchConcurrent(ctx, *jobs, *scale); err != nil {
			fmt.Fprintln(os.Stderr, "concurrency bench:", err)
			os.Exit(1)
		}
	}
}
