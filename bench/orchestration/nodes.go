package main

import (
	"context"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/workers"
)

// startNodes runs one simulated node agent per running instance of the market.
func startNodes(ctx context.Context, c client.Client, m *sim.Market, scale float64, log zerolog.Logger) (*workers.SimNodes, error) {
	nodes, err := workers.NewSimNodes(c, workers.SimNodesOptions{Market: m, TimeScale: scale, Logger: log})
	if err != nil {
		return nil, err
	}
	nodes.Start(context.WithoutCancel(ctx))
	return nodes, nil
}
