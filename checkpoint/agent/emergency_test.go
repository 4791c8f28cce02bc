package agent

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/aws"
	"github.com/schooner-ml/schooner/cloud/gcp"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/cloud/sim/ec2api"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi"
)

// simMachine is one spot instance of a simulated market whose capacity falls at minute 20, so
// the instance gets a preemption notice then; the market's clock moves only when told.
func simMachine(t *testing.T, zone, typ string) (*sim.Market, string) {
	t.Helper()
	tr, err := sim.ParseTrace([]byte(`{"metadata":{"gap_seconds":600},"data":[1,1,0]}`))
	require.NoError(t, err)
	m, err := sim.New(sim.Config{Seed: 7, Capacity: map[sim.Key]sim.Capacity{{Zone: zone, InstanceType: typ}: {Trace: tr}}, Price: sim.PriceModel{Fixed: true}})
	require.NoError(t, err)
	got, err := m.Create(context.Background(), cloud.CreateRequest{JobID: "job", Zone: zone, InstanceType: typ, Capacity: cloud.Spot, Count: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	m.Advance(5 * time.Minute) // boot
	return m, got[0].ID
}

func TestNoticeFromSimulatedAWSMetadata(t *testing.T) {
	m, id := simMachine(t, "us-west-2a", "p3.2xlarge")
	face := ec2api.New(m, ec2api.Options{Now: m.Now})
	require.NoError(t, face.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = face.Close() })
	w, err := aws.NewWatcher(aws.WatcherOptions{Endpoint: face.IMDSEndpoint(id), Now: m.Now})
	require.NoError(t, err)
	noticeReachesTrainer(t, m, w, sim.DefaultStart.Add(22*time.Minute))
}

func TestNoticeFromSimulatedGCEMetadata(t *testing.T) {
	m, id := simMachine(t, "us-central1-a", "a2-highgpu-1g")
	face := gceapi.NewServer(m, gceapi.Options{Project: "p", Now: m.Now})
	require.NoError(t, face.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = face.Close() })
	w, err := gcp.NewWatcher(gcp.WatcherOptions{MetadataURL: face.MetadataURL(id), Now: m.Now})
	require.NoError(t, err)
	// GCE gives about 30 s from the first TRUE the watcher reads; the market clock stands still.
	noticeReachesTrainer(t, m, w, sim.DefaultStart.Add(20*time.Minute+time.Second+gcp.DefaultNoticeLead))
}

// noticeReachesTrainer runs an agent watching w: before the capacity falls poll says nothing;
// after, poll says checkpoint now with the deadline, the next save is an emergency one, and
// poll goes quiet again.
func noticeReachesTrainer(t *testing.T, m *sim.Market, w cloud.InterruptionWatcher, deadline time.Time) {
	ctx := context.Background()
	opts := testOptions(t)
	opts.Watcher, opts.WatchInterval, opts.Now = cloudWatcher(w), 5*time.Millisecond, m.Now
	r := startAgent(t, opts)
	c := r.dial(t, 0, plan1())

	_, err := c.Save(ctx, 1, testShard(0, 1, 4096), nil, false)
	require.NoError(t, err)
	p, err := c.Poll(ctx)
	require.NoError(t, err)
	assert.False(t, p.CheckpointNow)

	m.AdvanceTo(sim.DefaultStart.Add(20*time.Minute + time.Second)) // capacity falls: notice
	eventually(t, 10*time.Second, func() bool {
		p, err = c.Poll(ctx)
		require.NoError(t, err)
		return p.CheckpointNow
	}, "poll to ask for a checkpoint")
	assert.True(t, deadline.Equal(p.Deadline), "deadline %s, want %s", p.Deadline, deadline)

	emergency, err := c.Save(ctx, 2, testShard(0, 2, 4096), nil, false)
	require.NoError(t, err)
	assert.True(t, emergency, "the save after a notice is an emergency save")
	p, err = c.Poll(ctx)
	require.NoError(t, err)
	assert.False(t, p.CheckpointNow, "the rank has saved since the notice")
	assert.True(t, deadline.Equal(p.Deadline))
	s, err := c.Status(ctx)
	require.NoError(t, err)
	require.NotNil(t, s.Notice)
	assert.Equal(t, int64(2), s.Ranks[0].EmergencyStep)
}

// gatedStore holds the data uploads of the steps in hold until released, and records the order
// in which data uploads start.
type gatedStore struct {
	*store.Fake
	mu      sync.Mutex
	started []string
	hold    map[string]chan struct{} // key → closed to release
	entered chan string
}

func newGatedStore() *gatedStore {
	g := &gatedStore{Fake: store.NewFake(), hold: map[string]chan struct{}{}, entered: make(chan string, 16)}
	g.Hook = func(op store.Op, key string) error {
		if op != store.OpPut || !strings.HasSuffix(key, ".data") {
			return nil
		}
		g.mu.Lock()
		g.started = append(g.started, key)
		gate := g.hold[key]
		g.mu.Unlock()
		if gate != nil {
			g.entered <- key
			<-gate
		}
		return nil
	}
	return g
}

func (g *gatedStore) holdKey(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch := make(chan struct{})
	g.hold[key] = ch
	return ch
}

func (g *gatedStore) order() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.started...)
}

func dataKey(step int64, rank int) string {
	return "step-" + leftPad(step, 12) + "/rank-" + leftPad(int64(rank), 5) + ".data"
}

func leftPad(n int64, w int) string {
	s := strconv.FormatInt(n, 10)
	return strings.Repeat("0", max(w-len(s), 0)) + s
}

// TestEmergencyShardGoesBeforeOlderQueuedOnes: with one upload at a time held in flight, rank
// 1's step 1 waits in the queue; rank 0's emergency step 2 is uploaded before it.
func TestEmergencyShardGoesBeforeOlderQueuedOnes(t *testing.T) {
	ctx := context.Background()
	st := newGatedStore()
	release := st.holdKey(dataKey(1, 0))
	opts := testOptions(t)
	opts.Store, opts.UploadConcurrency = st, 1
	r := startAgent(t, opts)
	plan := checkpoint.PlanInfo{World: 2, PP: 2, DP: 1, TP: 1}
	c0, c1 := r.dial(t, 0, plan), r.dial(t, 1, plan)

	_, err := c0.Save(ctx, 1, testShard(0, 1, 1<<20), nil, false)
	require.NoError(t, err)
	require.Equal(t, dataKey(1, 0), <-st.entered, "rank 0's step 1 is in flight")
	_, err = c1.Save(ctx, 1, testShard(1, 1, 1<<20), nil, false)
	require.NoError(t, err)
	_, err = c1.Wait(ctx, 1, DurableLocal)
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return r.a.up.Pending() == 2 }, "rank 1's step 1 to be queued")

	r.a.Notice(time.Now().Add(time.Hour))
	emergency, err := c0.Save(ctx, 2, testShard(0, 2, 1<<20), nil, false)
	require.NoError(t, err)
	require.True(t, emergency)
	_, err = c0.Wait(ctx, 2, DurableLocal)
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return r.a.up.Pending() == 3 }, "the emergency shard to be queued")
	close(release)
	require.NoError(t, r.a.up.Flush(ctx))

	assert.Equal(t, []string{dataKey(1, 0), dataKey(2, 0), dataKey(1, 1)}, st.order())
	s, err := c0.Status(ctx)
	require.NoError(t, err)
	assert.Contains(t, s.Decision, "uploading emergency step 2 first")
}

// slowStore uploads at about rate bytes per second.
type slowStore struct {
	store.Store
	rate float64
}

func (s slowStore) Put(ctx context.Context, key string, r io.ReaderAt, size int64, crc uint32) error {
	time.Sleep(time.Duration(float64(size) / s.rate * float64(time.Second))) // the store's slowness, not a wait
	return s.Store.Put(ctx, key, r, size, crc)
}

// TestEmergencyTooLargeForTheDeadlineUploadsTheNewestCommittedStep: the store takes half a
// second per 2 MiB shard and the notice leaves 100 ms; the emergency step is not uploaded (it
// would push the older step out of the queue), the newest committed step goes first instead.
func TestEmergencyTooLargeForTheDeadlineUploadsTheNewestCommittedStep(t *testing.T) {
	ctx := context.Background()
	gated := newGatedStore()
	st := slowStore{Store: gated, rate: 4 << 20}
	opts := testOptions(t)
	opts.Store, opts.UploadConcurrency = st, 1
	r := startAgent(t, opts)
	c := r.dial(t, 0, plan1())
	const size = 2 << 20

	_, err := c.Save(ctx, 1, testShard(0, 1, size), nil, false)
	require.NoError(t, err)
	_, err = c.Wait(ctx, 1, DurableRemote)
	require.NoError(t, err)
	require.Positive(t, r.a.up.Bandwidth(), "the first upload measured the store")

	release := gated.holdKey(dataKey(2, 0))
	_, err = c.Save(ctx, 2, testShard(0, 2, size), nil, false)
	require.NoError(t, err)
	require.Equal(t, dataKey(2, 0), <-gated.entered, "step 2 is in flight")
	_, err = c.Save(ctx, 3, testShard(0, 3, size), nil, false)
	require.NoError(t, err)
	_, err = c.Wait(ctx, 3, DurableLocal)
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return r.a.up.Pending() == 2 }, "step 3 to be queued")

	r.a.Notice(time.Now().Add(100 * time.Millisecond))
	emergency, err := c.Save(ctx, 4, testShard(0, 4, size), nil, false)
	require.NoError(t, err)
	require.True(t, emergency)
	_, err = c.Wait(ctx, 4, DurableLocal)
	require.NoError(t, err)
	_, err = c.Wait(ctx, 4, DurableRemote)
	require.ErrorContains(t, err, "will not be uploaded", "a wait for the skipped step fails at once")
	close(release)
	require.NoError(t, r.a.up.Flush(ctx))

	assert.Equal(t, []string{dataKey(1, 0), dataKey(2, 0), dataKey(3, 0)}, gated.order(), "step 4 is never uploaded")
	steps, err := r.a.remote.DurableSteps(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), steps[0])
	s, err := c.Status(ctx)
	require.NoError(t, err)
	assert.Contains(t, s.Decision, "uploading step 3 first instead")
}

// cloudWatcher adapts a cloud's interruption watcher to the agent's Watcher, as the agent's
// callers do (cmd/schooner's ckpt agent).
func cloudWatcher(w cloud.InterruptionWatcher) Watcher {
	return WatcherFunc(func(ctx context.Context) (time.Time, bool, error) {
		intr, err := w.Poll(ctx)
		if err != nil || intr == nil {
			return time.Time{}, false, err
		}
		return intr.Deadline, true, nil
	})
}
