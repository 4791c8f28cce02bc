//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go"

	"github.com/schooner-ml/schooner/report"
)

// loadOptions shape the Poisson load of `schooner demo serve`.
type loadOptions struct {
	Rate                 float64
	Duration             time.Duration
	Seed                 int64
	MinTokens, MaxTokens int
}

func (o loadOptions) check() error {
	switch {
	case o.Rate <= 0:
		return fmt.Errorf("invalid --rate %v: must be positive", o.Rate)
	case o.Duration <= 0:
		return fmt.Errorf("invalid --duration %s: must be positive", o.Duration)
	case o.MinTokens < 1 || o.MaxTokens < o.MinTokens:
		return fmt.Errorf("invalid --min-tokens %d / --max-tokens %d: need 1 ≤ min ≤ max", o.MinTokens, o.MaxTokens)
	}
	return nil
}

// demoPrompts is the fixed list the load draws its prompts from.
var demoPrompts = []string{
	"the spot market giveth and taketh away",
	"Once upon a time, on a machine that could vanish at any moment,",
	"def fibonacci(n):",
	"Q: Why do pipelines need replicas?\nA:",
	"Translate to French: the cache survived the preemption.",
	"A haiku about GPUs:",
	"1, 1, 2, 3, 5, 8,",
	"The quick brown fox",
	"Dear diary, today my stage was preempted",
	"SELECT * FROM instances WHERE state = 'running'",
	"In the beginning was the token",
	"Summarize: KV caches streamed to the next stage's host memory let a replacement resume.",
}

// loadRequest is one request of the schedule.
type loadRequest struct {
	Index       int
	Prompt      int
	MaxTokens   int
	Temperature float64
	Seed        int64
	Due         time.Duration // after the start of the load
}

// schedule draws the load: Poisson arrivals at Rate for Duration, each request with a prompt
// of demoPrompts, max_tokens uniform in [MinTokens, MaxTokens], temperature 0 or 0.8 (half
// each) and a seed; the same Seed gives the same schedule.
func (o loadOptions) schedule() []loadRequest {
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x5c400e12))
	var out []loadRequest
	var t time.Duration
	for {
		t += time.Duration(rng.ExpFloat64() / o.Rate * float64(time.Second))
		if t >= o.Duration {
			return out
		}
		r := loadRequest{Index: len(out), Due: t, Prompt: rng.IntN(len(demoPrompts)),
			MaxTokens: o.MinTokens + rng.IntN(o.MaxTokens-o.MinTokens+1), Seed: rng.Int64N(1 << 31)}
		if rng.IntN(2) == 1 {
			r.Temperature = 0.8
		}
		out = append(out, r)
	}
}

// stream sends one streaming completion and records its chunks; onChunk gets the number of
// text chunks so far.
func (d *serveDemo) stream(ctx context.Context, r loadRequest, onChunk func(int)) report.ServeRequest {
	res := report.ServeRequest{Index: r.Index, Prompt: r.Prompt, MaxTokens: r.MaxTokens, Temperature: r.Temperature, Seed: r.Seed, Due: r.Due}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	res.Start = time.Now()
	s := d.client.Completions.NewStreaming(rctx, openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(d.spec.ModelID()),
		Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String(demoPrompts[r.Prompt])},
		MaxTokens:   openai.Int(int64(r.MaxTokens)),
		Temperature: openai.Float(r.Temperature), Seed: openai.Int(r.Seed)})
	defer s.Close()
	var b strings.Builder
	for s.Next() {
		text := ""
		for _, ch := range s.Current().Choices {
			text += ch.Text
		}
		if text == "" {
			continue
		}
		now := time.Now()
		if res.FirstToken.IsZero() {
			res.FirstToken = now
		}
		res.Chunks = append(res.Chunks, now)
		b.WriteString(text)
		if onChunk != nil {
			onChunk(len(res.Chunks))
		}
	}
	res.End = time.Now()
	res.Text = b.String()
	if err := s.Err(); err != nil {
		res.Error = err.Error()
	} else if len(res.Chunks) == 0 {
		res.Error = "no text streamed"
	}
	return res
}

// runReference streams every request of the schedule against the healthy deployment,
// concurrency at a time; it returns their texts and the number that failed.
func (d *serveDemo) runReference(ctx context.Context, sched []loadRequest, concurrency int) ([]string, int) {
	refs := make([]string, len(sched))
	var done, failed atomic.Int64
	began := time.Now()
	next := make(chan loadRequest)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				res := d.stream(ctx, r, nil)
				refs[r.Index] = res.Text
				if res.Error != "" {
					failed.Add(1)
					fmt.Fprintf(d.out, "  !! reference request %d failed: %s\n", r.Index, res.Error)
				}
				done.Add(1)
			}
		}()
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
feed:
	for _, r := range sched {
		for {
			select {
			case next <- r:
				continue feed
			case <-ctx.Done():
				break feed
			case <-tick.C:
				fmt.Fprintf(d.out, "  %5.1f s  reference %d/%d done\n", time.Since(began).Seconds(), done.Load(), len(sched))
			}
		}
	}
	close(next)
	wg.Wait()
	fmt.Fprintf(d.out, "  %5.1f s  reference %d/%d done, %d failed\n", time.Since(began).Seconds(), done.Load(), len(sched), failed.Load())
	return refs, int(failed.Load())
}

// loadState is what the progress lines and the fault injector read while the load runs.
type loadState struct {
	chunks                     []atomic.Int32
	running                    []atomic.Bool
	sent, done, failed, differ atomic.Int64
}

// midGeneration counts requests that have streamed some tokens and have some left.
func (l *loadState) midGeneration(sched []loadRequest) int {
	n := 0
	for i := range sched {
		c := int(l.chunks[i].Load())
		if l.running[i].Load() && c >= 4 && c <= sched[i].MaxTokens-8 {
			n++
		}
	}
	return n
}

// loadRun is the load's outcome.
type loadRun struct {
	start    time.Time
	requests []report.ServeRequest
	faults   []report.ServeFault
	planned  int
}

// runLoad sends the schedule at its due times, with the faults of plan injected alongside,
// and waits for every request to end.
func (d *serveDemo) runLoad(ctx context.Context, sched []loadRequest, refs []string, plan []faultPlan, dur time.Duration) loadRun {
	run := loadRun{requests: make([]report.ServeRequest, len(sched)), planned: len(plan)}
	st := &loadState{chunks: make([]atomic.Int32, len(sched)), running: make([]atomic.Bool, len(sched))}
	run.start = time.Now()
	fctx, stopFaults := context.WithCancel(ctx)
	faultsDone := make(chan []report.ServeFault, 1)
	go func() { faultsDone <- d.injectFaults(fctx, plan, run.start, dur, st, sched) }()
	pctx, stopProgress := context.WithCancel(ctx)
	progressDone := make(chan struct{})
	go func() { defer close(progressDone); d.loadProgress(pctx, run.start, st, len(sched)) }()

	var wg sync.WaitGroup
	for i, r := range sched {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(run.start.Add(r.Due))):
		}
		if ctx.Err() != nil {
			break
		}
		st.sent.Add(1)
		st.running[i].Store(true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := d.stream(ctx, r, func(n int) { st.chunks[i].Store(int32(n)) })
			res.Reference = refs[i]
			run.requests[i] = res
			st.running[i].Store(false)
			switch {
			case res.Error != "":
				st.failed.Add(1)
				fmt.Fprintf(d.out, "  !! request %d failed after %.1f s: %s\n", i, res.End.Sub(res.Start).Seconds(), res.Error)
			case res.Text != res.Reference:
				st.differ.Add(1)
				fmt.Fprintf(d.out, "  !! request %d differs from its reference: %q vs %q\n", i, clip(res.Text, 60), clip(res.Reference, 60))
			}
			st.done.Add(1)
		}()
	}
	wg.Wait()
	stopFaults()
	run.faults = <-faultsDone
	stopProgress()
	<-progressDone
	fmt.Fprintf(d.out, "  %5.1f s  load done: %d sent, %d failed, %d differ\n", time.Since(run.start).Seconds(), st.sent.Load(), st.failed.Load(), st.differ.Load())
	return run
}

// loadProgress prints a line every 2 s and each failover as the deployment records it.
func (d *serveDemo) loadProgress(ctx context.Context, start time.Time, st *loadState, total int) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	seen := -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rs := d.router.Status()
		phase, failovers := "?", 0
		if ds, err := d.sc.Status(ctx, d.id); err == nil {
			phase, failovers = ds.Phase, ds.Failovers
			if seen < 0 {
				seen = failovers
			}
			for _, fo := range ds.FailoverRecords[max(0, len(ds.FailoverRecords)-(failovers-seen)):] {
				fmt.Fprintf(d.out, "  << failover: stage %d %s → %s ready %.2f s after the %s (stage down %.2f s)\n",
					fo.Stage, fo.From, fo.To, fo.Seconds, map[bool]string{true: "notice", false: "loss was seen"}[fo.Notice], fo.DowntimeSeconds)
			}
			seen = failovers
		}
		inflight := st.sent.Load() - st.done.Load()
		fmt.Fprintf(d.out, "  %5.1f s  sent %d/%d, done %d, in flight %d (%d paused), failed %d, differ %d | deployment %s, %d failovers\n",
			time.Since(start).Seconds(), st.sent.Load(), total, st.done.Load(), inflight, rs.Paused, st.failed.Load(), st.differ.Load(), phase, failovers)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
