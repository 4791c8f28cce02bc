package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/bridge"
)

// planSearchFlags are the inputs of `schooner plan search`.
type planSearchFlags struct {
	cloud           cloudFlags
	model           string
	profilesDir     string
	offeringsPath   string
	globalBatch     int
	microBatches    []int
	objective       string
	maxUSDPerIter   float64
	minItersPerSec  float64
	top             int
	asJSON          bool
	maxGPUsPerPool  int
	assumeInstances int
	onDemand        bool
	gpus            []string
	regions         []string
	zones           []string
}

func newPlanSearchCommand(g *globals) *cobra.Command {
	_ = g // pure computation; nothing to log
	var f planSearchFlags
	cmd := &cobra.Command{
		Use:   "search",
		Short: "Find the best training plan for a model on the GPUs on offer",
		Long: `search runs the Sailor-style planner: over pipeline splits, data-parallel degree, GPU type,
tensor-parallel degree and zone per stage, and micro-batch size, it finds the plan with the
highest throughput (optionally under a budget per iteration) or the lowest cost per iteration
(optionally above a throughput floor). Every plan shown is estimated by the simulator that
'schooner plan simulate' runs. Nothing is launched.

GPUs come from a JSON file (--offerings: a list of planner pools or of cloud offerings as
'schooner cloud offerings --json' prints them) or from a provider (--cloud sim|aws|gcp).

  schooner plan search --model OPT-350 --global-batch 2048 --offerings pools.json
  schooner plan search --model GPT-Neo-2.7 --cloud sim --objective cost --min-iters-per-sec 0.5
  schooner plan search --model OPT-350 --cloud sim --gpu A100-40,V100-16 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlanSearch(cmd, &f)
		},
	}
	fs := cmd.Flags()
	addCloudFlags(fs, &f.cloud)
	fs.StringVar(&f.model, "model", "", "built-in model to plan for ("+joinNames(planner.BuiltinModels())+")")
	fs.StringVar(&f.profilesDir, "profiles", "", "directory of model and network profiles (empty: the built-in ones)")
	fs.StringVar(&f.offeringsPath, "offerings", "", "JSON file: a list of planner pools or of cloud offerings (instead of asking --cloud)")
	fs.IntVar(&f.globalBatch, "global-batch", 256, "samples per training iteration")
	fs.IntSliceVar(&f.microBatches, "micro-batch", nil, "micro-batch sizes to consider (default: every profiled size)")
	fs.StringVar(&f.objective, "objective", string(planner.MaxThroughput), "throughput (fastest plan) or cost (cheapest per iteration)")
	fs.Float64Var(&f.maxUSDPerIter, "max-usd-per-iter", 0, "budget: most USD per iteration a plan may cost (0: none)")
	fs.Float64Var(&f.minItersPerSec, "min-iters-per-sec", 0, "floor: fewest iterations per second a plan may give (0: none)")
	fs.IntVar(&f.top, "top", planner.DefaultTopK, "how many plans to show, the best included")
	fs.BoolVar(&f.asJSON, "json", false, "print the planner.Result as JSON")
	fs.IntVar(&f.maxGPUsPerPool, "max-gpus-per-pool", 0, "use at most this many GPUs of any one offering (0: all)")
	fs.IntVar(&f.assumeInstances, "assume-instances", bridge.DefaultAssumeInstances, "instances assumed obtainable of an offering whose capacity is unknown")
	fs.BoolVar(&f.onDemand, "on-demand", false, "price cloud offerings on demand instead of spot")
	fs.StringSliceVar(&f.gpus, "gpu", nil, "only these GPU types (e.g. A100-40,V100-16)")
	fs.StringSliceVar(&f.regions, "region", nil, "only these regions")
	fs.StringSliceVar(&f.zones, "zone", nil, "only these zones")
	return cmd
}

func runPlanSearch(cmd *cobra.Command, f *planSearchFlags) error {
	if f.model == "" {
		return fmt.Errorf("--model is required: one of %s", joinNames(planner.BuiltinModels()))
	}
	obj := planner.Objective(f.objective)
	if obj != planner.MaxThroughput && obj != planner.MinCost {
		return fmt.Errorf("invalid --objective %q: want throughput or cost", f.objective)
	}
	var filter cloud.OfferingFilter
	for _, g := range f.gpus {
		if !gpu.Known(gpu.Type(g)) {
			return fmt.Errorf("unknown --gpu %q: known types are %v", g, gpu.KnownTypes)
		}
		filter.GPUTypes = append(filter.GPUTypes, gpu.Type(g))
	}
	filter.Regions, filter.Zones = f.regions, f.zones

	pools, note, err := f.pools(cmd.Context(), filter)
	if err != nil {
		return err
	}
	m, n, err := (&bridge.Models{Dir: f.profilesDir}).Profile(bridge.ModelRef{Name: f.model})
	if err != nil {
		return err
	}
	res, err := planner.Search(planner.Request{
		Model: m, Network: n, Pools: pools, GlobalBatch: f.globalBatch, Objective: obj,
		MaxUSDPerIteration: f.maxUSDPerIter, MinItersPerSec: f.minItersPerSec,
		MicroBatches: f.microBatches, TopK: f.top,
	})
	if err != nil {
		return fmt.Errorf("planning %s, %w", m.Name, err)
	}
	if f.asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	if note != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "source: %s\n", note)
	}
	printSearchResult(cmd.OutOrStdout(), m.Name, obj, pools, res)
	return nil
}

// pools reads the offerings file or asks the provider, and applies the filter and caps.
func (f *planSearchFlags) pools(ctx context.Context, filter cloud.OfferingFilter) ([]planner.Pool, string, error) {
	offers, filePools, note, err := offeringSource{path: f.offeringsPath, cloud: &f.cloud}.read(ctx, filter)
	if err != nil {
		return nil, "", err
	}
	pools := append(bridge.OfferPools(offers, f.pricing()), filePools...)
	out := bridge.CapPerPool(pools, f.maxGPUsPerPool)
	if len(out) == 0 {
		return nil, "", errors.New("no GPUs on offer after filtering: check --gpu, --region, --zone and the offerings")
	}
	return out, note, nil
}

// pricing is the bridge's reading of --on-demand and --assume-instances: spot capacity from
// the provider's hint, or on-demand capacity of the assumed size.
func (f *planSearchFlags) pricing() bridge.Pricing {
	return bridge.Pricing{Spot: !f.onDemand, OnDemand: f.onDemand, AssumeInstances: f.assumeInstances}
}

// decodeOfferings reads a JSON list of planner pools or of cloud offerings, telling them
// apart by their fields ("gpu" and "gpus" for pools, "gpu_type" for offerings).
func decodeOfferings(data []byte) ([]planner.Pool, []cloud.Offering, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, fmt.Errorf("want a JSON list of pools or offerings: %w", err)
	}
	var pools []planner.Pool
	var offers []cloud.Offering
	for i, obj := range raw {
		item, err := json.Marshal(obj)
		if err != nil {
			return nil, nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		switch {
		case obj["gpu_type"] != nil:
			var o cloud.Offering
			if err := dec.Decode(&o); err != nil {
				return nil, nil, fmt.Errorf("item %d (an offering): %w", i, err)
			}
			offers = append(offers, o)
		case obj["gpu"] != nil:
			var p planner.Pool
			if err := dec.Decode(&p); err != nil {
				return nil, nil, fmt.Errorf("item %d (a pool): %w", i, err)
			}
			pools = append(pools, p)
		default:
			return nil, nil, fmt.Errorf("item %d is neither a pool (with \"gpu\") nor an offering (with \"gpu_type\")", i)
		}
	}
	return pools, offers, nil
}

func printSearchResult(out io.Writer, model string, obj planner.Objective, pools []planner.Pool, res *planner.Result) {
	total := 0
	for _, p := range pools {
		total += p.GPUs
	}
	fmt.Fprintf(out, "%s, objective %s: %d plans scored in %s over %d offerings (%d GPUs)\n\n",
		model, obj, res.Evaluated, res.Elapsed.Round(time.Microsecond), len(pools), total)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tITER TIME\tITERS/S\tUSD/ITER\tUSD/H\tGPUS\tD\tMBS\tSTAGES\tPEAK MEM\tPROFILE")
	for i, c := range append([]planner.Candidate{res.Best}, res.Next...) {
		e := c.Estimate
		profile := "measured"
		if e.Derived {
			profile = "DERIVED"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.4g\t%.5f\t%.2f\t%d\t%d\t%d\t%s\t%s\t%s\n", i+1, fmtSeconds(e.IterTime), e.Throughput,
			e.USDPerIteration, e.USDPerHour, c.Plan.GPUs(), c.Plan.DP(), c.Plan.MicroBatch,
			planner.SummarizeStages(&c.Plan), tightestMemory(e), profile)
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "\nPEAK MEM is the fullest stage's peak per GPU against its GPU's memory; DERIVED profiles come from datasheets, not measurement.")
	if len(res.Rejected) == 0 {
		return
	}
	fmt.Fprintln(out, "\nRejected alternatives:")
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REASON\tALTERNATIVE\tWHY")
	for _, r := range res.Rejected {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Reason, r.Summary, r.Detail)
	}
	_ = tw.Flush()
}

// tightestMemory is "31.2/40.0 GiB" for the stage closest to its GPU's memory.
func tightestMemory(e planner.Estimate) string {
	best, ratio := -1, -1.0
	for i, s := range e.Stages {
		if s.MemLimitBytes > 0 && s.PeakMemBytes/s.MemLimitBytes > ratio {
			best, ratio = i, s.PeakMemBytes/s.MemLimitBytes
		}
	}
	if best < 0 {
		return "unknown"
	}
	s := e.Stages[best]
	return fmt.Sprintf("%.1f/%.1f GiB", s.PeakMemBytes/(1<<30), s.MemLimitBytes/(1<<30))
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
