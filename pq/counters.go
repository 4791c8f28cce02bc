package pq

import (
	"math"
	"sync/atomic"
	"time"
)

// Sampling. An operation is sampled when the low bits of its random word that the queue's
// sampling mask selects are all zero: one operation in mask+1. Counting every operation would
// put an atomic add on a line shared between cores into every call, the very contention the
// queue is trying to avoid; the operations not sampled write nothing shared at all.
//
// A sampled operation costs more than another: an atomic add on a counter stripe that, at
// many threads, another core wrote last (a cache-line transfer, ~100 ns on a big socket), two
// calls, and for one in timeEvery two clock reads (~30 ns each on the dev machine's KVM vDSO,
// a system call where the vDSO cannot read the clock). At a fixed 1 in 128 that is, by this
// estimate, 1-2 ns an operation, against ~20 ns for DeleteMin on an empty queue (what the
// 0%-insert cells of bench/pq measure once the queue has drained): a good part of the 5%
// the adaptive queue may lose to forced direct there. On the dev machine (2 vCPUs, noisy)
// sampling 1 in 16384 instead of 1 in 128 made that DeleteMin about 6% faster at two
// goroutines. So the rate follows the load: the controller sets the mask after every window
// so that the next one sees about targetSamplesPerWindow samples (from 1 in 2^minSampleShift
// at low rates down to 1 in 2^maxSampleShift), and each sample carries its weight, mask+1,
// so that the counts stay unbiased across a change of rate within a window.
const (
	minSampleShift = 7  // 1 in 128: the rate at a low load and while the first window runs
	maxSampleShift = 14 // 1 in 16384: ~1,500 samples in a 100 ms window at 250 Mops/s
	// targetSamplesPerWindow: ~2,000 samples give the insert share within ~1% and ~500
	// timed ones the latency sum for the active-thread estimate.
	targetSamplesPerWindow = 2048
)

// noSampling is the mask while no controller runs: only r == 0 is sampled (one operation in
// 2^64), with weight 0.
const noSampling = math.MaxUint64

// sampleMask is the mask for a window after one that counted ops operations (estimated),
// aiming at target samples.
func sampleMask(ops, target float64) uint64 {
	shift := minSampleShift
	for shift < maxSampleShift && ops/float64(uint64(2)<<shift) >= target {
		shift++
	}
	return 1<<shift - 1
}

// timeEvery: one sampled operation in 4 also reads the clock, for the latency sum behind the
// active-thread estimate. Where reading the clock is slow (a VM whose clock source the vDSO
// cannot read leaves every read to a system call; on the 16-core GPU host a sampled operation
// cost about 450 ns at 1 in 32, most likely for that), the clock would otherwise be most of
// what a sample costs.
const timeEvery = 4

// stripes spreads the sampled counters over padded lines.
const stripes = 16

type stripe struct {
	ins, del atomic.Uint64
	busyNs   atomic.Uint64 // summed weighted latency of the timed operations (one sampled in timeEvery)
	lo, hi   atomic.Uint64 // key hints of sampled inserts; lo starts at MaxUint64
	_        [2*cacheLine - 5*8]byte
}

// counters are the windowed load measurements the classifier reads. The active-thread count
// comes from Little's law rather than from an in-flight gauge (which would cost two shared
// atomic adds per call): the time-average number of callers inside operations is the
// operation rate times the mean latency, which is the timed latency sum scaled by the timing
// rate, divided by the window's length. Its weakness is variance from heavy tails: a caller
// descheduled for milliseconds inside a timed operation counts timeEvery×(mask+1)-fold (512
// at the lowest sampling rate; at the higher ones such an operation is as much rarer in the
// sample as it weighs more). Under the loads where the choice matters (many callers,
// sub-microsecond operations, windows of 100ms) the samples number in the thousands and the
// tail averages out.
//
// Every count is weighted: a sampled operation adds mask+1, the number of operations it stands
// for, so take reads estimates of all operations directly.
type counters struct {
	s [stripes]stripe
}

func newCounters() *counters {
	c := &counters{}
	for i := range c.s {
		c.s[i].lo.Store(math.MaxUint64)
	}
	return c
}

// ticket is a sampled operation's stripe, weight and, if it is timed, its start; st is nil
// for the unsampled majority.
type ticket struct {
	st    *stripe
	w     uint64 // operations this sample stands for: the mask+1 it was drawn with
	timed bool
	t0    time.Duration // since clockBase
}

// clockBase makes a sampled operation's clock reads monotonic only: time.Since of a time
// that carries a monotonic reading reads one clock, where time.Now reads the wall clock too.
var clockBase = time.Now()

// sampled says whether the operation whose random word is r (the word that also picks its
// shards, see multiQueue.picks) is sampled under mask: the bits the mask selects decide.
// Apart from start so that it inlines: the operations that are not sampled make no call (on
// a 20 ns operation the call was about 1.4 ns, 7%, on the dev machine).
func sampled(r, mask uint64) bool { return r&mask == 0 }

// start samples an operation sampled(r, mask) chose: bits 48 and 49 of r decide whether it is
// timed, bits 52 to 55 choose the stripe. The mask's low bits, which decided the sampling, do
// not reach them (maxSampleShift < 48), and the shard choice's bits do not matter to a load
// count.
func (c *counters) start(r, mask uint64) ticket {
	t := ticket{st: &c.s[(r>>52)%stripes], w: mask + 1}
	if (r>>48)%timeEvery == 0 {
		t.timed, t.t0 = true, time.Since(clockBase)
	}
	return t
}

// end adds a sampled operation's weighted latency, if it was timed.
func (t ticket) end() {
	if t.timed {
		t.st.busyNs.Add(uint64(time.Since(clockBase)-t.t0) * t.w)
	}
}

func (c *counters) endInsert(t ticket, hint uint64) {
	if t.st == nil {
		return
	}
	t.end()
	t.st.ins.Add(t.w)
	for lo := t.st.lo.Load(); hint < lo && !t.st.lo.CompareAndSwap(lo, hint); lo = t.st.lo.Load() {
	}
	for hi := t.st.hi.Load(); hint > hi && !t.st.hi.CompareAndSwap(hi, hint); hi = t.st.hi.Load() {
	}
}

func (c *counters) endDelete(t ticket) {
	if t.st == nil {
		return
	}
	t.end()
	t.st.del.Add(t.w)
}

// window is what one window counted, scaled back to all operations.
type window struct {
	ins, del float64
	busy     time.Duration // estimated total time callers spent inside operations
	keyRange uint64        // hi-lo of sampled insert keys; 0 if none sampled
}

// take reads and resets the counts. Operations racing with it land in this window or the
// next; either is fine for a load estimate.
func (c *counters) take() window {
	var w window
	var ins, del, busy uint64
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for i := range c.s {
		s := &c.s[i]
		ins += s.ins.Swap(0)
		del += s.del.Swap(0)
		busy += s.busyNs.Swap(0)
		lo = min(lo, s.lo.Swap(math.MaxUint64))
		hi = max(hi, s.hi.Swap(0))
	}
	w.ins, w.del = float64(ins), float64(del)
	w.busy = time.Duration(busy * timeEvery)
	if hi >= lo {
		w.keyRange = hi - lo
	}
	return w
}

// log2p1 is log2(1+x), the scale of Features.LogSize and LogKeyRange: the classifier needs
// magnitudes, and the bench computes the same formula for its training rows.
func log2p1(x uint64) float64 { return math.Log2(float64(x) + 1) }
