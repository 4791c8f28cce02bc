package pq

import (
	"math"
	"sync/atomic"
	"time"
)

// sampleEvery: one operation in 128 is measured. Counting every operation would put an atomic
// add on a line shared between cores into every call, the very contention the queue is
// trying to avoid; a 1-in-128 sample still gives thousands of samples per window under load
// (10 Mops/s: 7,800 in 100 ms), and the rest of the operations write nothing shared at all.
// A sampled operation costs about 60 ns more than another on the dev machine (two clock reads,
// two or four atomic updates): at 1 in 16 the adaptive queue ran 9% behind Direct on a
// one-thread mix of 30 ns operations, at 1 in 128 it is the unsampled path's branch that
// remains (about 1 ns).
const sampleEvery = 128

// timeEvery: one sampled operation in 4 also reads the clock, for the latency sum behind the
// active-thread estimate. Where reading the clock is slow (a VM whose clock source the vDSO
// cannot read leaves every read to a system call; on the 16-core GPU host a sampled operation
// cost about 450 ns at 1 in 32, most likely for that), the clock would otherwise be most of
// what adaptivity costs;
// 1 in 512 operations still gives hundreds of latencies per window at a million operations a
// second.
const timeEvery = 4

// stripes spreads the sampled counters over padded lines.
const stripes = 16

type stripe struct {
	ins, del atomic.Uint64
	busyNs   atomic.Uint64 // summed latency of the timed operations (one sampled in timeEvery)
	lo, hi   atomic.Uint64 // key hints of sampled inserts; lo starts at MaxUint64
	_        [2*cacheLine - 5*8]byte
}

// counters are the windowed load measurements the classifier reads. The active-thread count
// comes from Little's law rather than from an in-flight gauge (which would cost two shared
// atomic adds per call): the time-average number of callers inside operations is the
// operation rate times the mean latency, which is the timed latency sum scaled by the timing
// rate, divided by the window's length. Its weakness is variance from heavy tails: a caller
// descheduled for milliseconds inside a timed operation counts 512-fold. Under the
// loads where the choice matters (many callers, sub-microsecond operations, windows of 100ms)
// the samples number in the thousands and the tail averages out.
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

// ticket is a sampled operation's stripe and, if it is timed, its start; st is nil for the
// unsampled majority.
type ticket struct {
	st    *stripe
	timed bool
	t0    time.Duration // since clockBase
}

// clockBase makes a sampled operation's clock reads monotonic only: time.Since of a time
// that carries a monotonic reading reads one clock, where time.Now reads the wall clock too.
var clockBase = time.Now()

// sampled says whether the operation whose random word is r (the word that also picks its
// shards, see multiQueue.picks) is sampled: its lowest 7 bits decide. Apart from start so that
// it inlines: the 127 operations in 128 that are not sampled make no call (on a 20 ns
// operation the call was about 1.4 ns, 7%, on the dev machine).
func sampled(r uint64) bool { return r%sampleEvery == 0 }

// start samples an operation sampled(r) chose: bits 7 and 8 of r decide whether it is timed,
// bits 12 and up choose the stripe, none of which the shard choice's high bits correlate with
// in any way that matters to a load count.
func (c *counters) start(r uint64) ticket {
	t := ticket{st: &c.s[(r>>12)%stripes]}
	if (r/sampleEvery)%timeEvery == 0 {
		t.timed, t.t0 = true, time.Since(clockBase)
	}
	return t
}

// end adds a sampled operation's latency, if it was timed.
func (t ticket) end() {
	if t.timed {
		t.st.busyNs.Add(uint64(time.Since(clockBase) - t.t0))
	}
}

func (c *counters) endInsert(t ticket, hint uint64) {
	if t.st == nil {
		return
	}
	t.end()
	t.st.ins.Add(1)
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
	t.st.del.Add(1)
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
	w.ins, w.del = float64(ins*sampleEvery), float64(del*sampleEvery)
	w.busy = time.Duration(busy * sampleEvery * timeEvery)
	if hi >= lo {
		w.keyRange = hi - lo
	}
	return w
}

// log2p1 is log2(1+x), the scale of Features.LogSize and LogKeyRange: the classifier needs
// magnitudes, and the bench computes the same formula for its training rows.
func log2p1(x uint64) float64 { return math.Log2(float64(x) + 1) }
