// Command checkpoint benchmarks schooner's local checkpoint engine against the disk it writes
// to, in one run on one disk:
//
//	(a) persistence throughput (Save to commit) against raw O_DIRECT sequential write + fsync;
//	(b) how long Save blocks the caller against a synchronous write + fsync of the same bytes;
//	(c) a simulated training loop checkpointing every iteration and every 10 iterations
//	    against the same loop without checkpoints.
//
//	go run ./bench/checkpoint [-dir ./.bench-tmp] [-sizes 1GiB,4GiB] [-iter-ms 1000] [-iters 30] [-json out.json]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
)

// config is the parsed command line.
type config struct {
	dir        string
	sizes      []int64
	loopSizes  []int64
	reps       int
	iterMS     int
	iters      int
	chunk      int64
	writers    int
	inflight   int
	staging    int64
	bigStaging bool
	direct     bool
	jsonPath   string
	keep       bool
	log        zerolog.Logger
}

func main() {
	var c config
	var sizes, loopSizes, chunk, staging string
	var verbose bool
	flag.StringVar(&c.dir, "dir", "./.bench-tmp", "scratch directory on the disk to measure (removed afterwards unless -keep)")
	flag.StringVar(&sizes, "sizes", "1GiB,4GiB", "checkpoint sizes for (a) and (b)")
	flag.StringVar(&loopSizes, "loop-sizes", "1GiB", "state sizes for the training loop (c)")
	flag.IntVar(&c.reps, "reps", 3, "measurements per size; the median is reported")
	flag.IntVar(&c.iterMS, "iter-ms", 1000, "simulated GPU compute per training iteration, ms")
	flag.IntVar(&c.iters, "iters", 30, "training iterations per loop")
	flag.StringVar(&chunk, "chunk", "64MiB", "engine chunk size")
	flag.IntVar(&c.writers, "writers", 4, "engine writer goroutines")
	flag.IntVar(&c.inflight, "inflight", 3, "engine MaxInFlight")
	flag.StringVar(&staging, "staging", "1GiB", "engine staging pool")
	flag.BoolVar(&c.bigStaging, "big-staging", true, "also measure (b) with a staging pool as large as the checkpoint")
	flag.BoolVar(&c.direct, "direct", true, "engine DirectIO")
	flag.StringVar(&c.jsonPath, "json", "", "also write the results as JSON to this file ('-' for stdout)")
	flag.BoolVar(&c.keep, "keep", false, "keep the scratch files")
	flag.BoolVar(&verbose, "v", false, "log every commit")
	flag.Parse()

	var err error
	if c.sizes, err = parseSizes(sizes); err == nil {
		if c.loopSizes, err = parseSizes(loopSizes); err == nil {
			if c.chunk, err = parseSize(chunk); err == nil {
				c.staging, err = parseSize(staging)
			}
		}
	}
	if err != nil {
		fail(err)
	}
	level := zerolog.WarnLevel
	if verbose {
		level = zerolog.DebugLevel
	}
	c.log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(level).With().Timestamp().Logger()
	if err := run(c); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}

// results is everything the run measured, for -json.
type results struct {
	Machine    machine      `json:"machine"`
	Config     string       `json:"config"`
	Throughput []throughput `json:"throughput"`
	Blocked    []blocked    `json:"blocked"`
	Loops      []loop       `json:"loops"`
}

func run(c config) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", c.dir, err)
	}
	scratch, err := os.MkdirTemp(c.dir, "ckpt-bench-")
	if err != nil {
		return fmt.Errorf("creating scratch directory: %w", err)
	}
	if !c.keep {
		defer os.RemoveAll(scratch)
	}
	res := results{Machine: describeMachine(scratch),
		Config: fmt.Sprintf("chunk %s, %d writers, MaxInFlight %d, staging %s, DirectIO %v, median of %d",
			human(c.chunk), c.writers, c.inflight, human(c.staging), c.direct, c.reps)}
	m := res.Machine
	fmt.Printf("machine: %s, %d cores, %d GiB RAM, Linux %s, %s\n", m.CPU, m.Cores, m.MemoryGiB, m.Kernel, m.Go)
	fmt.Printf("disk: %s %s (%s), directory %s\n", m.Device, m.FileSystem, m.MountOpts, absPath(scratch))
	fmt.Printf("engine: %s\n", res.Config)
	fmt.Printf("load average at start: %s\n\n", m.LoadStart)

	if res.Throughput, res.Blocked, err = measureSizes(c, filepath.Join(scratch, "engine")); err != nil {
		return err
	}
	printThroughput(res.Throughput)
	printBlocked(res.Blocked)
	if res.Loops, err = measureLoops(c, filepath.Join(scratch, "loop")); err != nil {
		return err
	}
	printLoops(res.Loops, c)
	res.Machine.LoadEnd = loadAverage()
	fmt.Printf("load average at end: %s\n", res.Machine.LoadEnd)
	if c.jsonPath != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if c.jsonPath == "-" {
			fmt.Println(string(b))
		} else if err := os.WriteFile(c.jsonPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", c.jsonPath, err)
		}
	}
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// parseSizes parses a comma-separated list of sizes.
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := parseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// parseSize parses 512MiB, 4GiB, 1048576.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			v, err := strconv.ParseFloat(strings.TrimSuffix(s, u.suffix), 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("size %q: want a positive number with an optional unit (KiB, MiB, GiB)", s)
			}
			return int64(v * float64(u.mult)), nil
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("size %q: want a positive number with an optional unit (KiB, MiB, GiB)", s)
	}
	return v, nil
}

// human prints a size in binary units.
func human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	default:
		return fmt.Sprintf("%d B", n)
	}
}
