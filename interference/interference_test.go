package interference

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMechanismsRoundTripAndBadSettingsAreNamed(t *testing.T) {
	for _, s := range []string{"streams", "priority", "mps-50", "green-context-66", "time-slicing", "mig", "dedicated"} {
		m, err := ParseMechanism(s)
		require.NoError(t, err, s)
		assert.Equal(t, s, m.String())
	}
	for s, want := range map[string]string{
		"mps":              "1 to 100",
		"mps-0":            "1 to 100",
		"mps-150":          "1 to 100",
		"green-context":    "SM count",
		"streams-3":        "takes no setting",
		"mps-half":         `"half" is not a number`,
		"nvlink-magic":     "kind is not one of",
		"green-context-x1": "not a number",
	} {
		_, err := ParseMechanism(s)
		require.Error(t, err, s)
		assert.Contains(t, err.Error(), want, s)
	}
}

func TestTheDefaultStudyIsValidAndBadRequestsNameTheField(t *testing.T) {
	d := DefaultStudy()
	require.NoError(t, d.Validate())
	assert.Len(t, d.Pairs, 9, "three latency-critical workloads against three best-effort ones")

	bad := d
	bad.Pairs = append([]Pair{{LC: "gemm", BE: "copy"}, {LC: "decode-chain", BE: "nope"}}, d.Pairs[0], d.Pairs[0])
	bad.Mechanisms = []Mechanism{{Kind: Dedicated}, {Kind: MPS, Setting: 50}, {Kind: MPS, Setting: 50}}
	bad.Requests = 5
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{"pairs[0]: pair gemm + copy: gemm is best-effort", `pairs[1]: workload "nope"`,
		"pairs[3]: decode-chain + gemm twice", "mechanisms[0]: dedicated is always measured",
		"mechanisms[2]: mps-50 twice", "requests: 5 is not in [10, 100000]"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.ErrorContains(t, StudyRequest{}.Validate(), "pairs: at least one")
}

func validStudy() Study {
	return Study{Version: FormatVersion, GPU: GPUInfo{Model: "H200", Driver: "580"}, Request: DefaultStudy(),
		Runs: []Run{
			{Pair: Pair{LC: "decode-chain"}, Mechanism: Mechanism{Kind: Dedicated}, LC: &Latency{Requests: 200, P50Ms: 0.7, P99Ms: 0.9}},
			{Pair: Pair{BE: "gemm"}, Mechanism: Mechanism{Kind: Dedicated}, BE: &Throughput{PerSecond: 660, Unit: "TFLOP/s"}},
			{Pair: Pair{LC: "decode-chain", BE: "gemm"}, Mechanism: Mechanism{Kind: MPS, Setting: 50},
				LC: &Latency{Requests: 200, P50Ms: 1.0, P99Ms: 3.7}, BE: &Throughput{PerSecond: 400, Unit: "TFLOP/s"}},
		},
		Unavailable: []Unavailable{{Mechanism: Mechanism{Kind: MIG}, Reason: "MIG is disabled"}},
		Counters: []Counters{{Workload: "gemm", Tool: "ncu 2025.3", Kernels: 4, DurationMs: 5.6,
			Metrics: map[string]float64{"sm_throughput_pct": 91.5, "dram_throughput_pct": 12}},
			{Workload: "decode-chain", Unavailable: "ncu is not installed"}}}
}

func TestStudiesRoundTripAndBadFilesAreRefused(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, validStudy().Encode(&b))
	got, err := Decode(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, validStudy().Runs, got.Runs)
	assert.Equal(t, validStudy().Counters, got.Counters)

	// A version 2 file, written before studies could be partial, still reads, complete.
	v2, err := Decode(strings.NewReader(`{"version": 2, "gpu": {"model": "NVIDIA H100 80GB HBM3", "driver": "570.1"},
	 "started_at": "2026-12-05T10:00:00Z", "finished_at": "2026-12-05T10:09:00Z",
	 "request": {"pairs": [{"latency_critical": "decode-chain", "best_effort": "gemm"}], "mechanisms": [{"kind": "streams"}],
	  "requests": 200, "think_ms": 2, "warmup": 20, "repeats": 1, "seed": 0},
	 "runs": [{"pair": {"latency_critical": "decode-chain", "best_effort": ""}, "mechanism": {"kind": "dedicated"},
	  "latency_critical": {"requests": 200, "p50_ms": 0.7, "p99_ms": 0.9, "mean_ms": 0.75}, "nvml": {}, "repeats": 1}]}`))
	require.NoError(t, err)
	assert.False(t, v2.Partial())
	assert.Len(t, v2.Runs, 1)

	// A version 1 study (no counters) still reads.
	v1 := validStudy()
	v1.Version, v1.Counters = 1, nil
	b.Reset()
	require.NoError(t, v1.Encode(&b))
	_, err = Decode(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)

	// A partial study says which steps it lacks, and reads back so.
	partial := validStudy()
	partial.GPU.Scale = "h200"
	partial.Missing = []Step{
		{Pair: Pair{LC: "cnn-infer"}, Mechanism: Mechanism{Kind: Dedicated}},
		{Pair: Pair{LC: "decode-chain", BE: "copy"}, Mechanism: Mechanism{Kind: GreenContext, Setting: 66}},
		{Counters: "copy"},
	}
	b.Reset()
	require.NoError(t, partial.Encode(&b))
	assert.Contains(t, b.String(), `"counters": "copy"`)
	got, err = Decode(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	assert.True(t, got.Partial())
	assert.Equal(t, partial.Missing, got.Missing)
	assert.Equal(t, "h200", got.GPU.Scale)
	assert.Equal(t, 5, got.StepsDone(), "three runs, two workloads' counters")
	assert.Equal(t, []string{"cnn-infer alone", "decode-chain + copy under green-context-66", "copy counters"},
		[]string{got.Missing[0].String(), got.Missing[1].String(), got.Missing[2].String()})
	assert.False(t, validStudy().Partial())

	for name, c := range map[string]struct {
		edit func(*Study)
		raw  string
		want string
	}{
		"a future version": {edit: func(s *Study) { s.Version = 5 }, want: "version 5: this build reads versions 1 to 4"},
		"counters in a version 1 study": {edit: func(s *Study) {
			s.Version = 1
			s.Counters = []Counters{{Workload: "gemm", Unavailable: "no ncu"}}
		}, want: "counters in a version 1 study"},
		"counters of an unknown workload": {edit: func(s *Study) { s.Counters = []Counters{{Workload: "nope", Unavailable: "x"}} },
			want: "counters[0] (nope)"},
		"counters neither measured nor refused": {edit: func(s *Study) { s.Counters = []Counters{{Workload: "gemm"}} },
			want: "no kernel profiled and no reason given"},
		"a percentage over 100": {edit: func(s *Study) {
			s.Counters = []Counters{{Workload: "gemm", Kernels: 3, Metrics: map[string]float64{"sm_throughput_pct": 140}}}
		}, want: "between 0 and 100"},
		"a metric the format does not name": {edit: func(s *Study) {
			s.Counters = []Counters{{Workload: "gemm", Kernels: 3, Metrics: map[string]float64{"warp_cycles": 7}}}
		}, want: "1 metrics this format does not name"},
		"no GPU model": {edit: func(s *Study) { s.GPU.Model = "" }, want: "gpu.model: empty"},
		"a shared run without its best-effort side": {edit: func(s *Study) { s.Runs[2].BE = nil },
			want: "runs[2] (decode-chain + gemm, mps-50): a shared run has both sides' figures"},
		"a dedicated run of both sides": {edit: func(s *Study) { s.Runs[0].BE = s.Runs[1].BE },
			want: "a dedicated run measures one workload"},
		"p99 below p50": {edit: func(s *Study) { s.Runs[2].LC.P99Ms = 0.5 }, want: "p99 >= p50"},
		"unavailable without a reason": {edit: func(s *Study) { s.Unavailable[0].Reason = "" },
			want: "unavailable[0]: mig without a reason"},
		"missing steps in a version 2 study": {edit: func(s *Study) {
			s.Version, s.Counters = 2, nil
			s.Missing = []Step{{Pair: Pair{LC: "cnn-infer", BE: "copy"}, Mechanism: Mechanism{Kind: Streams}}}
		}, want: "missing steps in a version 2 study"},
		"a scale in a version 2 study": {edit: func(s *Study) { s.Version, s.GPU.Scale = 2, "h200" },
			want: "gpu.scale in a version 2 study"},
		"a card in a version 3 study": {edit: func(s *Study) { s.Version, s.GPU.UUID = 3, "GPU-927936d9" },
			want: "gpu.uuid in a version 3 study"},
		"a missing step that was measured": {edit: func(s *Study) { s.Missing = []Step{s.Runs[2].Step()} },
			want: "missing[0]: decode-chain + gemm under mps-50 is missing and measured"},
		"missing counters that were measured": {edit: func(s *Study) { s.Missing = []Step{{Counters: "gemm"}} },
			want: "missing[0]: gemm counters is missing and measured"},
		"a missing step twice": {edit: func(s *Study) {
			st := Step{Pair: Pair{LC: "cnn-infer", BE: "copy"}, Mechanism: Mechanism{Kind: Streams}}
			s.Missing = []Step{st, st}
		}, want: "missing[1]: cnn-infer + copy under streams twice"},
		"a missing dedicated step of both sides": {edit: func(s *Study) {
			s.Missing = []Step{{Pair: Pair{LC: "cnn-infer", BE: "copy"}, Mechanism: Mechanism{Kind: Dedicated}}}
		}, want: "missing[0]: a dedicated step names one workload"},
		"a missing best-effort workload on the latency-critical side": {edit: func(s *Study) {
			s.Missing = []Step{{Pair: Pair{LC: "copy"}, Mechanism: Mechanism{Kind: Dedicated}}}
		}, want: "missing[0]: copy is best-effort"},
		"an unknown field":   {raw: `{"version":1,"gpu":{"model":"x"},"colour":"red"}`, want: `unknown field "colour"`},
		"two JSON documents": {raw: `{"version":1,"gpu":{"model":"x"}} {}`, want: "more than one JSON value"},
	} {
		t.Run(name, func(t *testing.T) {
			raw := c.raw
			if c.edit != nil {
				s := validStudy()
				c.edit(&s)
				var b bytes.Buffer
				require.NoError(t, s.Encode(&b))
				raw = b.String()
			}
			_, err := Decode(strings.NewReader(raw))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
