//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/devserver/stack"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/report"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
	"github.com/schooner-ml/schooner/serving/stage"
	"github.com/schooner-ml/schooner/workers/servingclient"
)

type demoServeFlags struct {
	demoCommonFlags
	load           loadOptions
	refConcurrency int
	bootTime       time.Duration
	notice         time.Duration
	pollInterval   time.Duration
	listen         string
	policy         string
}

// withDemoServe adds `schooner demo serve` under the training demo's command.
func withDemoServe(demo *cobra.Command, g *globals) *cobra.Command {
	demo.AddCommand(newDemoServeCommand(g))
	return demo
}

func newDemoServeCommand(g *globals) *cobra.Command {
	f := &demoServeFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve an LLM on spot machines that get preempted, under load, and check no client notices",
		Long: `demo serve starts everything in this process (a Temporal server, the simulated spot
market, the control worker and one node agent per simulated machine), deploys the tiny
built-in model in two pipeline stages (the spec of examples/serve-tiny.yaml; --spec for
another) and runs the OpenAI-compatible router in-process, following the deployment. The
inference workers are real: one Python process per stage (python3 with torch, on CPU).

Then, with the official OpenAI Go client:
  1. reference  every request of the load's schedule is streamed once against the healthy
                deployment (--ref-concurrency at a time): the failure-free answer. The
                model is deterministic: token k depends only on the model seed, the prompt,
                the temperature, the request's seed and k.
  2. load       the same requests again, streamed at Poisson arrival times (--rate per
                second for --duration), while faults are injected:
                  at 25% of --duration  the LAST stage's machine is preempted WITHOUT notice
                                        (it just dies) as soon as a request is mid-generation
                  at 60% of --duration  (and once the deployment serves again) the FIRST
                                        stage's machine gets a preemption NOTICE (--notice
                                        ahead), again while a request is mid-generation; the
                                        deployment brings a replacement up before the
                                        deadline and switches to it
                Requests are a fixed seeded mix: prompts from a list of 12, max_tokens
                uniform in [--min-tokens, --max-tokens], half at temperature 0 and half at
                temperature 0.8 with a seed of their own.
  3. verify     every load response must equal its reference text exactly (streams against
                streams: the byte-level tokenizer decodes chunk by chunk).

The simulated market runs --time-scale simulated seconds per wall second; machines boot in
--boot-time and a notice comes --notice before the preemption (both simulated), so with the
defaults (20x, 10 s, 2 min) a machine boots in 0.5 s of wall time and a notice gives 6 s: a
replacement comes up within the notice. The deployment polls its machines every
--poll-interval (wall) to catch a loss without notice.

At the end the deployment is stopped and the market is checked for machines still tagged
with it. The summary gives end-to-end latency and time to first token (p50/p99), per fault
the failover time from the loss (or notice) to the replacement's stage-ready (the
deployment's failover records), the longest pause between tokens clients saw around it and
the requests it hit, and the cost against the same machines on on-demand. It writes
demo-serve-report.md and demo-serve-timeline.svg into --out. The exit status is non-zero if
any request failed, any response differs from its reference, a fault was not recovered, the
deployment did not stop or a machine leaked.`,
		Example: `  schooner demo serve                          # 4 req/s for 60 s
  schooner demo serve --rate 2 --duration 20s  # a short run
  schooner demo serve --json > summary.json    # progress on stderr`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// the progress lines tell the story; --log-level info for more
			return runDemoCommand(cmd, g, "error", f.asJSON, func(ctx context.Context, log zerolog.Logger, progress io.Writer) (report.ServeSummary, error) {
				return runDemoServe(ctx, f, log, progress)
			}, func(sum report.ServeSummary) bool { return sum.Deployment != "" })
		},
	}
	fs := cmd.Flags()
	f.addDemoFlags(fs, demoFlagDefaults{
		dataDirHelp:  "directory for the Temporal database and the nodes' files (default: a temporary directory, removed at the end)",
		outDir:       "schooner-demo-serve",
		outHelp:      "where to write demo-serve-report.md, demo-serve-timeline.svg and demo-serve-usage.jsonl (the market's bill, a line per machine)",
		specHelp:     "deploy this serving spec instead of the built-in one (examples/serve-tiny.yaml's)",
		noFaultsHelp: "inject no faults: the load only",
		timeScale:    20,
		seed:         3,
		timeout:      10 * time.Minute,
		timeoutHelp:  "give up after this much wall time",
	})
	_ = fs.MarkHidden("limits") // training job limits: no training job here
	_ = fs.MarkHidden("store-root")
	fs.Float64Var(&f.load.Rate, "rate", 4, "requests per second of the Poisson load")
	fs.DurationVar(&f.load.Duration, "duration", 60*time.Second, "how long the load sends requests")
	fs.Int64Var(&f.load.Seed, "load-seed", 1, "seed of the schedule: arrival times, prompts, max_tokens, temperatures and request seeds")
	fs.IntVar(&f.load.MinTokens, "min-tokens", 32, "least max_tokens of a request")
	fs.IntVar(&f.load.MaxTokens, "max-tokens", 128, "most max_tokens of a request")
	fs.IntVar(&f.refConcurrency, "ref-concurrency", 8, "reference requests streamed at once")
	fs.DurationVar(&f.bootTime, "boot-time", 10*time.Second, "simulated boot time of a machine")
	fs.DurationVar(&f.notice, "notice", 2*time.Minute, "simulated time between a preemption notice and the preemption")
	fs.DurationVar(&f.pollInterval, "poll-interval", time.Second, "how often (wall) the deployment describes its machines to catch a loss without notice")
	fs.StringVar(&f.policy, "policy", policySpotAware, "how the deployment uses spot: "+policySpotAware+" (the spec's spot policy, notices migrate stages, stages on on-demand fallback return to spot), "+
		policyRestartOnly+" (spot only, notices ignored, no KV replication: a lost stage is restarted, the baseline), "+policyOnDemand+" (on-demand machines only)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "where the router serves the OpenAI API during the demo (curl it if you like)")
	return cmd
}

// demoServeSpec is examples/serve-tiny.yaml's deployment, or --spec.
func demoServeSpec(f *demoServeFlags, errOut io.Writer) (serving.Spec, error) {
	if f.specPath != "" {
		return loadServingSpec(f.specPath, errOut)
	}
	spec := serving.Spec{Name: "tiny-chat", Model: serving.Model{Name: "tiny", Seed: 7}, Stages: 2, Replicas: 1,
		Resources: fleet.Resources{Clouds: []string{"aws"}, GPUTypes: []string{"V100-16"}}, Spot: fleet.SpotWithFallback,
		MaxBatch: 16, MaxContext: 2048, KVReplication: serving.ReplicationOn,
		Latency: serving.Latency{TTFTMillis: 500, TPOTMillis: 50}, Queue: 128}.WithDefaults()
	return spec, spec.Validate()
}

func (f *demoServeFlags) check() error {
	if err := f.demoCommonFlags.check(); err != nil {
		return err
	}
	if err := f.load.check(); err != nil {
		return err
	}
	if !slices.Contains(policy.ServePolicies, f.policy) {
		return fmt.Errorf("invalid --policy %q: one of %s", f.policy, strings.Join(policy.ServePolicies, ", "))
	}
	if f.refConcurrency < 1 {
		return fmt.Errorf("invalid --ref-concurrency %d: must be at least 1", f.refConcurrency)
	}
	return nil
}

// serveDemo is the running demo: the stack, the deployment, the router and its client.
type serveDemo struct {
	stack  *stack.Stack
	sc     *servingclient.Client
	id     string
	spec   serving.Spec
	router *router.Pool
	client openai.Client
	out    io.Writer // progress lines: several goroutines write them, one line at a time
	log    zerolog.Logger
}

func runDemoServe(ctx context.Context, f *demoServeFlags, log zerolog.Logger, out io.Writer) (report.ServeSummary, error) {
	began := time.Now()
	if err := f.check(); err != nil {
		return report.ServeSummary{}, err
	}
	spec, err := demoServeSpec(f, out)
	if err != nil {
		return report.ServeSummary{}, err
	}
	// The simulated nodes start real inference workers: find them before starting anything
	// (a stage that cannot start is replaced over and over, which says nothing).
	python, err := stage.FindPython()
	if err != nil {
		return report.ServeSummary{}, fmt.Errorf("the inference worker needs python3 with torch: %w", err)
	}
	pyPath, err := stage.FindPythonPath()
	if err != nil {
		return report.ServeSummary{}, err
	}
	o := f.stack
	cleanup, err := demoDataDir(&o, "schooner-demo-serve-")
	if err != nil {
		return report.ServeSummary{}, err
	}
	defer cleanup()
	fast := sim.ProviderParams{BootTime: f.bootTime, NoticePeriod: f.notice}
	o.Params = map[string]sim.ProviderParams{"aws": fast, "gcp": fast}
	usagePath := filepath.Join(f.outDir, "demo-serve-usage.jsonl")
	usage := useUsageReport(&o, usagePath)
	defer usage.Close() // after the stack stops (deferred below)
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	s, err := startDemoStack(ctx, o, log, out, "schooner demo serve")
	if err != nil {
		return report.ServeSummary{}, err
	}
	defer stopWithin(s, 15*time.Second, log)
	fmt.Fprintf(out, "\n  simulated market: %gx wall time, boot %s, notice %s (%.1f s and %.1f s of wall time)\n",
		o.TimeScale, f.bootTime, f.notice, f.bootTime.Seconds()/o.TimeScale, f.notice.Seconds()/o.TimeScale)

	d := &serveDemo{stack: s, sc: servingclient.New(s.Client), spec: spec, out: zerolog.SyncWriter(out), log: log}
	opts := serving.DeployOptions{PollInterval: f.pollInterval}
	applyServePolicy(f.policy, &spec, &opts)
	d.id, err = d.sc.Deploy(ctx, spec, servingclient.DeployOptions{Options: opts})
	if err != nil {
		return report.ServeSummary{}, err
	}
	stopped := false
	var final serving.Status
	stopDeployment := func() error {
		if stopped {
			return nil
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		final, err = d.sc.Stop(sctx, d.id, "demo done")
		return err
	}
	defer func() { _ = stopDeployment() }() // on early returns too
	fmt.Fprintf(out, "  inference workers: %s -m %s from %s\n", python, stage.WorkerModule, pyPath)
	fmt.Fprintf(out, "  deployment %s: %s in %d stages (%s), policy %s: spot %s, KV replication %s\n", d.id, spec.ModelID(), spec.Stages,
		nonEmptyStr(f.specPath, "the spec of examples/serve-tiny.yaml"), f.policy, spec.Spot, spec.KVReplication)

	srvURL, closeRouter, err := d.startRouter(ctx, f.listen)
	if err != nil {
		return report.ServeSummary{}, err
	}
	defer closeRouter()
	fmt.Fprintf(out, "  router: %s/v1 (OpenAI API, model %q), following the deployment\n", srvURL, spec.ModelID())
	if err := d.waitServing(ctx, 5*time.Minute); err != nil {
		return report.ServeSummary{}, err
	}

	sched := f.load.schedule()
	fmt.Fprintf(out, "\n[1/3] reference: %d requests against the healthy deployment, %d at a time\n", len(sched), f.refConcurrency)
	refs, refErrs := d.runReference(ctx, sched, f.refConcurrency)
	if ctx.Err() != nil {
		return report.ServeSummary{}, ctx.Err()
	}

	var plan []faultPlan
	if !f.noFaults {
		plan = defaultServeFaults(spec.Stages)
	}
	fmt.Fprintf(out, "\n[2/3] load: %d requests at %g/s (Poisson) for %s, %d faults\n", len(sched), f.load.Rate, f.load.Duration, len(plan))
	run := d.runLoad(ctx, sched, refs, plan, f.load.Duration)
	if ctx.Err() != nil {
		return report.ServeSummary{}, ctx.Err()
	}

	fmt.Fprintf(out, "\n[3/3] verify and stop\n")
	d.awaitFailovers(ctx, run.faults, 90*time.Second)
	counters := d.router.Status().Counters
	if err := stopDeployment(); err != nil {
		return report.ServeSummary{}, err
	}
	facts := report.ServeFacts{Deployment: d.id, Model: spec.ModelID(), Stages: spec.Stages, Policy: f.policy, Rate: f.load.Rate,
		Duration: f.load.Duration, TimeScale: o.TimeScale, LoadStart: run.start, Requests: run.requests,
		Faults: run.faults, PlannedFaults: run.planned, ReferenceErrors: refErrs, Final: final, Counters: counters}
	lctx, lcancel := context.WithTimeout(context.Background(), time.Minute)
	defer lcancel()
	leaked, err := leakedInstances(lctx, s.Market, d.id)
	if err != nil {
		return report.ServeSummary{}, err
	}
	facts.LeakedInstances = max(leaked, final.LeakedInstances)
	facts.Wall = time.Since(began)
	sum := report.SummarizeServing(facts)
	files, err := report.WriteServing(f.outDir, "demo-serve", sum, facts)
	if err != nil {
		return sum, err
	}
	printServeSummary(out, sum, files)
	printUsageReport(out, usage, s.Market.UsageErrors())
	if !sum.OK {
		return sum, fmt.Errorf("demo serve: %s", strings.Join(sum.Problems, "; "))
	}
	return sum, nil
}

func nonEmptyStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// startRouter serves a router for the deployment on listen, kept pointed at the deployment's
// ready stages, and connects the OpenAI client to it.
func (d *serveDemo) startRouter(ctx context.Context, listen string) (string, func(), error) {
	r, err := router.NewPool(router.Options{Model: d.spec.ModelID(), Deployment: d.id, ContextLength: d.spec.MaxContext,
		MaxQueue: d.spec.Queue})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		_ = r.Close()
		return "", nil, fmt.Errorf("router: %w", err)
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error().Err(err).Msg("router stopped")
		}
	}()
	fctx, stopFollow := context.WithCancel(context.WithoutCancel(ctx))
	followed := make(chan struct{})
	go func() { defer close(followed); d.sc.Follow(fctx, d.id, r, 200*time.Millisecond) }()
	d.router = r
	url := "http://" + ln.Addr().String()
	d.client = openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	return url, func() {
		stopFollow()
		<-followed
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(cctx)
		_ = r.Close()
	}, nil
}

// waitServing waits for the deployment's serving phase and the router's readiness, printing
// phase changes.
func (d *serveDemo) waitServing(ctx context.Context, limit time.Duration) error {
	began := time.Now()
	last := ""
	for {
		st, err := d.sc.Status(ctx, d.id)
		if err == nil && st.Phase != last {
			last = st.Phase
			fmt.Fprintf(d.out, "  %5.1f s  deployment %s\n", time.Since(began).Seconds(), st.Phase)
		}
		if err == nil && st.Phase == serving.PhaseServing && d.router.Status().Ready {
			for _, sg := range st.Stages {
				fmt.Fprintf(d.out, "           stage %d (layers %v) on %s in %s (%s)\n", sg.Stage, sg.Layers, sg.InstanceID, sg.Zone, sg.Capacity)
			}
			return nil
		}
		if err == nil && st.Phase == serving.PhaseFailed {
			return fmt.Errorf("deployment %s failed: %s", d.id, st.Error)
		}
		if time.Since(began) > limit {
			return fmt.Errorf("deployment %s not serving after %s (phase %q)", d.id, limit, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// printServeSummary is the human end of the demo.
func printServeSummary(out io.Writer, s report.ServeSummary, files report.Files) {
	fmt.Fprintf(out, "\n%s\n", strings.Repeat("─", 72))
	verdict := "OK: every response equals its failure-free reference"
	if !s.OK {
		verdict = "FAILED: " + strings.Join(s.Problems, "; ")
	}
	fmt.Fprintf(out, "deployment %s: %s\n", s.Deployment, verdict)
	fmt.Fprintf(out, "  requests       %d at %g/s for %.0f s: %d succeeded, %d failed, %d equal their reference, %d differ (%d tokens)\n",
		s.Requests, s.Rate, s.DurationS, s.Succeeded, s.Failed, s.Matched, s.Differing, s.Tokens)
	fmt.Fprintf(out, "  latency        end to end p50 %.0f ms, p99 %.0f ms (max %.0f ms)\n", s.Latency.P50, s.Latency.P99, s.Latency.Max)
	fmt.Fprintf(out, "  first token    p50 %.0f ms, p99 %.0f ms (max %.0f ms)\n", s.TTFT.P50, s.TTFT.P99, s.TTFT.Max)
	fmt.Fprintf(out, "  token gaps     p50 %.1f ms, p99 %.1f ms in requests no fault hit\n", s.UnhitGap.P50, s.UnhitGap.P99)
	for i, f := range s.Faults {
		fo := "NO failover recorded"
		if f.Recorded {
			fo = fmt.Sprintf("failover %.2f s (stage down %.2f s, injection → ready %.2f s)", f.FailoverSeconds, f.DowntimeSeconds, f.InjectedToReadySeconds)
		}
		fmt.Fprintf(out, "  fault %d        at %.1f s stage %d preempted %s (%s → %s): %s; %d requests hit, longest pause %.0f ms\n",
			i+1, f.AtSeconds, f.Stage, report.NoticeWord(f.Notice), f.From, nonEmptyStr(f.To, "?"), fo, f.RequestsHit, f.MaxPauseMs)
	}
	fmt.Fprintf(out, "  router         %d pauses, %d resumes, %d re-prefills, %d gap tokens\n", s.Pauses, s.Resumes, s.Reprefills, s.GapTokens)
	fmt.Fprintf(out, "  market         %d preemptions, %d notices, %d failovers, %d stages back on spot after an on-demand fallback\n",
		s.Preemptions, s.Notices, s.Failovers, s.SpotReturns)
	fmt.Fprintf(out, "  cost           $%.4f (policy %s) vs $%.4f for the same machines on demand (%.1f%% saved, simulated hours)\n",
		s.CostUSD, s.PolicyName(), s.OnDemandCostUSD, s.SavingsPct)
	fmt.Fprintf(out, "  stopped        %s, %d instances left running\n", s.FinalPhase, s.LeakedInstances)
	fmt.Fprintf(out, "  report         %s\n                 %s\n", files.Markdown, files.Timeline)
}
