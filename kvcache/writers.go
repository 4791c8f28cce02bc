package kvcache

import (
	"sync"
	"time"
)

// A stage handed over on a preemption notice keeps streaming what it had queued until its
// worker exits, and its replacement restores the same replicas from the same holder. A get
// that came before the last of that stream landed would find a prompt incomplete and make
// the router recompute it. So a get may ask to wait (requestMsg.WaitMS): while the replica is
// short of the step it wants and a writer of the same stage in another process is still
// sending, the holder holds the answer back. A writer that sent nothing for WriterIdle (its
// queue is drained, or its machine is gone without closing the connection) is not waited for;
// one in the middle of a large frame is still sending.

// stageKey names the writers of one stage of one deployment.
type stageKey struct {
	deployment string
	stage      int
}

// writerSet is the holder's open writer connections by stage.
type writerSet struct {
	mu      sync.Mutex
	byStage map[stageKey]map[*conn]struct{}
}

func (w *writerSet) add(cn *conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byStage == nil {
		w.byStage = map[stageKey]map[*conn]struct{}{}
	}
	k := stageKey{cn.deployment, cn.stage}
	if w.byStage[k] == nil {
		w.byStage[k] = map[*conn]struct{}{}
	}
	w.byStage[k][cn] = struct{}{}
}

func (w *writerSet) remove(cn *conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := stageKey{cn.deployment, cn.stage}
	delete(w.byStage[k], cn)
	if len(w.byStage[k]) == 0 {
		delete(w.byStage, k)
	}
}

// sending reports whether a writer of k from a process other than except (the reader's own,
// "" when it did not say) sent the holder bytes within idle of now.
func (w *writerSet) sending(k stageKey, except string, idle time.Duration, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for cn := range w.byStage[k] {
		if except != "" && cn.peerProcess == except {
			continue
		}
		if now.Sub(time.Unix(0, cn.lastRecv.Load())) < idle {
			return true
		}
	}
	return false
}

// awaitPollEvery is how often a held get looks at its replica again.
const awaitPollEvery = 2 * time.Millisecond

// awaitReplica holds a get that asked to wait until the replica reaches its wanted step (the
// complete prompt by default), for as long as another process's writer of the stage is still
// sending (or, with m.Expect, whoever sends), at most m.WaitMS (capped by
// Options.MaxGetWait). It returns how long it held.
func (cn *conn) awaitReplica(m requestMsg) time.Duration {
	if m.WaitMS <= 0 {
		return 0
	}
	want := 0
	if m.WantStep != nil {
		want = *m.WantStep
	}
	start := time.Now()
	deadline := start.Add(min(time.Duration(m.WaitMS)*time.Millisecond, cn.h.opts.MaxGetWait))
	k, sk := cn.key(m.Request), stageKey{cn.deployment, cn.stage}
	for {
		if cn.h.store.ackedStep(k) >= want {
			break
		}
		now := time.Now()
		if !now.Before(deadline) || cn.h.isClosed() ||
			(!m.Expect && !cn.h.writers.sending(sk, cn.peerProcess, cn.h.opts.WriterIdle, now)) {
			break
		}
		time.Sleep(awaitPollEvery)
	}
	held := time.Since(start)
	if held >= awaitPollEvery {
		cn.h.m.getWaits.Add(1)
		cn.h.m.getWaitNanos.Add(int64(held))
	}
	return held
}
