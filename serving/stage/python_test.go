package stage

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/kvcache"
	"github.com/schooner-ml/schooner/serving"
)

// TestRealPythonWorkerListens starts the real tiny inference worker (CPU) next to a real
// KV-cache holder and sees it listen and report ready.
func TestRealPythonWorkerListens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the Python inference worker")
	}
	py, err := FindPython()
	if err != nil {
		t.Skipf("no python3 with torch: %v", err)
	}
	pp, err := FindPythonPath()
	if err != nil {
		t.Skipf("no trainer/python: %v", err)
	}
	h, err := kvcache.New(kvcache.Options{Budget: 64 << 20})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = h.Serve(l) }()
	defer h.Close()

	dep := newFakeDeployment()
	sup := &Supervisor{NodeID: "i-1", HolderAddr: l.Addr().String(), Deployment: dep, Python: py, PythonPath: pp,
		ReadyTimeout: 2 * time.Minute, Grace: 5 * time.Second, Logger: zerolog.New(zerolog.NewTestWriter(t))}
	a := assignment(0, 1)
	a.Layers = serving.LayerRange{First: 0, End: 4}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan runEnd, 1)
	go func() {
		res, err := sup.Run(ctx, a, nil)
		done <- runEnd{res, err}
	}()
	var r serving.StageReady
	select {
	case r = <-dep.ready:
	case e := <-done:
		t.Fatalf("the worker ended before ready: %+v %v", e.res, e.err)
	case <-time.After(2 * time.Minute):
		t.Fatal("no stage-ready within 2 minutes")
	}
	require.Equal(t, l.Addr().String(), r.HolderAddr)
	c, err := net.DialTimeout("tcp", r.WorkerAddr, time.Second)
	require.NoError(t, err)
	_ = c.Close()
	cancel()
	e := <-done
	require.ErrorIs(t, e.err, context.Canceled)
	require.Equal(t, 0, sup.Running())
}
