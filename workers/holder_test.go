package workers

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/activities/servingact"
	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/kvcache"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workers/workerstest"
)

// holderAnswers says whether a KV-cache holder answers hello at addr.
func holderAnswers(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := kvcache.Dial(ctx, addr, kvcache.Hello{Role: "reader", Deployment: "d", Stage: 0})
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

type nullDeployment struct{}

func (nullDeployment) StageReady(context.Context, string, serving.StageReady) error { return nil }
func (nullDeployment) Stages(context.Context, string) (serving.Pipeline, error) {
	return serving.Pipeline{}, nil
}

func TestSimNodesRunAHolderPerNode(t *testing.T) {
	m := simMarket(t)
	started := map[string]*servingact.Node{}
	var mu sync.Mutex
	stopped := map[string]bool{}
	start := func(id string, _ *trainingact.Trainer, n *servingact.Node) (func(), error) {
		started[id] = n
		return func() { mu.Lock(); stopped[id] = true; mu.Unlock() }, nil
	}
	rec := workerstest.NewNoticeRecorder()
	s, err := NewSimNodes(nil, SimNodesOptions{Market: m, DataDir: t.TempDir(), Reporter: rec, StartServingNode: start,
		Deployments: nullDeployment{}, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	ctx := context.Background()
	ids := launch(t, m, "serve-a", 2)
	m.Advance(time.Hour)
	s.Poll(ctx)
	require.ElementsMatch(t, ids, s.Nodes())

	addrs := map[string]string{}
	for _, id := range ids {
		addr := s.HolderAddr(id)
		require.NotEmpty(t, addr)
		addrs[id] = addr
		assert.True(t, holderAnswers(addr), "the holder of %s answers at %s", id, addr)
		n := started[id]
		require.NotNil(t, n, "the serving activities are registered on %s", id)
		assert.Equal(t, addr, n.HolderAddr, "RunStage reports the node's own holder")
		assert.Equal(t, "127.0.0.1", n.Host)
		assert.Equal(t, id, n.NodeID)
	}
	assert.NotEqual(t, addrs[ids[0]], addrs[ids[1]])

	require.NoError(t, s.KillNode(ids[0]))
	assert.Empty(t, s.HolderAddr(ids[0]))
	eventually(t, func() bool { return !holderAnswers(addrs[ids[0]]) }, "the dead node's holder is gone")
	assert.True(t, holderAnswers(addrs[ids[1]]), "the other node's holder still answers")

	s.Stop()
	eventually(t, func() bool { return !holderAnswers(addrs[ids[1]]) }, "Stop stops every holder")
	mu.Lock()
	assert.True(t, stopped[ids[0]] && stopped[ids[1]])
	mu.Unlock()
}

func TestSimNodesWithATrainerOnlyStarterStillRunHolders(t *testing.T) {
	m := simMarket(t)
	s, f, _ := newTestSimNodes(t, m)
	ids := launch(t, m, "serve-b", 1)
	m.Advance(time.Hour)
	s.Poll(context.Background())
	require.NotNil(t, f.started[ids[0]])
	addr := s.HolderAddr(ids[0])
	assert.True(t, holderAnswers(addr))
	require.NoError(t, s.KillNode(ids[0]))
	eventually(t, func() bool { return !holderAnswers(addr) }, "the holder stops with its node")
}

func TestNodeAgentHolderLivesWithTheAgent(t *testing.T) {
	a := &NodeAgent{ID: "n-1", Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
		Holder: HolderOptions{Budget: 1 << 20}}
	require.NoError(t, a.startHolder())
	addr := a.HolderAddr()
	require.NotEmpty(t, addr)
	assert.True(t, holderAnswers(addr))
	require.NotNil(t, a.Serving)
	assert.Equal(t, addr, a.Serving.HolderAddr)
	assert.Equal(t, "127.0.0.1", a.Serving.Host)
	assert.Equal(t, int64(1<<20), a.holder.Stats().Budget)

	a.stopServing()
	assert.False(t, holderAnswers(addr), "the holder stops with the agent")
}

func TestHolderAdvertisesAReachableAddress(t *testing.T) {
	h, err := StartHolder(HolderOptions{Listen: "0.0.0.0:0", Budget: 1 << 20})
	require.NoError(t, err)
	defer h.Close()
	assert.NotContains(t, h.Addr(), "0.0.0.0")
	h2, err := StartHolder(HolderOptions{Budget: 1 << 20, Advertise: "node-7:7100"})
	require.NoError(t, err)
	defer h2.Close()
	assert.Equal(t, "node-7:7100", h2.Addr())
	assert.Equal(t, "node-7", h2.Host())
	assert.Positive(t, DefaultHolderBudget())
}
