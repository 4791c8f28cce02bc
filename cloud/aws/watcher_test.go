package aws

import (
	"context"
	"testing"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

func TestWatcherSeesSpotNotice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	insts := e.mustCreate(t, ctx, spotReq("job", "us-east-1b", 1))
	id := insts[0].ID
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	w, err := NewWatcher(WatcherOptions{Endpoint: e.face.IMDSEndpoint(id), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.Poll(ctx)
	if err != nil || got != nil {
		t.Fatalf("before notice: %+v %v", got, err)
	}
	deadline := now.Add(2 * time.Minute)
	if err := e.fake.AnnounceNotice(id, deadline); err != nil {
		t.Fatal(err)
	}
	got, err = w.Poll(ctx)
	if err != nil || got == nil {
		t.Fatalf("after notice: %+v %v", got, err)
	}
	want := cloud.Interruption{Kind: cloud.Notice, InstanceID: id, Zone: "us-east-1b", Deadline: deadline, At: now}
	if got.Kind != want.Kind || got.InstanceID != want.InstanceID || got.Zone != want.Zone || !got.Deadline.Equal(deadline) || !got.At.Equal(now) {
		t.Errorf("got %+v, want %+v", *got, want)
	}
}

func TestWatcherRejectsBadEndpoint(t *testing.T) {
	t.Parallel()
	if _, err := NewWatcher(WatcherOptions{Endpoint: "127.0.0.1:80"}); err == nil {
		t.Error("endpoint without scheme accepted")
	}
}

func TestWatcherReportsUnreachableService(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// An instance the face does not know has no metadata service (its token is refused): an
	// error, not a "no notice" the node would trust; a closed port is an error too, never a
	// silent nil.
	w, _ := NewWatcher(WatcherOptions{Endpoint: e.face.IMDSEndpoint("i-none")})
	shortCtx, stop := context.WithTimeout(t.Context(), 2*time.Second)
	defer stop()
	if got, err := w.Poll(shortCtx); got != nil || err == nil {
		t.Errorf("unknown instance: %+v %v, want an error", got, err)
	}
	addr := e.face.Addr()
	_ = e.face.Close()
	w, _ = NewWatcher(WatcherOptions{Endpoint: addr + "/imds/i-none"})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond) // cut the SDK's retries short
	defer cancel()
	if got, err := w.Poll(ctx); got != nil || err == nil {
		t.Errorf("closed service: %+v %v", got, err)
	}
}
