package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Capacity is where the spot capacity of one offering comes from: a trace when Trace is set,
// otherwise the on/off model OnOff (or, when that is nil too, DefaultOnOff's seeded one).
type Capacity struct {
	// Trace is replayed from the market's Start: step times are offsets from it.
	Trace *Trace
	// Offset starts the replay this far into the trace, to skip a warm-up or pick a window.
	Offset time.Duration
	// OnOff is a stochastic model, used when Trace is nil.
	OnOff *OnOff
}

// Constant is a capacity of n instances that never changes.
func Constant(n int) Capacity {
	return Capacity{Trace: &Trace{Unit: Instances, Steps: []Step{{At: 0, Count: n}}}}
}

// OnOff is a two-state capacity model: periods of plenty ("up", Level instances obtainable)
// alternate with shortages ("down", DownLevel instances), each period lasting an exponential
// time with the given mean. Spot capacity in the public traces looks like this: long stretches
// at the cap broken by drops that last minutes to hours.
type OnOff struct {
	MeanUp, MeanDown time.Duration
	Level, DownLevel int
}

func (o OnOff) validate() error {
	if o.MeanUp <= 0 || o.MeanDown <= 0 {
		return fmt.Errorf("on/off means must be positive, got up %s, down %s", o.MeanUp, o.MeanDown)
	}
	if o.Level < 0 || o.DownLevel < 0 || o.DownLevel > o.Level {
		return fmt.Errorf("on/off levels must satisfy 0 <= down (%d) <= up (%d)", o.DownLevel, o.Level)
	}
	return nil
}

// DefaultOnOff is the model an offering gets when Config.Capacity names none, drawn from r
// (a stream derived from the seed and the offering): up periods average 1-6 hours, shortages
// 5-60 minutes; while up, 8-48 GPUs' worth of instances can be had (at least one); half the
// shortages are total, the rest leave up to half the level.
func DefaultOnOff(r *rand.Rand, gpusPerInstance int) OnOff {
	minutes := func(lo, hi float64) time.Duration {
		return time.Duration((lo + r.Float64()*(hi-lo)) * float64(time.Minute)).Round(time.Second)
	}
	up := minutes(60, 360)
	down := minutes(5, 60)
	level := int(math.Round((8 + r.Float64()*40) / float64(max(gpusPerInstance, 1))))
	level = max(level, 1)
	downLevel := 0
	if r.IntN(2) == 1 && level >= 2 {
		downLevel = 1 + r.IntN(level/2)
	}
	return OnOff{MeanUp: up, MeanDown: down, Level: level, DownLevel: downLevel}
}

// process yields the capacity of one offering as a step function of time since Start.
type process interface {
	// initial is the level at Start.
	initial() int
	// next returns the next change after the previous one: when (since Start) and the new
	// level. ok is false when the level never changes again.
	next() (at time.Duration, level int, ok bool)
}

// traceProcess replays a trace, in instances, from an offset.
type traceProcess struct {
	steps  []Step // already in instances
	offset time.Duration
	i      int // next step to look at
	level  int
}

func newTraceProcess(t *Trace, offset time.Duration, gpusPerInstance int) *traceProcess {
	steps := t.instanceSteps(gpusPerInstance)
	p := &traceProcess{steps: steps, offset: offset}
	for p.i < len(steps) && steps[p.i].At <= offset {
		p.level = steps[p.i].Count
		p.i++
	}
	return p
}

func (p *traceProcess) initial() int { return p.level }

func (p *traceProcess) next() (time.Duration, int, bool) {
	for ; p.i < len(p.steps); p.i++ {
		s := p.steps[p.i]
		if s.Count != p.level {
			p.level = s.Count
			p.i++
			return s.At - p.offset, s.Count, true
		}
	}
	return 0, p.level, false
}

// onOffProcess draws alternating periods from its own random stream, lazily and forever.
type onOffProcess struct {
	m  OnOff
	r  *rand.Rand
	up bool
	t  time.Duration
}

func newOnOffProcess(m OnOff, r *rand.Rand) *onOffProcess {
	// Start in the stationary distribution, so the first hour is not biased toward plenty.
	upShare := float64(m.MeanUp) / float64(m.MeanUp+m.MeanDown)
	return &onOffProcess{m: m, r: r, up: r.Float64() < upShare}
}

func (p *onOffProcess) initial() int { return p.levelOf(p.up) }

func (p *onOffProcess) levelOf(up bool) int {
	if up {
		return p.m.Level
	}
	return p.m.DownLevel
}

func (p *onOffProcess) next() (time.Duration, int, bool) {
	if p.m.Level == p.m.DownLevel {
		return 0, p.m.Level, false
	}
	mean := p.m.MeanDown
	if p.up {
		mean = p.m.MeanUp
	}
	// Exponential holding time, whole seconds, at least one so time always moves on.
	d := time.Duration(p.r.ExpFloat64() * float64(mean)).Round(time.Second)
	p.t += max(d, time.Second)
	p.up = !p.up
	return p.t, p.levelOf(p.up), true
}
