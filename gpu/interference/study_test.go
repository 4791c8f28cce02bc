package interference_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/gpu/interference/fake"
	"github.com/schooner-ml/schooner/interference"
)

func smallRequest() interference.StudyRequest {
	return interference.StudyRequest{
		Pairs: []interference.Pair{{LC: "decode-chain", BE: "gemm"}, {LC: "decode-chain", BE: "copy"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Streams}, {Kind: interference.MPS, Setting: 50},
			{Kind: interference.GreenContext, Setting: 66}, {Kind: interference.TimeSlicing}, {Kind: interference.MIG}},
		Requests: 50, Repeats: 3,
	}
}

func TestAStudyRunsEveryWorkloadAloneThenEveryPairUnderEveryAvailableMechanism(t *testing.T) {
	x := fake.New()
	x.Unavailable = map[interference.MechanismKind]string{interference.TimeSlicing: "one process only here"}
	var calls []string
	total := -1
	s, err := gi.RunStudy(context.Background(), x, smallRequest(), func(done, n int, what string) {
		calls, total = append(calls, what), n
	})
	require.NoError(t, err)
	// decode-chain, gemm, copy alone, decode-chain alone in a process of its own (the baseline
	// of the MPS rows); 2 pairs × 3 available mechanisms; 3 repeats each.
	assert.Equal(t, (4+2*3)*3, total)
	assert.Len(t, calls, total)
	assert.Equal(t, total, x.Calls)
	assert.Equal(t, "decode-chain alone", calls[0])
	assert.Equal(t, "decode-chain + copy under green-context-66", calls[len(calls)-1])
	require.Len(t, s.Runs, 4+2*3)
	for _, r := range s.Runs {
		assert.Equal(t, 3, r.Repeats, "the median of three runs")
	}
	assert.True(t, s.Simulated, "a model's study says so")
	assert.Equal(t, []interference.Unavailable{
		{Mechanism: interference.Mechanism{Kind: interference.TimeSlicing}, Reason: "one process only here"},
		{Mechanism: interference.Mechanism{Kind: interference.MIG}, Reason: "MIG is disabled on this GPU, and schooner never changes that setting"},
	}, s.Unavailable)

	var b bytes.Buffer
	require.NoError(t, s.Encode(&b))
	back, err := interference.Decode(&b)
	require.NoError(t, err, "what a study writes, a reader takes")
	assert.Equal(t, s.Runs, back.Runs)
}

func TestCountersComeAfterTheRunsOneAWorkload(t *testing.T) {
	x := fake.New()
	req := smallRequest()
	req.Counters = true
	var calls []string
	total := -1
	s, err := gi.RunStudy(context.Background(), x, req, func(done, n int, what string) {
		calls, total = append(calls, what), n
	})
	require.NoError(t, err)
	assert.Equal(t, (4+2*4)*3+3, total, "three workloads' counters after the runs")
	assert.Equal(t, []string{"decode-chain counters", "gemm counters", "copy counters"}, calls[len(calls)-3:])
	require.Len(t, s.Counters, 3)
	for _, c := range s.Counters {
		assert.Equal(t, "a model of a GPU has no performance counters", c.Unavailable, c.Workload)
	}
	var b bytes.Buffer
	require.NoError(t, s.Encode(&b))
	back, err := interference.Decode(&b)
	require.NoError(t, err)
	assert.Equal(t, s.Counters, back.Counters)
	var table bytes.Buffer
	s.Counters[1] = interference.Counters{Workload: "gemm", Kernels: 4, Metrics: map[string]float64{"sm_throughput_pct": 91.5, "dram_throughput_pct": 12}}
	require.NoError(t, gi.WriteTable(&table, s, nil))
	assert.Regexp(t, `decode-chain\s+unavailable: a model of a GPU has no performance counters`, table.String())
	assert.Regexp(t, `gemm\s+4\s+91\.5\s+–\s+12\.0\s+–\s+–\s+–\n`, table.String(), "measured: SM, memory, DRAM, L1, L2, occupancy")
}

func TestAFailedRunEndsTheStudyWithWhatWasMeasured(t *testing.T) {
	x := fake.New()
	x.Fail = "decode-chain + copy"
	s, err := gi.RunStudy(context.Background(), x, smallRequest(), nil)
	require.ErrorContains(t, err, "decode-chain + copy under streams: decode-chain + copy failed")
	assert.Len(t, s.Runs, 4+4, "the runs alone and the first pair's under its four available mechanisms")

	_, err = gi.RunStudy(context.Background(), x, interference.StudyRequest{}, nil)
	require.ErrorContains(t, err, "study request: pairs: at least one")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = gi.RunStudy(ctx, fake.New(), smallRequest(), nil)
	require.ErrorIs(t, err, context.Canceled)
}

// handMade is a study with round numbers: decode alone p50 1 ms / p99 2 ms, gemm alone 100/s.
func handMade() interference.Study {
	lc := func(p50, p99 float64) *interference.Latency {
		return &interference.Latency{Requests: 100, P50Ms: p50, P99Ms: p99, MeanMs: p50}
	}
	be := func(v float64) *interference.Throughput {
		return &interference.Throughput{PerSecond: v, Unit: "TFLOP/s"}
	}
	pair := interference.Pair{LC: "decode-chain", BE: "gemm"}
	shared := func(m interference.Mechanism, p50, p99, thr float64) interference.Run {
		return interference.Run{Pair: pair, Mechanism: m, LC: lc(p50, p99), BE: be(thr), Repeats: 1}
	}
	return interference.Study{Version: interference.FormatVersion, GPU: interference.GPUInfo{Model: "H200", Driver: "580"},
		Request: smallRequest(), Runs: []interference.Run{
			{Pair: interference.Pair{LC: "decode-chain"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated}, LC: lc(1, 2)},
			{Pair: interference.Pair{BE: "gemm"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated}, BE: be(100)},
			shared(interference.Mechanism{Kind: interference.Streams}, 13, 24, 97),                     // most BE: on the front
			shared(interference.Mechanism{Kind: interference.Priority}, 13, 25, 96),                    // dominated by streams
			shared(interference.Mechanism{Kind: interference.MPS, Setting: 50}, 1.4, 7.4, 60),          // on the front
			shared(interference.Mechanism{Kind: interference.GreenContext, Setting: 66}, 1.4, 2.5, 62), // dominates MPS 50
			shared(interference.Mechanism{Kind: interference.TimeSlicing}, 1.3, 6, 81),                 // on the front
		}}
}

func TestAnalyzeGivesSlowdownsAgainstAloneAndThePairsParetoFront(t *testing.T) {
	rows, err := gi.Analyze(handMade())
	require.NoError(t, err)
	require.Len(t, rows, 5)
	byName := map[string]gi.Row{}
	for _, r := range rows {
		byName[r.Mechanism.String()] = r
	}
	s := byName["streams"]
	assert.InDelta(t, 13, s.LCP50x, 1e-9)
	assert.InDelta(t, 12, s.LCP99x, 1e-9)
	assert.InDelta(t, 24, s.LCP99Ms, 1e-9)
	assert.InDelta(t, 0.97, s.BEFraction, 1e-9)
	front := map[string]bool{}
	for _, r := range rows {
		front[r.Mechanism.String()] = r.OnFront
	}
	assert.Equal(t, map[string]bool{"streams": true, "priority": false, "mps-50": false, "green-context-66": true,
		"time-slicing": true}, front)
	var order []string
	for _, r := range gi.Front(rows, interference.Pair{LC: "decode-chain", BE: "gemm"}) {
		order = append(order, r.Mechanism.String())
	}
	assert.Equal(t, []string{"green-context-66", "time-slicing", "streams"}, order, "by best-effort throughput")

	st := handMade()
	st.Runs = st.Runs[1:] // no decode-chain alone
	_, err = gi.Analyze(st)
	require.ErrorContains(t, err, "decode-chain + gemm under streams: the study has no dedicated run of decode-chain")

	// A partial study whose baseline is among its missing steps shows the rows it has: none.
	st.Version = interference.FormatVersion
	st.Missing = []interference.Step{{Pair: interference.Pair{LC: "decode-chain"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated}}}
	rows, err = gi.Analyze(st)
	require.NoError(t, err)
	assert.Empty(t, rows)
}

func TestTheTableAndThePlotShowEveryMechanism(t *testing.T) {
	st := handMade()
	rows, err := gi.Analyze(st)
	require.NoError(t, err)
	var table bytes.Buffer
	require.NoError(t, gi.WriteTable(&table, st, rows))
	out := table.String()
	assert.NotContains(t, out, "SIMULATED")
	assert.Contains(t, out, "decode-chain + gemm  streams")
	assert.Contains(t, out, "12.00×")
	assert.Regexp(t, `green-context-66\s+1\.40×\s+1\.25×\s+2\.50\s+62%\s+\*`, out)
	assert.Contains(t, out, "H200, driver 580,", "no card recorded, none named")
	st.GPU.UUID = "GPU-927936d9"
	table.Reset()
	require.NoError(t, gi.WriteTable(&table, st, rows))
	assert.Contains(t, table.String(), "H200 (GPU-927936d9), driver 580,", "the card the study ran on")
	st.GPU.UUID = ""

	var svg bytes.Buffer
	require.NoError(t, gi.WriteSVG(&svg, st, rows))
	assert.Equal(t, 5, strings.Count(svg.String(), "<circle"), "a point per mechanism")
	assert.Contains(t, svg.String(), "<polyline", "the front joined")
	dec := xml.NewDecoder(&svg)
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "well-formed SVG")
	}

	st.Simulated = true
	table.Reset()
	require.NoError(t, gi.WriteTable(&table, st, rows))
	assert.True(t, strings.HasPrefix(table.String(), "SIMULATED"), "a model's study says so first")
}

// The MPS rows run the latency-critical side in a child process of its own; they are against
// its run alone in one (a launch-bound CNN ran faster there than beside the executor's threads,
// and its MPS rows came out below 1.0x against the in-process baseline). The other rows keep
// the in-process baseline, and a study without the process baseline (older ones) falls back.
func TestTheMPSRowsAreAgainstTheLatencyCriticalSideAloneInAProcessOfItsOwn(t *testing.T) {
	lat := func(p50 float64) *interference.Latency {
		return &interference.Latency{Requests: 100, P50Ms: p50, P99Ms: 2 * p50, MeanMs: p50}
	}
	rate := func(v float64) *interference.Throughput {
		return &interference.Throughput{PerSecond: v, Unit: "TFLOP/s"}
	}
	pair := interference.Pair{LC: "cnn-infer", BE: "gemm"}
	mps := interference.Mechanism{Kind: interference.MPS, Setting: 50}
	streams := interference.Mechanism{Kind: interference.Streams}
	st := interference.Study{Runs: []interference.Run{
		{Pair: interference.Pair{LC: "cnn-infer"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated}, LC: lat(1), Repeats: 1},
		{Pair: interference.Pair{BE: "gemm"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated}, BE: rate(100), Repeats: 1},
		{Pair: interference.Pair{LC: "cnn-infer"}, Mechanism: interference.Mechanism{Kind: interference.DedicatedProcess}, LC: lat(0.5), Repeats: 1},
		{Pair: pair, Mechanism: streams, LC: lat(1.5), BE: rate(90), Repeats: 1},
		{Pair: pair, Mechanism: mps, LC: lat(0.75), BE: rate(60), Repeats: 1},
	}}
	rows, err := gi.Analyze(st)
	require.NoError(t, err)
	require.Len(t, rows, 2, "the baselines are not rows")
	assert.InDelta(t, 1.5, rows[0].LCP50x, 1e-9, "streams: against the in-process run")
	assert.InDelta(t, 1.5, rows[1].LCP50x, 1e-9, "MPS: against the run in a process of its own (0.75 / 0.5, not 0.75 / 1)")

	st.Runs = append(st.Runs[:2:2], st.Runs[3:]...)
	rows, err = gi.Analyze(st)
	require.NoError(t, err)
	assert.InDelta(t, 0.75, rows[1].LCP50x, 1e-9, "a study without the process baseline falls back to the in-process one")
}
