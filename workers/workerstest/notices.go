// Package workerstest holds test doubles of the workers' collaborators, shared by the tests
// of workers and of the commands that wire them.
package workerstest

import (
	"context"
	"sync"

	"github.com/schooner-ml/schooner/training"
)

// NoticeRecorder is a trainingact.JobReporter that keeps the preemption notices sent to each
// job and drops progress and checkpoints.
type NoticeRecorder struct {
	mu      sync.Mutex
	notices map[string][]training.PreemptionNotice
}

// NewNoticeRecorder is an empty NoticeRecorder.
func NewNoticeRecorder() *NoticeRecorder {
	return &NoticeRecorder{notices: map[string][]training.PreemptionNotice{}}
}

// Progress drops the progress.
func (r *NoticeRecorder) Progress(context.Context, string, training.Progress) error { return nil }

// Committed drops the checkpoint.
func (r *NoticeRecorder) Committed(context.Context, string, training.CheckpointCommitted) error {
	return nil
}

// Notice keeps n.
func (r *NoticeRecorder) Notice(_ context.Context, job string, n training.PreemptionNotice) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notices[job] = append(r.notices[job], n)
	return nil
}

// Of is a copy of the notices job got.
func (r *NoticeRecorder) Of(job string) []training.PreemptionNotice {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]training.PreemptionNotice(nil), r.notices[job]...)
}
