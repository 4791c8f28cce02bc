package stage

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/kvcache"
	"github.com/schooner-ml/schooner/serving"
)

// TestRealPythonWorkerListens starts the real tiny inference worker (CPU) next to a real
// KV-cache holder and sees it listen and report ready.
func TestRealPythonWorkerListens(t *testing.T) {
	py, pp, _, l := pythonBesideHolder(t)

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

// TestRealPythonStandbyPreloadsBeforeItListens starts the real tiny worker as a standby
// (PreloadSeconds) beside a holder that keeps a replica of its stage: the worker has fetched
// it before it listens, so before the deployment would switch to it.
func TestRealPythonStandbyPreloadsBeforeItListens(t *testing.T) {
	py, pp, h, l := pythonBesideHolder(t)

	// The replica the stage being replaced keeps: 20 positions of the tiny model's 4 layers
	// (f32, 2 KV heads of 16), complete.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := kvcache.Dial(ctx, l.Addr().String(), kvcache.Hello{Role: kvcache.RoleWriter, Deployment: "dep-1", Stage: 0})
	require.NoError(t, err)
	defer w.Close()
	lay := kvcache.Layout{DType: "f32", KVHeads: 2, HeadDim: 16}
	acks := make(chan kvcache.Ack, 4)
	for layer := range 4 {
		require.NoError(t, w.Put(kvcache.Put{Request: "cmpl-1", Layer: layer, Tokens: [2]int{0, 20}, Layout: lay,
			Data: make([]byte, 2*2*20*16*4), Last: layer == 3, Layers: [2]int{0, 4}}, func(a kvcache.Ack) { acks <- a }))
	}
	for range 4 {
		require.NoError(t, (<-acks).Err)
	}

	dep := newFakeDeployment()
	sup := &Supervisor{NodeID: "i-1", HolderAddr: l.Addr().String(), Deployment: dep, Python: py, PythonPath: pp,
		ReadyTimeout: 2 * time.Minute, Grace: 5 * time.Second, Logger: zerolog.New(zerolog.NewTestWriter(t))}
	a := assignment(0, 1)
	a.Layers = serving.LayerRange{First: 0, End: 4}
	a.Restore, a.PreloadSeconds, a.NextHolderAddr = true, 5, l.Addr().String()
	done := make(chan runEnd, 1)
	go func() {
		res, err := sup.Run(ctx, a, nil)
		done <- runEnd{res, err}
	}()
	select {
	case <-dep.ready:
	case e := <-done:
		t.Fatalf("the worker ended before ready: %+v %v", e.res, e.err)
	case <-time.After(2 * time.Minute):
		t.Fatal("no stage-ready within 2 minutes")
	}
	gets, sent := holderCounter(t, h, "schooner_kvcache_gets_total"), holderCounter(t, h, "schooner_kvcache_sent_bytes_total")
	require.Equal(t, 1.0, gets, "the replica was fetched before the worker listened")
	require.Equal(t, float64(4*2*2*20*16*4), sent, "all of it")
	cancel()
	<-done
}

// holderCounter reads one of the holder's counters.
func holderCounter(t *testing.T, h *kvcache.Holder, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(h.Collector()))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("the holder has no counter %s", name)
	return 0
}

// pythonBesideHolder is what a test of the real worker needs: python3 with torch, the
// trainer/python path, and a KV-cache holder on loopback (closed with the test). It skips
// where there is no such python, and in -short runs.
func pythonBesideHolder(t *testing.T) (py, pythonPath string, h *kvcache.Holder, l net.Listener) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the Python inference worker")
	}
	py, err := FindPython()
	if err != nil {
		t.Skipf("no python3 with torch: %v", err)
	}
	pythonPath, err = FindPythonPath()
	if err != nil {
		t.Skipf("no trainer/python: %v", err)
	}
	h, err = kvcache.New(kvcache.Options{Budget: 64 << 20})
	require.NoError(t, err)
	l, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = h.Serve(l) }()
	t.Cleanup(func() { _ = h.Close() })
	return py, pythonPath, h, l
}
