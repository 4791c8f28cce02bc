package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/gpu/interference/fake"
	"github.com/schooner-ml/schooner/interference"
)

func TestLinesPutTheRuntimeBesideTheStudysMechanisms(t *testing.T) {
	req := interference.StudyRequest{Pairs: []interference.Pair{{LC: "decode-chain", BE: "gemm"}, {LC: "cnn-infer", BE: "gemm"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Streams}}}
	st, err := gi.RunStudy(context.Background(), fake.New(), req, nil)
	require.NoError(t, err)
	var lc *interference.Latency
	var be *interference.Throughput
	for _, r := range st.Runs {
		if r.Mechanism.Kind == interference.Dedicated && r.Pair.LC == "decode-chain" {
			lc = r.LC
		}
		if r.Mechanism.Kind == interference.Dedicated && r.Pair.BE == "gemm" {
			be = r.BE
		}
	}
	require.NotNil(t, lc)
	require.NotNil(t, be)

	dir := t.TempDir()
	run := filepath.Join(dir, "runtime-decode-chain-gemm")
	require.NoError(t, os.MkdirAll(run, 0o755))
	write := func(name, s string) { require.NoError(t, os.WriteFile(filepath.Join(run, name), []byte(s), 0o644)) }
	write("hp.json", `{"requests": 100, "p50_ms": 2, "p99_ms": 3, "mean_ms": 2.2}`)
	write("be.json", "{\"ready\": true}\n{\"per_second\": 100, \"unit\": \"TFLOP/s\"}\n")
	write("result.json", `{"evicted": false, "mps": true, "be_state": "running",
		"be_waits_by": {"hp": 10, "sms": 0, "budget": 90, "paused": 0},
		"hp_shim": {"min_excess_ns": 3150, "shim_ns": 8000, "shim_launches": 4, "hp_baseline": "events"}, "be_shim": {"shim_ns": 3000, "shim_launches": 2}}`)

	lines, err := Lines(st, dir)
	require.NoError(t, err)
	require.Len(t, lines, 3, "two pairs under streams, the runtime for one (the other has no run)")
	var rt Line
	for _, l := range lines {
		if l.Mechanism == "schooner runtime" {
			rt = l
		}
	}
	require.InDelta(t, 2/lc.P50Ms, rt.P50x, 1e-9)
	require.InDelta(t, 3/lc.P99Ms, rt.P99x, 1e-9)
	require.InDelta(t, 100/be.PerSecond, rt.BEShare, 1e-9)
	require.Equal(t, "BE over its whole run (no timeline: HP idle for part of it); MPS true, BE running; "+
		"BE held by budget 90%, hp 10%; HP slowdown over its own event times; HP events add ≥ 3.1 µs to ncu's times; the shim costs a launch 2.0 µs (HP), 1.5 µs (BE)", rt.Note)
}

func TestTheBEShareIsReadOverTheHPWindowWhenBothSidesGaveTimelines(t *testing.T) {
	req := interference.StudyRequest{Pairs: []interference.Pair{{LC: "decode-chain", BE: "gemm"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Streams}}}
	st, err := gi.RunStudy(context.Background(), fake.New(), req, nil)
	require.NoError(t, err)
	var alone float64
	for _, r := range st.Runs {
		if r.Mechanism.Kind == interference.Dedicated && r.BE != nil {
			alone = r.BE.PerSecond
		}
	}
	require.Positive(t, alone)

	dir := t.TempDir()
	run := filepath.Join(dir, "runtime-decode-chain-gemm")
	require.NoError(t, os.MkdirAll(run, 0o755))
	write := func(name, s string) { require.NoError(t, os.WriteFile(filepath.Join(run, name), []byte(s), 0o644)) }
	// BE alone at the full rate for 10 s, then at a quarter of it while the HP requests run
	// (seconds 10 to 12): its whole-run rate hides the drop.
	full := alone
	write("be.json", fmt.Sprintf("{\"ready\": true}\n{\"per_second\": %g, \"unit\": \"TFLOP/s\", \"marks\": [[100, 0], [110, %g], [112, %g]]}\n",
		(10*full+2*full/4)/12, 10*full, 10*full+2*full/4))
	write("hp.json", `{"requests": 100, "p50_ms": 2, "p99_ms": 3, "mean_ms": 2.2, "window_unix": [110, 112]}`)

	lines, err := Lines(st, dir)
	require.NoError(t, err)
	rt := lines[len(lines)-1]
	require.Equal(t, "schooner runtime", rt.Mechanism)
	require.InDelta(t, 0.25, rt.BEShare, 1e-9)
	require.Contains(t, rt.Note, "over its whole run 88%")
	// 100 requests of 2.2 ms in a 2 s window: in flight 11% of it, so a BE side running only
	// in their gaps could keep at most 89%.
	require.Contains(t, rt.Note, "HP requests in flight 11% of the window: BE only in their gaps keeps at most 89%")
	require.NotContains(t, rt.Note, "admitted beside", "no result.json: nothing to say")

	write("result.json", `{"mps": true, "be_state": "running", "be_admitted_beside": 7,
		"hp_shim": {"shim_launches": 100, "untimed": 60, "gapped": 30}}`)
	lines, err = Lines(st, dir)
	require.NoError(t, err)
	require.Contains(t, lines[len(lines)-1].Note, "7 BE kernels admitted beside HP work")
	require.Contains(t, lines[len(lines)-1].Note, "30 of 40 timed HP launches left out of the slowdown signal", "a shim from before: left out")

	write("result.json", `{"hp_shim": {"shim_launches": 100, "untimed": 60, "gapped": 30, "idle_samples": "from-launch"}}`)
	lines, err = Lines(st, dir)
	require.NoError(t, err)
	require.Contains(t, lines[len(lines)-1].Note, "30 of 40 timed HP launches found their stream idle: counted from their launch's return")

	// A window the marks do not cover is an error, not a guess.
	write("hp.json", `{"requests": 100, "p50_ms": 2, "p99_ms": 3, "mean_ms": 2.2, "window_unix": [110, 113]}`)
	lines, err = Lines(st, dir)
	require.NoError(t, err)
	require.Contains(t, lines[len(lines)-1].Note, "do not cover the HP window")
}

func TestWorkAtInterpolatesBetweenMarks(t *testing.T) {
	marks := [][2]float64{{0, 0}, {1, 10}, {3, 30}}
	require.InDelta(t, 5.0, workAt(marks, 0.5), 1e-12)
	require.InDelta(t, 20.0, workAt(marks, 2), 1e-12)
	require.InDelta(t, 0.0, workAt(marks, 0), 1e-12)
	require.InDelta(t, 30.0, workAt(marks, 3), 1e-12)
	r, err := rateOver(marks, 0.5, 2)
	require.NoError(t, err)
	require.InDelta(t, 10.0, r, 1e-12)
	_, err = rateOver(marks[:1], 0, 1)
	require.ErrorIs(t, err, errNoTimeline)
}

func TestRuntimeVariantsAreRowsOfTheirOwn(t *testing.T) {
	req := interference.StudyRequest{Pairs: []interference.Pair{{LC: "decode-chain", BE: "gemm"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Streams}}}
	st, err := gi.RunStudy(context.Background(), fake.New(), req, nil)
	require.NoError(t, err)
	dir := t.TempDir()
	for _, name := range []string{"runtime-decode-chain-gemm", "runtime-decode-chain-gemm@idle2ms", "runtime-decode-chain-gemmx"} {
		run := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(run, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(run, "hp.json"), []byte(`{"requests": 10, "p50_ms": 2, "p99_ms": 3, "mean_ms": 2}`), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(run, "be.json"), []byte(`{"per_second": 1, "unit": "TFLOP/s"}`), 0o644))
	}
	lines, err := Lines(st, dir)
	require.NoError(t, err)
	var mechs []string
	for _, l := range lines {
		mechs = append(mechs, l.Mechanism)
	}
	require.Equal(t, []string{"streams", "schooner runtime", "schooner runtime (idle2ms)"}, mechs)
}
