package planner

import (
	"cmp"
	"math"
	"sort"
	"sync"
	"sync/atomic"
)

// stageChoice is one stage of a found plan: layers a..b under an option.
type stageChoice struct {
	a, b int
	op   option
}

// found is a complete plan as the programme scored it, before pools are assigned and the
// simulator re-estimates it.
type found struct {
	obj    float64 // the objective: iteration time or USD per iteration
	t, usd float64
	gpus   int
	mbs, d int
	stages []stageChoice
}

// less orders found plans best first, deterministically: objective, then the other measure,
// then fewer GPUs, then the layout itself.
// Floats compare with cmp.Compare, which agrees with < for every value a score can take.
func (f *found) less(g *found) bool {
	if c := cmp.Or(cmp.Compare(f.obj, g.obj), cmp.Compare(f.t, g.t), cmp.Compare(f.usd, g.usd),
		cmp.Compare(f.gpus, g.gpus), cmp.Compare(f.mbs, g.mbs), cmp.Compare(f.d, g.d),
		cmp.Compare(len(f.stages), len(g.stages))); c != 0 {
		return c < 0
	}
	for i := range f.stages {
		x, y := f.stages[i], g.stages[i]
		if c := cmp.Or(cmp.Compare(x.b, y.b), cmp.Compare(x.op.cls, y.op.cls),
			cmp.Compare(x.op.tp, y.op.tp)); c != 0 {
			return c < 0
		}
	}
	return false
}

// nextSlack bounds how much worse than the best a plan may be to be listed among the next
// ones: the search prunes everything else, which is most of its speed on large instances.
// With merged regions the programme's numbers are estimates (the simulator decides once
// stages have zones), so it keeps more, and worse, plans for the simulator to rank.
const (
	nextSlack       = 0.02
	mergedSlack     = 0.05
	mergedKeepTimes = 4
)

// same reports whether f and g are one plan.
func (f *found) same(g *found) bool {
	if f.mbs != g.mbs || f.d != g.d || len(f.stages) != len(g.stages) {
		return false
	}
	for i := range f.stages {
		if f.stages[i].b != g.stages[i].b || f.stages[i].op.cls != g.stages[i].op.cls || f.stages[i].op.tp != g.stages[i].op.tp {
			return false
		}
	}
	return true
}

// topK keeps the K best plans found. The pruning threshold, read without the lock by every
// worker, is the smaller of the K-th objective and the best one plus the slack: what can
// still enter the list. The best plan itself is never pruned.
type topK struct {
	k         int
	slack     float64
	objective Objective
	mu        sync.Mutex
	items     []*found
	bySpread  [4]*found
	thr       atomic.Uint64 // float64 bits of the threshold; +Inf until a plan is found
}

func newTopK(k int, o Objective, merged bool) *topK {
	t := &topK{k: k, objective: o, slack: nextSlack}
	if merged {
		t.k, t.slack = max(k*mergedKeepTimes, 20), mergedSlack
	}
	t.thr.Store(math.Float64bits(math.Inf(1)))
	return t
}

// thresholds returns the pruning thresholds: on iteration time for the throughput
// objective, on USD per iteration for cost (the other is +Inf).
func (t *topK) thresholds() (thrT, thrC float64) {
	v := math.Float64frombits(t.thr.Load())
	if t.objective == MinCost {
		return math.Inf(1), v
	}
	return v, math.Inf(1)
}

// offer adds a complete plan (the label of its first stage) if it is among the K best. It
// also remembers the best plan of each spread (one zone, one region, several regions) for
// the rejections report.
func (t *topK) offer(w *worker, tb *mbsTables, l *label, d, n int, T, usd float64) {
	obj := T
	if t.objective == MinCost {
		obj = usd
	}
	level := labelSpread(w, tb, l)
	inTop := obj <= math.Float64frombits(t.thr.Load())
	t.mu.Lock()
	wider := t.bySpread[level] == nil || obj < t.bySpread[level].obj
	t.mu.Unlock()
	if !inTop && !wider {
		return
	}
	f := &found{obj: obj, t: T, usd: usd, mbs: tb.mbs, d: d}
	for cur := l; ; {
		op := tb.opts[cur.opt]
		f.stages = append(f.stages, stageChoice{a: int(cur.a), b: int(cur.b), op: op})
		f.gpus += d * op.tp
		if cur.parent < 0 {
			break
		}
		cur = &w.labels[cur.parent]
	}
	if _, ok := w.s.placeStages(f); !ok {
		return // the zones of a merged class cannot hold its stages
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.bySpread[level]; b == nil || f.less(b) {
		t.bySpread[level] = f
	}
	if len(t.items) == t.k && !f.less(t.items[len(t.items)-1]) {
		return
	}
	for _, g := range t.items {
		if f.same(g) {
			return // found again (the beam pass and the exact pass meet the same plans)
		}
	}
	i := sort.Search(len(t.items), func(i int) bool { return f.less(t.items[i]) })
	t.items = append(t.items, nil)
	copy(t.items[i+1:], t.items[i:])
	t.items[i] = f
	if len(t.items) > t.k {
		t.items = t.items[:t.k]
	}
	thr := t.items[0].obj * (1 + t.slack)
	if len(t.items) == t.k {
		thr = math.Min(thr, t.items[t.k-1].obj)
	}
	t.thr.Store(math.Float64bits(thr))
}

// labelSpread is spread (see spread) of the plan a complete label describes.
func labelSpread(w *worker, tb *mbsTables, l *label) int {
	first := tb.opts[l.opt].ep
	level := 1
	for cur := l; ; {
		ep := tb.opts[cur.opt].ep
		if ep.Region != first.Region {
			return 3
		}
		if ep.Zone != first.Zone {
			level = 2
		}
		if cur.parent < 0 {
			return level
		}
		cur = &w.labels[cur.parent]
	}
}

// widerThan returns the best plan found that spreads wider than level, or nil.
func (t *topK) widerThan(level int) *found {
	t.mu.Lock()
	defer t.mu.Unlock()
	var best *found
	for l := level + 1; l < len(t.bySpread); l++ {
		if f := t.bySpread[l]; f != nil && (best == nil || f.less(best)) {
			best = f
		}
	}
	return best
}

func (t *topK) list() []*found {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*found(nil), t.items...)
}
