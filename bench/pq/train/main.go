// Command train fits the decision tree that package pq uses to choose between direct and
// delegated execution, from the rows bench/pq measured, and writes it as Go code to
// pq/tree_gen.go. It reports the accuracy on held-out cells (a seeded split: the tree shipped
// is then refitted on all cells), the tree's size, and the class balance, so that a reader
// can tell a learned boundary from a constant.
//
//	go run ./bench/pq/train                                   # every bench/pq/data/*/raw.csv
//	go run ./bench/pq/train -data bench/pq/data/h100-16cpu-2026-12-05/raw.csv
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/schooner-ml/schooner/bench/pq/dataset"
	"github.com/schooner-ml/schooner/pq"
)

func main() {
	data := flag.String("data", "bench/pq/data/*/raw.csv", "glob of raw.csv files written by bench/pq")
	out := flag.String("out", "pq/tree_gen.go", "generated Go file")
	depth := flag.Int("depth", 8, "maximum tree depth (SmartPQ's tree had depth 8)")
	minLeaf := flag.Int("minleaf", 2, "fewest cells on each side of a split")
	holdout := flag.Float64("holdout", 0.25, "share of cells held out to score the tree")
	abs := flag.Float64("neutral-mops", dataset.DefaultRule.AbsMops, "modes within this many Mops/s are neutral")
	rel := flag.Float64("neutral-rel", dataset.DefaultRule.Rel, "or within this share of the faster one")
	seed := flag.Uint64("seed", 1, "seed of the held-out split")
	flag.Parse()
	if err := run(*data, *out, *depth, *minLeaf, *holdout, dataset.Rule{AbsMops: *abs, Rel: *rel}, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

func run(glob, out string, depth, minLeaf int, holdout float64, rule dataset.Rule, seed uint64) error {
	files, err := filepath.Glob(glob)
	if err != nil {
		return fmt.Errorf("matching %s: %w", glob, err)
	}
	sort.Strings(files)
	var rows []dataset.Row
	for _, f := range files {
		r, err := readRows(f)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	ex := dataset.Examples(rows, rule)
	if len(ex) == 0 {
		return fmt.Errorf("no cell in %s has both direct and delegate rows", glob)
	}
	all := make([]sample, len(ex))
	var hist [classes]int
	for i, e := range ex {
		all[i] = sample{x: vector(e.Features), class: e.Class}
		hist[e.Class]++
	}
	fmt.Printf("%d cells from %d files; classes: neutral %d, direct %d, delegate %d\n",
		len(all), len(files), hist[pq.Neutral], hist[pq.PreferDirect], hist[pq.PreferDelegate])

	acc := "no held-out cells"
	shuffled := append([]sample(nil), all...)
	rand.New(rand.NewPCG(seed, 0)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	nTest := int(holdout * float64(len(shuffled)))
	if nTest > 0 && nTest < len(shuffled) {
		test, trainSet := shuffled[:nTest], shuffled[nTest:]
		t := grow(trainSet, 0, depth, minLeaf)
		hit := 0
		for _, s := range test {
			if t.predict(s.x) == s.class {
				hit++
			}
		}
		acc = fmt.Sprintf("held-out accuracy %.1f%% (%d of %d cells, tree fitted on the other %d)",
			100*float64(hit)/float64(nTest), hit, nTest, len(trainSet))
	}
	fmt.Println(acc)

	final := grow(all, 0, depth, minLeaf)
	nodes, d := final.size()
	fmt.Printf("final tree (all %d cells): %d nodes, depth %d\n", len(all), nodes, d)
	src, err := emit(final, []string{
		fmt.Sprintf("Trained on %d cells from: %s.", len(all), strings.Join(files, ", ")),
		fmt.Sprintf("Labels: neutral within %.2f Mops/s or %.0f%%; depth ≤ %d, ≥ %d cells a leaf; %d nodes, depth %d.",
			rule.AbsMops, rule.Rel*100, depth, minLeaf, nodes, d),
		acc + ".",
	})
	if err != nil {
		return fmt.Errorf("formatting the generated tree: %w", err)
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	fmt.Println("wrote", out)
	return nil
}

func readRows(path string) ([]dataset.Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	rows, err := dataset.Read(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return rows, nil
}
