package kvcache

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// counters are the holder's running totals, read at scrape time.
type counters struct {
	puts, steps, acks, gets atomic.Int64
	full, conflict, other   atomic.Int64
	received, sent          atomic.Int64
	conns                   atomic.Int64
	getWaits, getWaitNanos  atomic.Int64
}

func (c *counters) refused(code string) {
	switch code {
	case CodeFull:
		c.full.Add(1)
	case CodeConflict:
		c.conflict.Add(1)
	default:
		c.other.Add(1)
	}
}

var (
	descHeldBytes = prometheus.NewDesc("schooner_kvcache_held_bytes", "Bytes of KV cache the holder keeps.", nil, nil)
	descHeldReqs  = prometheus.NewDesc("schooner_kvcache_held_requests", "Replicas (deployment, stage, request) the holder keeps.", nil, nil)
	descBudget    = prometheus.NewDesc("schooner_kvcache_budget_bytes", "The holder's byte budget; puts beyond it are refused as full.", nil, nil)
	descConns     = prometheus.NewDesc("schooner_kvcache_connections", "Open writer and reader connections.", nil, nil)
	descPuts      = prometheus.NewDesc("schooner_kvcache_puts_total", "Put frames received, by op (put: a layer of a prompt; put_step: one decode step of a batch).", []string{"op"}, nil)
	descAcks      = prometheus.NewDesc("schooner_kvcache_acks_total", "Acks sent: (request, step) pairs stored.", nil, nil)
	descRefusals  = prometheus.NewDesc("schooner_kvcache_refusals_total", "Error answers, by code (full: budget reached; conflict: a put that does not continue its replica).", []string{"code"}, nil)
	descGets      = prometheus.NewDesc("schooner_kvcache_gets_total", "Replicas read back (restores).", nil, nil)
	descReceived  = prometheus.NewDesc("schooner_kvcache_received_bytes_total", "Payload bytes received.", nil, nil)
	descSent      = prometheus.NewDesc("schooner_kvcache_sent_bytes_total", "Payload bytes sent in chunks.", nil, nil)
	descGetWaits  = prometheus.NewDesc("schooner_kvcache_get_waits_total", "Gets held back while another process's writer of the stage was still sending (a handed-over stage's last replication).", nil, nil)
	descGetWaitS  = prometheus.NewDesc("schooner_kvcache_get_wait_seconds_total", "Time gets were held back for such writers.", nil, nil)
)

// Collector exposes the holder's metrics; whoever runs the holder registers it. Rates (puts,
// acks and gets per second) are rate() of the counters.
func (h *Holder) Collector() prometheus.Collector { return collector{h} }

type collector struct{ h *Holder }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHeldBytes, descHeldReqs, descBudget, descConns, descPuts, descAcks, descRefusals, descGets, descReceived, descSent, descGetWaits, descGetWaitS} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := &c.h.m
	b, n := c.h.store.stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(descHeldBytes, float64(b))
	gauge(descHeldReqs, float64(n))
	gauge(descBudget, float64(c.h.opts.Budget))
	gauge(descConns, float64(m.conns.Load()))
	counter(descPuts, m.puts.Load(), opPut)
	counter(descPuts, m.steps.Load(), opPutStep)
	counter(descAcks, m.acks.Load())
	counter(descRefusals, m.full.Load(), CodeFull)
	counter(descRefusals, m.conflict.Load(), CodeConflict)
	counter(descRefusals, m.other.Load(), "other")
	counter(descGets, m.gets.Load())
	counter(descReceived, m.received.Load())
	counter(descSent, m.sent.Load())
	counter(descGetWaits, m.getWaits.Load())
	ch <- prometheus.MustNewConstMetric(descGetWaitS, prometheus.CounterValue, float64(m.getWaitNanos.Load())/1e9)
}
