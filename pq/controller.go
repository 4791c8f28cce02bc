package pq

import (
	"runtime"
	"time"
)

// minWindowOps: a window with fewer (estimated) operations and callers inside the queue less
// than half the time is idle: it says nothing about contention and keeps the current mode
// rather than letting an idle queue drift. Few operations with callers stuck inside them is
// the opposite, a mode that is slow for this load, and the classifier must see it.
const minWindowOps = 256

// hysteresis turns a stream of per-window verdicts into mode changes: a change needs the same
// verdict Hold windows in a row, and Neutral breaks a streak. With the Neutral class this is
// the queue's defence against oscillating around a boundary, where every switch costs a drain.
type hysteresis struct {
	hold   int
	cand   Mode
	streak int
}

// next is the mode to run in after a window that voted c while running in cur.
func (h *hysteresis) next(cur Mode, c Class) Mode {
	want := cur
	switch c {
	case PreferDirect:
		want = Direct
	case PreferDelegate:
		want = Delegate
	}
	if want == cur {
		h.streak = 0
		return cur
	}
	if want != h.cand {
		h.cand, h.streak = want, 0
	}
	h.streak++
	if h.streak < h.hold {
		return cur
	}
	h.streak = 0
	return want
}

// features turns one window's counts into the classifier's inputs.
func features(w window, elapsed time.Duration, size, shards int) Features {
	f := Features{LogSize: log2p1(uint64(size)), LogKeyRange: log2p1(w.keyRange), Shards: float64(shards)}
	if elapsed > 0 {
		f.Threads = float64(w.busy) / float64(elapsed)
	}
	if ops := w.ins + w.del; ops > 0 {
		f.InsertShare = w.ins / ops
	}
	return f
}

// control is the adaptive controller: one goroutine per adaptive queue, waking once per
// window. It never touches the backbone's locks; its only effect is the mode word.
func (q *Queue[K, V]) control() {
	defer q.wg.Done()
	t := time.NewTicker(q.opts.Window)
	defer t.Stop()
	h := hysteresis{hold: q.opts.Hold}
	last := time.Now()
	q.ctr.take() // start from a clean window
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		w := q.ctr.take()
		// The next window's sampling rate, from this one's operation count: as few samples
		// as the features need, so that a fast load pays for few of them. Stored only when it
		// changes: the word shares its line with what every operation reads.
		if m := sampleMask(w.ins+w.del, q.opts.samples); m != q.sample.Load() {
			q.sample.Store(m)
		}
		now := time.Now()
		f := features(w, now.Sub(last), q.mq.len(), len(q.mq.shards))
		last = now
		c := Neutral
		if w.ins+w.del >= q.opts.minOps || f.Threads >= 0.5 {
			c = q.opts.Classify(f)
		}
		if c == PreferDelegate && runtime.GOMAXPROCS(0) <= q.opts.Servers {
			// Servers need Ps of their own; without one, every request is a handoff of
			// the P between client and server, whatever the tree learned elsewhere.
			c = Neutral
		}
		q.noteWindow(f, c)
		if Mode(q.policy.Load()) != Adaptive {
			h = hysteresis{hold: q.opts.Hold} // forced: start afresh when adaptivity resumes
			continue
		}
		cur := Mode(q.mode.Load())
		if m := h.next(cur, c); m != cur {
			q.adapt(m)
		}
	}
}
