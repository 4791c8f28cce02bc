package workers

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// scriptedWatcher answers nothing for its first polls, then the notice.
type scriptedWatcher struct {
	mu     sync.Mutex
	polls  int
	after  int
	notice cloud.Interruption
}

func (w *scriptedWatcher) Poll(context.Context) (*cloud.Interruption, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	if w.polls <= w.after {
		return nil, nil
	}
	n := w.notice
	return &n, nil
}

type heardTrainers struct {
	mu    sync.Mutex
	heard []time.Time
}

func (h *heardTrainers) Notice(deadline time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.heard = append(h.heard, deadline)
	return []string{"job-a", "job-b"}
}

type toldJobs struct {
	mu    sync.Mutex
	fail  int // fail this many calls first
	notes map[string][]training.PreemptionNotice
}

func (r *toldJobs) Notice(_ context.Context, job string, n training.PreemptionNotice) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail > 0 {
		r.fail--
		return errors.New("frontend unavailable")
	}
	r.notes[job] = append(r.notes[job], n)
	return nil
}

// A notice on the machine reaches the trainers' checkpoint agents at every poll while it
// stands, and each job once (a job the control plane could not be told of is told at the
// next poll).
func TestNoticeWatchTellsTheTrainersAndEachJobOnce(t *testing.T) {
	deadline := time.Date(2026, 12, 5, 10, 2, 0, 0, time.UTC)
	w := &scriptedWatcher{after: 2, notice: cloud.Interruption{Kind: cloud.Notice, InstanceID: "i-1", Deadline: deadline}}
	tr := &heardTrainers{}
	rep := &toldJobs{fail: 1, notes: map[string][]training.PreemptionNotice{}}
	nw := &NoticeWatch{NodeID: "i-1", Watcher: w, Trainers: tr, Reporter: rep, Every: time.Millisecond, Logger: zerolog.Nop()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- nw.Run(ctx) }()
	require.Eventually(t, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.heard) >= 5
	}, 5*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	assert.Equal(t, deadline, tr.heard[0])
	rep.mu.Lock()
	defer rep.mu.Unlock()
	want := training.PreemptionNotice{InstanceID: "i-1", Kind: cloud.Notice, Deadline: deadline}
	assert.Equal(t, []training.PreemptionNotice{want}, rep.notes["job-a"], "told once, after the failed try")
	assert.Equal(t, []training.PreemptionNotice{want}, rep.notes["job-b"])
}
