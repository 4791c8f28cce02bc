// Package dataset is the CSV schema shared by the pq benchmark, which writes one row per
// measured cell and implementation, and the trainer, which turns pairs of direct and
// delegate rows into labelled examples for the mode classifier. Keeping the schema, the
// feature formulas and the labelling rule in one place is what makes the tree's inputs at
// training time the same as the queue's at run time.
package dataset

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/schooner-ml/schooner/pq"
)

// Row is one measurement: one implementation on one cell of the grid.
type Row struct {
	Machine     string
	Impl        string // heap, direct, delegate, adaptive
	Threads     int
	InsertPct   int
	Size        int // items in the queue when the clock starts
	KeyRange    int64
	Shards      int // the pq backbone's shards (the heap baseline has one lock: 1)
	Seconds     float64
	Ops         int64
	Mops        float64
	FinalMode   string // the adaptive queue's mode at the end; the forced mode otherwise
	EndSize     int    // items at the end: a deleteMin-heavy cell drains its queue
	AdaptiveWin int    // adaptive windows completed during the cell
}

// Header is the CSV header, in Row's order.
var Header = []string{"machine", "impl", "threads", "insert_pct", "size", "key_range", "shards", "seconds", "ops", "mops",
	"final_mode", "end_size", "adaptive_windows"}

// Cell identifies a grid cell independently of the implementation.
type Cell struct {
	Machine   string
	Threads   int
	InsertPct int
	Size      int
	KeyRange  int64
	Shards    int
}

// Cell is the row's grid cell.
func (r Row) Cell() Cell {
	return Cell{Machine: r.Machine, Threads: r.Threads, InsertPct: r.InsertPct, Size: r.Size, KeyRange: r.KeyRange, Shards: r.Shards}
}

// Features are the classifier's inputs for a cell, computed as the queue computes them
// online (pq.Features): threads in operations, insert share, log2(1+size), log2(1+range),
// shards.
func (c Cell) Features() pq.Features {
	return pq.Features{
		Threads:     float64(c.Threads),
		InsertShare: float64(c.InsertPct) / 100,
		LogSize:     math.Log2(1 + float64(c.Size)),
		LogKeyRange: math.Log2(float64(c.KeyRange)), // keys are drawn from [0, KeyRange): max-min ≈ KeyRange-1
		Shards:      float64(c.Shards),
	}
}

// Rule says when two modes count as equal. SmartPQ labelled a workload neutral when the
// modes were within 1.5 Mops/s; a relative margin is added because Go's absolute rates differ
// from the paper's C ones and a 5% gap is within run-to-run noise.
type Rule struct {
	AbsMops float64
	Rel     float64
}

// DefaultRule is the paper's absolute margin plus 5%.
var DefaultRule = Rule{AbsMops: 1.5, Rel: 0.05}

// Label is the class a cell deserves given the two forced modes' rates.
func (r Rule) Label(direct, delegate float64) pq.Class {
	if math.Abs(delegate-direct) < max(r.AbsMops, r.Rel*max(direct, delegate)) {
		return pq.Neutral
	}
	if delegate > direct {
		return pq.PreferDelegate
	}
	return pq.PreferDirect
}

// Example is one labelled training row.
type Example struct {
	Cell     Cell
	Features pq.Features
	Direct   float64
	Delegate float64
	Class    pq.Class
}

// Examples pairs the direct and delegate rows of each cell (the median trial of each, where a
// cell was measured more than once); cells missing either are skipped. The order follows the
// rows, so results are reproducible.
func Examples(rows []Row, rule Rule) []Example {
	rows = Medians(rows)
	type pair struct{ direct, delegate float64 }
	seen := map[Cell]*pair{}
	var order []Cell
	for _, r := range rows {
		p := seen[r.Cell()]
		if p == nil {
			p = &pair{direct: -1, delegate: -1}
			seen[r.Cell()] = p
			order = append(order, r.Cell())
		}
		switch r.Impl {
		case "direct":
			p.direct = r.Mops
		case "delegate":
			p.delegate = r.Mops
		}
	}
	var out []Example
	for _, c := range order {
		p := seen[c]
		if p.direct < 0 || p.delegate < 0 {
			continue
		}
		out = append(out, Example{Cell: c, Features: c.Features(), Direct: p.direct, Delegate: p.delegate,
			Class: rule.Label(p.direct, p.delegate)})
	}
	return out
}

// Write writes rows with a header.
func Write(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Header); err != nil {
		return fmt.Errorf("writing header: %w", err)
	}
	for _, r := range rows {
		rec := []string{r.Machine, r.Impl, strconv.Itoa(r.Threads), strconv.Itoa(r.InsertPct), strconv.Itoa(r.Size),
			strconv.FormatInt(r.KeyRange, 10), strconv.Itoa(r.Shards), strconv.FormatFloat(r.Seconds, 'f', 4, 64), strconv.FormatInt(r.Ops, 10),
			strconv.FormatFloat(r.Mops, 'f', 3, 64), r.FinalMode, strconv.Itoa(r.EndSize), strconv.Itoa(r.AdaptiveWin)}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("writing row: %w", err)
		}
	}
	cw.Flush()
	return cw.Error()
}

// Read parses rows written by Write.
func Read(rd io.Reader) ([]Row, error) {
	recs, err := csv.NewReader(rd).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("reading csv: %w", err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range Header {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("reading csv: no column %q", h)
		}
	}
	var rows []Row
	for n, rec := range recs[1:] {
		var r Row
		var errs []error
		num := func(h string) int64 {
			v, err := strconv.ParseInt(rec[col[h]], 10, 64)
			errs = append(errs, err)
			return v
		}
		flt := func(h string) float64 {
			v, err := strconv.ParseFloat(rec[col[h]], 64)
			errs = append(errs, err)
			return v
		}
		r.Machine, r.Impl, r.FinalMode = rec[col["machine"]], rec[col["impl"]], rec[col["final_mode"]]
		r.Threads, r.InsertPct, r.Size = int(num("threads")), int(num("insert_pct")), int(num("size"))
		r.KeyRange, r.Ops, r.Shards = num("key_range"), num("ops"), int(num("shards"))
		r.Seconds, r.Mops = flt("seconds"), flt("mops")
		r.EndSize, r.AdaptiveWin = int(num("end_size")), int(num("adaptive_windows"))
		for _, e := range errs {
			if e != nil {
				return nil, fmt.Errorf("reading csv line %d: %w", n+2, e)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Medians folds repeated trials into one row per cell and implementation: the trial with the
// median Mops/s (the lower middle one of an even count), so that its final mode and end size
// stay those of a trial that happened. A run with one trial each is returned as it is. One
// second of one trial is at the mercy of whatever else the machine did in that second; the
// median of trials taken in rotating order is not.
func Medians(rows []Row) []Row {
	type key struct {
		cell Cell
		impl string
	}
	groups := map[key][]Row{}
	var order []key
	for _, r := range rows {
		k := key{r.Cell(), r.Impl}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Row, 0, len(order))
	for _, k := range order {
		g := slices.Clone(groups[k])
		slices.SortStableFunc(g, func(a, b Row) int { return cmp.Compare(a.Mops, b.Mops) })
		out = append(out, g[(len(g)-1)/2])
	}
	return out
}
