package main

import (
	"context"
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
	write("result.json", `{"evicted": false, "mps": true, "be_state": "running"}`)

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
	require.Equal(t, "MPS true, BE running", rt.Note)
}
