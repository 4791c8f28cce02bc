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
// one operation in sampleEvery is seen, and under the race detector a window of a few
// milliseconds holds only a handful of samples).
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
