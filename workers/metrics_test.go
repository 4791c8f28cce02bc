package workers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/taskqueue"
)

func TestPrometheusMetricsMixedTagSets(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h, err := NewPrometheusMetrics(reg)
	require.NoError(t, err)

	h.Counter("temporal_request").Inc(2)
	h.WithTags(map[string]string{"namespace": "default"}).Counter("temporal_request").Inc(3)
	h.WithTags(map[string]string{"namespace": "default"}).Counter("temporal_request").Inc(1)
	tagged := h.WithTags(map[string]string{"task_queue": "schooner-control"})
	tagged.Gauge("temporal_worker_task_slots_available").Update(7.5)
	tagged.Timer("temporal.request.latency").Record(30 * time.Millisecond)
	tagged.Timer("temporal.request.latency").Record(2 * time.Second)

	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err, "mixed label sets must not break the pedantic registry")
	assert.Equal(t, 4, n)

	families, err := reg.Gather()
	require.NoError(t, err)
	byName := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				byName[f.GetName()] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				byName[f.GetName()] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				byName[f.GetName()] = float64(m.GetHistogram().GetSampleCount())
				assert.InDelta(t, 2.03, m.GetHistogram().GetSampleSum(), 1e-9)
			}
		}
	}
	assert.Equal(t, 6.0, byName["temporal_request"])
	assert.Equal(t, 7.5, byName["temporal_worker_task_slots_available"])
	assert.Equal(t, 2.0, byName["temporal_request_latency"], "dots are sanitised to underscores")
}

func TestWithTagsDoesNotMutateParent(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := NewPrometheusMetrics(reg)
	require.NoError(t, err)
	_ = h.WithTags(map[string]string{"a": "1"})
	assert.Empty(t, h.tags)
}

func TestServeMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := NewPrometheusMetrics(reg)
	require.NoError(t, err)
	h.Counter("schooner_test_total").Inc(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := ServeMetrics(ctx, "127.0.0.1:0", reg)
	require.NoError(t, err)
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(body), "schooner_test_total 1")

	_, err = ServeMetrics(ctx, addr.String(), reg)
	assert.Error(t, err, "a busy port is reported")
}

// A node queue per spot instance must not become a series per instance: the control
// process of `schooner dev` sees thousands of node queues come and go.
func TestNodeQueueSeriesDoNotGrowWithTheNodes(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := NewPrometheusMetrics(reg)
	require.NoError(t, err)
	h.WithTags(map[string]string{"task_queue": taskqueue.Control}).Counter("temporal_poll").Inc(1)
	for i := range 500 {
		node := h.WithTags(map[string]string{"task_queue": taskqueue.Node(fmt.Sprintf("i-%04d", i)), "worker_type": "ActivityWorker"})
		node.Counter("temporal_poll").Inc(1)
		node.Gauge("temporal_worker_task_slots_available").Update(float64(i))
		node.Timer("temporal_activity_execution_latency").Record(time.Millisecond)
	}
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	assert.Equal(t, 4, n, "one series per family for all node queues, plus the control queue's")
	assert.Equal(t, 500.0, counterOf(reg, "temporal_poll", NodeQueuesLabel), "counters add up over the nodes")
}

// counterOf is the value of the counter name whose task_queue label is queue (-1 if none).
func counterOf(reg *prometheus.Registry, name, queue string) float64 {
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "task_queue" && l.GetValue() == queue {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}
