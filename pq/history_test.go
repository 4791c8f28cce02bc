package pq

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
)

// event is one completed operation of a recorded history. start and end are ticks of a
// shared logical clock taken just before the call and just after it returned, so a < b on
// the clock means "a happened before b" in real time.
type event struct {
	insert bool
	ok     bool // DeleteMin found an item
	key    int
	id     int // the item's identity (its value); unique per insert
	start  int64
	end    int64
}

// recorder hands out clock ticks and collects events per goroutine, merging at the end,
// so recording adds no lock to the operations under test.
type recorder struct {
	clock atomic.Int64
	mu    sync.Mutex
	all   []event
}

func (r *recorder) tick() int64 { return r.clock.Add(1) }

func (r *recorder) add(evs []event) {
	r.mu.Lock()
	r.all = append(r.all, evs...)
	r.mu.Unlock()
}

// checkResult is what the checker found in a history.
type checkResult struct {
	errs []string // lost, duplicated or invented items, and strictness violations when asked
	// maxRank is the largest number of items that were certainly present with a smaller key
	// during a DeleteMin: a lower bound of that call's rank error.
	maxRank int
}

// checkHistory checks a history whose every inserted item was deleted (the test drains the
// queue at the end). Always: each item is deleted exactly once, by a DeleteMin that did not
// end before its Insert began, and no DeleteMin reported empty while an item was certainly
// present throughout the call (that holds for the MultiQueue too: such an item sat in one
// heap all along, and every heap was seen empty). With strict set: no DeleteMin returned an
// item while a smaller one was certainly present throughout the call, which is what
// "the minimum of the items present at some point during the call" forbids.
func checkHistory(h []event, strict bool) checkResult {
	var res checkResult
	fail := func(f string, a ...any) {
		if len(res.errs) < 20 {
			res.errs = append(res.errs, fmt.Sprintf(f, a...))
		}
	}
	ins := map[int]event{}
	del := map[int]event{}
	for _, e := range h {
		switch {
		case e.insert:
			if _, dup := ins[e.id]; dup {
				fail("item %d inserted twice (test bug)", e.id)
			}
			ins[e.id] = e
		case e.ok:
			if _, dup := del[e.id]; dup {
				fail("item %d (key %d) returned twice", e.id, e.key)
			}
			del[e.id] = e
		}
	}
	for id, d := range del {
		i, ok := ins[id]
		switch {
		case !ok:
			fail("item %d returned but never inserted", id)
		case i.key != d.key:
			fail("item %d returned with key %d, inserted with %d", id, d.key, i.key)
		case d.end < i.start:
			fail("item %d returned before its insert began", id)
		}
	}
	for id, i := range ins {
		if _, ok := del[id]; !ok {
			fail("item %d (key %d) lost", id, i.key)
		}
	}
	// Items by key, so "smaller and certainly present" scans a prefix; the two times that
	// decide presence are copied out so the scan is a tight loop over plain slices.
	type life struct {
		key      int
		insEnd   int64
		delStart int64
	}
	items := make([]life, 0, len(ins))
	for id, i := range ins {
		l := life{key: i.key, insEnd: i.end, delStart: math.MaxInt64}
		if d, ok := del[id]; ok {
			l.delStart = d.start
		}
		items = append(items, l)
	}
	sort.Slice(items, func(a, b int) bool { return items[a].key < items[b].key })
	for _, d := range h {
		if d.insert {
			continue
		}
		rank := 0
		for _, y := range items {
			if d.ok && y.key >= d.key {
				break
			}
			if y.insEnd < d.start && y.delStart > d.end { // certainly present throughout the call
				rank++
			}
		}
		if !d.ok {
			if rank > 0 {
				fail("DeleteMin reported empty during [%d,%d] while %d items were present", d.start, d.end, rank)
			}
			continue
		}
		res.maxRank = max(res.maxRank, rank)
		if strict && rank > 0 {
			fail("DeleteMin returned key %d during [%d,%d] while %d smaller items were present", d.key, d.start, d.end, rank)
		}
	}
	return res
}
