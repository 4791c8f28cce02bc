package main

import (
	"sort"

	"github.com/schooner-ml/schooner/pq"
)

// node is a CART decision-tree node: a leaf (class) or a split on feature < threshold.
type node struct {
	leaf      bool
	class     pq.Class
	feature   int
	threshold float64
	lo, hi    *node // feature < threshold, feature >= threshold
}

// nFeatures is the length of a feature vector.
const nFeatures = 5

// featureNames index the features in the order of vector.
var featureNames = [nFeatures]string{"Threads", "InsertShare", "LogSize", "LogKeyRange", "Shards"}

func vector(f pq.Features) [nFeatures]float64 {
	return [nFeatures]float64{f.Threads, f.InsertShare, f.LogSize, f.LogKeyRange, f.Shards}
}

type sample struct {
	x     [nFeatures]float64
	class pq.Class
}

const classes = 3

// gini is the impurity of a class histogram.
func gini(h [classes]int, n int) float64 {
	if n == 0 {
		return 0
	}
	g := 1.0
	for _, c := range h {
		p := float64(c) / float64(n)
		g -= p * p
	}
	return g
}

// majority is the most frequent class; ties go to Neutral, then PreferDirect, the choices
// that change nothing or keep the cheaper mode.
func majority(s []sample) pq.Class {
	var h [classes]int
	for _, x := range s {
		h[x.class]++
	}
	best := pq.Neutral
	for c := pq.Class(1); c < classes; c++ {
		if h[c] > h[best] {
			best = c
		}
	}
	return best
}

// grow builds a tree by recursive binary splitting on the Gini criterion (Breiman's CART),
// thresholds halfway between consecutive distinct values. It stops at maxDepth, at pure
// nodes, and where a split would leave fewer than minLeaf samples on a side.
func grow(s []sample, depth, maxDepth, minLeaf int) *node {
	c := majority(s)
	pure := true
	for _, x := range s {
		if x.class != s[0].class {
			pure = false
			break
		}
	}
	if pure || depth >= maxDepth || len(s) < 2*minLeaf {
		return &node{leaf: true, class: c}
	}
	var total [classes]int
	for _, x := range s {
		total[x.class]++
	}
	bestGain, bestF, bestT := 0.0, -1, 0.0
	parent := gini(total, len(s))
	sorted := make([]sample, len(s))
	for f := 0; f < nFeatures; f++ {
		copy(sorted, s)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].x[f] < sorted[j].x[f] })
		var left [classes]int
		for i := 0; i < len(sorted)-1; i++ {
			left[sorted[i].class]++
			if sorted[i].x[f] == sorted[i+1].x[f] {
				continue
			}
			nl, nr := i+1, len(sorted)-i-1
			if nl < minLeaf || nr < minLeaf {
				continue
			}
			var right [classes]int
			for k := range right {
				right[k] = total[k] - left[k]
			}
			g := parent - (float64(nl)*gini(left, nl)+float64(nr)*gini(right, nr))/float64(len(sorted))
			if g > bestGain+1e-12 {
				bestGain, bestF, bestT = g, f, (sorted[i].x[f]+sorted[i+1].x[f])/2
			}
		}
	}
	if bestF < 0 {
		return &node{leaf: true, class: c}
	}
	var lo, hi []sample
	for _, x := range s {
		if x.x[bestF] < bestT {
			lo = append(lo, x)
		} else {
			hi = append(hi, x)
		}
	}
	l, h := grow(lo, depth+1, maxDepth, minLeaf), grow(hi, depth+1, maxDepth, minLeaf)
	if l.leaf && h.leaf && l.class == h.class { // a split that changes no answer is noise
		return &node{leaf: true, class: l.class}
	}
	return &node{feature: bestF, threshold: bestT, lo: l, hi: h}
}

func (n *node) predict(x [nFeatures]float64) pq.Class {
	for !n.leaf {
		if x[n.feature] < n.threshold {
			n = n.lo
		} else {
			n = n.hi
		}
	}
	return n.class
}

// size is the number of nodes and the depth, for the report.
func (n *node) size() (nodes, depth int) {
	if n.leaf {
		return 1, 0
	}
	ln, ld := n.lo.size()
	hn, hd := n.hi.size()
	return 1 + ln + hn, 1 + max(ld, hd)
}
