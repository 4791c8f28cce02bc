// Command routerq measures the serving router's queueing delay under a bursty open-loop load
// with its two queues: the heap behind a mutex (router.NewHeapQueue, the default and the
// baseline) and package pq's concurrent priority queue (router.NewPQueue, `schooner serve
// router --queue pq`). Each trial starts a real router pool as `schooner serve router` does,
// over a fake stage worker that speaks the real stage protocol with a fixed number of batch
// slots and a fixed time per token, serves it over HTTP, and sends POST /v1/completions from
// many client goroutines on a seeded on/off arrival schedule: bursts above the worker's
// capacity, so requests wait in the router's queue, then quiet, so it drains. The queueing
// delay of each request (admission to submit to the first stage) comes from the router's
// OnDispatch hook; end-to-end latency from the client. The two queues alternate over
// -repeats on the same schedule per repeat, after an unrecorded warm-up trial of each. It prints a Markdown table and writes the raw
// per-request CSV and the summary under bench/routerq/data/<machine>-<date>/.
//
//	go run ./bench/routerq                   # 2 queues × 3 repeats × 15 s, about 2 minutes
//	go run ./bench/routerq -quick            # one repeat of 4 s each, about 10 seconds
//	go build -o bin/routerq ./bench/routerq  # a binary for another machine (needs nothing from the tree)
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/bench/internal/cli"
	"github.com/schooner-ml/schooner/bench/internal/machine"
	"github.com/schooner-ml/schooner/serving"
)

func main() { cli.Main("routerq", run) }

func run(args []string, w io.Writer) error {
	fs := cli.FlagSet("routerq", w)
	duration := fs.Duration("duration", 15*time.Second, "arrivals per trial (one queue, one repeat)")
	repeats := fs.Int("repeats", 3, "trials of each queue, interleaved")
	warmup := fs.Duration("warmup", 2*time.Second, "an unrecorded trial of each queue this long before the first repeat (0: none)")
	quick := fs.Bool("quick", false, "a 10-second look: -duration 4s -repeats 1 -warmup 1s")
	clients := fs.Int("clients", 64, "client goroutines, each with its own connections, sending its share of the arrivals open-loop")
	slots := fs.Int("slots", 16, "the fake worker's batch slots (requests decoding at once)")
	step := fs.Duration("step", 2*time.Millisecond, "the fake worker's time per decode step: one token of every running request")
	tokens := fs.Int("tokens", 16, "max_tokens of every request")
	burst := fs.Float64("burst", 4, "arrival rate during a burst, in multiples of the worker's capacity")
	quiet := fs.Float64("quiet", 0.1, "arrival rate between bursts, in multiples of the worker's capacity")
	on := fs.Duration("on", 100*time.Millisecond, "length of a burst")
	off := fs.Duration("off", 400*time.Millisecond, "length of the quiet after a burst")
	maxQueue := fs.Int("max-queue", serving.DefaultQueue, "the router's MaxQueue (429 above it), a deployment's default queue")
	maxRunning := fs.Int("max-running", -1, "the router's MaxRunning (-1: the worker's slots; 0: unbounded, the worker's \"overloaded\" pushes back)")
	seed := fs.Uint64("seed", 1, "arrival schedule seed (repeat r uses seed+r, the same for both queues)")
	name := fs.String("machine", "", "machine name for the output folder (default hostname-<N>cpu)")
	out := fs.String("out", "", "output folder (default bench/routerq/data/<machine>-<date>)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		*duration, *repeats, *warmup = 4*time.Second, 1, time.Second
	}
	if *duration <= 0 || *repeats < 1 || *clients < 1 || *slots < 1 || *step <= 0 || *tokens < 1 || *on <= 0 || *off < 0 ||
		*burst <= 0 || *quiet < 0 || *maxQueue < 1 {
		return fmt.Errorf("-duration, -repeats, -clients, -slots, -step, -tokens, -on, -burst and -max-queue must be positive, -off and -quiet not negative")
	}
	if *maxRunning < 0 {
		*maxRunning = *slots
	}
	if *name == "" {
		h, _ := os.Hostname()
		*name = fmt.Sprintf("%s-%dcpu", sanitize(h), runtime.NumCPU())
	}
	if *out == "" {
		*out = filepath.Join("bench", "routerq", "data", *name+"-"+time.Now().UTC().Format("2006-01-02"))
	}
	s := setup{Slots: *slots, Step: *step, MaxTokens: *tokens, MaxQueue: *maxQueue, MaxRunning: *maxRunning,
		Clients: *clients, Timeout: time.Minute}
	l := load{Capacity: float64(*slots) / (float64(*tokens) * step.Seconds()), Burst: *burst, Quiet: *quiet, On: *on, Off: *off}

	var head strings.Builder
	fmt.Fprintf(&head, "machine: %s, %s/%s, %d CPUs, GOMAXPROCS %d, %s, %s\n", *name, runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.GOMAXPROCS(0), machine.CPUModel(), runtime.Version())
	fmt.Fprintf(&head, "worker: %d slots × %v a step, %d tokens a request: capacity %.0f requests/s; router MaxRunning %d, MaxQueue %d\n",
		s.Slots, s.Step, s.MaxTokens, l.Capacity, s.MaxRunning, s.MaxQueue)
	fmt.Fprintf(&head, "load: bursts of %v at %g× capacity (%.0f/s), then %v at %g× (%.0f/s), Poisson within each: mean %.0f/s (%.2f of capacity); %d clients, open loop; %v a trial, %d repeats, seed %d\n",
		l.On, l.Burst, l.Burst*l.Capacity, l.Off, l.Quiet, l.Quiet*l.Capacity, l.mean(), l.mean()/l.Capacity, s.Clients, *duration, *repeats, *seed)
	fmt.Fprint(w, head.String())

	// The process's first trial pays for heap growth, goroutine stacks and connections; an
	// unrecorded one of each queue takes that off whichever queue goes first.
	if *warmup > 0 {
		for _, q := range queueNames {
			if _, err := runTrial(s, q, 0, l.schedule(*seed+1<<32, *warmup)); err != nil {
				return fmt.Errorf("warm-up, %s: %w", q, err)
			}
		}
		runtime.GC()
	}
	var trials []trial
	var lines strings.Builder
	for r := range *repeats {
		sched := l.schedule(*seed+uint64(r), *duration)
		order := queueNames
		if r%2 == 1 {
			order = []string{queueNames[1], queueNames[0]} // alternate who goes first
		}
		for _, q := range order {
			t, err := runTrial(s, q, r+1, sched)
			if err != nil {
				return fmt.Errorf("repeat %d, %s: %w", r+1, q, err)
			}
			line := fmt.Sprintf("repeat %d %-4s: %s\n", r+1, q, t.brief())
			fmt.Fprint(w, line)
			lines.WriteString(line)
			trials = append(trials, t)
			runtime.GC()
		}
	}
	sums := summarize(trials)
	table := markdown(sums) + "\n" + notes(sums, trials)
	fmt.Fprint(w, "\n"+table)
	report := head.String() + lines.String() + "\n" + table
	if err := save(*out, *name, trials, report); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nwrote", filepath.Join(*out, "raw.csv"), "and summary.md")
	return nil
}

// sanitize keeps a hostname usable as a folder name.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '-'
	}, s)
}
