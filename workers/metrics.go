package workers

import (
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/taskqueue"
)

// PrometheusMetrics is a Temporal SDK MetricsHandler that exposes the SDK's counters, gauges
// and timers through prometheus/client_golang (the tally bridge is not available here).
//
// The SDK adds tags at run time (namespace, task queue, workflow type, ...) and the same
// metric name can be used with different tag sets, which Prometheus' fixed-label vectors
// cannot express. So series are kept in a small store that is itself a prometheus.Collector
// and, at scrape time, pads every series of a family to the family's union of labels
// (an empty label equals an absent one in Prometheus). Timers become histograms in seconds.
//
// Node task queues are named after their machine (schooner-node-<instance id>), and spot
// instances come and go by the thousand: a series per node queue would grow the store, and
// every scrape, without bound (the simulated market of `schooner dev` makes a queue per
// instance). So every node queue is reported under the one value NodeQueuesLabel: counters and
// timers add up over the nodes, a gauge shows the node that reported last. A node agent's own
// process serves one node queue, so it loses nothing; which machine it is, the scrape target
// says.
type PrometheusMetrics struct {
	store *metricStore
	tags  map[string]string
}

var _ client.MetricsHandler = (*PrometheusMetrics)(nil)

// TimerBuckets are the histogram bounds, in seconds, for SDK timers: from a fast local
// activity to a long poll.
var TimerBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// NewPrometheusMetrics registers a collector with reg and returns the handler that feeds it.
func NewPrometheusMetrics(reg prometheus.Registerer) (*PrometheusMetrics, error) {
	s := &metricStore{series: map[string]*series{}}
	if err := reg.Register(s); err != nil {
		return nil, err
	}
	return &PrometheusMetrics{store: s, tags: map[string]string{}}, nil
}

// WithTags returns a handler whose metrics carry tags on top of the existing ones.
func (h *PrometheusMetrics) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return &PrometheusMetrics{store: h.store, tags: merged}
}

// Counter returns the counter name with this handler's tags.
func (h *PrometheusMetrics) Counter(name string) client.MetricsCounter {
	s := h.store.get(kindCounter, name, h.tags)
	return counterFunc(func(d int64) { s.count.Add(d) })
}

// Gauge returns the gauge name with this handler's tags.
func (h *PrometheusMetrics) Gauge(name string) client.MetricsGauge {
	s := h.store.get(kindGauge, name, h.tags)
	return gaugeFunc(func(v float64) { s.gauge.Store(math.Float64bits(v)) })
}

// Timer returns the timer name with this handler's tags.
func (h *PrometheusMetrics) Timer(name string) client.MetricsTimer {
	s := h.store.get(kindTimer, name, h.tags)
	return timerFunc(func(d time.Duration) { s.observe(d.Seconds()) })
}

type (
	counterFunc func(int64)
	gaugeFunc   func(float64)
	timerFunc   func(time.Duration)
)

func (f counterFunc) Inc(d int64)          { f(d) }
func (f gaugeFunc) Update(v float64)       { f(v) }
func (f timerFunc) Record(d time.Duration) { f(d) }

type metricKind int

const (
	kindCounter metricKind = iota
	kindGauge
	kindTimer
)

type series struct {
	kind   metricKind
	name   string
	labels map[string]string
	count  atomic.Int64
	gauge  atomic.Uint64

	mu      sync.Mutex
	buckets []uint64
	sum     float64
	total   uint64
}

func (s *series) observe(v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range TimerBuckets {
		if v <= b {
			s.buckets[i]++
		}
	}
	s.sum += v
	s.total++
}

// NodeQueuesLabel is the task_queue label value of every node queue (taskqueue.Node).
const NodeQueuesLabel = "schooner-node-*"

// boundedTagValue folds the tag values that name one machine into one value per family, so the
// number of series does not grow with the number of machines ever seen.
func boundedTagValue(key, value string) string {
	if key == "task_queue" && strings.HasPrefix(value, taskqueue.Node("")) {
		return NodeQueuesLabel
	}
	return value
}

type metricStore struct {
	mu     sync.Mutex
	series map[string]*series
}

var invalidMetricChars = regexp.MustCompile(`[^a-zA-Z0-9_:]`)

func sanitize(name string) string {
	name = invalidMetricChars.ReplaceAllString(name, "_")
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "_" + name
	}
	return name
}

func (m *metricStore) get(kind metricKind, name string, tags map[string]string) *series {
	name = sanitize(name)
	labels := make(map[string]string, len(tags))
	keys := make([]string, 0, len(tags))
	for k, v := range tags {
		k = sanitize(k)
		labels[k] = boundedTagValue(k, v)
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var id strings.Builder
	id.WriteString(name)
	for _, k := range keys {
		id.WriteString("\x00" + k + "\x00" + labels[k])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.series[id.String()]; ok && s.kind == kind {
		return s
	}
	s := &series{kind: kind, name: name, labels: labels}
	if kind == kindTimer {
		s.buckets = make([]uint64, len(TimerBuckets))
	}
	m.series[id.String()] = s
	return s
}

// Describe sends nothing: the store is an unchecked collector because its label sets are
// only known once the SDK has used them.
func (m *metricStore) Describe(chan<- *prometheus.Desc) {}

// Collect emits every series, padded to its family's union of label names.
func (m *metricStore) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	all := make([]*series, 0, len(m.series))
	for _, s := range m.series {
		all = append(all, s)
	}
	m.mu.Unlock()

	families := map[string]map[string]bool{}
	for _, s := range all {
		f := families[s.name]
		if f == nil {
			f = map[string]bool{}
			families[s.name] = f
		}
		for k := range s.labels {
			f[k] = true
		}
	}
	for _, s := range all {
		names := make([]string, 0, len(families[s.name]))
		for k := range families[s.name] {
			names = append(names, k)
		}
		sort.Strings(names)
		values := make([]string, len(names))
		for i, k := range names {
			values[i] = s.labels[k]
		}
		help := "Temporal SDK metric " + s.name
		switch s.kind {
		case kindCounter:
			d := prometheus.NewDesc(s.name, help, names, nil)
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(s.count.Load()), values...)
		case kindGauge:
			d := prometheus.NewDesc(s.name, help, names, nil)
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, math.Float64frombits(s.gauge.Load()), values...)
		case kindTimer:
			d := prometheus.NewDesc(s.name, help+" (seconds)", names, nil)
			s.mu.Lock()
			buckets := make(map[float64]uint64, len(TimerBuckets))
			for i, b := range TimerBuckets {
				buckets[b] = s.buckets[i]
			}
			h := prometheus.MustNewConstHistogram(d, s.total, s.sum, buckets, values...)
			s.mu.Unlock()
			ch <- h
		}
	}
}
