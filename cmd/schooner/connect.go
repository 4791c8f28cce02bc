package main

import (
	"context"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/workers"
)

// session is what a long-running command holds: a logger, a Temporal client and, when asked
// for, a metrics endpoint.
type session struct {
	log         zerolog.Logger
	client      client.Client
	metricsAddr string
}

// connect dials Temporal with schooner's logger and, when metricsAddr is set, serves the
// SDK's metrics (and Go runtime metrics) there until ctx ends.
func connect(ctx context.Context, log zerolog.Logger, cfg workers.ClientConfig, metricsAddr string) (*session, error) {
	s := &session{log: log}
	var handler client.MetricsHandler
	if metricsAddr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		h, err := workers.NewPrometheusMetrics(reg)
		if err != nil {
			return nil, err
		}
		addr, err := workers.ServeMetrics(ctx, metricsAddr, reg)
		if err != nil {
			return nil, err
		}
		s.metricsAddr = addr.String()
		handler = h
	}
	// The SDK is chatty at info (every worker start); keep it one level quieter than ours.
	sdkLog := log.With().Str("component", "temporal-sdk").Logger()
	if sdkLog.GetLevel() < zerolog.WarnLevel {
		sdkLog = sdkLog.Level(zerolog.WarnLevel)
	}
	if strings.EqualFold(os.Getenv("SCHOONER_SDK_LOG"), "debug") {
		sdkLog = sdkLog.Level(zerolog.DebugLevel)
	}
	c, err := workers.Dial(ctx, cfg, workers.NewTemporalLogger(sdkLog), handler)
	if err != nil {
		return nil, err
	}
	s.client = c
	return s, nil
}

func (s *session) Close() {
	if s.client != nil {
		s.client.Close()
	}
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// defaultNodeID turns the host name into a task-queue-safe id.
func defaultNodeID() string {
	h := strings.ToLower(hostname())
	var b strings.Builder
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-")
}
