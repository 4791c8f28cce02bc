package integration

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/devserver/stack"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
	"github.com/schooner-ml/schooner/workers/servingclient"
)

// servingEnv is the embedded stack with a ServingDeployment of the tiny model in two pipeline
// stages on the simulated market, and a router following it behind an httptest server.
type servingEnv struct {
	*stack.Stack
	t      *testing.T
	sc     *servingclient.Client
	id     string
	client openai.Client
	router *router.Pool
}

// startServing deploys the tiny model in two stages and waits until every stage is ready.
// Boot takes 10 simulated seconds and a notice 2 minutes, at 20×: a replacement is up within
// the notice.
func startServing(t *testing.T, ctx context.Context) *servingEnv {
	t.Helper()
	spec := serving.Spec{Name: "tiny", Model: serving.Model{Name: "tiny", Seed: 7}, Stages: 2,
		Resources: fleet.Resources{Clouds: []string{"aws"}, GPUTypes: []string{"V100-16"}}, MaxContext: 512}
	return startServingOn(t, ctx, "", spec, serving.DeployOptions{})
}

// startServingOn is startServing on the traces of traceDir (empty: the bundled ones), with
// spec and options of its own.
func startServingOn(t *testing.T, ctx context.Context, traceDir string, spec serving.Spec, o serving.DeployOptions) *servingEnv {
	t.Helper()
	pythonWithTorch(t)
	fast := sim.ProviderParams{BootTime: 10 * time.Second, NoticePeriod: 2 * time.Minute}
	s := startStack(t, stack.Options{DataDir: t.TempDir(), Headless: true, Logger: testLogger(t), Seed: 3, TimeScale: 20,
		Params: map[string]sim.ProviderParams{"aws": fast, "gcp": fast}, TraceDir: traceDir})
	e := &servingEnv{Stack: s, t: t, sc: servingclient.New(s.Client)}
	spec = spec.WithDefaults()
	require.NoError(t, spec.Validate())
	var err error
	e.id, err = e.sc.Deploy(ctx, spec, servingclient.DeployOptions{ID: "serve-tiny-test01", Options: o})
	require.NoError(t, err)

	rlog := testLogger(t)
	r, err := router.NewPool(router.Options{Model: spec.ModelID(), Deployment: e.id, ContextLength: spec.MaxContext, Log: &rlog})
	require.NoError(t, err)
	e.router = r
	srv := httptest.NewServer(r)
	fctx, stop := context.WithCancel(ctx)
	go e.sc.Follow(fctx, e.id, r, 200*time.Millisecond)
	t.Cleanup(func() { stop(); srv.Close(); _ = r.Close() })
	e.client = openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))

	eventually(t, 90*time.Second, func() bool {
		st, err := e.sc.Status(ctx, e.id)
		return err == nil && st.Phase == serving.PhaseServing
	}, "the deployment serving")
	return e
}

// complete is one completion, all of its text.
func (e *servingEnv) complete(ctx context.Context, prompt string, n int64) string {
	e.t.Helper()
	c, err := e.client.Completions.New(ctx, openai.CompletionNewParams{Model: openai.CompletionNewParamsModel("tiny"),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(n),
		Temperature: openai.Float(0), Seed: openai.Int(1)})
	require.NoError(e.t, err)
	require.NotEmpty(e.t, c.Choices)
	return c.Choices[0].Text
}

// instanceOf is the machine a stage of replica 0 runs on.
func (e *servingEnv) instanceOf(ctx context.Context, stage int) string {
	e.t.Helper()
	st, err := e.sc.Status(ctx, e.id)
	require.NoError(e.t, err)
	for _, s := range st.Stages {
		if s.Replica == 0 && s.Stage == stage && s.State == serving.StateReady {
			return s.InstanceID
		}
	}
	e.t.Fatalf("stage %d has no ready machine: %+v", stage, st.Stages)
	return ""
}

// streamThrough streams a completion and calls fault once after `after` chunks (never when
// after < 1); it returns the whole text.
func (e *servingEnv) streamThrough(ctx context.Context, prompt string, n int64, after int, fault func()) string {
	e.t.Helper()
	s := e.client.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: openai.CompletionNewParamsModel("tiny"),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(n),
		Temperature: openai.Float(0), Seed: openai.Int(1)})
	var b strings.Builder
	chunks := 0
	for s.Next() {
		for _, ch := range s.Current().Choices {
			b.WriteString(ch.Text)
		}
		if chunks++; chunks == after {
			fault()
		}
	}
	require.NoError(e.t, s.Err())
	if after > 0 {
		require.Greater(e.t, chunks, after, "the fault came mid-generation")
	}
	return b.String()
}

// TestServingSurvivesALostStage preempts the machine of a stage mid-generation: the last stage
// without a notice, then the first and the last with one. The deployment replaces it (restoring
// its KV cache from the replica on the next stage's node), the router resumes the stream, the
// text equals a failure-free run's, and requests sent after the failover are served (each
// noticed migration changes the pipeline while the router and the node agents learn of it at
// different moments).
func TestServingSurvivesALostStage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e := startServing(t, ctx)
	const prompt, n = "the spot market giveth and taketh away", 96
	// The reference is streamed too: the byte-level tokenizer decodes a stream chunk by chunk
	// (invalid UTF-8 from a random-weight model becomes U+FFFD per chunk), so only streams
	// compare text for text; the non-streaming answer is checked to be there.
	require.NotEmpty(t, e.complete(ctx, prompt, n))
	ref := e.streamThrough(ctx, prompt, n, -1, nil)
	require.NotEmpty(t, ref)

	for i, c := range []struct {
		stage  int
		notice bool
	}{{1, false}, {0, true}, {1, true}} {
		victim := e.instanceOf(ctx, c.stage)
		got := e.streamThrough(ctx, prompt, n, 8, func() {
			if c.notice {
				require.NoError(t, e.Market.PreemptWithNotice(victim))
			} else {
				require.NoError(t, e.Market.Preempt(victim, 0))
			}
		})
		assert.Equal(t, ref, got, "case %d: stage %d lost (notice %v): the stream equals the failure-free run", i, c.stage, c.notice)
		counters := e.router.Status().Counters
		assert.Zero(t, counters.Reprefills, "restored from the replica, not recomputed")
		assert.Zero(t, counters.GapTokens)
		assert.GreaterOrEqual(t, counters.Resumes, uint64(1), "the request lost with its stage was paused and resumed on the replacement")
		eventually(t, 60*time.Second, func() bool {
			st, err := e.sc.Status(ctx, e.id)
			return err == nil && st.Failovers >= i+1 && st.Phase == serving.PhaseServing
		}, "the failover recorded and the deployment serving again")
		// New requests after the failover are served by the new pipeline.
		after, cancelAfter := context.WithTimeout(ctx, 30*time.Second)
		assert.Equal(t, ref, e.streamThrough(after, prompt, n, -1, nil), "case %d: a request sent after the failover", i)
		cancelAfter()
	}
	st, err := e.sc.Stop(ctx, e.id, "test done")
	require.NoError(t, err)
	assert.Equal(t, serving.PhaseStopped, st.Phase)
	assert.Zero(t, st.LeakedInstances)
	recordHistory(t, e.Client, e.id, "serving_deployment.json")
}

// pythonWithTorch skips the test where no python3 can import torch (the inference worker's
// runtime; CI installs Debian's python3-torch). The node side finds the same interpreter.
func pythonWithTorch(t *testing.T) {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import torch").Run() == nil {
			return
		}
	}
	t.Skip("needs python3 with torch (Debian python3-torch) for the inference worker")
}
