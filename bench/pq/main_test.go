package main

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/schooner-ml/schooner/bench/pq/dataset"
)

func TestParseInts(t *testing.T) {
	got, err := parseInts("1, 2,1K,1M")
	if err != nil || !slices.Equal(got, []int{1, 2, 1024, 1 << 20}) {
		t.Fatalf("parseInts = %v, %v", got, err)
	}
	if _, err := parseInts("x"); err == nil {
		t.Fatal("parseInts accepted x")
	}
	if human(1<<20) != "1M" || human(1024) != "1K" || human(1000) != "1000" {
		t.Fatal("human")
	}
}

func TestTrialOrderRotates(t *testing.T) {
	got := trialOrder([]string{"a", "b", "c"}, 4)
	want := []string{"a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"}
	if !slices.Equal(got, want) {
		t.Fatalf("trialOrder = %v, want %v", got, want)
	}
}

// TestEveryTargetRuns measures each implementation for a few milliseconds: the harness must
// count operations, leave the queue consistent and print a table that names every column.
func TestEveryTargetRuns(t *testing.T) {
	c := dataset.Cell{Machine: "test", Threads: 2, InsertPct: 50, Size: 1024, KeyRange: 1 << 20, Shards: 4}
	var rows []dataset.Row
	for _, n := range impls {
		tg := newTarget(n, c.Shards, time.Millisecond, false)
		ops, secs := measure(tg, c, 5*time.Millisecond)
		if ops <= 0 || secs <= 0 {
			t.Errorf("%s: %d operations in %.3fs", n, ops, secs)
		}
		rows = append(rows, dataset.Row{Machine: c.Machine, Impl: n, Threads: c.Threads, InsertPct: c.InsertPct, Size: c.Size,
			KeyRange: c.KeyRange, Shards: c.Shards, Seconds: secs, Ops: ops, Mops: float64(ops) / secs / 1e6, FinalMode: tg.Mode()})
		tg.Close()
	}
	table := markdown(rows, impls)
	for _, n := range impls {
		if !strings.Contains(table, n+" Mops/s") {
			t.Errorf("table lacks a %s column:\n%s", n, table)
		}
	}
	if s := scoreTree(rows, dataset.DefaultRule); !strings.Contains(s, "1 cells") {
		t.Errorf("score: %s", s)
	}
}

// TestWorkerGeneratorsApart: in measure's array of workers, each generator (written by every
// operation) is at least two cache lines from the next one's and from the array's ends, so no
// aligned pair of lines holds two workers' generators or one and a neighbouring object.
func TestWorkerGeneratorsApart(t *testing.T) {
	ws := make([]worker, 3)
	off, size := unsafe.Offsetof(ws[0].rng), unsafe.Sizeof(ws[0].rng)
	if off < 2*cacheLine {
		t.Errorf("a worker's generator starts %d bytes in, want at least %d", off, 2*cacheLine)
	}
	if tail := unsafe.Sizeof(ws[0]) - off - size; tail < 2*cacheLine {
		t.Errorf("a worker's generator ends %d bytes before the next worker, want at least %d", tail, 2*cacheLine)
	}
	// The padded generator gives the sequence the unpadded rand.New(rand.NewPCG(…)) gave.
	ws[1].rng.Seed(3, 16)
	ref := rand.New(rand.NewPCG(3, 16))
	for range 10 {
		if a, b := ws[1].rng.Uint64(), ref.Uint64(); a != b {
			t.Fatalf("padded generator gave %d, rand.New(rand.NewPCG) %d", a, b)
		}
	}
}
