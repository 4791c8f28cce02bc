package pq

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runRecorded has g goroutines each do ops operations on q (insert with probability
// insertShare, keys below keyRange), records every call, then drains the queue from one
// goroutine so that every item ends deleted, and returns the whole history. afterOp, if
// set, runs after each worker's every operation (to force mode switches under load); more,
// if set, keeps the workers going past ops operations (up to 8×ops) while it returns true.
func runRecorded(t *testing.T, q *Queue[int, int], g, ops int, insertShare float64, keyRange int,
	afterOp func(w, i int), more func() bool) []event {
	t.Helper()
	var rec recorder
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			evs := make([]event, 0, ops)
			for i := 0; ; i++ {
				// Past ops, ask more every 64 operations, up to 8×ops: the checker is
				// quadratic, and a history must stay small enough to check quickly.
				if i >= ops && (more == nil || i >= 8*ops || i%64 == 0 && !more()) {
					break
				}
				if rng.Float64() < insertShare {
					e := event{insert: true, key: rng.IntN(keyRange), id: w<<32 | i}
					e.start = rec.tick()
					q.Insert(e.key, e.id)
					e.end = rec.tick()
					evs = append(evs, e)
				} else {
					var e event
					e.start = rec.tick()
					e.key, e.id, e.ok = q.DeleteMin()
					e.end = rec.tick()
					evs = append(evs, e)
				}
				if afterOp != nil {
					afterOp(w, i)
				}
			}
			rec.add(evs)
		}(w)
	}
	wg.Wait()
	var evs []event
	for {
		var e event
		e.start = rec.tick()
		e.key, e.id, e.ok = q.DeleteMin()
		e.end = rec.tick()
		evs = append(evs, e)
		if !e.ok {
			break
		}
	}
	rec.add(evs)
	if n := q.Len(); n != 0 {
		t.Errorf("Len after draining = %d, want 0", n)
	}
	return rec.all
}

func requireClean(t *testing.T, res checkResult) {
	t.Helper()
	for _, e := range res.errs {
		t.Error(e)
	}
}

// TestStrictConcurrent: with one shard DeleteMin must be strict in both modes, under load.
func TestStrictConcurrent(t *testing.T) {
	for _, m := range []Mode{Direct, Delegate} {
		t.Run(m.String(), func(t *testing.T) {
			q := New[int, int](Options{Mode: m, Shards: 1, Servers: 2, NoPin: true})
			defer q.Close()
			h := runRecorded(t, q, 4, 1500, 0.55, 1000, nil, nil)
			requireClean(t, checkHistory(h, true))
		})
	}
}

// TestRelaxedConcurrent: the MultiQueue under load loses nothing, duplicates nothing and
// never reports empty while holding an item; its rank error is checked sequentially in
// TestRankErrorSequential, where it has a meaning independent of scheduling.
func TestRelaxedConcurrent(t *testing.T) {
	for _, m := range []Mode{Direct, Delegate} {
		t.Run(m.String(), func(t *testing.T) {
			q := New[int, int](Options{Mode: m, Shards: 8, Servers: 2, NoPin: true})
			defer q.Close()
			h := runRecorded(t, q, 4, 1500, 0.5, 1<<20, nil, nil)
			res := checkHistory(h, false)
			requireClean(t, res)
			t.Logf("largest certain rank error: %d", res.maxRank)
		})
	}
}

// TestFullSlotsFallBack: with one request slot for eight callers, most calls find it taken
// and must run directly instead; none may be dropped on that path.
func TestFullSlotsFallBack(t *testing.T) {
	q := New[int, int](Options{Mode: Delegate, Shards: 8, Servers: 1, SlotsPerServer: 1, NoPin: true})
	defer q.Close()
	h := runRecorded(t, q, 8, 600, 0.5, 1<<20, nil, nil)
	requireClean(t, checkHistory(h, false))
}

// TestSwitchesUnderLoad forces the mode back and forth while goroutines work: no item may
// be lost or duplicated, whatever mode each call started in.
func TestSwitchesUnderLoad(t *testing.T) {
	q := New[int, int](Options{Mode: Direct, Shards: 8, Servers: 2, NoPin: true})
	defer q.Close()
	// One worker flips the mode every 25 of its operations, while the others are mid-call.
	const ops, every = 2000, 25
	h := runRecorded(t, q, 4, ops, 0.5, 1<<20, func(w, i int) {
		if w == 0 && i%every == 0 {
			q.Force(Direct + Delegate - q.Mode())
		}
	}, nil)
	requireClean(t, checkHistory(h, false))
	if st := q.Stats(); st.Switches < ops/every {
		t.Errorf("Stats.Switches = %d, want at least %d", st.Switches, ops/every)
	}
}

// TestControllerSwitchesUnderLoad lets the adaptive controller do the switching, with a
// classifier that changes its mind every window: the switches then come from the controller
// goroutine at arbitrary points of the workers' calls.
func TestControllerSwitchesUnderLoad(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the controller never delegates without a P for the server")
	}
	var windows atomic.Int64
	q := New[int, int](Options{Shards: 8, Servers: 1, NoPin: true, Window: time.Millisecond, Hold: 1, minOps: 1,
		Classify: func(Features) Class {
			if windows.Add(1)%2 == 0 {
				return PreferDirect
			}
			return PreferDelegate
		}})
	defer q.Close()
	// Keep working until the controller has switched a few times (or 20 seconds passed, for a
	// loaded CI machine whose workers may sit descheduled through many windows):
	// without the race detector the fixed share of operations is over in a few windows.
	deadline := time.Now().Add(20 * time.Second)
	h := runRecorded(t, q, 4, 3000, 0.5, 1<<20, func(w, i int) {
		if i%16 == 0 {
			runtime.Gosched() // on a machine with few cores, let the controller's ticker run
		}
	}, func() bool { return q.Stats().Switches < 6 && time.Now().Before(deadline) })
	requireClean(t, checkHistory(h, false))
	n := q.Stats().Switches
	t.Logf("%d controller switches during the run", n)
	if n < 2 { // one switch each way at least
		t.Errorf("only %d controller switches during the run; the test proves little", n)
	}
}

// TestCloseWhileDelegating: Close with callers mid-flight must not strand a request; the
// queue keeps working directly afterwards.
func TestCloseWhileDelegating(t *testing.T) {
	q := New[int, int](Options{Mode: Delegate, Shards: 4, Servers: 1, NoPin: true})
	const workers, ops = 4, 2000
	var wg sync.WaitGroup
	var got atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < ops; i++ {
				q.Insert(i, w)
				if _, _, ok := q.DeleteMin(); ok {
					got.Add(1)
				}
			}
		}(w)
	}
	for q.Stats().Pending == 0 && got.Load() < 100 {
		runtime.Gosched() // close while requests are in the servers' hands
	}
	q.Close()
	wg.Wait()
	if q.pending() != 0 {
		t.Errorf("%d requests still pending after Close", q.pending())
	}
	for {
		if _, _, ok := q.DeleteMin(); !ok {
			break
		}
		got.Add(1)
	}
	if got.Load() != workers*ops {
		t.Fatalf("inserted %d, got back %d", workers*ops, got.Load())
	}
}
