//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/examples"
	"github.com/schooner-ml/schooner/report"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

type demoFlags struct {
	demoCommonFlags
	store string
}

func newDemoCommand(g *globals) *cobra.Command {
	f := &demoFlags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a spot training job end to end on an embedded Temporal server and a simulated spot market",
		Long: `demo starts everything in this process: a Temporal server (and its UI unless --headless),
the simulated spot market replaying real AWS spot traces, the control worker and one node
agent per simulated instance. It submits examples/demo.yaml and follows it.

To make sure the job meets preemptions and replans to a different plan, the demo injects
faults on top of the traces, and says which preemptions it injected:
  at 25% of the iterations  an injected preemption WITH a notice of one training instance
                            (the trainers take an emergency checkpoint)
  at 55% of the iterations  the zone of another instance is drained (no spot capacity left
                            there) and that instance is preempted WITHOUT notice, so the
                            replan must use other offerings
Market preemptions from the traces come on top. --trace DIR replays a SkyPilot spot-traces
directory of your own (files <zone>_<gpu>_<count>.json) instead of the bundled traces.

At the end it prints a summary (cost against the job on its best on-demand plan, and against
the same machines at on-demand prices; goodput, time lost to preemptions, checkpoints, plan
history), checks the final checkpoint bit for bit against an
uninterrupted run, lists any instance still tagged with the job, and writes demo-report.md and
demo-timeline.svg into --out, with the simulated market's bill, a JSON line per machine that
ran (demo-usage.jsonl). The exit status is non-zero if the job did not complete, the
state is not verified or an instance leaked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// the progress view tells the story; --log-level info for more
			return runDemoCommand(cmd, g, "warn", f.asJSON, func(ctx context.Context, log zerolog.Logger, progress io.Writer) (report.Summary, error) {
				return runDemo(ctx, f, log, progress)
			}, func(sum report.Summary) bool { return sum.JobID != "" })
		},
	}
	fs := cmd.Flags()
	f.addDemoFlags(fs, demoFlagDefaults{
		dataDirHelp:  "directory for the Temporal database and the checkpoint store (default: a temporary directory, removed at the end)",
		outDir:       "schooner-demo",
		outHelp:      "where to write demo-report.md, demo-timeline.svg and the market's bill (demo-usage.jsonl)",
		specHelp:     "run this job spec instead of the bundled examples/demo.yaml",
		noFaultsHelp: "inject no faults: only the market's own preemptions",
		timeScale:    60,
		seed:         1,
		timeout:      5 * time.Minute,
		timeoutHelp:  "give up (and cancel the job) after this much wall time",
	})
	fs.StringVar(&f.store, "store", "", "checkpoint store URL (default file://<data-dir>/store; s3://bucket/prefix?endpoint=... for S3)")
	return cmd
}

// demoSpec is the bundled demo job (or --spec), with the checkpoint store pointed at store.
func demoSpec(f *demoFlags, store string, errOut io.Writer) (training.Spec, error) {
	var spec training.Spec
	var err error
	if f.specPath != "" {
		if spec, err = loadSpec(f.specPath, errOut); err != nil {
			return spec, err
		}
	} else if spec, err = training.ParseSpec(examples.DemoYAML, training.FormatYAML); err != nil {
		return spec, fmt.Errorf("reading the bundled demo spec: %w", err)
	}
	spec = spec.WithDefaults()
	spec.Checkpoint.Store = store
	return spec, spec.Validate()
}

func runDemo(ctx context.Context, f *demoFlags, log zerolog.Logger, out io.Writer) (report.Summary, error) {
	began := time.Now()
	o := f.stack
	if err := f.check(); err != nil {
		return report.Summary{}, err
	}
	cleanup, err := demoDataDir(&o, "schooner-demo-")
	if err != nil {
		return report.Summary{}, err
	}
	defer cleanup()
	store, err := demoStoreURL(o.DataDir, f.store)
	if err != nil {
		return report.Summary{}, err
	}
	spec, err := demoSpec(f, store, out)
	if err != nil {
		return report.Summary{}, err
	}
	usagePath := filepath.Join(f.outDir, "demo-usage.jsonl")
	usage := useUsageReport(&o, usagePath)
	defer usage.Close() // after the stack stops (deferred below)
	s, err := startDemoStack(ctx, o, log, out, "schooner demo")
	if err != nil {
		return report.Summary{}, err
	}
	defer stopWithin(s, 15*time.Second, log)
	traces := "the bundled real AWS spot traces"
	if o.TraceDir != "" {
		traces = "the spot traces of " + o.TraceDir
	}
	fmt.Fprintf(out, "\n  simulated market: %s, %gx wall time; checkpoints in %s\n", traces, o.TimeScale, store)

	jobCtx, stopJob := context.WithTimeout(ctx, f.timeout)
	defer stopJob()
	id, err := s.Jobs.Submit(jobCtx, spec, trainingclient.SubmitOptions{})
	if err != nil {
		return report.Summary{}, err
	}
	fmt.Fprintf(out, "  job %s: %d iterations of %s, checkpoint every %d\n", id, spec.Iterations, trainingclient.ModelName(spec.Model), spec.Checkpoint.Every)
	fmt.Fprintf(out, "  follow it with: temporal --address %s workflow query --workflow-id %s --type status\n\n", s.Server.Address(), id)

	faults := &faultSchedule{market: s.Market, jobs: s.Jobs, jobID: id, out: out, log: log}
	if !f.noFaults {
		faults.steps = defaultFaults()
	}
	faultsDone := make(chan struct{})
	go func() { defer close(faultsDone); faults.run(jobCtx) }()

	st, werr := watchJob(jobCtx, s.Jobs, id, out, time.Second)
	if werr != nil && errors.Is(jobCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		// The demo's own wall-clock limit, not the job's deadline: say which.
		werr = fmt.Errorf("the demo's --timeout of %s (wall time) ran out before the job finished", f.timeout)
	}
	stopJob()
	<-faultsDone
	if werr != nil {
		log.Error().Err(werr).Str("job", id).Msg("the job did not finish; cancelling it")
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if cst, err := s.Jobs.Cancel(cctx, id, time.Minute); err == nil {
			st = cst
		}
		cancel()
	}
	facts := report.Facts{Wall: time.Since(began), TimeScale: o.TimeScale, InjectedPreemptions: faults.injected}
	vctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	facts.LeakedInstances, err = leakedInstances(vctx, s.Market, id)
	if err != nil {
		return report.Summary{}, err
	}
	facts.BilledUSD = s.Market.CostUSD(id)
	if verr := verifyFinalState(vctx, spec, st); verr != nil {
		facts.VerifyError = verr.Error()
	} else {
		facts.StateVerified = true
	}
	if st.JobID == "" {
		st.JobID = id
	}
	sum := report.Summarize(st, facts)
	files, err := report.Write(f.outDir, "demo", sum, st)
	if err != nil {
		return sum, err
	}
	printDemoSummary(out, sum, files)
	printUsageReport(out, usage, s.Market.UsageErrors())
	switch {
	case werr != nil:
		return sum, fmt.Errorf("demo job %s: %w", id, werr)
	case st.Phase != training.PhaseCompleted:
		return sum, fmt.Errorf("demo job %s ended %s: %s", id, st.Phase, st.Error)
	case !sum.StateVerified:
		return sum, fmt.Errorf("demo job %s: final state not verified: %s", id, sum.VerifyError)
	case sum.LeakedInstances > 0:
		return sum, fmt.Errorf("demo job %s: %d instances still running after the job", id, sum.LeakedInstances)
	}
	return sum, nil
}

// demoSDKLogger keeps the SDK quiet below debug: it logs every trainer a replan cancels as an
// activity error, and in the demo that is the expected path.
func demoSDKLogger(log zerolog.Logger) *workers.TemporalLogger {
	if log.GetLevel() <= zerolog.DebugLevel {
		return workers.NewTemporalLogger(log.With().Str("component", "temporal-sdk").Logger())
	}
	return workers.NewTemporalLogger(log.Level(zerolog.Disabled))
}

// portFree says whether port can be listened on now.
func portFree(ip string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// addDemoCommand adds `schooner demo`, which links the embedded server (left out of
// agentonly builds, see demo_agentonly.go).
func addDemoCommand(root *cobra.Command, g *globals) {
	root.AddCommand(withDemoServe(newDemoCommand(g), g))
}
