package planner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
)

// The search against brute force: on instances small enough to enumerate every plan of the
// search space (every split into stages, every D, every GPU type, zone and TP per stage,
// every micro-batch size, within the pools' capacities; all replicas of a stage at one
// endpoint), the search must find a plan as good as the best one enumerated, for both
// objectives, with and without a budget or floor. The enumerator shares no code with the
// search: it builds plans and asks the simulator.

// exTypes are the GPU types random instances draw from, with a relative speed.
var exTypes = []struct {
	g     gpu.Type
	speed float64
	price float64
}{
	{gpu.A100_40, 1, 3.67},
	{gpu.V100, 0.45, 2.55},
	{gpu.H100, 2.6, 9.8},
	{gpu.A10G, 0.5, 1.2},
}

// exModel is a random model of l layers profiled on types at TP 1 and 2 (some combinations
// left out) and micro-batch sizes 1 and 2. Sizes are such that the whole model at TP 1 needs
// 10–70 GiB, so small GPUs need pipelining or TP.
func exModel(rng *rand.Rand, l int, types []gpu.Type) *ModelProfile {
	m := &ModelProfile{Name: fmt.Sprintf("ex-%d", l), SeqLen: 512, Mem: map[int][]LayerMem{}, Compute: map[gpu.Type]*Compute{}}
	totalBytes := (10 + 60*rng.Float64()) * gib
	base := make([]LayerMem, l)
	for i := range base {
		share := 0.5 + rng.Float64()
		params := totalBytes / float64(l) * share * 0.8 / TrainingBytesPerParam
		act := totalBytes / float64(l) * share * 0.2 / BytesPerFloat / 2
		base[i] = LayerMem{ParamsFloats: math.Round(params), ActMemFloats: math.Round(act),
			ActOutputFloats: math.Round(1e6 + 8e6*rng.Float64()), ActInputFloats: 1e6}
	}
	for _, tp := range []int{1, 2} {
		layers := make([]LayerMem, l)
		for i, b := range base {
			f := 1 / float64(tp)
			if tp > 1 {
				f *= 1 + 0.2*rng.Float64()
			}
			layers[i] = LayerMem{ParamsFloats: math.Round(b.ParamsFloats * f), ActMemFloats: math.Round(b.ActMemFloats * f),
				ActOutputFloats: b.ActOutputFloats, ActInputFloats: b.ActInputFloats}
		}
		m.Mem[tp] = layers
	}
	layerBase := make([]float64, l)
	for i := range layerBase {
		layerBase[i] = (1 + 4*rng.Float64()) * ms
	}
	for _, g := range types {
		speed := 1.0
		for _, t := range exTypes {
			if t.g == g {
				speed = t.speed
			}
		}
		c := &Compute{GPU: g, Source: "random", Times: map[int]map[int][]LayerTime{}}
		for _, tp := range []int{1, 2} {
			speedup, ok := randomFactor(rng, tp == 2, 4, 1.1, 0.8)
			if !ok {
				continue
			}
			c.Times[tp] = map[int][]LayerTime{}
			for _, mbs := range []int{1, 2} {
				scale, ok := randomFactor(rng, mbs == 2, 5, 1.4, 0.6)
				if !ok {
					continue
				}
				layers := make([]LayerTime, l)
				for i := range layers {
					t := layerBase[i] * (0.8 + 0.4*rng.Float64()) / speed / speedup * scale
					layers[i] = LayerTime{Fwd: t / 3, Bwd: 2 * t / 3, Update: t * (0.1 + 0.3*rng.Float64())}
				}
				c.Times[tp][mbs] = layers
			}
		}
		m.Compute[g] = c
	}
	return m
}

// randomFactor is the time factor of a random profile entry: 1 for the base entry, and for
// a larger one (larger is true) either left out, one time in skipOneIn, or a factor from lo
// to lo+span. It draws from rng only for larger entries, in that order, so profiles stay
// reproducible from their seed.
func randomFactor(rng *rand.Rand, larger bool, skipOneIn int, lo, span float64) (float64, bool) {
	if !larger {
		return 1, true
	}
	if rng.IntN(skipOneIn) == 0 {
		return 0, false
	}
	return lo + span*rng.Float64(), true
}

// exNetwork has flat links, fastest inside a machine and slowest between regions.
func exNetwork(rng *rand.Rand) *Network {
	intra := flatLink(50+100*rng.Float64(), 5e-6)
	inter := flatLink(5+20*rng.Float64(), 2e-5)
	interZone := flatLink(1+3*rng.Float64(), 1e-4)
	interRegion := flatLink(0.2+0.8*rng.Float64(), 1e-3)
	return layeredNet(intra, inter, interZone, interRegion)
}

var exZones = []struct{ zone, region string }{
	{"us-central1-a", "us-central1"},
	{"us-central1-b", "us-central1"},
	{"us-west1-b", "us-west1"},
}

// exInstances is n random requests (see exInstance) drawn from the PCG seeded with (seed1,
// seed2), each asking for its topK best plans: reproducible inputs for tests that check
// every plan a search lists.
func exInstances(seed1, seed2 uint64, n, topK int) []Request {
	rng := rand.New(rand.NewPCG(seed1, seed2))
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = exInstance(rng)
		reqs[i].TopK = topK
	}
	return reqs
}

// exInstance is a random request small enough to enumerate.
func exInstance(rng *rand.Rand) Request {
	for {
		l := 4 + rng.IntN(5)
		nt := 1 + rng.IntN(3)
		perm := rng.Perm(len(exTypes))
		var types []gpu.Type
		for _, i := range perm[:nt] {
			types = append(types, exTypes[i].g)
		}
		nz := 1 + rng.IntN(len(exZones))
		zones := rng.Perm(len(exZones))[:nz]
		var pools []Pool
		for _, zi := range zones {
			z := exZones[zi]
			for _, g := range types {
				if len(pools) > 0 && rng.IntN(3) == 0 {
					continue
				}
				per := []int{1, 2, 2, 4}[rng.IntN(4)]
				nodes := 1 + rng.IntN(max(1, 8/per))
				var price float64
				for _, t := range exTypes {
					if t.g == g {
						price = t.price * (0.7 + 0.6*rng.Float64())
					}
				}
				pools = append(pools, Pool{Region: z.region, Zone: z.zone, InstanceType: fmt.Sprintf("%s-%d", g, per),
					GPU: g, GPUsPerNode: per, GPUs: per * nodes, USDPerGPUHour: math.Round(price*100) / 100, Spot: true})
				if rng.IntN(5) == 0 { // a second, dearer offering at the same endpoint
					pools = append(pools, Pool{Region: z.region, Zone: z.zone, InstanceType: fmt.Sprintf("%s-%d-od", g, per),
						GPU: g, GPUsPerNode: per, GPUs: per * (1 + rng.IntN(2)), USDPerGPUHour: math.Round(price*150) / 100})
				}
			}
		}
		req := Request{
			Model:       exModel(rng, l, types),
			Network:     exNetwork(rng),
			Pools:       pools,
			GlobalBatch: []int{4, 8, 16}[rng.IntN(3)],
		}
		if exSize(req) <= 4e5 {
			return req
		}
	}
}

// exSize estimates how many plans enumerating req simulates: for each micro-batch size and
// D, the sum over stage counts of splits × options per stage.
func exSize(req Request) float64 {
	l := req.Model.NumLayers()
	classes := exClasses(req.Pools)
	var total float64
	for _, mbs := range []int{1, 2} {
		for d := 1; d <= req.GlobalBatch/mbs; d++ {
			opts := len(exOptions(req, classes, mbs, d))
			if opts == 0 {
				continue
			}
			for p := 1; p <= l; p++ {
				total += binom(l-1, p-1) * math.Pow(float64(opts), float64(p))
			}
		}
	}
	return total
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 0; i < k; i++ {
		r = r * float64(n-i) / float64(i+1)
	}
	return r
}

// exClass is an endpoint and its pools, cheapest first.
type exClass struct {
	ep    Endpoint
	pools []Pool
	gpus  int
}

func exClasses(pools []Pool) []exClass {
	var out []exClass
	for _, p := range pools {
		found := false
		for i := range out {
			if out[i].ep == p.Endpoint() {
				out[i].pools = append(out[i].pools, p)
				out[i].gpus += p.GPUs
				found = true
			}
		}
		if !found {
			out = append(out, exClass{ep: p.Endpoint(), pools: []Pool{p}, gpus: p.GPUs})
		}
	}
	for i := range out {
		sort.SliceStable(out[i].pools, func(a, b int) bool { return out[i].pools[a].USDPerGPUHour < out[i].pools[b].USDPerGPUHour })
	}
	return out
}

type exOption struct {
	cls int
	tp  int
}

// exOptions are the (class, TP) pairs with a profile at mbs and room for d replicas.
func exOptions(req Request, classes []exClass, mbs, d int) []exOption {
	var out []exOption
	for k, c := range classes {
		prof := req.Model.Compute[c.ep.GPU]
		if prof == nil {
			continue
		}
		for _, tp := range []int{1, 2, 4, 8} {
			if _, ok := prof.Times[tp][mbs]; !ok || tp > c.ep.GPUsPerNode || d*tp > c.gpus {
				continue
			}
			out = append(out, exOption{cls: k, tp: tp})
		}
	}
	return out
}

// exPlan is one enumerated plan's numbers.
type exPlan struct {
	t, usd float64
	desc   string
}

// enumerate simulates every plan of req's space and returns those that fit.
func enumerate(t *testing.T, req Request) []exPlan {
	sim := NewSim(req.Model, req.Network)
	classes := exClasses(req.Pools)
	l := req.Model.NumLayers()
	var out []exPlan
	for _, mbs := range []int{1, 2} {
		for d := 1; d <= req.GlobalBatch/mbs; d++ {
			opts := exOptions(req, classes, mbs, d)
			n := (req.GlobalBatch + mbs*d - 1) / (mbs * d)
			for p := 1; p <= l; p++ {
				var bounds []int // last layer of each stage
				var chosen []exOption
				used := make([]int, len(classes))
				var rec func(first int)
				rec = func(first int) {
					i := len(chosen)
					if i == p {
						if first != l {
							return
						}
						plan := exBuild(req, classes, mbs, d, bounds, chosen)
						est, err := sim.Simulate(plan)
						require.NoError(t, err)
						if est.Fits {
							out = append(out, exPlan{t: est.IterTime, usd: est.USDPerIteration, desc: SummarizePlan(plan)})
						}
						return
					}
					lastMax := l - (p - i)
					for last := first; last <= lastMax; last++ {
						if i == p-1 && last != l-1 {
							continue
						}
						for _, o := range opts {
							c := classes[o.cls]
							if used[o.cls]+d*o.tp > c.gpus {
								continue
							}
							// prune what the simulator would call out of memory anyway
							if spec, ok := Spec(c.ep.GPU); ok {
								mem, ok := PeakMemory(req.Model, c.ep.GPU, o.tp, mbs, first, last, i, p, n)
								if ok && mem > spec.MemoryBytes {
									continue
								}
							}
							used[o.cls] += d * o.tp
							bounds = append(bounds, last)
							chosen = append(chosen, o)
							rec(last + 1)
							bounds = bounds[:len(bounds)-1]
							chosen = chosen[:len(chosen)-1]
							used[o.cls] -= d * o.tp
						}
					}
				}
				rec(0)
			}
		}
	}
	return out
}

// exBuild makes the plan, giving each class's cheapest GPUs out first.
func exBuild(req Request, classes []exClass, mbs, d int, bounds []int, chosen []exOption) *Plan {
	p := &Plan{Model: req.Model.Name, GlobalBatch: req.GlobalBatch, MicroBatch: mbs}
	left := make([][]int, len(classes))
	for k, c := range classes {
		for _, pl := range c.pools {
			left[k] = append(left[k], pl.GPUs)
		}
	}
	p.Stages = make([]Stage, len(bounds))
	first := 0
	for i := range bounds {
		p.Stages[i] = Stage{FirstLayer: first, LastLayer: bounds[i], Replicas: make([]Replica, d)}
		first = bounds[i] + 1
	}
	// widest TP first so machines pack
	order := make([]int, len(chosen))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return chosen[order[a]].tp > chosen[order[b]].tp })
	for _, i := range order {
		o := chosen[i]
		c := classes[o.cls]
		for j := 0; j < d; j++ {
			k := 0
			for left[o.cls][k] < o.tp {
				k++
			}
			left[o.cls][k] -= o.tp
			pl := c.pools[k]
			p.Stages[i].Replicas[j] = Replica{GPU: pl.GPU, TP: o.tp, Zone: pl.Zone, Region: pl.Region,
				GPUsPerNode: pl.GPUsPerNode, InstanceType: pl.InstanceType, USDPerGPUHour: pl.USDPerGPUHour}
		}
	}
	return p
}

// exBest is the best enumerated plan under an objective and constraints (0: none).
func exBest(plans []exPlan, o Objective, maxUSD, minIters float64) (exPlan, bool) {
	var best exPlan
	ok := false
	for _, p := range plans {
		if maxUSD > 0 && p.usd > maxUSD {
			continue
		}
		if minIters > 0 && 1/p.t < minIters {
			continue
		}
		better := !ok
		if ok {
			if o == MinCost {
				better = p.usd < best.usd || (p.usd == best.usd && p.t < best.t)
			} else {
				better = p.t < best.t || (p.t == best.t && p.usd < best.usd)
			}
		}
		if better {
			best, ok = p, true
		}
	}
	return best, ok
}

func TestSearchMatchesExhaustiveEnumeration(t *testing.T) {
	t.Parallel()
	const cases = 240
	const tol = 1e-9
	rng := rand.New(rand.NewPCG(20250401, 7))
	type variant struct {
		name     string
		o        Objective
		maxUSD   float64
		minIters float64
	}
	var multiStageCost, withBudget, withFloor, infeasible, equal, better, heterogeneous, pipelined int
	for c := 0; c < cases; c++ {
		req := exInstance(rng)
		plans := enumerate(t, req)
		fastest, anyPlan := exBest(plans, MaxThroughput, 0, 0)
		cheapest, _ := exBest(plans, MinCost, 0, 0)
		variants := []variant{{name: "throughput", o: MaxThroughput}, {name: "cost", o: MinCost}}
		if anyPlan {
			u := rng.Float64()
			variants = append(variants,
				variant{name: "throughput+budget", o: MaxThroughput, maxUSD: cheapest.usd + u*(fastest.usd-cheapest.usd)},
				variant{name: "cost+floor", o: MinCost, minIters: 1 / cheapest.t * (1 + u*(cheapest.t/fastest.t-1))})
			if rng.IntN(8) == 0 { // an impossible budget and floor
				variants = append(variants,
					variant{name: "impossible budget", o: MaxThroughput, maxUSD: cheapest.usd * 0.9},
					variant{name: "impossible floor", o: MinCost, minIters: 1.1 / fastest.t})
			}
		}
		for _, v := range variants {
			r := req
			r.Objective, r.MaxUSDPerIteration, r.MinItersPerSec = v.o, v.maxUSD, v.minIters
			want, ok := exBest(plans, v.o, v.maxUSD, v.minIters)
			res, err := Search(r)
			where := fmt.Sprintf("case %d (%s, %d layers, %d pools, gbs %d)", c, v.name, req.Model.NumLayers(), len(req.Pools), req.GlobalBatch)
			if !ok {
				infeasible++
				require.Error(t, err, "%s: the enumeration found no plan, the search %v", where, res)
				require.ErrorIs(t, err, ErrNoPlan, where)
				continue
			}
			require.NoError(t, err, "%s: the enumeration found %s", where, want.desc)
			got := res.Best.Estimate
			require.True(t, got.Fits, where)
			if v.o == MinCost {
				require.LessOrEqual(t, got.USDPerIteration, want.usd*(1+tol),
					"%s: search %s at $%g, enumeration %s at $%g", where, SummarizePlan(&res.Best.Plan), got.USDPerIteration, want.desc, want.usd)
				if len(res.Best.Plan.Stages) > 1 {
					multiStageCost++
				}
			} else {
				require.LessOrEqual(t, got.IterTime, want.t*(1+tol),
					"%s: search %s in %gs, enumeration %s in %gs", where, SummarizePlan(&res.Best.Plan), got.IterTime, want.desc, want.t)
			}
			gotV, wantV := got.IterTime, want.t
			if v.o == MinCost {
				gotV, wantV = got.USDPerIteration, want.usd
			}
			if gotV < wantV*(1-tol) {
				better++
			} else {
				equal++
			}
			if len(res.Best.Plan.Stages) > 1 {
				pipelined++
				if res.Best.Plan.Stages[0].Replicas[0].GPU != res.Best.Plan.Stages[len(res.Best.Plan.Stages)-1].Replicas[0].GPU {
					heterogeneous++
				}
			}
			if v.maxUSD > 0 {
				withBudget++
				require.LessOrEqual(t, got.USDPerIteration, v.maxUSD*(1+tol), where)
			}
			if v.minIters > 0 {
				withFloor++
				require.GreaterOrEqual(t, got.Throughput, v.minIters*(1-tol), where)
			}
			for i, n := range res.Next {
				require.True(t, n.Estimate.Fits, "%s: next %d", where, i)
				require.False(t, objectiveLess(v.o, n.Estimate, got), "%s: next %d is better than best", where, i)
			}
		}
	}
	t.Logf("%d cases: %d searches equal to the enumeration's best, %d better (%d pipelined, %d with several GPU types, "+
		"%d cheapest plans pipelined), %d budgets, %d floors, %d infeasible variants",
		cases, equal, better, pipelined, heterogeneous, multiStageCost, withBudget, withFloor, infeasible)
	assert.Zero(t, better, "the enumeration should cover every plan the search can return")
	assert.Positive(t, multiStageCost, "some cheapest plans should pipeline")
}
