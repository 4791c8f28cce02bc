package pq

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHysteresis(t *testing.T) {
	h := hysteresis{hold: 3}
	cur := Direct
	votes := []Class{PreferDelegate, PreferDelegate, Neutral, PreferDelegate, PreferDelegate, PreferDelegate, PreferDirect, PreferDelegate}
	want := []Mode{Direct, Direct, Direct, Direct, Direct, Delegate, Delegate, Delegate}
	for i, c := range votes {
		cur = h.next(cur, c)
		if cur != want[i] {
			t.Fatalf("after vote %d (%v): mode %v, want %v", i, c, cur, want[i])
		}
	}
}

// TestFeaturesLittlesLaw: callers spent 3 s inside operations during a 1.5 s window, so two
// were in the queue on average.
func TestFeaturesLittlesLaw(t *testing.T) {
	f := features(window{ins: 300, del: 100, busy: 3 * time.Second, keyRange: 1023}, 1500*time.Millisecond, 7, 4)
	if f.Threads != 2 || f.InsertShare != 0.75 || f.LogSize != 3 || f.LogKeyRange != 10 || f.Shards != 4 {
		t.Fatalf("features = %+v", f)
	}
}

// load runs two goroutines doing two inserts (keys below 1000) per DeleteMin on q until the
// returned stop function is called.
func load(q *Queue[int, int]) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				q.Insert(rand.IntN(1000), 0)
				q.Insert(rand.IntN(1000), 0)
				q.DeleteMin()
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// waitFor polls cond until it holds or five seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after 5s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWindowFeatures: the controller's features describe the load it sees. The classifier
// always answers Neutral, so the queue stays direct and every window is well sampled (20 ms:
// at this load's rate one operation in 128 is seen, and under the race detector a window of a
// few milliseconds holds only a handful of samples).
func TestWindowFeatures(t *testing.T) {
	var mu sync.Mutex
	var got []Features
	q := New[int, int](Options{Shards: 4, NoPin: true, Window: 20 * time.Millisecond,
		Classify: func(f Features) Class {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, f)
			return Neutral
		}})
	defer q.Close()
	stop := load(q)
	defer stop()
	waitFor(t, "six windows", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 6 })
	mu.Lock()
	ws := append([]Features(nil), got[1:]...) // the first window may straddle the start of the load
	mu.Unlock()
	// Medians: on a loaded machine a window can hold a handful of samples. Threads gets only a
	// lower bound: a descheduled caller's milliseconds-long sampled operation, scaled by the
	// sampling rate, can inflate it.
	med := func(get func(Features) float64) float64 {
		v := make([]float64, len(ws))
		for i, f := range ws {
			v[i] = get(f)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	share, threads := med(func(f Features) float64 { return f.InsertShare }), med(func(f Features) float64 { return f.Threads })
	logRange, logSize := med(func(f Features) float64 { return f.LogKeyRange }), med(func(f Features) float64 { return f.LogSize })
	if share < 0.5 || share > 0.8 || threads < 0.2 || logSize <= 0 || logRange < 5 || logRange > 10 || ws[0].Shards != 4 {
		t.Errorf("features do not describe the load (2 workers, 2/3 inserts, keys below 1000, 4 shards): "+
			"medians share %.2f threads %.2f log size %.1f log range %.1f; windows %+v", share, threads, logSize, logRange, ws)
	}
	if q.Mode() != Direct {
		t.Errorf("mode %v after only Neutral verdicts", q.Mode())
	}
}

// TestAdaptiveFollowsClassifier drives an adaptive queue with a classifier the test controls
// and waits for the mode to follow it both ways, under load.
func TestAdaptiveFollowsClassifier(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the controller never delegates without a P for the server")
	}
	var verdict atomic.Int32
	verdict.Store(int32(PreferDelegate))
	q := New[int, int](Options{Shards: 4, Servers: 1, NoPin: true, Window: 8 * time.Millisecond, Hold: 2, minOps: 1,
		Classify: func(Features) Class { return Class(verdict.Load()) }})
	defer q.Close()
	stop := load(q)
	defer stop()
	waitFor(t, "delegate mode", func() bool { return q.Mode() == Delegate })
	verdict.Store(int32(PreferDirect))
	waitFor(t, "direct mode", func() bool { return q.Mode() == Direct })
	if st := q.Stats(); st.Switches < 2 || st.SwitchLatency <= 0 || st.LatencyOf < 1 {
		t.Errorf("stats after two switches: %+v", st)
	}
	// A forced mode overrides the classifier until Adaptive is forced again.
	q.Force(Delegate)
	w0 := q.Stats().Windows
	waitFor(t, "five windows voting PreferDirect", func() bool { return q.Stats().Windows >= w0+5 })
	if q.Mode() != Delegate {
		t.Errorf("the controller overrode a forced mode")
	}
	q.Force(Adaptive)
	waitFor(t, "direct mode again", func() bool { return q.Mode() == Direct })
}

// TestSampleMask: one in 128 at low operation counts, then halving the rate for every
// doubling of the count past targetSamples×256, down to one in 2^maxSampleShift.
func TestSampleMask(t *testing.T) {
	for _, c := range []struct {
		ops  float64
		want uint64
	}{{0, 127}, {1000, 127}, {2048*256 - 1, 127}, {2048 * 256, 255}, {2048 * 1024, 1023}, {1e12, 1<<maxSampleShift - 1}} {
		if got := sampleMask(c.ops, 2048); got != c.want {
			t.Errorf("sampleMask(%g, 2048) = %d, want %d", c.ops, got, c.want)
		}
	}
}

// TestWeightedCounts: samples weighted by the rate they were drawn at estimate the number of
// operations, also when the rate changes in the middle of a window.
func TestWeightedCounts(t *testing.T) {
	c := newCounters()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 22
	for i := range n {
		mask := uint64(127)
		if i >= n/2 {
			mask = 1<<12 - 1
		}
		if r := rng.Uint64(); sampled(r, mask) {
			tk := c.start(r, mask)
			if i%3 == 0 {
				c.endInsert(tk, uint64(i))
			} else {
				c.endDelete(tk)
			}
		}
	}
	w := c.take()
	if ops := w.ins + w.del; ops < 0.9*n || ops > 1.1*n {
		t.Errorf("estimated %.0f operations, did %d", ops, n)
	}
	if share := w.ins / (w.ins + w.del); share < 0.28 || share > 0.39 {
		t.Errorf("estimated insert share %.3f, want 1/3", share)
	}
	// A queue whose controller does not run samples nothing, and a stray sample weighs 0.
	if sampled(12345, noSampling) || !sampled(0, noSampling) {
		t.Errorf("noSampling samples a non-zero word or misses zero")
	}
	c.endDelete(c.start(0, noSampling))
	if w := c.take(); w.del != 0 {
		t.Errorf("a sample under noSampling counted %v operations", w.del)
	}
}

// TestSamplingBacksOff: under a load with more operations per window than the queue needs
// samples, the controller lowers the sampling rate (here with a target of 16 samples a
// window, so that the race detector's slow operations are still many), and the features
// still describe the load. After Close nothing is sampled.
func TestSamplingBacksOff(t *testing.T) {
	var mu sync.Mutex
	var got []Features
	q := New[int, int](Options{Shards: 4, NoPin: true, Window: 20 * time.Millisecond, samples: 16,
		Classify: func(f Features) Class {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, f)
			return Neutral
		}})
	stop := load(q)
	waitFor(t, "the sampling rate to drop below 1 in 128", func() bool { return q.sample.Load() > 127 })
	mu.Lock()
	n := len(got)
	mu.Unlock()
	waitFor(t, "five more windows", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= n+5 })
	stop()
	mu.Lock()
	ws := append([]Features(nil), got[n:]...)
	mu.Unlock()
	shares := make([]float64, len(ws))
	for i, f := range ws {
		shares[i] = f.InsertShare
	}
	slices.Sort(shares)
	if med := shares[len(shares)/2]; med < 0.5 || med > 0.8 {
		t.Errorf("median insert share %.2f at mask %d, want about 2/3; windows %+v", med, q.sample.Load(), ws)
	}
	q.Close()
	if m := q.sample.Load(); m != noSampling {
		t.Errorf("mask %#x after Close, want noSampling", m)
	}
}
