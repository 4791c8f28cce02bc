package planner

import (
	"math"
)

// The dynamic programme.
//
// For one micro-batch size and one data-parallel degree D (so N microbatches per pipeline),
// a plan is a sequence of stages, each a layer range and an option (class, TP), every stage
// with D replicas. Because all replicas of a stage sit at one endpoint, the D pipelines are
// alike and the simulator's iteration time is
//
//	T = (N−1)·max_i τ_i + Σ_i τ_i + max_i update_i + max_i sync_i,   τ_i = comp_i + comm_i
//
// where comm_i is what stage i sends: activations to i+1 and gradients to i−1.
//
// The programme builds plans from the last layer backwards. A label is a suffix of the
// pipeline: its first stage starts at layer a under option o (the key), and it carries what
// the rest of the plan needs to know: the first stage's time so far (its gradient send to
// the previous stage is not known yet), the slowest finished stage, the sum of stage times,
// the slowest update and sync, egress, GPUs used per class and the number of stages (which
// sets how many microbatches each earlier stage keeps in flight, and so its memory).
//
// Suffixes are compared only with suffixes of the same key. One dominates another when, for
// every way of completing both with the same prefix, it gives a plan that is no slower, no
// dearer, and leaves the prefix at least as much memory and as many GPUs; dominated suffixes
// are dropped. A suffix is also dropped when a lower bound on every plan completing it
// (the prefix's work spread over the GPUs left, what those GPUs cost while they wait) is
// worse than the threshold of search_top.go. Both are exact: over per-endpoint classes the
// programme returns the best plan of the space, which is what the exhaustive test checks.
//
// Sailor's pruning heuristics take other forms here. H1 is the plan space (a replica is TP
// GPUs of one type on one machine). H2 (the smallest TP that fits, larger TPs only when they
// pay) falls out of dominance: a wider TP survives only if it makes some plan better. H3 and
// H4 (stop scanning D when the objective stops improving) become the ordering of (micro-batch,
// D) pairs by a lower bound, and the stop when the bound passes the threshold (search_run.go).
// H5 and H6 (replicas of a stage in one region; zones merged per region) apply to large
// offers only (mergeRegionsAbove), where the programme also keeps at most mergedFinalBeam
// suffixes per key: there it is a heuristic, as Sailor's is everywhere.

// label is one pipeline suffix; see above.
type label struct {
	partial   float64 // first stage: compute + activation send; its gradient send is added later
	maxRest   float64 // slowest stage time among the suffix's other stages
	sum       float64 // Σ stage times (the first stage's partial included)
	maxU      float64 // slowest optimizer update
	maxY      float64 // slowest gradient all-reduce
	egress    float64 // USD per iteration for bytes crossing zones, all pipelines
	hourlyLin float64 // USD per hour of GPUs in classes of one price
	hrep      float64 // Σ TP·cheapest price of the class: USD per hour of one replica of each stage
	usdSec    float64 // Σ TP·cheapest price·compute: what one microbatch costs per replica, USD·s/h
	parent    int32   // the suffix after the first stage; -1 if none
	a, b      int16   // the first stage's layers
	opt       int16
	r         int16   // stages in the suffix
	score     float32 // how promising the suffix looks, lower better (the beam ranks by it)
}

// worker holds one goroutine's scratch space, reused across (mbs, D) solves.
type worker struct {
	s *search
	// beam, when positive, keeps only that many suffixes per key (the most promising by
	// score): a quick, inexact pass whose plans give the exact pass its first threshold.
	beam   int
	labels []label
	units  []int16 // K per label
	lists  [][]int32
	sync   []float64
	eval   int64
}

// solve runs the programme for micro-batch tables t and data-parallel degree d.
func (w *worker) solve(t *mbsTables, d int) {
	s := w.s
	L, O, K := t.L, len(t.opts), len(s.classes)
	mbs := t.mbs
	n := (s.req.GlobalBatch + mbs*d - 1) / (mbs * d)
	nf := float64(n - 1)

	caps := make([]int, K) // units (GPUs per replica) each class can give every stage together
	unitsTotal := 0
	for k, c := range s.classes {
		caps[k] = c.units(d)
		unitsTotal += caps[k]
	}
	w.labels = w.labels[:0]
	w.units = w.units[:0]
	if cap(w.lists) < L*O {
		w.lists = make([][]int32, L*O)
	}
	w.lists = w.lists[:L*O]
	for i := range w.lists {
		w.lists[i] = w.lists[i][:0]
	}
	if cap(w.sync) < O*L*L {
		w.sync = make([]float64, O*L*L)
	}
	w.sync = w.sync[:O*L*L]
	for i := range w.sync {
		w.sync[i] = -1
	}

	pricey := s.priceMatters()
	budget := s.req.MaxUSDPerIteration
	maxT := math.Inf(1)
	if s.req.MinItersPerSec > 0 {
		maxT = 1 / s.req.MinItersPerSec
	}
	wTotal := t.wPre[L]
	// cheapest price of one GPU of any class, for bounds on what a prefix adds
	minPrice := math.Inf(1)
	for _, c := range s.classes {
		minPrice = math.Min(minPrice, c.minPrice)
	}
	newUnits := make([]int16, K)

	for a := L - 1; a >= 0; a-- {
		for o := 0; o < O; o++ {
			op := t.opts[o]
			k := op.cls
			if !s.classes[k].stageFits(d, op.tp) {
				continue
			}
			price := s.classes[k].minPrice
			for b := a; b < L; b++ {
				ci := t.idx3(o, a, b)
				fr := int(t.fitR[ci])
				if fr == 0 {
					break // memory only grows with more layers
				}
				c := t.comp[ci]
				thrT, thrC := s.top.thresholds()
				if s.req.Objective == MaxThroughput && nf*c+wTotal > thrT*(1+1e-12) {
					break // longer stages are slower still
				}
				if nf*c+wTotal > maxT*(1+1e-12) {
					break
				}
				u := t.upd[ci]
				y := w.syncTime(t, o, a, b, d)
				if b == L-1 {
					for i := range newUnits {
						newUnits[i] = 0
					}
					newUnits[k] = int16(op.tp)
					nl := label{partial: c, sum: c, maxU: u, maxY: y, parent: -1,
						a: int16(a), b: int16(b), opt: int16(o), r: 1}
					if s.classes[k].linear {
						nl.hourlyLin = float64(d*op.tp) * price
					}
					nl.hrep = float64(op.tp) * price
					nl.usdSec = nl.hrep * c
					w.offer(t, nl, newUnits, n, d, caps, unitsTotal, minPrice, pricey, budget, maxT, thrT, thrC)
					continue
				}
				for o2 := 0; o2 < O; o2++ {
					list := w.lists[(b+1)*O+o2]
					if len(list) == 0 {
						continue
					}
					ai := (o*O+o2)*L + b
					act, grad := t.act[ai], t.grad[ai]
					var eg float64
					if e := t.egress[o*O+o2]; e > 0 {
						eg = float64(d) * float64(n) * t.bytes[o*L+b] / 1e9 * e
					}
					for _, li := range list {
						child := &w.labels[li]
						r := int(child.r) + 1
						if min(r, n) > fr {
							continue
						}
						cu := w.units[int(li)*K : int(li)*K+K]
						if int(cu[k])+op.tp > caps[k] {
							continue
						}
						copy(newUnits, cu)
						newUnits[k] += int16(op.tp)
						closed := child.partial + grad
						nl := label{
							partial:   c + act,
							maxRest:   fmax(child.maxRest, closed),
							sum:       child.sum + c + act + grad,
							maxU:      fmax(child.maxU, u),
							maxY:      fmax(child.maxY, y),
							egress:    child.egress + eg,
							hourlyLin: child.hourlyLin,
							parent:    li,
							a:         int16(a), b: int16(b), opt: int16(o), r: int16(r),
						}
						if s.classes[k].linear {
							nl.hourlyLin += float64(d*op.tp) * price
						}
						nl.hrep = child.hrep + float64(op.tp)*price
						nl.usdSec = child.usdSec + float64(op.tp)*price*c
						w.offer(t, nl, newUnits, n, d, caps, unitsTotal, minPrice, pricey, budget, maxT, thrT, thrC)
					}
				}
			}
		}
	}
}

// syncTime is the all-reduce time of stage (o, a..b) over d replicas at one endpoint,
// computed on first use.
func (w *worker) syncTime(t *mbsTables, o, a, b, d int) float64 {
	i := t.idx3(o, a, b)
	if y := w.sync[i]; y >= 0 {
		return y
	}
	op := t.opts[o]
	pre := w.s.params[op.tp]
	bytes := (pre[b+1] - pre[a]) * GradBytesPerParam
	y := AllReduceTime(bytes, d, t.self[o])
	w.sync[i] = y
	return y
}

// hourly is the price of the GPUs a label's suffix uses, USD per hour.
func (w *worker) hourly(l *label, units []int16, d int) float64 {
	h := l.hourlyLin
	for k, c := range w.s.classes {
		if !c.linear && units[k] > 0 {
			h += c.hourly(d * int(units[k]))
		}
	}
	return h
}

// offer scores a new label: a complete plan goes to the top-K; a suffix is kept unless a
// bound or another suffix of its key rules it out.
func (w *worker) offer(t *mbsTables, nl label, units []int16, n, d int, caps []int, unitsTotal int,
	minPrice float64, pricey bool, budget, maxT, thrT, thrC float64) {
	s := w.s
	w.eval++
	nf := float64(n - 1)
	a := int(nl.a)
	if a == 0 {
		T := nf*fmax(nl.maxRest, nl.partial) + nl.sum + nl.maxU + nl.maxY
		usd := w.hourly(&nl, units, d)*T/3600 + nl.egress
		if T > maxT*(1+1e-12) || (budget > 0 && usd > budget*(1+1e-12)) {
			return
		}
		s.top.offer(w, t, &nl, d, n, T, usd)
		return
	}
	// Lower bound on a complete plan's time: the prefix covers layers 0..a-1 on the GPUs
	// left, in at most a stages (see mbsTables.rho).
	left, rate := 0, 0.0
	for k, u := range units {
		l := caps[k] - int(u)
		left += l
		rate += float64(l) * t.rho[k]
	}
	if left < 1 || rate <= 0 {
		return
	}
	wPre := t.wPre[a]
	sPre := wPre / fmin(rate, float64(a)*t.etaMax)
	lbT := nf*fmax(fmax(nl.maxRest, nl.partial), sPre) + nl.sum + wPre + nl.maxU + nl.maxY
	if lbT > maxT*(1+1e-12) {
		return
	}
	if s.req.Objective == MaxThroughput && lbT > thrT*(1+1e-12) {
		return
	}
	nl.score = float32(lbT)
	if s.req.Objective == MinCost {
		// per replica, the suffix's GPUs wait for its slowest stage N times, and the prefix
		// is taken to be perfectly balanced: over-split suffixes gain nothing, unbalanced
		// ones lose
		nl.score = float32(nf * (fmax(nl.maxRest, nl.partial)*nl.hrep + t.usdPre[a]))
	}
	if pricey {
		// what the GPUs cost while the slowest stage runs, and, stage by stage, while each
		// runs its N microbatches and waits for the pipeline to fill and drain
		prefHourly := float64(t.minUnits[a]) * minPrice
		lbC := fmax((w.hourly(&nl, units, d)+float64(d)*prefHourly)*lbT/3600,
			float64(d)*(nf*(nl.usdSec+t.usdPre[a])+(nl.sum+wPre+nl.maxU+nl.maxY)*(nl.hrep+prefHourly))/3600) + nl.egress

		if budget > 0 && lbC > budget*(1+1e-12) {
			return
		}
		if s.req.Objective == MinCost && lbC > thrC*(1+1e-12) {
			return
		}
	}

	K := len(caps)
	key := a*len(t.opts) + int(nl.opt)
	list := w.lists[key]
	rn := min(int(nl.r), n)
	if t.minFitR[a] >= min(t.L, n) {
		rn = 0 // no stage before a is short of memory at any depth: the stage count is moot
	}
	depth := func(l *label) int {
		if rn == 0 {
			return 0
		}
		return min(int(l.r), n)
	}
	for _, li := range list {
		if w.dominates(&w.labels[li], w.units[int(li)*K:int(li)*K+K], depth(&w.labels[li]), &nl, units, rn, nf, a, caps, t, pricey) {
			return
		}
	}
	idx := int32(len(w.labels))
	w.labels = append(w.labels, nl)
	w.units = append(w.units, units...)
	kept := list[:0]
	for _, li := range list {
		if !w.dominates(&nl, units, rn, &w.labels[li], w.units[int(li)*K:int(li)*K+K], depth(&w.labels[li]), nf, a, caps, t, pricey) {
			kept = append(kept, li)
		}
	}
	kept = append(kept, idx)
	if w.beam > 0 && len(kept) > w.beam {
		worst, ws := 0, -1.0
		for i, li := range kept {
			if sc := float64(w.labels[li].score); sc > ws {
				worst, ws = i, sc
			}
		}
		if kept[worst] == idx {
			// The new suffix is the one the beam drops: it was appended last and nothing
			// points at it, so it is taken back. On offers where most suffixes are dropped at
			// once (small global batches, every class able to hold a stage) keeping them grew
			// the label store to gigabytes within one task.
			w.labels = w.labels[:idx]
			w.units = w.units[:int(idx)*K]
		}
		kept = append(kept[:worst], kept[worst+1:]...)
	}
	w.lists[key] = kept
}

// dominates reports whether suffix x is at least as good as y for every prefix that could
// complete both (they share a key: first layer a and first option).
func (w *worker) dominates(x *label, xu []int16, xr int, y *label, yu []int16, yr int, nf float64, a int, caps []int, t *mbsTables, pricey bool) bool {
	if xr > yr {
		return false
	}
	// T(x) − T(y) ≤ (N−1)·max(0, Δmax) + Δsum + max(0, ΔU) + max(0, ΔY) for any prefix.
	dMax := fmax(0, fmax(x.maxRest-y.maxRest, x.partial-y.partial))
	if nf*dMax+(x.sum-y.sum)+fmax(0, x.maxU-y.maxU)+fmax(0, x.maxY-y.maxY) > 0 {
		return false
	}
	if pricey && (x.egress > y.egress || x.hourlyLin > y.hourlyLin) {
		return false
	}
	for k, c := range w.s.classes {
		if xu[k] <= yu[k] {
			continue
		}
		if pricey && !c.linear {
			return false
		}
		// x uses more of class k; harmless only if the prefix can never run out of it.
		if caps[k]-int(xu[k]) < a*t.maxTP[k] {
			return false
		}
	}
	return true
}

// fmax is math.Max for the numbers the programme handles (never NaN), without its checks.
func fmax(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

func fmin(a, b float64) float64 {
	if a < b {
		return a
	}
	return b
}
