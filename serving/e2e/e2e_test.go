package e2e

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving/router"
)

// bos + text, as schooner_serve.config.encode.
func prompt(text string) []int {
	out := []int{256}
	for i := 0; i < len(text); i++ {
		out = append(out, int(text[i]))
	}
	return out
}

// Greedy and seeded requests; "the quick brown fox jumps" at 0.8 stops on <eos> early.
var cases = []req{
	{Prompt: prompt("hello world"), MaxTokens: 24, Temperature: 0, Seed: 1},
	{Prompt: prompt("the quick brown fox jumps"), MaxTokens: 24, Temperature: 0.8, Seed: 11},
	{Prompt: prompt("abc"), MaxTokens: 16, Temperature: 0.8, Seed: 3},
}

// checkCompletions runs every case non-streaming and streaming, all at once, against the
// reference.
func checkCompletions(t *testing.T, f *front) {
	ref := reference(t, cases...)
	var wg sync.WaitGroup
	for i, q := range cases {
		wg.Add(2)
		go func() {
			defer wg.Done()
			toks, finish := f.complete(t, q)
			assert.Equal(t, ref[i], toks, "non-streaming %d", i)
			assert.Equal(t, finishOf(ref[i], q.MaxTokens), finish, "non-streaming %d", i)
		}()
		go func() {
			defer wg.Done()
			s := f.stream(t, q)
			s.read(t, -1)
			assert.Equal(t, ref[i], s.toks, "streaming %d", i)
			assert.Equal(t, finishOf(ref[i], q.MaxTokens), s.finish, "streaming %d", i)
		}()
	}
	wg.Wait()
}

// (a) one stage.
func TestOneStage(t *testing.T) {
	t.Parallel()
	_, holder := startHolder(t)
	w := startWorker(t, freePort(t), "--holder", holder)
	f := startRouter(t, router.Options{}, w)
	checkCompletions(t, f)
}

// (b) two stages: submits to stage 0, tokens from stage 1.
func TestTwoStages(t *testing.T) {
	t.Parallel()
	_, holder := startHolder(t)
	a0, a1 := freePort(t), freePort(t)
	w0 := startWorker(t, a0, "--stage", "0", "--depth", "2", "--layers", "0:2", "--next", a1, "--holder", holder)
	w1 := startWorker(t, a1, "--stage", "1", "--depth", "2", "--layers", "2:4", "--next", a0, "--holder", holder)
	f := startRouter(t, router.Options{}, w0, w1)
	checkCompletions(t, f)
}

// failover kills the last stage (kill -9) after `after` tokens of a stream arrived, starts a
// replacement on the same address and tells the router; the stream must go on to exactly the
// failure-free tokens.
func failover(t *testing.T, replicate string) *front {
	holderArgs := []string{"--replicate", replicate}
	if replicate == "on" {
		_, holder := startHolder(t)
		holderArgs = append(holderArgs, "--holder", holder)
	}
	a0, a1 := freePort(t), freePort(t)
	s1 := append([]string{"--stage", "1", "--depth", "2", "--layers", "2:4", "--next", a0}, holderArgs...)
	w0 := startWorker(t, a0, append([]string{"--stage", "0", "--depth", "2", "--layers", "0:2", "--next", a1}, holderArgs...)...)
	w1 := startWorker(t, a1, s1...)
	f := startRouter(t, router.Options{}, w0, w1)

	qs := []req{
		{Prompt: prompt("hello world"), MaxTokens: 300, Temperature: 0, Seed: 1},
		{Prompt: prompt("abc"), MaxTokens: 300, Temperature: 0.8, Seed: 3},
	}
	ref := reference(t, qs...)
	require.Len(t, ref[0], 300, "the reference of the stream cut must run to max_tokens")
	ss := []*stream{f.stream(t, qs[0]), f.stream(t, qs[1])}
	ss[0].read(t, 10)
	w1.kill()
	deadline(t, 10*time.Second, "the router to pause", func() bool { return f.r.Status().Paused > 0 })
	require.Less(t, len(ss[0].toks), 300, "killed mid-generation")

	startWorker(t, a1, s1...)
	f.r.SetStages([]router.StageAddr{{Addr: a0}, {Addr: a1}}) // the same addresses: reconnect now
	for i, s := range ss {
		s.read(t, -1)
		assert.Equal(t, ref[i], s.toks, "stream %d after the failover", i)
		assert.Equal(t, finishOf(ref[i], qs[i].MaxTokens), s.finish)
	}
	c := f.r.Status().Counters
	assert.GreaterOrEqual(t, c.Resumes, uint64(1))
	assert.Zero(t, c.GapTokens)
	return f
}

// (c) replication on: the replacement restores the KV cache from the holder (no re-prefill).
func TestFailoverRestoresFromTheHolder(t *testing.T) {
	t.Parallel()
	f := failover(t, "on")
	assert.Zero(t, f.r.Status().Counters.Reprefills, "restored, not recomputed")
}

// (d) replication off: the restore fails (restore_failed), the router resubmits with
// resume_mode reprefill, and the tokens are the same.
func TestFailoverWithoutReplicationReprefills(t *testing.T) {
	t.Parallel()
	f := failover(t, "off")
	assert.GreaterOrEqual(t, f.r.Status().Counters.Reprefills, uint64(1))
}

// (e) bad requests, a request the worker refuses, and a full queue, with a worker behind.
func TestBadRequestsAndFullQueue(t *testing.T) {
	t.Parallel()
	w := startWorker(t, freePort(t), "--kv-blocks", "4", "--block", "16") // 64 positions
	f := startRouter(t, router.Options{MaxQueue: 1, MaxRunning: 1, RetryAfter: time.Second}, w)
	ctx := context.Background()
	status := func(err error) int {
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		return apiErr.StatusCode
	}
	ok := req{Prompt: prompt("abc"), MaxTokens: 8, Temperature: 0, Seed: 1}

	bad := ok.params()
	bad.Model = "nope"
	_, err := f.client.Completions.New(ctx, bad)
	assert.Equal(t, http.StatusNotFound, status(err))
	bad = ok.params()
	bad.MaxTokens = openai.Int(0)
	_, err = f.client.Completions.New(ctx, bad)
	assert.Equal(t, http.StatusBadRequest, status(err))
	bad = ok.params()
	bad.Prompt = openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{1, vocab}}
	_, err = f.client.Completions.New(ctx, bad)
	assert.Equal(t, http.StatusBadRequest, status(err))
	bad = ok.params()
	bad.N = openai.Int(2)
	_, err = f.client.Completions.New(ctx, bad)
	assert.Equal(t, http.StatusBadRequest, status(err))

	// More positions than the worker's whole KV pool: the worker refuses, the client gets 400.
	_, err = f.client.Completions.New(ctx, req{Prompt: prompt("abc"), MaxTokens: 100, Temperature: 0}.params())
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	assert.Contains(t, apiErr.Message, "KV pool")

	// One running, one queued, the next is refused with 429; the first two still complete.
	long := req{Prompt: prompt("hello world"), MaxTokens: 48, Temperature: 0, Seed: 1}
	ref := reference(t, long, ok)
	s := f.stream(t, long)
	s.read(t, 1)
	s2 := f.stream(t, ok)
	deadline(t, 10*time.Second, "a queued request", func() bool { return f.r.Status().Waiting == 1 })
	_, err = f.client.Completions.New(ctx, ok.params())
	assert.Equal(t, http.StatusTooManyRequests, status(err))
	s.read(t, -1)
	s2.read(t, -1)
	assert.Equal(t, ref[0], s.toks)
	assert.Equal(t, ref[1], s2.toks)
	toks, _ := f.complete(t, ok)
	assert.Equal(t, ref[1], toks, "served once the queue has room")
}

// (f) prompt–token disaggregation: a prompt pool worker prefills each request and streams its
// prompt's KV cache to the holder, a token pool worker restores it from there and decodes; the
// client's tokens equal the failure-free reference's, nothing is recomputed, and every replica
// is dropped once its request ends.
func TestDisaggregatedPools(t *testing.T) {
	t.Parallel()
	h, holder := startHolder(t)
	wp := startWorker(t, freePort(t), "--holder", holder)
	wt := startWorker(t, freePort(t), "--holder", holder)
	base := router.Options{Model: modelID, Deployment: "default", Tokenizer: idTokens{}, VocabSize: vocab,
		ReconnectBackoff: 20 * time.Millisecond}
	prompts, err := router.New(base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = prompts.Close() })
	prompts.SetStages([]router.StageAddr{{Addr: wp.addr}})
	f := startRouter(t, router.Options{Prefill: prompts}, wt)

	checkCompletions(t, f)
	// max_tokens 1: the prompt pool's token 0 is the whole answer.
	one := req{Prompt: prompt("hello world"), MaxTokens: 1, Seed: 1}
	toks, finish := f.complete(t, one)
	assert.Equal(t, reference(t, one)[0], toks)
	assert.Equal(t, "length", finish)

	// Seven completions: every one prefilled by the prompt pool; all but the max_tokens 1 one
	// decoded by the token pool, from a restored prompt.
	assert.EqualValues(t, 7, prompts.Status().Counters.Completed)
	assert.EqualValues(t, 6, f.r.Status().Counters.Completed)
	assert.Zero(t, f.r.Status().Counters.Reprefills, "the token pool restored every prompt")
	end := time.Now().Add(10 * time.Second)
	for h.Stats().RequestsHeld > 0 && time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Zero(t, h.Stats().RequestsHeld, "replicas left on the holder")
}
