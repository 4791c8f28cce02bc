package jobwf

import "go.temporal.io/sdk/workflow"

// Run is an activity a job started and waits on (a trainer, a stage): its future and, once
// the future is ready, the activity's result and error.
type Run[R any] struct {
	Future workflow.Future
	Done   bool
	Err    error
	Result R
}

// Watch adds the run's future to sel unless the run is done, and reports whether it did. When
// the future is ready, the run is done with the activity's result and error, and then (unless
// nil) is called.
func (r *Run[R]) Watch(ctx workflow.Context, sel workflow.Selector, then func()) bool {
	if r.Done {
		return false
	}
	sel.AddFuture(r.Future, func(f workflow.Future) {
		r.Done, r.Err = true, f.Get(ctx, &r.Result)
		if then != nil {
			then()
		}
	})
	return true
}

// Receive adds ch to sel: when a message comes, it is received into a new T and *got points
// at it.
func Receive[T any](ctx workflow.Context, sel workflow.Selector, ch workflow.ReceiveChannel, got **T) {
	sel.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) {
		var m T
		c.Receive(ctx, &m)
		*got = &m
	})
}

// Watcher is a run: a type that embeds Run.
type Watcher interface {
	Watch(ctx workflow.Context, sel workflow.Selector, then func()) bool
}

// AwaitRuns waits until every run of runs that wait reports (every run when wait is nil) has
// ended, or timer fires. Each round it watches the runs still pending, in order, on a fresh
// selector.
func AwaitRuns[T Watcher](ctx workflow.Context, timer workflow.Future, runs []T, wait func(T) bool) {
	for expired := false; !expired; {
		sel := workflow.NewSelector(ctx)
		pending := 0
		for _, r := range runs {
			if (wait == nil || wait(r)) && r.Watch(ctx, sel, nil) {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		sel.AddFuture(timer, func(workflow.Future) { expired = true })
		sel.Select(ctx)
	}
}
