package simgpu

import (
	"math/rand/v2"
	"time"

	"github.com/schooner-ml/schooner/colocation"
	"github.com/schooner-ml/schooner/internal/seqheap"
)

// Kernel is one simulated kernel: Blocks thread blocks of BlockTime each when running alone.
// A persistent kernel (cuBLAS's GEMMs on Hopper) has one block per SM lasting the whole
// kernel.
type Kernel struct {
	Name      string
	Blocks    int
	BlockTime time.Duration
	Bound     colocation.Bound
}

// Alone is the kernel's duration alone on a GPU of sms SMs.
func (k Kernel) Alone(sms int) time.Duration {
	waves := (k.Blocks + sms - 1) / sms
	return time.Duration(waves) * k.BlockTime
}

// launch is one kernel launched on a stream.
type launch struct {
	k          Kernel
	s          *stream
	eligibleAt time.Duration
	pending    int // blocks not yet dispatched
	running    int
	done       func(l *launch, now time.Duration)
}

// stream is a FIFO of launches; only its head runs. Lower priority values go first (CUDA's
// convention: -3 is the highest on the H200).
type stream struct {
	priority int
	queue    []*launch
}

// gpu is the device and the event loop.
type gpu struct {
	sms     int
	free    int
	streams []*stream
	memRun  map[*launch]int // running memory-bound blocks per launch
	rng     *rand.Rand
	now     time.Duration
	// events run in time order, those due at the same time in the order they were scheduled.
	events *seqheap.Heap[event]
}

func newGPU(sms int, seed uint64) *gpu {
	return &gpu{sms: sms, free: sms, memRun: map[*launch]int{}, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		events: seqheap.New(func(a, b event) bool { return a.at < b.at })}
}

func (g *gpu) newStream(priority int) *stream {
	s := &stream{priority: priority}
	g.streams = append(g.streams, s)
	return s
}

// at schedules fn at time t.
func (g *gpu) at(t time.Duration, fn func()) {
	g.events.Push(event{at: t, fn: fn})
}

// runUntil processes events up to end.
func (g *gpu) runUntil(end time.Duration) {
	for e, ok := g.events.Peek(); ok && e.at <= end; e, ok = g.events.Peek() {
		g.events.Pop()
		g.now = e.at
		e.fn()
	}
	g.now = end
}

// enqueue puts a kernel on a stream now; done runs when its last block ends.
func (g *gpu) enqueue(s *stream, k Kernel, done func(l *launch, now time.Duration)) {
	l := &launch{k: k, s: s, pending: k.Blocks, done: done}
	s.queue = append(s.queue, l)
	if len(s.queue) == 1 {
		l.eligibleAt = g.now
	}
	g.dispatch()
}

// dispatch fills free SMs with blocks from the eligible heads, by priority then eligibility.
func (g *gpu) dispatch() {
	for g.free > 0 {
		var pick *launch
		for _, s := range g.streams {
			if len(s.queue) == 0 || s.queue[0].pending == 0 {
				continue
			}
			h := s.queue[0]
			if pick == nil || s.priority < pick.s.priority || (s.priority == pick.s.priority && h.eligibleAt < pick.eligibleAt) {
				pick = h
			}
		}
		if pick == nil {
			return
		}
		g.startBlock(pick)
	}
}

func (g *gpu) startBlock(l *launch) {
	g.free--
	l.pending--
	l.running++
	d := float64(l.k.BlockTime) * (0.97 + 0.06*g.rng.Float64())
	if l.k.Bound == colocation.Memory {
		others := 0
		for o, n := range g.memRun {
			if o != l {
				others += n
			}
		}
		d *= 1 + float64(others)/float64(g.memRun[l]+1)
		g.memRun[l]++
	}
	g.at(g.now+time.Duration(d), func() { g.endBlock(l) })
}

func (g *gpu) endBlock(l *launch) {
	g.free++
	l.running--
	if l.k.Bound == colocation.Memory {
		if g.memRun[l]--; g.memRun[l] == 0 {
			delete(g.memRun, l)
		}
	}
	if l.pending == 0 && l.running == 0 {
		s := l.s
		s.queue = s.queue[1:]
		if len(s.queue) > 0 {
			s.queue[0].eligibleAt = g.now
		}
		if l.done != nil {
			l.done(l, g.now)
		}
	}
	g.dispatch()
}

type event struct {
	at time.Duration
	fn func()
}
