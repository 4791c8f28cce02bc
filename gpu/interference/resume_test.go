package interference_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/gpu/interference/fake"
	"github.com/schooner-ml/schooner/interference"
)

// stopAfter runs req on x until k more steps have finished, cancelling the study then as an
// interrupt would; it returns what RunStudyWith returned and every checkpoint it was given.
func stopAfter(t *testing.T, x gi.Executor, req interference.StudyRequest, earlier *interference.Study, k int) (interference.Study, []interference.Study, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var saved []interference.Study
	st, err := gi.RunStudyWith(ctx, x, req, gi.StudyOptions{Earlier: earlier, Checkpoint: func(s interference.Study) error {
		saved = append(saved, s)
		if len(saved) == k {
			cancel()
		}
		return nil
	}})
	return st, saved, err
}

// throughFile is the study as a later process reads it back from its file.
func throughFile(t *testing.T, s interference.Study) interference.Study {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, s.Encode(&b))
	back, err := interference.Decode(&b)
	require.NoError(t, err, "every saved study is a valid file")
	return back
}

func TestAnInterruptedStudyIsSavedAfterEveryStepAndSaysItIsPartial(t *testing.T) {
	x := fake.New()
	req := smallRequest() // 3 workloads alone, decode-chain in a process, 2 pairs × 4 mechanisms: 12 steps of 3 repeats
	st, saved, err := stopAfter(t, x, req, nil, 5)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, saved, 5, "a checkpoint after every finished step")
	for i, s := range saved {
		back := throughFile(t, s)
		assert.Equal(t, i+1, back.StepsDone())
		assert.Len(t, back.Missing, 12-(i+1))
	}
	assert.Equal(t, 5*3, x.Calls, "no run after the interrupt")
	assert.True(t, st.Partial())
	assert.Equal(t, 5, st.StepsDone())
	require.Len(t, st.Missing, 7)
	assert.Equal(t, "decode-chain + gemm under mps-50", st.Missing[0].String(), "the first step it did not finish")
	assert.Equal(t, "decode-chain + copy under time-slicing", st.Missing[6].String())
	assert.Equal(t, saved[4].Runs, st.Runs, "what it returns is what it last saved")
	assert.False(t, st.FinishedAt.Before(st.StartedAt))

	rows, err := gi.Analyze(throughFile(t, st))
	require.NoError(t, err)
	require.Len(t, rows, 1, "the one pair measured under one mechanism")
	assert.Equal(t, "streams", rows[0].Mechanism.String())
	var table bytes.Buffer
	require.NoError(t, gi.WriteTable(&table, st, rows))
	assert.Contains(t, table.String(), "PARTIAL: 5 of 12 steps measured, 7 missing (the first: decode-chain + gemm under mps-50)")
	var svg bytes.Buffer
	require.NoError(t, gi.WriteSVG(&svg, st, rows))
	assert.Contains(t, svg.String(), "PARTIAL (5 of 12 steps)")
}

// The full study can be run as one command repeated until it is done: each run is stopped
// after a few steps and the next continues it from its file. The runs end as one
// uninterrupted study's (the fake's figures follow its call count, so the same fake
// continues: the same GPU, as a resumed study requires).
func TestAStudyContinuedUntilDoneEqualsOneUninterruptedRun(t *testing.T) {
	req := smallRequest()
	req.Counters = true // 3 alone, decode-chain in a process, 2 pairs × 3 available mechanisms, 3 workloads' counters: 13 steps
	whole := fake.New()
	whole.Unavailable = map[interference.MechanismKind]string{interference.TimeSlicing: "one process only here"}
	want, err := gi.RunStudy(context.Background(), whole, req, nil)
	require.NoError(t, err)

	x := fake.New()
	x.Unavailable = whole.Unavailable
	first, _, err := stopAfter(t, x, req, nil, 3)
	require.ErrorIs(t, err, context.Canceled)
	earlier := throughFile(t, first)
	rounds := 1
	for earlier.Partial() {
		calls := x.Calls
		var kept [2]int
		firstDone := -1
		ctx, cancel := context.WithCancel(context.Background())
		saved := 0
		st, err := gi.RunStudyWith(ctx, x, req, gi.StudyOptions{
			Earlier: &earlier,
			Kept:    func(k, n int) { kept = [2]int{k, n} },
			Progress: func(done, _ int, _ string) {
				if firstDone < 0 {
					firstDone = done
				}
			},
			Checkpoint: func(interference.Study) error {
				if saved++; saved == 4 {
					cancel()
				}
				return nil
			},
		})
		cancel()
		assert.Equal(t, [2]int{earlier.StepsDone(), 13}, kept, "the kept steps are counted")
		assert.Equal(t, unitsOf(earlier), firstDone, "progress counts the kept steps as done")
		ran := st.StepsDone() - earlier.StepsDone()
		assert.Equal(t, min(4, len(earlier.Missing)), ran, "only missing steps run")
		assert.Equal(t, (len(st.Runs)-len(earlier.Runs))*req.Repeats, x.Calls-calls, "no kept run measured again")
		assert.Equal(t, first.StartedAt, st.StartedAt, "the study started with its first run")
		if st.Partial() {
			require.ErrorIs(t, err, context.Canceled)
		} else {
			require.NoError(t, err)
		}
		earlier = throughFile(t, st)
		rounds++
	}
	assert.Equal(t, 4, rounds, "3 + 4 + 4 + 1 steps")
	assert.Equal(t, want.Runs, earlier.Runs, "the same runs in the same order as one uninterrupted study")
	assert.Equal(t, want.Counters, earlier.Counters)
	assert.Equal(t, want.Unavailable, earlier.Unavailable)
	assert.Equal(t, want.Request, earlier.Request)
	assert.Empty(t, earlier.Missing)
	assert.False(t, earlier.FinishedAt.Before(earlier.StartedAt))

	// Continuing a complete study runs nothing and keeps its times.
	calls := x.Calls
	again, err := gi.RunStudyWith(context.Background(), x, req, gi.StudyOptions{Earlier: &earlier})
	require.NoError(t, err)
	assert.Equal(t, calls, x.Calls)
	assert.Equal(t, earlier.Runs, again.Runs)
	assert.True(t, earlier.FinishedAt.Equal(again.FinishedAt))
}

// unitsOf counts a study's executor calls as progress does: each run is its repeats, each
// workload's counters one profile.
func unitsOf(s interference.Study) int { return len(s.Runs)*s.Request.Repeats + len(s.Counters) }

// otherGPU is the fake under another model, driver or card.
type otherGPU struct {
	*fake.Executor
	model, driver, uuid string
}

func (o otherGPU) GPU(ctx context.Context) (interference.GPUInfo, error) {
	g, err := o.Executor.GPU(ctx)
	if o.model != "" {
		g.Model = o.model
	}
	if o.driver != "" {
		g.Driver = o.driver
	}
	if o.uuid != "" {
		g.UUID = o.uuid
	}
	return g, err
}

func TestAStudyRefusesToContinueOneMeasuredAnotherWay(t *testing.T) {
	partial, _, err := stopAfter(t, fake.New(), smallRequest(), nil, 6)
	require.ErrorIs(t, err, context.Canceled)
	earlier := throughFile(t, partial)

	more := smallRequest()
	more.Requests = 60
	fewer := smallRequest()
	fewer.Pairs = fewer.Pairs[1:]
	for name, c := range map[string]struct {
		x    gi.Executor
		req  interference.StudyRequest
		want string
	}{
		"another GPU model": {x: otherGPU{Executor: fake.New(), model: "NVIDIA H100 (model)"}, req: smallRequest(),
			want: "gpu.model NVIDIA H200 (model) then, NVIDIA H100 (model) now"},
		"another driver": {x: otherGPU{Executor: fake.New(), driver: "580.1"}, req: smallRequest(),
			want: "gpu.driver model then, 580.1 now"},
		"another card of the same model and driver": {x: otherGPU{Executor: fake.New(), uuid: "GPU-927936d9"}, req: smallRequest(),
			want: "gpu.uuid not recorded then, GPU-927936d9 now (a study continues only on the card it began on"},
		"another request count": {x: fake.New(), req: more, want: "requests 50 then, 60 now"},
		"a pair left out": {x: fake.New(), req: fewer,
			want: "it measured steps this request leaves out (gemm alone, decode-chain + gemm under streams, decode-chain + gemm under mps-50)"},
	} {
		t.Run(name, func(t *testing.T) {
			x := c.x
			_, err := gi.RunStudyWith(context.Background(), x, c.req, gi.StudyOptions{Earlier: &earlier})
			require.ErrorIs(t, err, gi.ErrNotContinuable)
			assert.ErrorContains(t, err, c.want)
			switch f := x.(type) {
			case *fake.Executor:
				assert.Zero(t, f.Calls, "nothing runs")
			case otherGPU:
				assert.Zero(t, f.Calls, "nothing runs")
			}
		})
	}

	// A study that recorded its card continues on that card only.
	carded := earlier
	carded.GPU.UUID = "GPU-5a284c62"
	_, err = gi.RunStudyWith(context.Background(), otherGPU{Executor: fake.New(), uuid: "GPU-927936d9"}, smallRequest(),
		gi.StudyOptions{Earlier: &carded})
	assert.ErrorContains(t, err, "gpu.uuid GPU-5a284c62 then, GPU-927936d9 now")
	st, err := gi.RunStudyWith(context.Background(), otherGPU{Executor: fake.New(), uuid: "GPU-5a284c62"}, smallRequest(),
		gi.StudyOptions{Earlier: &carded})
	require.NoError(t, err, "the same card")
	assert.Equal(t, "GPU-5a284c62", st.GPU.UUID)

	// A request that asks for more (another pair) keeps the earlier runs and adds its steps.
	grown := smallRequest()
	grown.Pairs = append(grown.Pairs, interference.Pair{LC: "cnn-infer", BE: "gemm"})
	st, err = gi.RunStudyWith(context.Background(), fake.New(), grown, gi.StudyOptions{Earlier: &earlier})
	require.NoError(t, err)
	assert.Len(t, st.Runs, 6+3*4, "four workloads alone, two of them also in a process of their own")
	assert.Equal(t, earlier.Runs[:3], st.Runs[:3], "the earlier baselines kept")
	assert.Equal(t, "cnn-infer alone", st.Runs[3].Step().String(), "the new baseline among the baselines")
	assert.Empty(t, st.Missing)
}
