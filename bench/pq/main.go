// Command pq measures the adaptive priority queue of package pq against its parts and the
// obvious baseline, in one run: a sync.Mutex around container/heap, the MultiQueue backbone
// with direct execution forced, delegation forced, and the adaptive queue, over a grid of
// threads × insert share × initial size (× key range × shards). It prints a Markdown table, writes
// the raw rows (the trainer's input) under bench/pq/data/<machine>-<date>/, scores the
// compiled-in decision tree on the fresh rows, and times forced mode switches under load.
//
//	go run ./bench/pq                                  # full grid, 1 s per cell
//	go run ./bench/pq -duration 20ms -threads 1,2 -sizes 1K -inserts 0,100   # smoke
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/bench/internal/machine"
	"github.com/schooner-ml/schooner/bench/pq/dataset"
)

func main() {
	dur := flag.Duration("duration", time.Second, "timed phase per cell, implementation and trial")
	repeats := flag.Int("repeats", 3, "trials per cell and implementation, in rotating order; the table takes each one's median")
	threads := flag.String("threads", "1,2,4,8,16", "goroutine counts")
	inserts := flag.String("inserts", "0,25,50,75,100", "insert shares in percent")
	sizes := flag.String("sizes", "1K,1M", "initial queue sizes (K, M suffixes)")
	ranges := flag.String("keyranges", "1M", "key ranges (keys uniform in [0, range)); add values to train on this feature")
	shards := flag.String("shards", "0", "backbone shard counts; 0 is pq's default (2×GOMAXPROCS), 1 a strict queue")
	implList := flag.String("impls", strings.Join(impls, ","), "implementations to run")
	window := flag.Duration("window", 0, "adaptive controller window (default duration/10)")
	pin := flag.Bool("pin", true, "pin delegation servers to CPUs")
	switches := flag.Int("switches", 20, "forced mode switches to time (0 skips)")
	name := flag.String("machine", "", "machine name for the output folder (default hostname-<N>cpu)")
	out := flag.String("out", "", "output folder (default bench/pq/data/<machine>-<date>)")
	flag.Parse()
	if err := run(*dur, *repeats, *threads, *inserts, *sizes, *ranges, *shards, *implList, *window, *pin, *switches, *name, *out); err != nil {
		fmt.Fprintln(os.Stderr, "pq bench:", err)
		os.Exit(1)
	}
}

func run(dur time.Duration, repeats int, threads, inserts, sizes, ranges, shardList, implList string, window time.Duration, pin bool,
	switches int, name, out string) error {
	var ts, is, ss, rs, shs []int
	for _, l := range []struct {
		flag, list string
		to         *[]int
	}{{"threads", threads, &ts}, {"inserts", inserts, &is}, {"sizes", sizes, &ss}, {"keyranges", ranges, &rs}, {"shards", shardList, &shs}} {
		v, err := parseInts(l.list)
		if err != nil {
			return fmt.Errorf("parsing -%s: %w", l.flag, err)
		}
		*l.to = v
	}
	for i, s := range shs {
		if s == 0 {
			shs[i] = 2 * runtime.GOMAXPROCS(0) // what pq.Options defaults to; recorded as such
		}
	}
	if min(slices.Min(ts), slices.Min(rs), repeats) < 1 {
		return fmt.Errorf("threads, key ranges and repeats must be at least 1")
	}
	names := strings.Split(implList, ",")
	for _, n := range names {
		if !contains(impls, n) {
			return fmt.Errorf("unknown implementation %q (have %s)", n, strings.Join(impls, ", "))
		}
	}
	if window <= 0 {
		window = max(dur/10, time.Millisecond)
	}
	if name == "" {
		h, _ := os.Hostname()
		name = fmt.Sprintf("%s-%dcpu", sanitize(h), runtime.NumCPU())
	}
	if out == "" {
		out = filepath.Join("bench", "pq", "data", name+"-"+time.Now().UTC().Format("2006-01-02"))
	}
	fmt.Printf("machine: %s, %s/%s, %d CPUs (GOMAXPROCS %d), %s, %s\n", name, runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.GOMAXPROCS(0), machine.CPUModel(), runtime.Version())
	fmt.Printf("cells: threads %v × inserts %v%% × sizes %v × key ranges %v × shards %v, %d trials of %v each, impls %v\n\n",
		ts, is, ss, rs, shs, repeats, dur, names)

	var rows []dataset.Row
	var cells []dataset.Cell
	for _, sh := range shs {
		for _, s := range ss {
			for _, kr := range rs {
				for _, ins := range is {
					for _, th := range ts {
						cells = append(cells, dataset.Cell{Machine: name, Threads: th, InsertPct: ins, Size: s, KeyRange: int64(kr), Shards: sh})
					}
				}
			}
		}
	}
	for ci, c := range cells {
		for _, n := range trialOrder(names, repeats) {
			t := newTarget(n, c.Shards, window, pin)
			ops, secs := measure(t, c, dur)
			rows = append(rows, dataset.Row{Machine: name, Impl: n, Threads: c.Threads, InsertPct: c.InsertPct, Size: c.Size,
				KeyRange: c.KeyRange, Shards: c.Shards, Seconds: secs, Ops: ops, Mops: float64(ops) / secs / 1e6,
				FinalMode: t.Mode(), EndSize: t.Len(), AdaptiveWin: t.Windows()})
			t.Close()
			runtime.GC()
		}
		fmt.Fprintf(os.Stderr, "\rcell %d of %d", ci+1, len(cells))
	}
	fmt.Fprintln(os.Stderr)
	table := markdown(dataset.Medians(rows), names)
	fmt.Print(table)
	acc := scoreTree(rows, dataset.DefaultRule)
	fmt.Println()
	fmt.Println(acc)

	var sw switchResult
	if switches > 0 {
		sw = measureSwitches(max(ts[len(ts)-1], 1), switches, max(dur/4, 5*time.Millisecond), pin)
		fmt.Printf("\nswitch latency (%d forced switches, %d threads, 50%% inserts): flip→first op in new mode: to delegate %v, to direct %v; drain of delegated slots after →direct %v (medians)\n",
			sw.N, max(ts[len(ts)-1], 1), sw.ToDelegate, sw.ToDirect, sw.Drain)
	}
	return save(out, rows, table, acc, sw)
}

// save writes raw.csv (the trainer's input) and summary.md (what was printed).
func save(dir string, rows []dataset.Row, table, acc string, sw switchResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.Create(filepath.Join(dir, "raw.csv"))
	if err != nil {
		return fmt.Errorf("creating raw.csv: %w", err)
	}
	if err := dataset.Write(f, rows); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing raw.csv: %w", err)
	}
	summary := table + "\n" + acc + "\n"
	if sw.N > 0 {
		summary += fmt.Sprintf("\nswitch latency (median of %d): to delegate %v, to direct %v, drain %v\n", sw.N, sw.ToDelegate, sw.ToDirect, sw.Drain)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(summary), 0o644); err != nil {
		return fmt.Errorf("writing summary.md: %w", err)
	}
	fmt.Println("\nwrote", filepath.Join(dir, "raw.csv"), "and summary.md")
	return nil
}

// trialOrder is the order a cell's trials run in: trial r runs the implementations starting
// from the r-th, so none always goes first (after the previous cell's garbage) or last.
func trialOrder(names []string, repeats int) []string {
	out := make([]string, 0, repeats*len(names))
	for r := range repeats {
		for i := range names {
			out = append(out, names[(r+i)%len(names)])
		}
	}
	return out
}
