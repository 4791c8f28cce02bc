package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/schooner-ml/schooner/bench/pq/dataset"
	"github.com/schooner-ml/schooner/pq"
)

// markdown prints one line per cell (rows folded to one trial per implementation first, see
// dataset.Medians): each implementation's Mops/s, the adaptive queue's final
// mode, what the compiled-in tree says about the cell, and adaptive over the best forced mode.
func markdown(rows []dataset.Row, names []string) string {
	var b strings.Builder
	b.WriteString("| shards | size | key range | insert % | threads |")
	for _, n := range names {
		b.WriteString(" " + n + " Mops/s |")
	}
	b.WriteString(" adaptive ended | tree says | adaptive / best forced |\n|")
	b.WriteString(strings.Repeat("---|", 5+len(names)+3) + "\n")
	byCell := map[dataset.Cell]map[string]dataset.Row{}
	var order []dataset.Cell
	for _, r := range rows {
		if byCell[r.Cell()] == nil {
			byCell[r.Cell()] = map[string]dataset.Row{}
			order = append(order, r.Cell())
		}
		byCell[r.Cell()][r.Impl] = r
	}
	for _, c := range order {
		m := byCell[c]
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %d |", c.Shards, human(c.Size), human(int(c.KeyRange)), c.InsertPct, c.Threads)
		for _, n := range names {
			if r, ok := m[n]; ok {
				fmt.Fprintf(&b, " %.2f |", r.Mops)
			} else {
				b.WriteString(" – |")
			}
		}
		ended, ratio := "–", "–"
		if a, ok := m["adaptive"]; ok {
			ended = a.FinalMode
			best := max(m["direct"].Mops, m["delegate"].Mops)
			if best > 0 {
				ratio = fmt.Sprintf("%.2f", a.Mops/best)
			}
		}
		fmt.Fprintf(&b, " %s | %s | %s |\n", ended, pq.Classify(c.Features()), ratio)
	}
	return b.String()
}

// scoreTree is the compiled-in tree's accuracy on this run's cells, labelled by the same
// rule the trainer uses. Rows measured after the tree was generated are held out from its
// training by construction; rows it was trained on score optimistically.
func scoreTree(rows []dataset.Row, rule dataset.Rule) string {
	ex := dataset.Examples(rows, rule)
	if len(ex) == 0 {
		return "classifier: no cell has both direct and delegate rows, nothing to score"
	}
	hit := 0
	var confused []string
	for _, e := range ex {
		got := pq.Classify(e.Features)
		if got == e.Class {
			hit++
		} else if len(confused) < 5 {
			confused = append(confused, fmt.Sprintf("shards %d, threads %d, inserts %d%%, size %s: measured %v (direct %.2f, delegate %.2f), tree %v",
				e.Cell.Shards, e.Cell.Threads, e.Cell.InsertPct, human(e.Cell.Size), e.Class, e.Direct, e.Delegate, got))
		}
	}
	s := fmt.Sprintf("classifier accuracy on this run's %d cells (rule: neutral within %.1f Mops/s or %.0f%%): %.1f%%",
		len(ex), rule.AbsMops, rule.Rel*100, 100*float64(hit)/float64(len(ex)))
	for _, c := range confused {
		s += "\n  miss: " + c
	}
	return s
}

// parseInts reads "1,2,4" or "1K,1M" (K = 1024, M = 1024², G = 1024³).
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		mul := 1
		switch {
		case strings.HasSuffix(f, "K"):
			mul, f = 1<<10, strings.TrimSuffix(f, "K")
		case strings.HasSuffix(f, "M"):
			mul, f = 1<<20, strings.TrimSuffix(f, "M")
		case strings.HasSuffix(f, "G"):
			mul, f = 1<<30, strings.TrimSuffix(f, "G")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		out = append(out, n*mul)
	}
	return out, nil
}

// human writes 1024 as 1K and 1048576 as 1M.
func human(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return strconv.Itoa(n)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sanitize keeps a host name safe as a folder name.
func sanitize(s string) string {
	if s == "" {
		return "unknown"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, s)
}
