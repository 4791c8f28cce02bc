package router_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving/router"
)

// disaggregated is a token pool router (the harness's) whose Prefill is a prompt pool router
// on its own fake.
func disaggregated(t *testing.T, opts router.Options, prompt, token *fakeWorker) *harness {
	t.Helper()
	pre, err := router.New(router.Options{Model: modelID, Deployment: "dep-test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pre.Close() })
	pre.SetStages(addrs(prompt))
	opts.Prefill = pre
	if token == nil {
		return newHarness(t, opts)
	}
	return newHarness(t, opts, token)
}

func TestDisaggregatedCompletionsPrefillOnePoolAndDecodeOnTheOther(t *testing.T) {
	t.Parallel()
	pw, tw := startFake(t, "first+last"), startFake(t, "first+last")
	h := disaggregated(t, router.Options{}, pw, tw)

	res, err := h.client.Completions.New(context.Background(), params("hello, world", 12, 7))
	require.NoError(t, err)
	assert.Equal(t, expectedText("hello, world", 7, 12), res.Choices[0].Text)
	assert.Equal(t, "length", string(res.Choices[0].FinishReason))
	s := h.client.Completions.NewStreaming(context.Background(), params("streamed", 6, 3))
	text := ""
	for s.Next() {
		for _, c := range s.Current().Choices {
			text += c.Text
		}
	}
	require.NoError(t, s.Err())
	assert.Equal(t, expectedText("streamed", 3, 6), text)

	ps, ts := pw.submitted(), tw.submitted()
	require.Len(t, ps, 2)
	require.Len(t, ts, 2)
	for i, n := range []int{12, 6} {
		assert.Equal(t, 1, ps[i].MaxTokens, "the prompt pool computes token 0 alone")
		assert.True(t, ps[i].Handoff, "and keeps the prompt's replica for the token pool")
		assert.Zero(t, ps[i].ResumeFrom)
		assert.Equal(t, ps[i].Request, ts[i].Request, "one request id on both pools: the replica's key")
		assert.Equal(t, n, ts[i].MaxTokens)
		assert.Equal(t, 1, ts[i].ResumeFrom, "the token pool resumes after token 0")
		assert.Equal(t, []int{tokenAt(ts[i].Prompt, ts[i].Seed, 0)}, ts[i].Generated)
		assert.True(t, ts[i].Expect, "restoring a prompt that may still be on its way")
		assert.False(t, ts[i].Handoff)
	}
}

func TestDisaggregatedOneTokenStaysOnThePromptPool(t *testing.T) {
	t.Parallel()
	pw, tw := startFake(t, "first+last"), startFake(t, "first+last")
	h := disaggregated(t, router.Options{}, pw, tw)
	res, err := h.client.Completions.New(context.Background(), params("one", 1, 5))
	require.NoError(t, err)
	assert.Equal(t, expectedText("one", 5, 1), res.Choices[0].Text)
	require.Len(t, pw.submitted(), 1)
	assert.False(t, pw.submitted()[0].Handoff, "nothing to hand off: no replica kept")
	assert.Empty(t, tw.submitted())
}

func TestDisaggregatedFullTokenQueueRefusesBeforeThePrefill(t *testing.T) {
	t.Parallel()
	pw := startFake(t, "first+last")
	h := disaggregated(t, router.Options{MaxQueue: 1}, pw, nil) // the token pool has no stages yet
	go func() { _, _ = h.client.Completions.New(context.Background(), params("waits", 4, 1)) }()
	wait(t, "the first request to be prefilled and queued on the token pool", func() bool {
		return h.r.Status().Waiting == 1
	})
	_, err := h.client.Completions.New(context.Background(), params("refused", 4, 2))
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	assert.Len(t, pw.submitted(), 1, "the refused request was not prefilled")
}
