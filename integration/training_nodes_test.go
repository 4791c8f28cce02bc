package integration

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/workers"
)

// simNodes is the node agents of the simulated instances (workers.SimNodes).
type simNodes = workers.SimNodes

func startSimNodes(t *testing.T, c client.Client, m *sim.Market, scale float64, log zerolog.Logger) *simNodes {
	t.Helper()
	nodes, err := workers.NewSimNodes(c, workers.SimNodesOptions{Market: m, TimeScale: scale, DataDir: t.TempDir(), Logger: log})
	require.NoError(t, err)
	nodes.Start(context.Background())
	return nodes
}
