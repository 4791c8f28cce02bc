package router_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving/router"
	"github.com/schooner-ml/schooner/serving/router/routertest"
)

const modelID = "schooner/test-model"

// wait polls cond until it holds or five seconds pass.
func wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, 2*time.Millisecond, what)
}

type harness struct {
	r      *router.Router
	srv    *httptest.Server
	client openai.Client
}

func newHarness(t *testing.T, opts router.Options, stages ...*fakeWorker) *harness {
	t.Helper()
	opts.Model = modelID
	opts.Deployment = "dep-test"
	r, err := router.New(opts)
	require.NoError(t, err)
	srv, client := routertest.Serve(t, r)
	if len(stages) > 0 {
		r.SetStages(addrs(stages...))
	}
	return &harness{r: r, srv: srv, client: client}
}

func addrs(fs ...*fakeWorker) []router.StageAddr {
	var out []router.StageAddr
	for _, f := range fs {
		out = append(out, router.StageAddr{Addr: f.addr()})
	}
	return out
}

func params(prompt string, maxTokens, seed int64) openai.CompletionNewParams {
	return openai.CompletionNewParams{
		Model:       modelID,
		Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens:   openai.Int(maxTokens),
		Seed:        openai.Int(seed),
		Temperature: openai.Float(0.7),
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	w := startFake(t, "first+last")
	h := newHarness(t, router.Options{}, w)

	res, err := h.client.Completions.New(context.Background(), params("hello, world", 12, 7))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(res.ID, "cmpl-"))
	assert.Equal(t, "text_completion", string(res.Object))
	assert.Equal(t, modelID, res.Model)
	assert.NotZero(t, res.Created)
	require.Len(t, res.Choices, 1)
	assert.Equal(t, expectedText("hello, world", 7, 12), res.Choices[0].Text)
	assert.EqualValues(t, 0, res.Choices[0].Index)
	assert.Equal(t, "length", string(res.Choices[0].FinishReason))
	assert.EqualValues(t, 12, res.Usage.PromptTokens, "byte-level tokenizer: one token per byte")
	assert.EqualValues(t, 12, res.Usage.CompletionTokens)
	assert.EqualValues(t, 24, res.Usage.TotalTokens)

	sub := w.submitted()
	require.Len(t, sub, 1)
	assert.Equal(t, res.ID, sub[0].Request)
	assert.Equal(t, []int{'h', 'e', 'l', 'l', 'o', ',', ' ', 'w', 'o', 'r', 'l', 'd'}, sub[0].Prompt)
	assert.EqualValues(t, 7, sub[0].Seed)
	assert.InDelta(t, 0.7, sub[0].Temperature, 1e-9)
	assert.Zero(t, sub[0].ResumeFrom)
	assert.Equal(t, "dep-test", w.hello(0).Deployment)
	assert.Equal(t, 0, w.hello(0).Stage)

	// A prompt of token ids, and a worker that stops early.
	w.set(func(f *fakeWorker) { f.stopAfter = 3 })
	p := params("", 10, 1)
	p.Prompt = openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{104, 105}}
	res, err = h.client.Completions.New(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, expectedText("hi", 1, 3), res.Choices[0].Text)
	assert.Equal(t, "stop", string(res.Choices[0].FinishReason))
	assert.EqualValues(t, 2, res.Usage.PromptTokens)

	wait(t, "counters", func() bool { return h.r.Status().Counters.Completed == 2 })
	st := h.r.Status()
	assert.True(t, st.Ready)
	require.Len(t, st.Stages, 1)
	assert.Equal(t, router.ConnConnected, st.Stages[0].State)
	assert.Equal(t, "first+last", st.Stages[0].Role)
}

// readStream collects a stream's text, one chunk per token, and its finish reason.
func readStream(t *testing.T, s interface {
	Next() bool
	Current() openai.Completion
}, n int) (chunks []string, finish string, usage *openai.CompletionUsage) {
	t.Helper()
	for (n < 0 || len(chunks) < n) && s.Next() {
		c := s.Current()
		if len(c.Choices) == 0 {
			u := c.Usage
			usage = &u
			continue
		}
		if c.Choices[0].Text != "" {
			chunks = append(chunks, c.Choices[0].Text)
		}
		if c.Choices[0].FinishReason != "" {
			finish = string(c.Choices[0].FinishReason)
		}
	}
	return chunks, finish, usage
}

// readToEnd reads the rest of a stream, which must end without error at max_tokens.
func readToEnd(t *testing.T, s interface {
	Next() bool
	Current() openai.Completion
	Err() error
}) []string {
	t.Helper()
	chunks, finish, _ := readStream(t, s, -1)
	require.NoError(t, s.Err())
	assert.Equal(t, "length", finish)
	return chunks
}

// holdingStage is a first+last fake worker that holds after hold tokens and a harness routing
// to it, reconnecting every 10 ms (opts adds to that).
func holdingStage(t *testing.T, hold int, opts router.Options) (*fakeWorker, *harness) {
	t.Helper()
	a := startFake(t, "first+last")
	a.set(func(f *fakeWorker) { f.hold = hold })
	opts.ReconnectBackoff = 10 * time.Millisecond
	return a, newHarness(t, opts, a)
}

// killAndPause kills the stage a and waits for the router to pause its request.
func killAndPause(t *testing.T, h *harness, a *fakeWorker) {
	t.Helper()
	a.kill()
	wait(t, "paused", func() bool { return h.r.Status().Paused == 1 })
}

// interruptedStream streams a request (prompt, n tokens, seed) to a stage that holds after
// hold tokens, reads those, kills the stage and waits for the router to pause the request.
func interruptedStream(t *testing.T, hold int, prompt string, n, seed int64) (*harness, *ssestream.Stream[openai.Completion], []string) {
	t.Helper()
	a, h := holdingStage(t, hold, router.Options{})
	s := h.client.Completions.NewStreaming(context.Background(), params(prompt, n, seed))
	before, _, _ := readStream(t, s, hold)
	require.Len(t, before, hold)
	killAndPause(t, h, a)
	return h, s, before
}

// replaceStage points the router at a fresh first+last fake worker, changed by change
// (unless nil) before, and returns it.
func replaceStage(t *testing.T, h *harness, change func(*fakeWorker)) *fakeWorker {
	t.Helper()
	b := startFake(t, "first+last")
	if change != nil {
		b.set(change)
	}
	h.r.SetStages(addrs(b))
	return b
}

func TestStreamingCompletion(t *testing.T) {
	t.Parallel()
	w := startFake(t, "first+last")
	h := newHarness(t, router.Options{}, w)

	p := params("stream me", 20, 3)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := h.client.Completions.NewStreaming(context.Background(), p)
	chunks, finish, usage := readStream(t, s, -1)
	require.NoError(t, s.Err())
	require.NoError(t, s.Close())
	assert.Len(t, chunks, 20, "one chunk per token")
	assert.Equal(t, expectedText("stream me", 3, 20), strings.Join(chunks, ""))
	assert.Equal(t, "length", finish)
	require.NotNil(t, usage)
	assert.EqualValues(t, 20, usage.CompletionTokens)
	assert.EqualValues(t, 9, usage.PromptTokens)
}

func TestModels(t *testing.T) {
	t.Parallel()
	h := newHarness(t, router.Options{})
	page, err := h.client.Models.List(context.Background())
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, modelID, page.Data[0].ID)
	assert.Equal(t, "model", string(page.Data[0].Object))

	m, err := h.client.Models.Get(context.Background(), modelID)
	require.NoError(t, err)
	assert.Equal(t, modelID, m.ID)

	_, err = h.client.Models.Get(context.Background(), "other")
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	assert.Equal(t, "model_not_found", apiErr.Code)
}

func TestErrorsThroughTheClient(t *testing.T) {
	t.Parallel()
	h := newHarness(t, router.Options{ContextLength: 64})
	cases := []struct {
		name   string
		mutate func(*openai.CompletionNewParams)
		status int
		param  string
		code   string
	}{
		{"unknown model", func(p *openai.CompletionNewParams) { p.Model = "gpt-3.5-turbo-instruct" }, 404, "model", "model_not_found"},
		{"n>1", func(p *openai.CompletionNewParams) { p.N = openai.Int(2) }, 400, "n", "unsupported_parameter"},
		{"negative max_tokens", func(p *openai.CompletionNewParams) { p.MaxTokens = openai.Int(-1) }, 400, "max_tokens", ""},
		{"echo", func(p *openai.CompletionNewParams) { p.Echo = openai.Bool(true) }, 400, "echo", "unsupported_parameter"},
		{"logprobs", func(p *openai.CompletionNewParams) { p.Logprobs = openai.Int(2) }, 400, "logprobs", "unsupported_parameter"},
		{"best_of", func(p *openai.CompletionNewParams) { p.BestOf = openai.Int(3) }, 400, "best_of", "unsupported_parameter"},
		{"suffix", func(p *openai.CompletionNewParams) { p.Suffix = openai.String("x") }, 400, "suffix", "unsupported_parameter"},
		{"temperature", func(p *openai.CompletionNewParams) { p.Temperature = openai.Float(3) }, 400, "temperature", ""},
		{"too long", func(p *openai.CompletionNewParams) {
			p.Prompt = openai.CompletionNewParamsPromptUnion{OfString: openai.String(strings.Repeat("x", 60))}
		}, 400, "prompt", "context_length_exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := params("hi", 8, 1)
			c.mutate(&p)
			_, err := h.client.Completions.New(context.Background(), p)
			var apiErr *openai.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, c.status, apiErr.StatusCode)
			assert.Equal(t, "invalid_request_error", apiErr.Type)
			assert.Equal(t, c.param, apiErr.Param)
			assert.Equal(t, c.code, apiErr.Code)
			assert.NotEmpty(t, apiErr.Message)
		})
	}
}

func TestOverloadGets429AndQueuedRequestsRunLater(t *testing.T) {
	t.Parallel()
	h := newHarness(t, router.Options{MaxQueue: 2, RetryAfter: 2 * time.Second}) // no stages yet: requests wait
	ctx := context.Background()
	s1 := h.client.Completions.NewStreaming(ctx, params("one", 4, 1))
	s2 := h.client.Completions.NewStreaming(ctx, params("two", 4, 2))
	// NewStreaming returns once the headers are in, that is once the request is queued.
	wait(t, "two waiting", func() bool { return h.r.Status().Waiting == 2 })

	_, err := h.client.Completions.New(ctx, params("three", 4, 3))
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	assert.Equal(t, "rate_limit_error", apiErr.Type)
	assert.Equal(t, "queue_full", apiErr.Code)
	assert.Equal(t, "2", apiErr.Response.Header.Get("Retry-After"))

	w := startFake(t, "first+last")
	h.r.SetStages(addrs(w))
	for i, s := range []interface {
		Next() bool
		Current() openai.Completion
		Err() error
	}{s1, s2} {
		chunks, finish, _ := readStream(t, s, -1)
		require.NoError(t, s.Err())
		assert.Equal(t, expectedText([]string{"one", "two"}[i], int64(i+1), 4), strings.Join(chunks, ""))
		assert.Equal(t, "length", finish)
	}
}

func TestWorkerOverloadedRequeues(t *testing.T) {
	t.Parallel()
	w := startFake(t, "first+last")
	w.set(func(f *fakeWorker) { f.overloadFirst = 3 })
	h := newHarness(t, router.Options{ReconnectBackoff: 5 * time.Millisecond}, w)
	res, err := h.client.Completions.New(context.Background(), params("busy", 5, 9))
	require.NoError(t, err)
	assert.Equal(t, expectedText("busy", 9, 5), res.Choices[0].Text)
	assert.Len(t, w.submitted(), 4)
}

func TestClientDisconnectCancelsOnTheWorker(t *testing.T) {
	t.Parallel()
	w := startFake(t, "first+last")
	w.set(func(f *fakeWorker) { f.hold = 2 })
	h := newHarness(t, router.Options{}, w)
	ctx, cancel := context.WithCancel(context.Background())
	s := h.client.Completions.NewStreaming(ctx, params("bye", 50, 5))
	require.True(t, s.Next())
	id := s.Current().ID
	wait(t, "running", func() bool { return h.r.Status().Running == 1 })
	cancel()
	wait(t, "cancel sent", func() bool { return len(w.cancelled()) == 1 })
	assert.Equal(t, id, w.cancelled()[0])
	wait(t, "router idle", func() bool {
		st := h.r.Status()
		return st.Running == 0 && st.Counters.Cancelled == 1
	})
}

// The stage is killed mid-generation and replaced: the stream carries on with exactly the
// tokens of an uninterrupted run, no duplicate and no gap.
func TestFailoverResumesTheStream(t *testing.T) {
	t.Parallel()
	const n = 16
	h, s, before := interruptedStream(t, 5, "resume me", n, 11)
	// The router redials the dead stage, so its state flips between down and connecting (the
	// last error kept): read it once it says down, not at whatever instant this line runs.
	var st router.Status
	wait(t, "stage 0 down", func() bool { st = h.r.Status(); return st.Stages[0].State == router.ConnDown })
	assert.Equal(t, router.ConnDown, st.Stages[0].State)
	assert.NotEmpty(t, st.Stages[0].LastError)

	b := replaceStage(t, h, func(f *fakeWorker) { f.replay = 3 }) // a replacement that re-sends steps it was told about
	after := readToEnd(t, s)
	all := append(before, after...)
	assert.Len(t, all, n, "no duplicates, no gaps")
	assert.Equal(t, expectedText("resume me", 11, n), strings.Join(all, ""))

	sub := b.submitted()
	require.Len(t, sub, 1)
	assert.Equal(t, 5, sub[0].ResumeFrom)
	assert.Len(t, sub[0].Generated, 5)
	wait(t, "counters", func() bool { return h.r.Status().Counters.Completed == 1 })
	c := h.r.Status().Counters
	assert.EqualValues(t, 3, c.DroppedTokens)
	assert.EqualValues(t, 1, c.Pauses)
	assert.EqualValues(t, 1, c.Resumes)
	assert.Zero(t, c.GapTokens)
}

// TestRestoreFailedResubmitsWithReprefill: a replacement that cannot restore the request's KV
// cache answers restore_failed; the router resubmits it once with resume_mode reprefill.
func TestRestoreFailedResubmitsWithReprefill(t *testing.T) {
	t.Parallel()
	const n = 8
	h, s, before := interruptedStream(t, 3, "no replica", n, 5)
	b := replaceStage(t, h, func(f *fakeWorker) { f.noReplica = true })
	after := readToEnd(t, s)
	assert.Equal(t, expectedText("no replica", 5, n), strings.Join(append(before, after...), ""))
	sub := b.submitted()
	require.Len(t, sub, 2)
	assert.Equal(t, []string{"", "reprefill"}, []string{sub[0].ResumeMode, sub[1].ResumeMode})
	assert.Equal(t, []int{3, 3}, []int{sub[0].ResumeFrom, sub[1].ResumeFrom})
	assert.EqualValues(t, 1, h.r.Status().Counters.Reprefills)
}

func TestFailoverNonStreaming(t *testing.T) {
	t.Parallel()
	a, h := holdingStage(t, 4, router.Options{})
	type result struct {
		res *openai.Completion
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := h.client.Completions.New(context.Background(), params("quiet", 9, 2))
		done <- result{res, err}
	}()
	wait(t, "4 tokens sent", func() bool { return a.sent() == 4 })
	killAndPause(t, h, a)
	b := replaceStage(t, h, nil)
	got := <-done
	require.NoError(t, got.err)
	assert.Equal(t, expectedText("quiet", 2, 9), got.res.Choices[0].Text)
	assert.EqualValues(t, 9, got.res.Usage.CompletionTokens)
	require.Len(t, b.submitted(), 1)
	assert.Equal(t, 4, b.submitted()[0].ResumeFrom, "the tokens sent before the loss were delivered")
}

func TestNoReplacementFailsAfterThePauseLimit(t *testing.T) {
	t.Parallel()
	a, h := holdingStage(t, 2, router.Options{PauseLimit: 100 * time.Millisecond})
	s := h.client.Completions.NewStreaming(context.Background(), params("lost", 10, 4))
	chunks, _, _ := readStream(t, s, 2)
	require.Len(t, chunks, 2)
	a.kill()
	for s.Next() {
	}
	require.Error(t, s.Err())
	assert.Contains(t, s.Err().Error(), "worker_lost")
	wait(t, "failed", func() bool { return h.r.Status().Counters.Failed == 1 })
}

// Two connections: submits to the first stage, tokens from the last; a middle stage the
// router never dials. The last stage is lost and replaced.
func TestPipelineOfThreeStages(t *testing.T) {
	t.Parallel()
	last := startFake(t, "last")
	last.set(func(f *fakeWorker) { f.hold = 3 })
	first := startFake(t, "first")
	first.set(func(f *fakeWorker) { f.peer = last })
	middle := router.StageAddr{Addr: "127.0.0.1:1"} // never dialled
	h := newHarness(t, router.Options{ReconnectBackoff: 10 * time.Millisecond})
	h.r.SetStages([]router.StageAddr{{Addr: first.addr()}, middle, {Addr: last.addr()}})

	s := h.client.Completions.NewStreaming(context.Background(), params("deep", 8, 6))
	before, _, _ := readStream(t, s, 3)
	require.Len(t, before, 3)
	st := h.r.Status()
	require.Len(t, st.Stages, 3)
	assert.Equal(t, []string{"first", "", "last"}, []string{st.Stages[0].Role, st.Stages[1].Role, st.Stages[2].Role})
	assert.Equal(t, router.ConnUnused, st.Stages[1].State)
	assert.Equal(t, 2, last.hello(0).Stage)

	last.kill()
	wait(t, "paused", func() bool { return h.r.Status().Paused == 1 })
	last2 := startFake(t, "last")
	first.set(func(f *fakeWorker) { f.peer = last2 })
	h.r.SetStages([]router.StageAddr{{Addr: first.addr()}, middle, {Addr: last2.addr()}})
	after, finish, _ := readStream(t, s, -1)
	require.NoError(t, s.Err())
	assert.Equal(t, "length", finish)
	assert.Equal(t, expectedText("deep", 6, 8), strings.Join(append(before, after...), ""))
	sub := first.submitted()
	require.Len(t, sub, 2, "the surviving first stage gets the resubmission")
	assert.Equal(t, 3, sub[1].ResumeFrom)
	assert.Equal(t, []string{first.addr(), middle.Addr, last.addr()}, sub[0].Route, "steps go along the router's pipeline")
	assert.Equal(t, []string{first.addr(), middle.Addr, last2.addr()}, sub[1].Route, "the resubmission along the new one")
}

func TestCloseFailsOpenRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, router.Options{}) // no stages: the request waits
	errc := make(chan error, 1)
	go func() {
		_, err := h.client.Completions.New(context.Background(), params("late", 4, 1))
		errc <- err
	}()
	wait(t, "waiting", func() bool { return h.r.Status().Waiting == 1 })
	require.NoError(t, h.r.Close())
	var apiErr *openai.Error
	require.ErrorAs(t, <-errc, &apiErr)
	assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	assert.Equal(t, "shutting_down", apiErr.Code)
}

// A stream that waits longer than KeepAlive (a paused request, a slow first token) gets
// keep-alive comments in between; the official client must read through them.
func TestKeepAlivesDoNotBreakTheOfficialClient(t *testing.T) {
	t.Parallel()
	w := startFake(t, "first+last")
	w.set(func(f *fakeWorker) { f.hold, f.release = 2, make(chan struct{}) })
	h := newHarness(t, router.Options{KeepAlive: 20 * time.Millisecond}, w)
	s := h.client.Completions.NewStreaming(context.Background(), params("wait", 6, 1))
	first, _, _ := readStream(t, s, 2)
	require.Len(t, first, 2)
	time.Sleep(150 * time.Millisecond) // several keep-alive intervals with nothing to send
	w.set(func(f *fakeWorker) { close(f.release) })
	rest, finish, _ := readStream(t, s, -1)
	require.NoError(t, s.Err(), "keep-alive comments are not events")
	assert.Equal(t, expectedText("wait", 1, 6), strings.Join(append(first, rest...), ""))
	assert.Equal(t, "length", finish)
}
