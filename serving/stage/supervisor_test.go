package stage

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/internal/frame"
	"github.com/schooner-ml/schooner/serving"
)

// fakeDeployment records stage-ready signals and answers the stages query with whatever the
// test set last.
type fakeDeployment struct {
	ready chan serving.StageReady

	mu       sync.Mutex
	pipeline serving.Pipeline
	queries  int
	failSigs int // signals to refuse before accepting
}

func newFakeDeployment() *fakeDeployment {
	return &fakeDeployment{ready: make(chan serving.StageReady, 8)}
}

func (f *fakeDeployment) StageReady(_ context.Context, id string, r serving.StageReady) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != "dep-1" {
		return errors.New("unknown deployment " + id)
	}
	if f.failSigs > 0 {
		f.failSigs--
		return errors.New("server unavailable")
	}
	f.ready <- r
	return nil
}

func (f *fakeDeployment) Stages(context.Context, string) (serving.Pipeline, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries++
	return f.pipeline, nil
}

func (f *fakeDeployment) set(p serving.Pipeline) {
	f.mu.Lock()
	f.pipeline = p
	f.mu.Unlock()
}

func assignment(stage, depth int) serving.StageAssignment {
	return serving.StageAssignment{Deployment: "dep-1", InstanceID: "i-1", Replica: 0, Stage: stage, Depth: depth,
		Layers: serving.LayerRange{First: stage, End: stage + 1}, Model: serving.Model{Name: "tiny", Seed: 7}.Dims(),
		MaxBatch: 8, Replication: true, Epoch: 5}
}

type harness struct {
	t   *testing.T
	dir string
	dep *fakeDeployment
	sup *Supervisor

	mu  sync.Mutex
	hbs []Heartbeat
}

func newHarness(t *testing.T, mode string) *harness {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, dep: newFakeDeployment()}
	h.sup = &Supervisor{NodeID: "i-1", HolderAddr: "127.0.0.1:7101", Deployment: h.dep, Command: fakeCommand(mode, dir),
		ReadyTimeout: 30 * time.Second, Grace: 5 * time.Second, HeartbeatEvery: 20 * time.Millisecond,
		PeersEvery: 20 * time.Millisecond, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)}
	return h
}

func (h *harness) hb(b Heartbeat) {
	h.mu.Lock()
	h.hbs = append(h.hbs, b)
	h.mu.Unlock()
}

func (h *harness) lastHB() Heartbeat {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.hbs) == 0 {
		return Heartbeat{}
	}
	return h.hbs[len(h.hbs)-1]
}

type runEnd struct {
	res serving.StageResult
	err error
}

func (h *harness) start(ctx context.Context, a serving.StageAssignment) chan runEnd {
	done := make(chan runEnd, 1)
	go func() {
		res, err := h.sup.Run(ctx, a, h.hb)
		done <- runEnd{res, err}
	}()
	return done
}

// startCancelable starts a run of a that cancel (or the test's end) cancels.
func (h *harness) startCancelable(a serving.StageAssignment) (chan runEnd, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	return h.start(ctx, a), cancel
}

func (h *harness) waitReady(done chan runEnd) serving.StageReady {
	h.t.Helper()
	select {
	case r := <-h.dep.ready:
		return r
	case e := <-done:
		h.t.Fatalf("run ended before ready: %+v %v", e.res, e.err)
	case <-time.After(30 * time.Second):
		h.t.Fatal("no stage-ready within 30 s")
	}
	return serving.StageReady{}
}

func waitEnd(t *testing.T, done chan runEnd) runEnd {
	t.Helper()
	select {
	case e := <-done:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("run did not end within 30 s")
	}
	return runEnd{}
}

func (h *harness) args() []string {
	b, err := os.ReadFile(filepath.Join(h.dir, "args.json"))
	require.NoError(h.t, err)
	var args []string
	require.NoError(h.t, json.Unmarshal(b, &args))
	return args
}

func (h *harness) peers() []peersOp {
	f, err := os.Open(filepath.Join(h.dir, "peers.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []peersOp
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p peersOp
		if json.Unmarshal(sc.Bytes(), &p) == nil {
			out = append(out, p)
		}
	}
	return out
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func flagValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func TestRunReportsReadyHeartbeatsAndStopsOnCancel(t *testing.T) {
	h := newHarness(t, "serve")
	a := assignment(0, 1)
	done, cancel := h.startCancelable(a)
	r := h.waitReady(done)

	assert.Equal(t, serving.StageReady{Replica: 0, Stage: 0, InstanceID: "i-1", Epoch: 5, WorkerAddr: r.WorkerAddr, HolderAddr: "127.0.0.1:7101"}, r)
	c, err := net.DialTimeout("tcp", r.WorkerAddr, time.Second)
	require.NoError(t, err, "the reported worker address listens")
	_ = c.Close()
	args := h.args()
	listen, _ := flagValue(args, "--listen")
	assert.Equal(t, r.WorkerAddr, listen)
	holder, _ := flagValue(args, "--holder")
	assert.Equal(t, "127.0.0.1:7101", holder, "one stage replicates to its own node's holder")
	_, hasNext := flagValue(args, "--next")
	assert.False(t, hasNext)

	require.Eventually(t, func() bool {
		hb := h.lastHB()
		return hb.State == serving.StateReady && hb.Load != nil
	}, 10*time.Second, 10*time.Millisecond, "heartbeats carry the ready state and the worker's load")
	hb := h.lastHB()
	assert.Equal(t, Load{Running: 1, Waiting: 2, KVBlocksFree: 3}, *hb.Load)
	assert.Equal(t, r.WorkerAddr, hb.WorkerAddr)
	assert.Equal(t, 1, h.sup.Running())

	cancel()
	e := waitEnd(t, done)
	require.ErrorIs(t, e.err, context.Canceled)
	assert.False(t, alive(hb.PID), "the worker is gone once Run returns")
	assert.Equal(t, 0, h.sup.Running())
	assert.Equal(t, 0, h.dep.queries, "one stage has no successor to look up")
}

func TestRunRetriesTheReadySignal(t *testing.T) {
	h := newHarness(t, "serve")
	h.dep.failSigs = 2
	done, cancel := h.startCancelable(assignment(0, 1))
	r := h.waitReady(done)
	assert.Equal(t, 5, r.Epoch)
	cancel()
	waitEnd(t, done)
}

func TestRunReturnsExitStatusAndStderrOfACrash(t *testing.T) {
	h := newHarness(t, "serve")
	done, _ := h.startCancelable(assignment(0, 1))
	r := h.waitReady(done)

	c, err := net.DialTimeout("tcp", r.WorkerAddr, time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, frame.Write(c, map[string]string{"op": "crash"}, nil))

	e := waitEnd(t, done)
	require.NoError(t, e.err)
	assert.Equal(t, serving.StageResult{Replica: 0, Stage: 0, Epoch: 5, Reason: e.res.Reason}, e.res)
	assert.Contains(t, e.res.Reason, "exit status 3")
	assert.Contains(t, e.res.Reason, "boom: CUDA out of memory")
	assert.Contains(t, e.res.Reason, "fake worker listening", "the end of the output is kept")
}

func TestRunFailsClearlyWhenTheWorkerCannotStart(t *testing.T) {
	h := newHarness(t, "nolisten")
	_, err := h.sup.Run(context.Background(), assignment(0, 1), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited before listening")
	assert.Contains(t, err.Error(), "exit status 1")
	assert.Contains(t, err.Error(), "No module named 'torch'")
	assert.Empty(t, h.dep.ready)

	h.sup.Command = func([]string) (*exec.Cmd, error) { return exec.Command(filepath.Join(h.dir, "no-such-python")), nil }
	_, err = h.sup.Run(context.Background(), assignment(0, 1), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "starting the inference worker")

	_, err = h.sup.Run(context.Background(), serving.StageAssignment{Deployment: "dep-1", Depth: 2, Stage: 2}, nil)
	require.ErrorIs(t, err, ErrBadAssignment)
}

func TestRunKillsAWorkerThatIgnoresSIGTERM(t *testing.T) {
	h := newHarness(t, "stubborn")
	h.sup.Grace = 100 * time.Millisecond
	done, cancel := h.startCancelable(assignment(0, 1))
	h.waitReady(done)
	require.Eventually(t, func() bool { return h.lastHB().PID != 0 }, 10*time.Second, 10*time.Millisecond)
	pid := h.lastHB().PID
	cancel()
	e := waitEnd(t, done)
	require.ErrorIs(t, e.err, context.Canceled)
	assert.False(t, alive(pid))
}

func TestRunSendsPeersWhenTheSuccessorChanges(t *testing.T) {
	h := newHarness(t, "serve")
	// The last of two stages starts first: stage 0 is not known yet.
	a := assignment(1, 2)
	done, cancel := h.startCancelable(a)
	h.waitReady(done)
	args := h.args()
	_, hasNext := flagValue(args, "--next")
	_, hasHolder := flagValue(args, "--holder")
	assert.False(t, hasNext || hasHolder, "no successor addresses before they are known: %v", args)

	pipeline := func(addr, holder string, ready bool) serving.Pipeline {
		st0 := serving.StageAddr{Stage: 0, Ready: ready}
		if ready {
			st0.Addr, st0.Holder, st0.Node = addr, holder, "i-0"
		}
		return serving.Pipeline{Deployment: "dep-1", Replicas: []serving.ReplicaStages{{Replica: 0, Ready: ready, Stages: []serving.StageAddr{
			st0, {Stage: 1, Addr: "x", Holder: "y", Ready: true}}}}}
	}
	h.dep.set(pipeline("", "", false))
	h.dep.set(pipeline("10.0.0.1:7001", "10.0.0.1:7100", true))
	require.Eventually(t, func() bool { return len(h.peers()) == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, peersOp{Op: "peers", Next: "10.0.0.1:7001", Holder: "10.0.0.1:7100"}, h.peers()[0])

	// The successor is replaced on another node: both change; while it is not ready nothing is sent.
	h.dep.set(pipeline("", "", false))
	h.dep.set(pipeline("10.0.0.2:7001", "10.0.0.2:7100", true))
	require.Eventually(t, func() bool { return len(h.peers()) == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, peersOp{Op: "peers", Next: "10.0.0.2:7001", Holder: "10.0.0.2:7100"}, h.peers()[1])

	// Restarted on the same node: only the worker address changes, only it is sent.
	h.dep.set(pipeline("10.0.0.2:7002", "10.0.0.2:7100", true))
	require.Eventually(t, func() bool { return len(h.peers()) == 3 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, peersOp{Op: "peers", Next: "10.0.0.2:7002"}, h.peers()[2])
	require.Eventually(t, func() bool { return h.lastHB().Next == "10.0.0.2:7002" }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "10.0.0.2:7100", h.lastHB().NextHolder)

	// Nothing changes: nothing more is sent while the query keeps being read.
	h.dep.mu.Lock()
	q := h.dep.queries
	h.dep.mu.Unlock()
	require.Eventually(t, func() bool { h.dep.mu.Lock(); defer h.dep.mu.Unlock(); return h.dep.queries >= q+5 }, 10*time.Second, 10*time.Millisecond)
	assert.Len(t, h.peers(), 3)
	cancel()
	waitEnd(t, done)
}

// A stage assigned while its successor was not ready (a standby bought while the next stage
// was itself starting) starts without the successor's addresses; if the successor is ready by
// the time the worker listens, the worker is told before the stage reports ready, so a switch
// to it never finds it without a holder to restore from.
func TestRunTellsTheSuccessorBeforeReportingReady(t *testing.T) {
	h := newHarness(t, "serve")
	h.sup.PeersEvery, h.sup.PeersFastEvery = time.Hour, time.Hour // only the sync before ready can tell it
	h.dep.set(serving.Pipeline{Deployment: "dep-1", Replicas: []serving.ReplicaStages{{Replica: 0, Ready: true, Stages: []serving.StageAddr{
		{Stage: 0, Addr: "10.0.0.1:7001", Holder: "10.0.0.1:7100", Node: "i-0", Ready: true}, {Stage: 1, Addr: "x", Holder: "y", Ready: true}}}}})
	a := assignment(1, 2)
	a.Restore = true
	done, cancel := h.startCancelable(a)
	h.waitReady(done)
	_, hasHolder := flagValue(h.args(), "--holder")
	assert.False(t, hasHolder, "the assignment carried no holder")
	require.Len(t, h.peers(), 1, "told before its stage-ready was sent")
	assert.Equal(t, peersOp{Op: "peers", Next: "10.0.0.1:7001", Holder: "10.0.0.1:7100"}, h.peers()[0])
	// Heartbeats go out every 20 ms from their own loop: the one after the peers update may
	// come just after the stage-ready (a CI run caught the one before it as the last).
	require.Eventually(t, func() bool { return h.lastHB().NextHolder == "10.0.0.1:7100" }, 10*time.Second, 10*time.Millisecond)
	cancel()
	waitEnd(t, done)
}

// While the successor is not settled (moving to a standby here; not ready is the same case)
// the stages query is read every PeersFastEvery; once it is settled again, every PeersEvery.
func TestRunQueriesFasterWhileTheSuccessorMoves(t *testing.T) {
	h := newHarness(t, "serve")
	h.sup.PeersEvery, h.sup.PeersFastEvery = time.Hour, 10*time.Millisecond
	queries := func() int { h.dep.mu.Lock(); defer h.dep.mu.Unlock(); return h.dep.queries }
	stage0 := func(addr string, moving bool) serving.Pipeline {
		return serving.Pipeline{Deployment: "dep-1", Replicas: []serving.ReplicaStages{{Replica: 0, Ready: true, Stages: []serving.StageAddr{
			{Stage: 0, Addr: addr, Holder: addr + "0", Node: "i-0", Ready: true, Moving: moving}, {Stage: 1, Addr: "x", Holder: "y", Ready: true}}}}}
	}
	h.dep.set(stage0("10.0.0.1:7001", true))
	done, cancel := h.startCancelable(assignment(1, 2))
	h.waitReady(done)
	require.Eventually(t, func() bool { return len(h.peers()) == 1 }, 10*time.Second, 10*time.Millisecond)
	q := queries()
	require.Eventually(t, func() bool { return queries() >= q+5 }, 10*time.Second, 5*time.Millisecond,
		"a moving successor is asked about every PeersFastEvery")

	// The standby is ready: the worker is told at the next fast query, then the pace drops.
	h.dep.set(stage0("10.0.0.2:7001", false))
	require.Eventually(t, func() bool { return len(h.peers()) == 2 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, peersOp{Op: "peers", Next: "10.0.0.2:7001", Holder: "10.0.0.2:70010"}, h.peers()[1])
	q = queries()
	time.Sleep(200 * time.Millisecond)
	assert.LessOrEqual(t, queries(), q+1, "a settled successor is asked about every PeersEvery")

	cancel()
	waitEnd(t, done)
}

func TestRunPassesKnownSuccessorAndRestore(t *testing.T) {
	h := newHarness(t, "serve")
	a := assignment(0, 2)
	a.NextWorkerAddr, a.NextHolderAddr, a.Restore = "10.0.0.9:7001", "10.0.0.9:7100", true
	done, cancel := h.startCancelable(a)
	h.waitReady(done)
	args := h.args()
	next, _ := flagValue(args, "--next")
	holder, _ := flagValue(args, "--holder")
	mode, _ := flagValue(args, "--resume-mode")
	assert.Equal(t, []string{"10.0.0.9:7001", "10.0.0.9:7100", "restore"}, []string{next, holder, mode})
	// The query agrees with what the worker was started with: no peers op.
	h.dep.set(serving.Pipeline{Replicas: []serving.ReplicaStages{{Replica: 0, Stages: []serving.StageAddr{
		{Stage: 0}, {Stage: 1, Addr: "10.0.0.9:7001", Holder: "10.0.0.9:7100", Ready: true}}}}})
	require.Eventually(t, func() bool { h.dep.mu.Lock(); defer h.dep.mu.Unlock(); return h.dep.queries >= 5 }, 10*time.Second, 10*time.Millisecond)
	assert.Empty(t, h.peers())
	cancel()
	waitEnd(t, done)
}

func TestRunWithAWorkerWithoutTheNodeRole(t *testing.T) {
	h := newHarness(t, "legacy")
	done, cancel := h.startCancelable(assignment(1, 2))
	h.waitReady(done)
	h.dep.set(serving.Pipeline{Replicas: []serving.ReplicaStages{{Replica: 0, Stages: []serving.StageAddr{
		{Stage: 0, Addr: "10.0.0.1:7001", Holder: "10.0.0.1:7100", Ready: true}, {Stage: 1}}}}})
	require.Eventually(t, func() bool { h.dep.mu.Lock(); defer h.dep.mu.Unlock(); return h.dep.queries >= 5 }, 10*time.Second, 10*time.Millisecond)
	hb := h.lastHB()
	assert.Equal(t, serving.StateReady, hb.State, "the stage serves on without load or peers")
	assert.Nil(t, hb.Load)
	assert.Empty(t, hb.Next)
	cancel()
	require.ErrorIs(t, waitEnd(t, done).err, context.Canceled)
}

func TestKillEndsRunsAsVanished(t *testing.T) {
	h := newHarness(t, "serve")
	done := h.start(context.Background(), assignment(0, 1))
	h.waitReady(done)
	h.sup.Kill()
	e := waitEnd(t, done)
	require.ErrorIs(t, e.err, ErrVanished)
	_, err := h.sup.Run(context.Background(), assignment(0, 1), nil)
	require.ErrorIs(t, err, ErrVanished)
}

func TestAdoptTakesOverTheRunningWorker(t *testing.T) {
	h := newHarness(t, "serve")
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	done1 := h.start(ctx1, assignment(0, 1))
	r1 := h.waitReady(done1)

	a := assignment(0, 1)
	a.Epoch, a.Adopt = 9, true
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := h.start(ctx2, a)
	r2 := h.waitReady(done2)
	assert.Equal(t, r1.WorkerAddr, r2.WorkerAddr)
	assert.Equal(t, 9, r2.Epoch)
	e1 := waitEnd(t, done1)
	require.NoError(t, e1.err)
	assert.Contains(t, e1.res.Reason, "taken over")
	c, err := net.DialTimeout("tcp", r2.WorkerAddr, time.Second)
	require.NoError(t, err, "the adopted worker still runs")
	_ = c.Close()

	// A restart without adopt replaces the worker.
	a.Epoch, a.Adopt = 10, false
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	done3 := h.start(ctx3, a)
	r3 := h.waitReady(done3)
	assert.NotEqual(t, r2.WorkerAddr, r3.WorkerAddr)
	e2 := waitEnd(t, done2)
	require.NoError(t, e2.err)
	assert.Equal(t, 1, h.sup.Running())
	cancel2()
	cancel3()
	waitEnd(t, done3)
	assert.Equal(t, 0, h.sup.Running())
}

func TestWorkerArgs(t *testing.T) {
	a := assignment(1, 2)
	a.Layers = serving.LayerRange{First: 2, End: 4}
	a.Deployment = "chat"
	got := WorkerArgs(a, "127.0.0.1:7002", Peers{Next: "127.0.0.1:7001", Holder: "127.0.0.1:7101"})
	assert.Equal(t, []string{"--model", "tiny", "--seed", "7", "--stage", "1", "--depth", "2", "--layers", "2:4",
		"--listen", "127.0.0.1:7002", "--deployment", "chat", "--replicate", "on", "--next", "127.0.0.1:7001",
		"--holder", "127.0.0.1:7101", "--max-batch", "8"}, got)

	a.Model = serving.Model{Layers: 6, Hidden: 128, Heads: 4, KVHeads: 2, FFN: 256, Vocab: 300, Seed: 3}
	a.Replication, a.Restore, a.MaxBatch = false, true, 0
	got = WorkerArgs(a, "127.0.0.1:7002", Peers{})
	assert.Equal(t, []string{"--model", "tiny", "--n-layers", "6", "--hidden", "128", "--heads", "4", "--kv-heads", "2",
		"--ffn", "256", "--vocab", "300", "--seed", "3", "--stage", "1", "--depth", "2", "--layers", "2:4",
		"--listen", "127.0.0.1:7002", "--deployment", "chat", "--replicate", "off"}, got)

	a.Replication, a.PreloadSeconds = true, 5
	got = WorkerArgs(a, "127.0.0.1:7002", Peers{})
	assert.Equal(t, []string{"--resume-mode", "restore", "--preload", "5"}, got[len(got)-4:], "a standby preloads")
	a.Replication = false
	assert.NotContains(t, WorkerArgs(a, "127.0.0.1:7002", Peers{}), "--preload", "nothing to preload without replication")

	a.KVSwapGiB = 12.5
	got = WorkerArgs(a, "127.0.0.1:7002", Peers{})
	assert.Equal(t, []string{"--swap-host-gib", "12.5", "--inflight", "2"}, got[len(got)-4:],
		"microbatch swapping's host pool, and a step in flight per stage")
	a.Depth = 1
	got = WorkerArgs(a, "127.0.0.1:7002", Peers{})
	assert.Equal(t, []string{"--swap-host-gib", "12.5"}, got[len(got)-2:], "one stage: one step in flight")
	a.Depth = 2
	a.KVSwapGiB = 0
	assert.NotContains(t, WorkerArgs(a, "127.0.0.1:7002", Peers{}), "--swap-host-gib", "off by default")

	a.Model = serving.Model{Name: "llama-8b"}.Dims()
	assert.Equal(t, []string{"--model", "8b"}, WorkerArgs(a, "h:1", Peers{})[:2])
}
