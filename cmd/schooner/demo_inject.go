//go:build !agentonly

package main

import (
	"context"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/workers"
)

// startSimNodes runs one node agent per running instance of the market, with their files
// under <dataDir>/nodes; ctx ends with the stack (Stop stops them too).
func startSimNodes(ctx context.Context, c client.Client, m *sim.Market, timeScale float64, dataDir string, log zerolog.Logger) (*workers.SimNodes, error) {
	nodes, err := workers.NewSimNodes(c, workers.SimNodesOptions{Market: m, TimeScale: timeScale, DataDir: dataDir, Logger: log})
	if err != nil {
		return nil, err
	}
	nodes.Start(context.WithoutCancel(ctx))
	return nodes, nil
}

// preemptInstance preempts an instance of the simulated market: after the provider's own
// notice period, or at once with no notice.
func preemptInstance(m *sim.Market, id string, notice bool) error {
	if notice {
		return m.PreemptWithNotice(id)
	}
	return m.Preempt(id, 0)
}

// drainZone leaves the zone's spot offerings no free capacity (until their models change).
func drainZone(m *sim.Market, zone string) error {
	_, err := m.Drain(zone)
	return err
}
