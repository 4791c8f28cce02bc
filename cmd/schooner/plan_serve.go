package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/bridge"
	"github.com/schooner-ml/schooner/planner/serve"
	"github.com/schooner-ml/schooner/serving"
)

// planServeFlags are the inputs of `schooner plan serve`.
type planServeFlags struct {
	cloud           cloudFlags
	offeringsPath   string
	model           string
	rate            float64
	prompt, output  int
	ttft, tpot      time.Duration
	gpus            []string
	regions, zones  []string
	spot            bool
	onDemandOnly    bool
	maxGPUs         int
	assumeInstances int
	top             int
	seed            uint64
	asJSON          bool
	// specPath is where --write-spec writes the plan --pick chooses (1-based).
	specPath string
	pick     int
}

func newPlanServeCommand(g *globals) *cobra.Command {
	_ = g // pure computation; nothing to log
	var f planServeFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Find the cheapest LLM serving configuration that meets latency targets",
		Long: `serve plans an LLM serving deployment: for a model, an arrival rate (requests/s, Poisson),
prompt and output lengths and p99 targets for time to first token (--ttft) and time per output
token (--tpot), it tries every GPU type and instance shape on offer, tensor parallelism inside a
machine, pipeline depth, replica counts, and prompt and token work colocated on one pool or
disaggregated into two (DéjàVu: the prompt pool streams the KV cache to the token pool), and
shows the cheapest configurations per hour that meet the targets, with where to buy them.

Every number is an estimate from datasheets, not a measurement: a roofline cost model (prefill
and decode steps from TFLOPS and memory bandwidth, KV cache and weights against GPU memory,
pipeline bubbles, stage-to-stage and KV transfers) prunes the search, and a seeded
discrete-event simulation of a few thousand requests checks the cheapest and gives the
percentiles shown. docs/serving.md ("Planning a deployment") states the assumptions.

Spot capacity is used only with --spot, and may be reclaimed. Offerings come from a JSON file
(--offerings, as for 'plan search') or a provider (--cloud sim|aws|gcp). Nothing is launched.

  # Llama 3 8B, 5 requests/s of 512-token prompts and 256-token answers, on the simulated market
  schooner plan serve --model llama-3-8b --rate 5 --prompt 512 --output 256 --spot

With --write-spec FILE ('-': stdout) the plan --pick chooses (the cheapest by default) is
written as a ServingDeployment spec that 'schooner serve deploy' takes unchanged: the model,
stages, replicas (and prefill_replicas for a disaggregated plan), the plan's GPU type, zones,
instance types and clouds, its spot policy, max batch and context, and the latency targets.
A spec runs each stage on a machine of its own, on one GPU, so the search then keeps to
one-GPU machines; a plan whose prompt and token pools differ in depth is refused (a spec's
pools share one 'stages'), and whatever the spec leaves to the deployment (zones per pool,
say) is printed and written into the file.

  # long prompts, short answers, tighter targets, A100s and H100s only, as JSON
  schooner plan serve --model llama-3-8b --rate 2 --prompt 6000 --output 64 --ttft 1.5s --tpot 50ms \
      --gpu A100-80 --gpu H100-80 --offerings offerings.json --json

  # plan, write the cheapest as a spec, deploy it
  schooner plan serve --model llama-8b --rate 4 --prompt 8192 --output 64 --spot --write-spec llama.yaml
  schooner serve deploy llama.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlanServe(cmd, &f) },
	}
	fs := cmd.Flags()
	addCloudFlags(fs, &f.cloud)
	fs.StringVar(&f.offeringsPath, "offerings", "", "JSON file: a list of cloud offerings or planner pools (instead of asking --cloud)")
	fs.StringVar(&f.model, "model", "", "model to serve: "+joinNames(serveModelNames()))
	fs.Float64Var(&f.rate, "rate", 0, "mean arrival rate, requests per second (Poisson)")
	fs.IntVar(&f.prompt, "prompt", 512, "prompt length, tokens")
	fs.IntVar(&f.output, "output", 256, "output length, tokens generated per request")
	fs.DurationVar(&f.ttft, "ttft", serve.DefaultTTFT, "p99 target for the time to the first token")
	fs.DurationVar(&f.tpot, "tpot", serve.DefaultTPOT, "p99 target for the time per output token after the first")
	fs.StringSliceVar(&f.gpus, "gpu", nil, "only these GPU types (repeatable or comma-separated, e.g. A100-80,H100-80)")
	fs.StringSliceVar(&f.regions, "region", nil, "only these regions")
	fs.StringSliceVar(&f.zones, "zone", nil, "only these zones")
	fs.BoolVar(&f.spot, "spot", false, "allow spot capacity (cheaper, may be reclaimed); on-demand otherwise")
	fs.BoolVar(&f.onDemandOnly, "on-demand-only", false, "buy on-demand capacity only (the default)")
	fs.IntVar(&f.maxGPUs, "max-gpus", serve.DefaultMaxGPUs, "buy at most this many GPUs in all")
	fs.IntVar(&f.assumeInstances, "assume-instances", bridge.DefaultAssumeInstances, "instances assumed obtainable per offering where the provider gives no capacity (and on demand)")
	fs.IntVar(&f.top, "top", serve.DefaultTop, "how many configurations to show, the best included")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the simulation's arrivals")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	fs.StringVar(&f.specPath, "write-spec", "", "write the chosen plan as a ServingDeployment spec (YAML) to this file ('-': stdout) for 'schooner serve deploy'")
	fs.IntVar(&f.pick, "pick", 1, "with --write-spec, which of the plans shown to write (1: the cheapest)")
	cmd.MarkFlagsMutuallyExclusive("spot", "on-demand-only")
	return cmd
}

func runPlanServe(cmd *cobra.Command, f *planServeFlags) error {
	a, err := f.check()
	if err != nil {
		return err
	}
	filter := cloud.OfferingFilter{Regions: f.regions, Zones: f.zones}
	for _, g := range f.gpus {
		filter.GPUTypes = append(filter.GPUTypes, gpu.Type(g))
	}
	offers, note, err := f.offerings(cmd.Context(), filter)
	if err != nil {
		return err
	}
	if f.specPath != "" {
		var dropped int
		if offers, dropped = oneGPUMachines(offers); len(offers) == 0 {
			return fmt.Errorf("--write-spec: none of the %d offerings is a one-GPU machine, and a spec runs each stage on a machine of its own, on one GPU", dropped)
		} else if dropped > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "--write-spec: planning on one-GPU machines only (a spec runs each stage on a machine of its own, on one GPU); %d offerings of larger machines left out\n", dropped)
		}
	}
	res, err := serve.Search(serve.Request{Model: a, Rate: f.rate, PromptTokens: f.prompt, OutputTokens: f.output,
		Targets: serve.Targets{TTFT: f.ttft, TPOT: f.tpot}, Offerings: offers, AllowSpot: f.spot,
		AssumeInstances: f.assumeInstances, MaxGPUs: f.maxGPUs, Top: f.top, Seed: f.seed})
	if err != nil {
		return f.explain(a, err)
	}
	out := cmd.OutOrStdout()
	if f.specPath == "-" {
		out = cmd.ErrOrStderr() // stdout is the spec's
	}
	if f.asJSON {
		if err := printJSON(out, res); err != nil {
			return err
		}
	} else {
		if note != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "source: %s\n", note)
		}
		printServePlans(out, a.Name, f, res)
	}
	if f.specPath == "" {
		return nil
	}
	in := specInputs{arch: a, prompt: f.prompt, output: f.output, targets: res.Targets}
	return writeServeSpec(cmd.OutOrStdout(), cmd.ErrOrStderr(), f, in, res)
}

// check validates the flags, naming the one at fault, and resolves the model.
func (f *planServeFlags) check() (planner.Architecture, error) {
	if f.model == "" {
		return planner.Architecture{}, fmt.Errorf("--model is required: one of %s", joinNames(serveModelNames()))
	}
	a, ok := serveArchitecture(f.model)
	if !ok {
		return a, fmt.Errorf("unknown --model %q: known models are %s", f.model, joinNames(serveModelNames()))
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !(f.rate > 0) {
		bad("--rate must be positive (requests per second), got %g", f.rate)
	}
	if f.prompt <= 0 {
		bad("--prompt must be positive (tokens), got %d", f.prompt)
	}
	if f.output <= 0 {
		bad("--output must be positive (tokens), got %d", f.output)
	}
	if !a.Rotary && f.prompt+f.output > a.SeqLen {
		bad("--prompt + --output is %d tokens, more than %s's %d learned positions", f.prompt+f.output, a.Name, a.SeqLen)
	}
	// A zero target would quietly become the default in the planner: refuse it here.
	if f.ttft <= 0 || f.tpot <= 0 {
		bad("--ttft and --tpot must be positive durations (p99 targets), got %s and %s", f.ttft, f.tpot)
	}
	if f.maxGPUs < 1 {
		bad("--max-gpus must be at least 1, got %d", f.maxGPUs)
	}
	if f.top < 1 {
		bad("--top must be at least 1, got %d", f.top)
	}
	for _, g := range f.gpus {
		if !gpu.Known(gpu.Type(g)) {
			bad("unknown --gpu %q: known types are %v", g, gpu.KnownTypes)
		}
	}
	f.checkSpecFlags(a, bad)
	return a, errors.Join(errs...)
}

// serveArchitecture resolves a model name: the training planner's built-in models (and
// their aliases), then the inference worker's (serving.BuiltinModels, Llama-style).
func serveArchitecture(name string) (planner.Architecture, bool) {
	if a, ok := planner.BuiltinArchitecture(name); ok {
		return a, true
	}
	m, ok := serving.BuiltinModels[strings.ToLower(name)]
	if !ok {
		return planner.Architecture{}, false
	}
	return planner.Architecture{Name: strings.ToLower(name), Layers: m.Layers, Hidden: m.Hidden, Heads: m.Heads,
		KVHeads: m.KVHeads, FFN: m.FFN, Vocab: m.Vocab, SeqLen: serving.DefaultMaxContext, GatedMLP: true, Rotary: true}, true
}

func serveModelNames() []string {
	names := planner.BuiltinModels()
	for _, n := range []string{"llama-1b", "llama-8b", "tiny"} {
		if _, ok := serving.BuiltinModels[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

// offerings reads the file or asks the provider, keeping what the filter lets through.
func (f *planServeFlags) offerings(ctx context.Context, filter cloud.OfferingFilter) ([]cloud.Offering, string, error) {
	offers, pools, note, err := offeringSource{path: f.offeringsPath, cloud: &f.cloud}.read(ctx, filter)
	if err != nil {
		return nil, "", err
	}
	for _, p := range pools {
		offers = append(offers, poolOffering(p))
	}
	if len(offers) == 0 {
		return nil, "", errors.New("no offerings left after filtering: check --gpu, --region, --zone and the offerings")
	}
	return offers, note, nil
}

// poolOffering reads a planner pool as an offering: a spot pool as spot capacity of its
// size, an on-demand pool as an on-demand price (its size is then --assume-instances').
func poolOffering(p planner.Pool) cloud.Offering {
	per := max(p.GPUsPerNode, 1)
	o := cloud.Offering{Provider: p.Provider, Region: p.Region, Zone: p.Zone, InstanceType: p.InstanceType,
		GPUType: p.GPU, GPUsPerInstance: per}
	if o.InstanceType == "" {
		o.InstanceType = fmt.Sprintf("%s×%d", p.GPU, per)
	}
	price := p.USDPerGPUHour * float64(per)
	if p.Spot {
		o.SpotPrice, o.SpotCapacity = price, p.GPUs/per
	} else {
		o.OnDemandPrice = price
	}
	return o
}

// explain turns the planner's typed errors into messages that name the flag to change.
func (f *planServeFlags) explain(a planner.Architecture, err error) error {
	var nf *serve.NoFitError
	var ue *serve.UnreachableError
	switch {
	case errors.As(err, &nf):
		return fmt.Errorf("--model %s: %w (raise --max-gpus or offer GPUs with more memory: --gpu)", a.Name, err)
	case errors.As(err, &ue) && ue.Target == serve.TargetTTFT:
		return fmt.Errorf("--ttft %s: %w", f.ttft, err)
	case errors.As(err, &ue) && ue.Target == serve.TargetTPOT:
		return fmt.Errorf("--tpot %s: %w", f.tpot, err)
	case errors.As(err, &ue) && ue.Target == serve.TargetBoth:
		return fmt.Errorf("--ttft %s and --tpot %s: %w", f.ttft, f.tpot, err)
	case errors.As(err, &ue) && ue.Target == serve.TargetRate:
		return fmt.Errorf("--rate %g: %w (raise --max-gpus)", f.rate, err)
	case errors.As(err, &ue):
		return fmt.Errorf("%w (--spot, --zone, --region, --assume-instances)", err)
	}
	return fmt.Errorf("planning serving of %s, %w", a.Name, err)
}

func printServePlans(out io.Writer, model string, f *planServeFlags, res *serve.Result) {
	fmt.Fprintf(out, "%s at %g requests/s, prompt %d and output %d tokens; p99 targets TTFT %s, TPOT %s\n",
		model, f.rate, f.prompt, f.output, res.Targets.TTFT, res.Targets.TPOT)
	fmt.Fprintf(out, "%d layouts scored, %d simulated, in %s\n\n", res.Considered, res.Simulated, res.Elapsed.Round(time.Millisecond))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tCONFIG\tGPUS\tUSD/H\tUSD/1M TOK\tTTFT P50/P99\tTPOT P50/P99\tTOK/S CAP\tUTIL")
	for i, p := range res.Plans {
		s := p.Simulated
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.2f\t%.2f\t%s/%s\t%s/%s\t%.0f\t%.0f%%\n", i+1, planConfig(p), p.GPUs, p.USDPerHour,
			p.USDPerMTokens, fmtSeconds(s.TTFTP50), fmtSeconds(s.TTFTP99), fmtSeconds(s.TPOTP50), fmtSeconds(s.TPOTP99),
			p.CapacityTokensPerS, 100*p.Utilization)
	}
	_ = tw.Flush()

	best := res.Plans[0]
	fmt.Fprintln(out, "\nThe best, where to buy it:")
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tREPLICAS\tSTAGES\tTP\tMAX BATCH\tZONE\tINSTANCE TYPE\tCAPACITY\tINSTANCES\tUSD/H")
	for _, pool := range best.Pools {
		batch := "-" // a prompt pool decodes nothing
		if pool.MaxBatch > 0 {
			batch = fmt.Sprint(pool.MaxBatch)
		}
		for _, pl := range pool.Placements {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%.2f\n", pool.Role, pl.Replicas, pool.Stages, pool.TP,
				batch, pl.Zone, pl.InstanceType, pl.Capacity, pl.Instances, pl.USDPerHour)
		}
	}
	_ = tw.Flush()
	if best.Mode == serve.Disaggregated {
		fmt.Fprintf(out, "DéjàVu's D_t = D·N·t/(m·Y + N·t) would give the token pool %.1f of the %d GPUs in use; the planner gave it %d.\n",
			best.DejaVuTokenGPUs, best.Pools[0].GPUs+best.Pools[1].GPUs, best.Pools[1].GPUs)
	}
	as := res.Assumptions
	fmt.Fprintf(out, `
Estimates from datasheets, not measurements. Assumed: matmuls at %.0f%% of the dense BF16 peak,
memory traffic at %.0f%% of HBM bandwidth, %.0f%% of GPU memory for weights and KV caches (bf16);
every request %d prompt and %d output tokens, Poisson arrivals; prefill-first batching of at
most %d prompt tokens; percentiles from a seeded simulation (%d requests after warm-up). Real
engines run slower than this roofline (docs/serving.md): measure before you commit.
USD/1M TOK is per million generated tokens at the requested rate; TOK/S CAP the most tokens/s
the configuration generates with decode steps within the TPOT target; UTIL the load's share.
`, 100*as.ComputeEfficiency, 100*as.BandwidthEfficiency, 100*as.MemoryUtilization, f.prompt, f.output,
		as.PrefillTokenBudget, best.Simulated.Requests)
	for _, p := range res.Plans {
		if p.Spot {
			fmt.Fprintln(out, "Spot capacity may be reclaimed (two minutes' notice on AWS, thirty seconds on GCP): the deployment then fails over to a replacement (docs/serving.md).")
			break
		}
	}
}

// planConfig is a plan in one line: "colocated 2×(TP2 D1) A100-40×2" or
// "prompt 4×(TP2 D1) + token 1×(TP8 D1) A100-40×8".
func planConfig(p serve.Plan) string {
	var parts []string
	for _, pool := range p.Pools {
		role := string(pool.Role)
		if pool.Role == serve.RoleBoth {
			role = "colocated"
		}
		parts = append(parts, fmt.Sprintf("%s %d×(TP%d D%d)", role, pool.Replicas, pool.TP, pool.Stages))
	}
	return fmt.Sprintf("%s %s×%d %s", strings.Join(parts, " + "), p.GPU, p.GPUsPerInstance, capacityWord(p))
}

func capacityWord(p serve.Plan) string {
	c := p.Pools[0].Capacity
	for _, pool := range p.Pools[1:] {
		if pool.Capacity != c {
			return "mixed"
		}
	}
	return c
}
