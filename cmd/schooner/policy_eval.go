package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/internal/atomicfile"
	"github.com/schooner-ml/schooner/internal/specfile"
	"github.com/schooner-ml/schooner/planner/bridge"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/training"
)

// policyEvalFlags are the inputs of `schooner policy eval`.
type policyEvalFlags struct {
	trace       string
	spec        string
	model       string
	dims        bridge.ModelRef // a spec's model given by its dimensions
	globalBatch int
	iterations  int64
	maxGPUs     int
	every       int64
	zones       []string
	types       []string
	starts      int
	deadlines   []string
	restart     time.Duration
	noNotice    bool
	policies    []string
	profiles    string
	asJSON      bool
	out         string
}

func newPolicyEvalCommand() *cobra.Command {
	var f policyEvalFlags
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Simulate every spot policy from many start times and deadlines on a trace",
		Long: `eval runs a training job under every spot policy, starting at --starts times spread over the
trace, with each deadline of --deadlines, and prints for each policy and deadline the cost
relative to the job's best on-demand plan for that deadline (median and 90th percentile) and
the share of runs that met the deadline. A run still unfinished at 4x its deadline missed it,
and its bill is left out of the cost (it paid for a job it did not do).

The job comes from a training spec (--spec: model (built-in or by its dimensions),
global_batch, seq_len, iterations, max_gpus, zones, checkpoint.every; checked as train submit
checks it, except that checkpoint.store may be left out: the simulator keeps no checkpoints) or
from the flags. Deadlines are multiples of the job's spot-only duration
(its largest plan in one zone, nothing lost), "1.5x", or durations from the start, "24h".

The trace directory holds one file per zone, <zone>_<gpu>_<count>.json, as in
github.com/skypilot-org/spot-traces; files of GPUs the catalog has no instance type for (K80)
are left out and named. The simulator plans one machine shape: a directory with traces of
several (v100_1 and v100_8 files: p3.2xlarge and p3.16xlarge) needs --instance-type, or the
spec's resources.instance_types. Without --trace the traces bundled with schooner are used.

How it models a run: a change of machines pauses training for --restart when it buys a
machine (its boot, the cloud's 2 minutes on AWS, unbilled, then the relaunch and restore) and
for --restart less the boot when only survivors relaunch; a preemption loses nothing, as the
job checkpoints on the cloud's notice (--no-notice-save: back to the last periodic
checkpoint). What it leaves out: capacity changes only at the trace's ticks; spot prices are
the catalog's typical ones, fixed.

  schooner policy eval
  schooner policy eval --trace DIR --spec examples/demo.yaml --iterations 6000
  schooner policy eval --trace DIR --zones us-west-2a --deadlines 1.2x,24h --json --out runs.json
  schooner policy eval --trace DIR --instance-type p3.16xlarge --max-gpus 16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPolicyEval(cmd, &f) },
	}
	fs := cmd.Flags()
	addPolicyJobFlags(fs, &f)
	fs.IntVar(&f.starts, "starts", 50, "start times, spread evenly over the trace")
	fs.StringSliceVar(&f.deadlines, "deadlines", []string{"1.2x", "1.5x", "2x"}, "deadlines: multiples of the spot-only duration (1.5x) or durations (24h)")
	fs.StringSliceVar(&f.policies, "policies", nil, "only these policies (default: all; see the table's names)")
	fs.BoolVar(&f.asJSON, "json", false, "print the result (summaries and every run) as JSON")
	fs.StringVar(&f.out, "out", "", "also write the result as JSON to this file")
	return cmd
}

// addPolicyJobFlags registers the flags that say which trace and which job the policy
// simulator runs (policy eval and policy explain alike).
func addPolicyJobFlags(fs *pflag.FlagSet, f *policyEvalFlags) {
	fs.StringVar(&f.trace, "trace", "", "spot-traces directory (default: the bundled "+sim.BundledTraceSet+" traces)")
	fs.StringVar(&f.spec, "spec", "", "training spec (YAML or JSON) to take the job from; flags given override it")
	fs.StringVar(&f.model, "model", "OPT-350", "built-in model")
	fs.IntVar(&f.globalBatch, "global-batch", 32, "samples per iteration")
	fs.Int64Var(&f.iterations, "iterations", 6000, "iterations of the job")
	fs.IntVar(&f.maxGPUs, "max-gpus", 8, "most GPUs the job holds at once")
	fs.Int64Var(&f.every, "checkpoint-every", 25, "iterations between checkpoints (with --no-notice-save a preemption redoes the rest)")
	fs.StringSliceVar(&f.zones, "zones", nil, "only these zones of the trace (default: all)")
	fs.StringSliceVar(&f.types, "instance-type", nil, "the instance type whose traces to replay, when the directory has several (the first of a list it has)")
	fs.DurationVar(&f.restart, "restart", policy.DefaultRestart, "training time lost whenever the held machines change (boot, restore)")
	fs.BoolVar(&f.noNotice, "no-notice-save", false, "the trainer does not checkpoint on a preemption notice: a preemption redoes the iterations since the last checkpoint")
	fs.StringVar(&f.profiles, "profiles", "", "directory of model and network profiles (empty: the built-in ones)")
}

// jobAndMarket reads the trace and the job the flags name, checked: the job's model must fit
// the trace's machines.
func (f *policyEvalFlags) jobAndMarket(cmd *cobra.Command) (policy.Job, *policy.Market, error) {
	if err := f.fromSpec(cmd); err != nil {
		return policy.Job{}, nil, err
	}
	market, err := loadPolicyMarket(f.trace, f.types, cmd)
	if err != nil {
		return policy.Job{}, nil, err
	}
	if market, err = market.Only(f.zones); err != nil {
		return policy.Job{}, nil, err
	}
	ref := bridge.ModelRef{Name: f.model}
	if f.dims.Layers > 0 {
		ref = f.dims
	}
	mp, nw, err := (&bridge.Models{Dir: f.profiles}).Profile(ref)
	if err != nil {
		return policy.Job{}, nil, err
	}
	tp := &policy.PlannerThroughput{Model: mp, Network: nw, GlobalBatch: f.globalBatch, Market: market}
	if err := tp.Check(f.maxGPUs); err != nil {
		return policy.Job{}, nil, err
	}
	job := policy.Job{Iterations: f.iterations, CheckpointEvery: f.every, MaxGPUs: f.maxGPUs, Restart: f.restart,
		IgnoresNotice: f.noNotice, Throughput: tp}
	return job, market, job.Validate()
}

func runPolicyEval(cmd *cobra.Command, f *policyEvalFlags) error {
	job, market, err := f.jobAndMarket(cmd)
	if err != nil {
		return err
	}
	makers, err := pickPolicies(f.policies)
	if err != nil {
		return err
	}
	factors, err := deadlineFactors(f.deadlines, policy.SpotOnlyDuration(job, market))
	if err != nil {
		return err
	}
	if f.starts <= 0 {
		return fmt.Errorf("--starts must be positive, got %d", f.starts)
	}
	progress := newProgress(cmd.ErrOrStderr(), f.asJSON)
	res, err := policy.Eval(job, market, policy.Grid{Policies: makers, Starts: f.starts, Deadlines: factors, Progress: progress})
	if err != nil {
		return err
	}
	if f.out != "" {
		if err := atomicfile.Write(f.out, func(w io.Writer) error { return printJSON(w, res) }); err != nil {
			return err
		}
	}
	if f.asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	printPolicyEval(cmd.OutOrStdout(), f, job, market, res)
	return nil
}

// fromSpec takes the job from --spec; flags the user set explicitly win.
func (f *policyEvalFlags) fromSpec(cmd *cobra.Command) error {
	if f.spec == "" {
		return nil
	}
	spec, err := loadSpecFile(f.spec, "training", parseSpecForPolicy, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	set := func(name string) bool { return cmd.Flags().Changed(name) }
	if !set("model") {
		m := spec.Model
		f.model = m.Name
		f.dims = bridge.ModelRef{Name: m.Name, Layers: m.Layers, Hidden: m.Hidden, Heads: m.Heads, FFN: m.FFN,
			Vocab: m.Vocab, SeqLen: spec.SeqLen}
	}
	if !set("global-batch") {
		f.globalBatch = spec.GlobalBatch
	}
	if !set("iterations") {
		f.iterations = spec.Iterations
	}
	if !set("max-gpus") && spec.Resources.MaxGPUs > 0 {
		f.maxGPUs = spec.Resources.MaxGPUs
	}
	if !set("checkpoint-every") {
		f.every = spec.Checkpoint.Every
	}
	if !set("zones") {
		f.zones = spec.Resources.Zones
	}
	if !set("instance-type") {
		f.types = spec.Resources.InstanceTypes
	}
	if f.model == "" {
		f.model = fmt.Sprintf("a model of %d layers, hidden %d", f.dims.Layers, f.dims.Hidden)
	}
	return nil
}

// policyEvalStore stands in for a spec's missing checkpoint.store: the policy simulator
// keeps no checkpoints (a preemption loses nothing past the notice's save), so a spec written
// only to be evaluated need not name a store, yet every other field is still checked as
// `train submit` checks it. It is never opened.
const policyEvalStore = "file:///policy-eval-keeps-no-checkpoints"

// parseSpecForPolicy parses a training spec for `policy eval`, filling a missing
// checkpoint.store with policyEvalStore.
func parseSpecForPolicy(data []byte, format specfile.Format) (training.Spec, error) {
	spec, err := training.ParseSpec(data, format)
	if err == nil && spec.Checkpoint.Store == "" {
		spec.Checkpoint.Store = policyEvalStore
	}
	return spec, err
}

// loadPolicyMarket reads a trace directory (of one of types, when given), or the bundled
// traces, naming skipped files.
func loadPolicyMarket(dir string, types []string, cmd *cobra.Command) (*policy.Market, error) {
	if dir == "" {
		traces, err := sim.BundledTraces()
		if err != nil {
			return nil, err
		}
		source := "bundled " + sim.BundledTraceSet
		if traces, err = policy.OneInstanceType(source, traces, types); err != nil {
			return nil, err
		}
		return policy.NewMarket(source, traces)
	}
	m, skipped, err := policy.LoadMarket(dir, types...)
	for _, s := range skipped {
		fmt.Fprintf(cmd.ErrOrStderr(), "left out %s\n", s)
	}
	return m, err
}

func pickPolicies(names []string) ([]policy.Maker, error) {
	all := policy.Makers()
	if len(names) == 0 {
		return all, nil
	}
	var out []policy.Maker
	for _, n := range names {
		found := false
		for _, mk := range all {
			if mk.Name == n {
				out, found = append(out, mk), true
			}
		}
		if !found {
			known := make([]string, len(all))
			for i, mk := range all {
				known[i] = mk.Name
			}
			return nil, fmt.Errorf("unknown policy %q: known are %s", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// deadlineFactors turns "1.5x" and "24h" into multiples of the spot-only duration.
func deadlineFactors(specs []string, spotOnly time.Duration) ([]float64, error) {
	var out []float64
	for _, s := range specs {
		s = strings.TrimSpace(s)
		if x, ok := strings.CutSuffix(s, "x"); ok {
			v, err := strconv.ParseFloat(x, 64)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("deadline %q: want a positive multiple such as 1.5x", s)
			}
			out = append(out, v)
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("deadline %q: want a multiple of the spot-only duration (1.5x) or a duration (24h)", s)
		}
		out = append(out, float64(d)/float64(spotOnly))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--deadlines is empty")
	}
	return out, nil
}
