package placement

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/interference"
)

// study is an H200 study of decode-chain + gemm: streams ruin the decode p99, MPS at 50%
// keeps it at 1.05× with the GEMM at 60%, a green context at 1.08× with 70%.
func study() interference.Study {
	pair := interference.Pair{LC: "decode-chain", BE: "gemm"}
	lc := func(p99 float64) *interference.Latency {
		return &interference.Latency{Requests: 100, P50Ms: p99 / 1.3, P99Ms: p99, MeanMs: p99 / 1.2}
	}
	be := func(tf float64) *interference.Throughput {
		return &interference.Throughput{PerSecond: tf, Unit: "TFLOP/s"}
	}
	return interference.Study{
		Version: interference.FormatVersion, GPU: interference.GPUInfo{Model: "NVIDIA H200"},
		Runs: []interference.Run{
			{Pair: interference.Pair{LC: "decode-chain"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated}, LC: lc(1.0), Repeats: 3},
			{Pair: interference.Pair{BE: "gemm"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated}, BE: be(600), Repeats: 3},
			{Pair: pair, Mechanism: interference.Mechanism{Kind: interference.Streams}, LC: lc(11.7), BE: be(582), Repeats: 3},
			{Pair: pair, Mechanism: interference.Mechanism{Kind: interference.MPS, Setting: 50}, LC: lc(1.05), BE: be(360), Repeats: 3},
			{Pair: pair, Mechanism: interference.Mechanism{Kind: interference.GreenContext, Setting: 66}, LC: lc(1.08), BE: be(420), Repeats: 3},
		},
	}
}

func TestPlaceNamesTheBestMechanismThatMetTheTarget(t *testing.T) {
	d := Place(study(), interference.Pair{LC: "decode-chain", BE: "gemm"}, 1.10)
	require.True(t, d.Allowed, d.Reason)
	require.Equal(t, "green-context-66", d.Via)
	require.Contains(t, d.Reason, "1.08×")
	require.Contains(t, d.Reason, "(median of 3 runs)")
	require.NotContains(t, d.Reason, "noise")

	d = Place(study(), interference.Pair{LC: "decode-chain", BE: "gemm"}, 1.06)
	require.True(t, d.Allowed)
	require.Equal(t, "mps-50", d.Via, "the only one within 1.06×")
}

func TestPlaceRefusesWithoutEvidenceOrOnASimulatedStudy(t *testing.T) {
	d := Place(study(), interference.Pair{LC: "decode-chain", BE: "gemm"}, 1.02)
	require.False(t, d.Allowed)
	require.Contains(t, d.Reason, "no measured mechanism kept decode-chain's p99 within 1.02×")

	d = Place(study(), interference.Pair{LC: "cnn-infer", BE: "gemm"}, 1.10)
	require.False(t, d.Allowed)
	require.Contains(t, d.Reason, "--pair cnn-infer+gemm")

	sim := study()
	sim.Simulated = true
	require.Contains(t, Place(sim, interference.Pair{LC: "decode-chain", BE: "gemm"}, 1.10).Reason, "simulated")
}

// A partial study (interrupted, its missing steps listed) places with the rows it has, and
// says that a pair without runs may be among the missing steps.
func TestPlaceWorksOnAPartialStudy(t *testing.T) {
	st := study()
	st.Runs = st.Runs[:4] // the green context was not measured
	st.Missing = []interference.Step{
		{Pair: interference.Pair{LC: "decode-chain", BE: "gemm"}, Mechanism: interference.Mechanism{Kind: interference.GreenContext, Setting: 66}},
		{Pair: interference.Pair{BE: "copy"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated}},
		{Pair: interference.Pair{LC: "decode-chain", BE: "copy"}, Mechanism: interference.Mechanism{Kind: interference.Streams}},
	}
	require.NoError(t, st.Validate())

	d := Place(st, interference.Pair{LC: "decode-chain", BE: "gemm"}, 1.10)
	require.True(t, d.Allowed, d.Reason)
	require.Equal(t, "mps-50", d.Via, "the best of the rows measured")

	d = Place(st, interference.Pair{LC: "decode-chain", BE: "copy"}, 1.10)
	require.False(t, d.Allowed)
	require.Contains(t, d.Reason, "the study is partial (3 steps missing)")
}

// A decision names how many runs it stands on, and a p99 ratio under 1 (faster than alone) is
// not taken for a gain: it is called noise or the GPU kept awake, the margin unknown.
func TestPlaceSaysWhenItStandsOnOneNoisyRun(t *testing.T) {
	st := study()
	for i := range st.Runs {
		st.Runs[i].Repeats = 1
	}
	st.Runs[4].LC.P99Ms = 0.9 // the green context "beat" the decode chain alone
	d := Place(st, interference.Pair{LC: "decode-chain", BE: "gemm"}, 1.10)
	require.True(t, d.Allowed, d.Reason)
	require.Contains(t, d.Reason, "(one run)")
	require.Contains(t, d.Reason, "run-to-run noise or the BE side keeping the GPU awake")
	require.Contains(t, d.Reason, "the margin is not known")
}
