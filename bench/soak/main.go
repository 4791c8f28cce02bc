// Command soak runs many small training jobs through one embedded `schooner dev` stack and
// measures what the process keeps afterwards: resident memory, Go heap in use, goroutines,
// metric series and the CPU it burns while nothing runs. A control plane that leaks per job
// (a goroutine or a worker per simulated instance that outlives it, a map entry per instance
// or per task queue) shows it here as growth between the idle process at start and the idle
// process after the jobs.
//
// The stack is the one `schooner dev` runs (devserver/stack with the UI, the Prometheus
// metrics handler and the simulated EC2 and Compute API faces), on the default simulated
// cloud (AWS boots in 2 simulated minutes) at -time-scale.
//
//	go run ./bench/soak [-jobs 200] [-batch 25] [-rounds 1] [-iterations 60] [-time-scale 120] \
//	    [-idle 30s] [-settle 2m] [-json bench/soak/data/<date>.json] [-compare <earlier run's json>]
//
// With -compare the table puts an earlier run (another build, e.g. before a fix) beside this
// one; -show <json> -compare <json> prints two recorded runs and runs nothing. -profiles
// writes heap, goroutine and idle-CPU profiles for `go tool pprof`. -heapdump FILE writes the
// runtime's heap dumps at start and after, with every allocation's stack; `go run
// ./bench/soak/spans FILE` then says whose objects keep the partly used heap spans (the
// memory an idle process cannot give back). -restart-server then stops the embedded Temporal
// server, starts it again on the same data and measures once more: what a restart of the
// server alone would give back.
//
// Each sample also says where the memory is: RssAnon, RssFile and RssShmem of
// /proc/self/status (file-backed pages are mostly the ~280 MB binary's code touched so far,
// which the kernel can drop and read again) and the Go runtime's /memory/classes/* of
// runtime/metrics. Built with -tags 'libc.memexpvar memory.counters' it also records what
// modernc.org/libc's allocator, the malloc of the embedded server's pure-Go SQLite, has mapped
// outside the Go heap:
//
//	go run -tags 'libc.memexpvar memory.counters' ./bench/soak -settle 4m -idle 60s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/schooner-ml/schooner/bench/internal/machine"
)

func main() {
	var o options
	flag.IntVar(&o.jobs, "jobs", 200, "training jobs in all")
	flag.IntVar(&o.batch, "batch", 25, "jobs submitted at once; the next batch starts when all of a batch have closed")
	flag.IntVar(&o.rounds, "rounds", 1, "run the jobs this many times in the same process, measuring the idle process after each round")
	flag.Int64Var(&o.iterations, "iterations", 60, "iterations per job (checkpoint every third of them)")
	flag.Float64Var(&o.scale, "time-scale", 120, "simulated seconds per wall second")
	flag.DurationVar(&o.idle, "idle", 30*time.Second, "window over which idle CPU is measured, at start and after the jobs")
	flag.DurationVar(&o.settle, "settle", 2*time.Minute, "wait after the last job closes before measuring the idle process (longer than the server keeps an unpolled task queue, 90 s)")
	flag.StringVar(&o.label, "label", "", "name of this build in the table and the JSON (default: this run)")
	flag.StringVar(&o.jsonPath, "json", "", "write the raw results here (default bench/soak/data/soak-<time>.json)")
	flag.StringVar(&o.compare, "compare", "", "an earlier run's JSON to show beside this one (the baseline)")
	flag.StringVar(&o.profiles, "profiles", "", "directory for heap profiles (at start, after each round, at the end), goroutines and idle CPU (none when empty); heap allocations are then sampled every 64 KiB instead of 512")
	flag.StringVar(&o.heapDump, "heapdump", "", "write heap dumps (runtime/debug.WriteHeapDump) of the idle process at start (FILE.start) and after the last round (FILE), with the stack of every allocation from then on recorded (MemProfileRate 1: slow; run with GODEBUG=memprofilerate=1 to record package initialisation too); `go run ./bench/soak/spans FILE` says which allocations keep partly used spans")
	flag.BoolVar(&o.restartServer, "restart-server", false, "after the last round, stop the embedded Temporal server, start it again on the same data and measure the idle process once more")
	show := flag.String("show", "", "print the table of this earlier run's JSON (beside -compare's) and run nothing")
	flag.Parse()
	if o.heapDump != "" {
		// Every object's allocation stack, so the dump ties each span's live objects to
		// where they were allocated (the dump records an object's stack only if sampled).
		runtime.MemProfileRate = 1
	} else if o.profiles != "" {
		// A round keeps a few MiB at most; at the default one sample per 512 KiB allocated, a
		// diff between two rounds' profiles is mostly sampling noise.
		runtime.MemProfileRate = 64 << 10
	}
	if *show != "" {
		if err := showTable(*show, o.compare); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		return
	}
	if o.label == "" {
		o.label = "this build"
	}
	if o.jsonPath == "" {
		o.jsonPath = filepath.Join("bench", "soak", "data", "soak-"+time.Now().UTC().Format("20060102T150405Z")+".json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	mach := fmt.Sprintf("%s/%s, %d CPUs, %s, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), machine.CPUModel(), runtime.Version())
	fmt.Println("machine:", mach)
	res, err := run(ctx, o)
	res.Machine, res.Label, res.Date = mach, o.label, time.Now().UTC().Format(time.RFC3339)
	if werr := writeJSON(o.jsonPath, res); werr != nil {
		fmt.Fprintln(os.Stderr, "writing results:", werr)
	} else {
		fmt.Println("raw results:", o.jsonPath)
	}
	var base *result
	if o.compare != "" {
		b, rerr := readJSON(o.compare)
		if rerr != nil {
			fmt.Fprintln(os.Stderr, "reading the baseline:", rerr)
		} else {
			base = &b
		}
	}
	printTable(os.Stdout, res, base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// showTable prints the table of the run in path, beside the one in compare when set.
func showTable(path, compare string) error {
	r, err := readJSON(path)
	if err != nil {
		return err
	}
	var base *result
	if compare != "" {
		b, err := readJSON(compare)
		if err != nil {
			return err
		}
		base = &b
	}
	fmt.Println("machine:", r.Machine)
	printTable(os.Stdout, r, base)
	return nil
}

func writeJSON(path string, r result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readJSON(path string) (result, error) {
	var r result
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}
