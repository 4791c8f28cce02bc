package serve

// The simulation's two priority queues, written out rather than through container/heap so
// the inner loop does not box every element into an interface.

type evKind uint8

const (
	evArrive    evKind = iota // a request arrives at the front pool
	evPrefilled               // a replica finished a prefill batch
	evRunEnd                  // a replica finished a run of decode iterations
	evKV                      // a request's KV cache reached the token pool
)

// event is one thing that happens at t; seq breaks ties in the order events were made, so
// a run is a function of its seed.
type event struct {
	t    float64
	seq  uint64
	kind evKind
	pool uint8
	rep  int32
	gen  uint32
	req  int32
}

func (a *event) before(b *event) bool { return a.t < b.t || (a.t == b.t && a.seq < b.seq) }

type eventQueue struct {
	items []event
	seq   uint64
}

func (q *eventQueue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.items = append(q.items, e)
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.items[i].before(&q.items[p]) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	siftDown(q.items, func(a, b *event) bool { return a.before(b) })
	return top
}

// finishing is a running sequence and the replica iteration after which it is done.
type finishing struct {
	iter int64
	req  int32
}

type finishHeap []finishing

func (h *finishHeap) push(f finishing) {
	*h = append(*h, f)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].iter < s[i].iter || (s[p].iter == s[i].iter && s[p].req <= s[i].req) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *finishHeap) pop() finishing {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	siftDown(*h, func(a, b *finishing) bool { return a.iter < b.iter || (a.iter == b.iter && a.req < b.req) })
	return top
}

// siftDown restores the heap property from the root.
func siftDown[T any](s []T, less func(a, b *T) bool) {
	i, n := 0, len(s)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(&s[r], &s[l]) {
			m = r
		}
		if !less(&s[m], &s[i]) {
			return
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
}
