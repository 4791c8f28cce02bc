package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/bench/internal/jobs"
	"github.com/schooner-ml/schooner/bench/internal/process"
	"github.com/schooner-ml/schooner/cloud/sim/ec2api"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi"
	"github.com/schooner-ml/schooner/devserver/stack"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

type options struct {
	jobs, batch       int
	rounds            int
	iterations        int64
	scale             float64
	idle, settle      time.Duration
	label, jsonPath   string
	compare, profiles string
	heapDump          string
	restartServer     bool
}

// result is one soak run, as the JSON in bench/soak/data keeps it.
type result struct {
	Label      string  `json:"label"`
	Date       string  `json:"date"`
	Machine    string  `json:"machine"`
	Jobs       int     `json:"jobs"`
	Batch      int     `json:"batch"`
	Iterations int64   `json:"iterations"`
	TimeScale  float64 `json:"time_scale"`
	// GOGC and GOMemLimitMiB are the collector's settings the run had (GOGC, GOMEMLIMIT in
	// the environment); absent from runs recorded before they were.
	GOGC          uint64  `json:"gogc,omitempty"`
	GOMemLimitMiB float64 `json:"gomemlimit_mib,omitempty"` // absent when there is none

	Start     sample  `json:"start"`      // idle, before any job
	IdleStart idleCPU `json:"idle_start"` // CPU over the idle window at start
	Batches   []batch `json:"batches"`    // one per batch, sampled when it closed
	After     sample  `json:"after"`      // idle again, -settle after the last job closed
	IdleAfter idleCPU `json:"idle_after"` // CPU over the idle window after the jobs
	// Rounds is each round's idle sample and CPU (-rounds: the jobs again, in the same
	// process): a leak per job grows round after round; a one-time warm-up (caches filling to
	// their bounds, heap spans the allocator keeps) does not. After is the last round's.
	Rounds []round `json:"rounds,omitempty"`
	// AfterServerRestart is the idle process once more, after the embedded Temporal server
	// was stopped and started again on the same data (-restart-server): what the server's
	// own objects kept, against what the rest of the process keeps.
	AfterServerRestart *sample `json:"after_server_restart,omitempty"`

	Completed  int      `json:"completed"`
	Verified   int      `json:"state_verified"`
	Failures   []string `json:"failures,omitempty"`
	JobsWall   float64  `json:"jobs_wall_seconds"`
	PeakRSSMiB float64  `json:"peak_rss_mib"`

	// StopSeconds is how long Stack.Stop took with a batch of jobs running (the graceful stop
	// of `schooner dev`, whose bound is 10 s); StopErr is set when it overran 60 s.
	StopJobsRunning int     `json:"stop_jobs_running"`
	StopSeconds     float64 `json:"stop_seconds"`
	StopErr         string  `json:"stop_error,omitempty"`
}

type round struct {
	Jobs      int     `json:"jobs_done"`
	After     sample  `json:"after"`
	IdleAfter idleCPU `json:"idle_after"`
}

type batch struct {
	Done   int     `json:"jobs_done"`
	Wall   float64 `json:"wall_seconds"`
	Sample sample  `json:"sample"`
}

// soakStack is the `schooner dev` stack in a scratch directory.
type soakStack struct {
	*stack.Stack
	dir string
	reg *prometheus.Registry
}

func startSoakStack(ctx context.Context, scale float64) (*soakStack, error) {
	dir, err := os.MkdirTemp("", "schooner-soak-")
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	metrics, err := workers.NewPrometheusMetrics(reg)
	if err != nil {
		return nil, err
	}
	log := zerolog.New(os.Stderr).Level(zerolog.ErrorLevel)
	s, err := stack.Start(ctx, stack.Options{
		DataDir: filepath.Join(dir, "data"), Logger: log, Metrics: metrics, ServerLogLevel: "error",
		Seed: 1, TimeScale: scale,
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// The simulated EC2 and Compute faces `schooner dev` serves beside the market.
	ec2 := ec2api.New(s.Market, ec2api.Options{Now: s.Market.Now})
	if err := ec2.Start("127.0.0.1:0"); err != nil {
		_ = s.Stop(time.Minute)
		return nil, err
	}
	gce := gceapi.NewServer(s.Market, gceapi.Options{Project: "schooner-sim", Now: s.Market.Now})
	if err := gce.Start("127.0.0.1:0"); err != nil {
		_ = ec2.Close()
		_ = s.Stop(time.Minute)
		return nil, err
	}
	s.Defer(func() { _ = ec2.Close(); _ = gce.Close() })
	return &soakStack{Stack: s, dir: dir, reg: reg}, nil
}

// sample is takeSample with what only the stack knows; idle samples also return the free
// pages to the OS to tell what the program keeps from what the runtime keeps for reuse.
func (s *soakStack) sample(idle bool) sample {
	var out sample
	if idle {
		out = takeIdleSample()
	} else {
		out = takeBusySample()
	}
	if mfs, err := s.reg.Gather(); err == nil {
		for _, mf := range mfs {
			out.MetricSeries += len(mf.GetMetric())
		}
	}
	out.NodeWorkers = len(s.Agents.Nodes.Nodes())
	out.MarketEvents = s.Market.LastSeq()
	return out
}

// spec is a small job: OPT-350 on at most two spot V100s, checkpointing every third of its
// iterations into the stack's directory, on the simulated trainer.
func (s *soakStack) spec(name string, iterations int64) training.Spec {
	store := (&url.URL{Scheme: "file", Path: filepath.Join(s.dir, "store", name)}).String()
	return training.Spec{
		Name: name, Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, Iterations: iterations,
		Resources:  training.Resources{GPUTypes: []string{"V100-16"}, MaxGPUs: 2},
		Spot:       training.SpotWithFallback,
		Checkpoint: training.Checkpoint{Every: max(iterations/3, 1), Store: store},
		Trainer:    training.Trainer{Kind: training.TrainerSim, Seed: 1},
	}.WithDefaults()
}

func (s *soakStack) submit(ctx context.Context, ids []string, iterations int64) error {
	for _, id := range ids {
		if _, err := s.Jobs.Submit(ctx, s.spec(id, iterations), trainingclient.SubmitOptions{ID: id}); err != nil {
			return fmt.Errorf("submitting %s: %w", id, err)
		}
	}
	return nil
}

// wait polls until every job has closed and returns their final statuses.
func (s *soakStack) wait(ctx context.Context, ids []string) (map[string]training.JobStatus, error) {
	done := map[string]training.JobStatus{}
	for len(done) < len(ids) {
		if err := ctx.Err(); err != nil {
			return done, fmt.Errorf("waiting for jobs: %d of %d closed: %w", len(done), len(ids), err)
		}
		jobs.CollectClosed(ctx, s.Jobs, ids, done)
		time.Sleep(250 * time.Millisecond)
	}
	return done, nil
}

func run(ctx context.Context, o options) (result, error) {
	r := result{Jobs: o.jobs, Batch: o.batch, Iterations: o.iterations, TimeScale: o.scale}
	r.GOGC, r.GOMemLimitMiB = gcSettings()
	s, err := startSoakStack(ctx, o.scale)
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(s.dir)
	stopped := false
	defer func() {
		if !stopped {
			_ = s.Stop(time.Minute)
		}
	}()
	if o.profiles != "" {
		if err := os.MkdirAll(o.profiles, 0o755); err != nil {
			return r, err
		}
	}

	time.Sleep(2 * time.Second) // let the start-up settle
	r.Start = s.sample(true)
	if o.profiles != "" {
		writeProfile(filepath.Join(o.profiles, "heap-start.pprof"), "heap", 0)
	}
	r.IdleStart = measureIdle(o.idle, nil)
	if o.heapDump != "" { // the idle process at start, to compare the one after with
		if err := writeHeapDump(o.heapDump + ".start"); err != nil {
			return r, err
		}
	}
	fmt.Printf("start: RSS %.0f MiB, heap %.0f MiB, %d goroutines, idle CPU %.1f%%\n",
		r.Start.RSSMiB, r.Start.HeapInuseMiB, r.Start.Goroutines, r.IdleStart.Percent)

	began := time.Now()
	for rnd := 1; rnd <= max(o.rounds, 1); rnd++ {
		if err := runRound(ctx, s, o, rnd, began, &r); err != nil {
			return r, err
		}
		last := rnd == max(o.rounds, 1)
		time.Sleep(o.settle)
		after := s.sample(true)
		if o.profiles != "" { // one a round: `go tool pprof -diff_base` shows what a round kept
			writeProfile(filepath.Join(o.profiles, fmt.Sprintf("heap-round-%d.pprof", rnd)), "heap", 0)
		}
		idle := measureIdle(o.idle, func() {
			if o.profiles == "" || !last {
				return
			}
			if f, err := os.Create(filepath.Join(o.profiles, "idle-cpu.pprof")); err == nil {
				if pprof.StartCPUProfile(f) == nil {
					time.AfterFunc(o.idle-time.Second, func() { pprof.StopCPUProfile(); _ = f.Close() })
				}
			}
		})
		r.Rounds = append(r.Rounds, round{Jobs: rnd * o.jobs, After: after, IdleAfter: idle})
		r.After, r.IdleAfter = after, idle
		fmt.Printf("round %d: after %d jobs, idle: RSS %.0f MiB (%.0f with free pages returned), heap %.0f MiB (live %.0f), %d goroutines, idle CPU %.1f%%\n",
			rnd, rnd*o.jobs, after.RSSMiB, after.RSSFreedMiB, after.HeapInuseMiB, after.HeapLiveMiB, after.Goroutines, idle.Percent)
	}
	r.JobsWall = time.Since(began).Seconds()
	r.PeakRSSMiB = float64(process.PeakRSSKiB()) / 1024
	if o.heapDump != "" {
		if err := writeHeapDump(o.heapDump); err != nil {
			return r, err
		}
	}
	if o.profiles != "" {
		writeProfile(filepath.Join(o.profiles, "heap.pprof"), "heap", 0)
		writeProfile(filepath.Join(o.profiles, "goroutines.txt"), "goroutine", 1)
	}
	if o.restartServer {
		if err := afterServerRestart(s, o, &r); err != nil {
			return r, err
		}
	}
	return r, gracefulStop(ctx, s, o, &r, &stopped)
}

// afterServerRestart stops the embedded Temporal server, starts it again on the same data (as
// Stack.RestartServer does in the tests), lets the workers reconnect and samples the idle
// process once more: the memory the server's own objects kept is given back by the restart,
// what the rest of the process keeps is not.
func afterServerRestart(s *soakStack, o options, r *result) error {
	if err := s.RestartServer(); err != nil {
		return fmt.Errorf("restarting the server: %w", err)
	}
	time.Sleep(30 * time.Second) // the workers reconnect and poll again
	again := s.sample(true)
	r.AfterServerRestart = &again
	fmt.Printf("after a server restart: RSS %.0f MiB (%.0f with free pages returned, anon %.1f), heap %.0f MiB (live %.0f), %d goroutines\n",
		again.RSSMiB, again.RSSFreedMiB, again.RSSAnonMiB, again.HeapInuseMiB, again.HeapLiveMiB, again.Goroutines)
	if o.heapDump == "" {
		return nil
	}
	return writeHeapDump(o.heapDump + ".restarted") // what outlives the restart
}

// runRound runs -jobs jobs, -batch at a time, recording each batch and every job that did not
// complete verified.
func runRound(ctx context.Context, s *soakStack, o options, rnd int, began time.Time, r *result) error {
	for first := 0; first < o.jobs; first += o.batch {
		n := min(o.batch, o.jobs-first)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("soak-%03d", first+i)
			if rnd > 1 {
				ids[i] = fmt.Sprintf("soak-r%d-%03d", rnd, first+i)
			}
		}
		if err := s.submit(ctx, ids, o.iterations); err != nil {
			return err
		}
		done, err := s.wait(ctx, ids)
		for _, id := range ids {
			st, ok := done[id]
			switch {
			case !ok:
				r.Failures = append(r.Failures, id+": did not close")
			case st.Phase != training.PhaseCompleted:
				r.Failures = append(r.Failures, fmt.Sprintf("%s ended %s: %s", id, st.Phase, st.Error))
			default:
				r.Completed++
				if st.StateVerified {
					r.Verified++
				} else {
					r.Failures = append(r.Failures, id+": completed, state not verified")
				}
			}
		}
		b := batch{Done: (rnd-1)*o.jobs + first + n, Wall: time.Since(began).Seconds(), Sample: s.sample(false)}
		r.Batches = append(r.Batches, b)
		fmt.Printf("%3d jobs closed after %5.0f s: RSS %.0f MiB, heap %.0f MiB, %d goroutines, %d node agents, %d metric series\n",
			b.Done, b.Wall, b.Sample.RSSMiB, b.Sample.HeapInuseMiB, b.Sample.Goroutines, b.Sample.NodeWorkers, b.Sample.MetricSeries)
		if err != nil {
			return err
		}
	}
	return nil
}

// gracefulStop stops the stack with a batch of jobs running, as Ctrl-C on `schooner dev` in
// the middle of work, and fails the run when any job did not complete verified.
func gracefulStop(ctx context.Context, s *soakStack, o options, r *result, stopped *bool) error {
	ids := make([]string, o.batch)
	for i := range ids {
		ids[i] = fmt.Sprintf("soak-stop-%03d", i)
	}
	if err := s.submit(ctx, ids, o.iterations*10); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for len(s.Agents.Nodes.Nodes()) < o.batch/2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	r.StopJobsRunning = len(ids)
	t0 := time.Now()
	*stopped = true
	if err := s.Stop(time.Minute); err != nil {
		r.StopErr = err.Error()
	}
	r.StopSeconds = time.Since(t0).Seconds()
	fmt.Printf("graceful stop with %d jobs running: %.2f s\n", len(ids), r.StopSeconds)
	if len(r.Failures) > 0 {
		return fmt.Errorf("%d of %d jobs did not complete verified; first: %s", len(r.Failures), o.jobs*max(o.rounds, 1), r.Failures[0])
	}
	return nil
}

func writeProfile(path, name string, debug int) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup(name).WriteTo(f, debug)
}
