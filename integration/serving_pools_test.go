package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
)

// A deployment with a prefill pool, through the workflow on the simulated market: a
// completion is prefilled by the prefill replica, whose stages stream the prompt's KV cache to
// the holders the decode replica restores from, and decoded there; its text equals the same
// completion served colocated on one pipeline. Then the prefill replica loses a machine: it
// is replaced, and completions are served the same.
func TestServingWithAPrefillPool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	spec := serving.Spec{Name: "tiny", Model: serving.Model{Name: "tiny", Seed: 7}, Stages: 2, PrefillReplicas: 1,
		Resources: fleet.Resources{Clouds: []string{"aws"}, GPUTypes: []string{"V100-16"}}, MaxContext: 512}
	e := startServingOn(t, ctx, "", spec, serving.DeployOptions{})
	prefillRouted := func() bool {
		st := e.router.Status()
		n := 0
		for _, s := range st.Stages {
			if s.Pool == router.PoolPrefill && s.State == router.ConnConnected {
				n++
			}
		}
		return n >= 1 && st.Ready
	}
	eventually(t, 30*time.Second, prefillRouted, "the router following the prefill replica")

	const prompt, n = "prefill here, decode there", 40
	ref := e.colocated(ctx, prompt, n)
	require.NotEmpty(t, ref)
	assert.Equal(t, ref, e.streamThrough(ctx, prompt, n, -1, nil), "disaggregated as colocated")
	rs := e.router.Status()
	require.NotNil(t, rs.Prefill)
	assert.EqualValues(t, 1, rs.Prefill.Completed, "the prompt was computed by the prefill replica")
	assert.Zero(t, rs.Counters.Reprefills, "the decode replica restored the prompt, not recomputed it")

	victim := e.instanceOf(ctx, serving.PoolPrefill, 0)
	require.NoError(t, e.Market.Preempt(victim, 0))
	eventually(t, 90*time.Second, func() bool {
		st, err := e.sc.Status(ctx, e.id)
		if err != nil || st.Stale || st.Phase != serving.PhaseServing {
			return false
		}
		for _, f := range st.FailoverRecords {
			if f.From == victim && f.Pool == serving.PoolPrefill {
				return true
			}
		}
		return false
	}, "the prefill replica's lost stage replaced")
	eventually(t, 30*time.Second, prefillRouted, "the router following the replacement")
	after, cancelAfter := context.WithTimeout(ctx, 60*time.Second)
	defer cancelAfter()
	assert.Equal(t, ref, e.streamThrough(after, prompt, n, -1, nil), "served the same after the prefill replica's failover")
	assert.EqualValues(t, 2, e.router.Status().Prefill.Completed)

	st, err := e.sc.Stop(ctx, e.id, "test done")
	require.NoError(t, err)
	assert.Equal(t, serving.PhaseStopped, st.Phase)
	assert.Zero(t, st.LeakedInstances)
	recordHistory(t, e.Client, e.id, "serving_deployment_pools.json")
}

// colocated streams the completion through a router of its own on prefill replica 0's
// pipeline alone, which then prefills and decodes it (any worker serves either role): the
// reference a disaggregated completion must equal.
func (e *servingEnv) colocated(ctx context.Context, prompt string, n int64) string {
	e.t.Helper()
	p, err := e.sc.Pipeline(ctx, e.id)
	require.NoError(e.t, err)
	var stages []router.StageAddr
	for _, rep := range p.Replicas {
		if rep.Pool == serving.PoolPrefill && rep.Replica == 0 && rep.Ready {
			for _, s := range rep.Stages {
				stages = append(stages, router.StageAddr{Addr: s.Addr, Node: s.Node})
			}
		}
	}
	require.NotEmpty(e.t, stages, "prefill replica 0 ready: %+v", p)
	r, err := router.New(router.Options{Model: "tiny", Deployment: e.id, ContextLength: 512})
	require.NoError(e.t, err)
	defer r.Close()
	r.SetStages(stages)
	srv := httptest.NewServer(r)
	defer srv.Close()
	c := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	s := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: openai.CompletionNewParamsModel("tiny"),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(n),
		Temperature: openai.Float(0), Seed: openai.Int(1)})
	var b strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			b.WriteString(ch.Text)
		}
	}
	require.NoError(e.t, s.Err(), fmt.Sprintf("the colocated reference on %v", stages))
	return b.String()
}
