package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

func newPlanSimulateCommand(g *globals) *cobra.Command {
	_ = g // no logging: the command is pure computation
	var planPath, profilesDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Predict a plan's iteration time, throughput, cost and peak memory",
		Long: `simulate runs the planner's simulator on a plan file (docs/plan-format.md): it loads the
profile of the model the plan names and the network profile, then predicts the time of one
training iteration (pipeline and gradient sync), throughput, USD per iteration and per hour,
and per stage the compute, communication, optimizer update and peak memory against the GPU's.
Nothing is launched.

  schooner plan simulate --plan opt350-hetero.json
  schooner plan simulate --plan opt350-hetero.json --profiles ./profiles --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := readPlanFile(planPath)
			if err != nil {
				return err
			}
			m, err := profiles.Load(p.Model, profilesDir)
			if err != nil {
				return fmt.Errorf("loading the profile of model %q, %w", p.Model, err)
			}
			n, err := profiles.LoadNetwork(profilesDir)
			if err != nil {
				return fmt.Errorf("loading the network profile, %w", err)
			}
			est, err := planner.Simulate(p, m, n)
			if err != nil {
				return fmt.Errorf("simulating %s, %w", planPath, err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), est)
			}
			printEstimate(cmd.OutOrStdout(), p, m, est)
			return nil
		},
	}
	cmd.Flags().StringVar(&planPath, "plan", "", "plan file to simulate (JSON, see docs/plan-format.md)")
	cmd.Flags().StringVar(&profilesDir, "profiles", "", "profiles directory: schooner's format or Sailor's layout (empty: the bundled Sailor profiles)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the estimate as JSON (planner.Estimate)")
	return cmd
}

// readPlanFile reads and parses a plan, saying which file is wrong and how.
func readPlanFile(path string) (*planner.Plan, error) {
	if path == "" {
		return nil, errors.New("--plan is required: the plan file to simulate (see docs/plan-format.md)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading plan file, %w", err)
	}
	p, err := planner.ParsePlan(data)
	if err != nil {
		return nil, fmt.Errorf("plan file %s: %w", path, err)
	}
	return p, nil
}

func printEstimate(out io.Writer, p *planner.Plan, m *planner.ModelProfile, est planner.Estimate) {
	fmt.Fprintf(out, "%s: %d stages × %d replicas, %d GPUs, global batch %d, micro-batch %d (%d microbatches per pipeline)\n\n",
		p.Model, len(p.Stages), p.DP(), p.GPUs(), p.GlobalBatch, p.MicroBatch, p.Microbatches())

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "iteration\t%s\t(slowest pipeline %s + gradient sync %s)\n",
		fmtSeconds(est.IterTime), fmtSeconds(est.PipelineTime), fmtSeconds(est.SyncTime))
	fmt.Fprintf(tw, "throughput\t%.4g iterations/s\t(%.4g samples/s)\n", est.Throughput, est.Throughput*float64(p.GlobalBatch))
	fmt.Fprintf(tw, "cost\t$%.4f per iteration\t($%.4f GPUs + $%.4f egress), $%.2f per hour of GPUs\n",
		est.USDPerIteration, est.USDPerIteration-est.EgressUSDPerIteration, est.EgressUSDPerIteration, est.USDPerHour)
	memory := "every replica fits"
	unchecked := 0
	for _, se := range est.Stages {
		if se.MemLimitBytes <= 0 {
			unchecked++
		}
	}
	switch {
	case !est.Fits:
		memory = "OUT OF MEMORY: some replica needs more than its GPU has (see FITS below)"
	case unchecked == len(est.Stages):
		memory = "unchecked: no stage's GPU has a datasheet here (a type known by its profile alone); peak memory is predicted below"
	case unchecked > 0:
		memory = fmt.Sprintf("fits where checked; %d of %d stages unchecked (GPU without a datasheet)", unchecked, len(est.Stages))
	}
	fmt.Fprintf(tw, "memory\t%s\n", memory)
	_ = tw.Flush()
	fmt.Fprintln(out)

	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tLAYERS\tREPLICAS\tCOMPUTE\tCOMM\tUPDATE\tPEAK MEM\tGPU MEM\tFITS\tNOTES")
	var derived []string
	for i, st := range p.Stages {
		se := est.Stages[i]
		limit, fits := "unknown", "unchecked"
		if se.MemLimitBytes > 0 {
			limit = fmtGiB(se.MemLimitBytes)
			fits = "yes"
			if !se.Fits {
				fits = "NO"
			}
		}
		note := ""
		for _, g := range derivedGPUs(m, st) {
			note = "derived profile"
			derived = appendUnique(derived, string(g))
		}
		fmt.Fprintf(tw, "%d\t%d-%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i, st.FirstLayer, st.LastLayer, replicaSummary(st),
			fmtSeconds(se.Compute), fmtSeconds(se.Comm), fmtSeconds(se.Update), fmtGiB(se.PeakMemBytes), limit, fits, note)
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "\nCOMPUTE and COMM are per microbatch, for the stage's slowest replica; UPDATE is one optimizer step.")
	if len(derived) > 0 {
		fmt.Fprintf(out, "note: the profiles of %s are derived from datasheet figures, not measured: expect a larger error.\n",
			strings.Join(derived, ", "))
	}
}

// replicaSummary groups a stage's replicas by GPU type, TP and zone, in order of appearance:
// "2× A100-40 tp1 us-central1-a".
func replicaSummary(st planner.Stage) string {
	type group struct {
		gpu  gpu.Type
		tp   int
		zone string
		n    int
	}
	var groups []group
next:
	for _, r := range st.Replicas {
		for k := range groups {
			if groups[k].gpu == r.GPU && groups[k].tp == r.TP && groups[k].zone == r.Zone {
				groups[k].n++
				continue next
			}
		}
		groups = append(groups, group{gpu: r.GPU, tp: r.TP, zone: r.Zone, n: 1})
	}
	parts := make([]string, len(groups))
	for k, gr := range groups {
		parts[k] = fmt.Sprintf("%d× %s tp%d %s", gr.n, gr.gpu, gr.tp, gr.zone)
	}
	return strings.Join(parts, ", ")
}

func derivedGPUs(m *planner.ModelProfile, st planner.Stage) []gpu.Type {
	var out []gpu.Type
	for _, r := range st.Replicas {
		if c := m.Compute[r.GPU]; c != nil && c.Derived {
			out = appendUnique(out, r.GPU)
		}
	}
	return out
}

func appendUnique[T comparable](s []T, v T) []T {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func fmtSeconds(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s >= 1:
		return fmt.Sprintf("%.3f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.1f ms", s*1e3)
	default:
		return fmt.Sprintf("%.0f µs", s*1e6)
	}
}

func fmtGiB(b float64) string {
	return fmt.Sprintf("%.1f GiB", b/(1<<30))
}
