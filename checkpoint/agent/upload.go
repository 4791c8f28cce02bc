package agent

import (
	"bytes"
	"fmt"
	"io"

	"github.com/schooner-ml/schooner/checkpoint"
)

// queuedShard is a step of a rank handed to the uploader and not yet reported done.
type queuedShard struct {
	meta    checkpoint.ShardMeta
	src     uploadSource
	n       int  // enqueued copies without an outcome (a promoted step is enqueued twice)
	started bool // an upload of it has begun
}

// committed is each engine's OnCommit: it records the commit, hands the shard to the uploader
// (both mode) and wakes the waiters.
func (a *Agent) committed(r *rankState, m checkpoint.ShardMeta) {
	r.mu.Lock()
	if r.latest == nil || m.Step > r.latest.Step {
		r.previous, r.latest = r.latest, &m
	}
	emergency := m.Emergency || (r.emergencyStep >= 0 && m.Step >= r.emergencyStep)
	eng := r.eng
	r.mu.Unlock()
	a.log.Debug().Int("rank", r.rank).Int64("step", m.Step).Int64("bytes", m.Size).Bool("emergency", emergency).Msg("shard committed")
	if a.up != nil && eng != nil {
		m.Emergency = emergency
		a.offer(r, newSlotSource(r, eng, m))
	}
	a.wake()
}

// offer queues a shard for upload. An emergency shard that cannot reach the store before the
// deadline is not queued: it would supersede the older step already on its way, and the
// machine would be gone with neither uploaded.
func (a *Agent) offer(r *rankState, src uploadSource) {
	m := src.Meta()
	if m.Emergency && !a.emergencyFits(r, m) {
		return
	}
	a.enqueue(r, src)
}

// enqueue hands src to the uploader and counts it until its outcome.
func (a *Agent) enqueue(r *rankState, src uploadSource) {
	m := src.Meta()
	r.mu.Lock()
	q := r.queued[m.Step]
	if q == nil {
		q = &queuedShard{}
		r.queued[m.Step] = q
	}
	q.meta, q.src = m, src
	q.n++
	r.mu.Unlock()
	a.up.Enqueue(src)
}

// uploaded is the uploader's OnDone: on success the step of the rank is remote (and, in remote
// mode, committed); either way the shard's memory can go.
func (a *Agent) uploaded(m checkpoint.ShardMeta, committedStep bool, err error) {
	r := a.rank(m.Rank)
	if r == nil {
		return
	}
	r.mu.Lock()
	if q := r.queued[m.Step]; q != nil {
		if q.n--; q.n <= 0 {
			delete(r.queued, m.Step)
		}
	}
	if err == nil && m.Step > r.uploaded {
		r.uploaded = m.Step
		if r.eng == nil && (r.latest == nil || m.Step > r.latest.Step) {
			r.previous, r.latest = r.latest, &m
		}
	}
	r.mu.Unlock()
	switch {
	case err == nil:
		a.log.Debug().Int("rank", m.Rank).Int64("step", m.Step).Bool("emergency", m.Emergency).Bool("step_durable", committedStep).Msg("shard uploaded")
	case errorsIsSuperseded(err):
	default:
		a.log.Warn().Err(err).Int("rank", m.Rank).Int64("step", m.Step).Msg("uploading shard failed")
	}
	a.wake()
}

// queuedCount is the number of the rank's shards the uploader holds.
func (r *rankState) queuedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.queued {
		n += q.n
	}
	return n
}

// skippedWhy says why the agent decided not to upload step, or "" when it did not.
func (r *rankState) skippedWhy(step int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped[step]
}

// markStarted records that an upload of step began.
func (r *rankState) markStarted(step int64) {
	r.mu.Lock()
	if q := r.queued[step]; q != nil {
		q.started = true
	}
	r.mu.Unlock()
}

// slotSource uploads a committed shard from its engine slot, pinned only while it is read: a
// slot reused in the meantime means a newer step committed, and that one is uploaded instead.
type slotSource struct {
	r    *rankState
	eng  engine
	meta checkpoint.ShardMeta
}

func newSlotSource(r *rankState, eng engine, m checkpoint.ShardMeta) slotSource {
	return slotSource{r: r, eng: eng, meta: m}
}

func (s slotSource) Meta() checkpoint.ShardMeta { return s.meta }

func (s slotSource) OpenData() (io.ReaderAt, func() error, error) {
	s.r.markStarted(s.meta.Step)
	o, err := s.eng.Acquire(s.meta.Step)
	if err != nil {
		return nil, nil, fmt.Errorf("pinning step %d of rank %d for upload: %w", s.meta.Step, s.meta.Rank, err)
	}
	if o.Meta.CRC32C != s.meta.CRC32C || o.Meta.Size != s.meta.Size {
		_ = o.Close()
		return nil, nil, fmt.Errorf("step %d of rank %d changed before upload", s.meta.Step, s.meta.Rank)
	}
	return o.Data, o.Close, nil
}

// memSource uploads a shard encoded in memory (remote mode).
type memSource struct {
	r    *rankState
	meta checkpoint.ShardMeta
	data []byte
}

func (s memSource) Meta() checkpoint.ShardMeta { return s.meta }

func (s memSource) OpenData() (io.ReaderAt, func() error, error) {
	s.r.markStarted(s.meta.Step)
	return bytes.NewReader(s.data), func() error { return nil }, nil
}

// withMeta is src uploaded under other metadata (a step promoted to emergency).
type withMeta struct {
	uploadSource
	meta checkpoint.ShardMeta
}

func (s withMeta) Meta() checkpoint.ShardMeta { return s.meta }
