package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/policy"
)

// policyExplainFlags are `schooner policy explain`'s: the job and trace as for eval, and the one
// run to tell step by step.
type policyExplainFlags struct {
	policyEvalFlags
	start    time.Duration
	deadline string
	policy   string
	all      bool
}

func newPolicyExplainCommand() *cobra.Command {
	var f policyExplainFlags
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Tell one simulated run step by step: what the policy saw, what it held, and why it bought",
		Long: `explain runs one training job under one spot policy from one start of the trace, as eval runs
each of its runs, and prints the steps where something happened: a preemption, a change of
what the job holds, an on-demand purchase (with the policy's reason). Each line shows the
simulated time since the start, the job's progress, the time left to the deadline, the spot
capacity the trace had, what was lost, and what the policy asked for. The last lines sum the
run up against the job's best on-demand plan for the deadline.

Use it on a run whose cost in an eval table looks wrong: eval --json gives every run's start.

  schooner policy explain --iterations 600 --deadline 1.2x --start 53h45m
  schooner policy explain --trace DIR --spec job.yaml --policy cant-be-late-uniform --start 100h --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPolicyExplain(cmd, &f) },
	}
	fs := cmd.Flags()
	addPolicyJobFlags(fs, &f.policyEvalFlags)
	fs.DurationVar(&f.start, "start", 0, "where in the trace the run starts (e.g. 53h45m)")
	fs.StringVar(&f.deadline, "deadline", "1.2x", "the deadline: a multiple of the spot-only duration (1.5x) or a duration (24h)")
	fs.StringVar(&f.policy, "policy", "schooner-deadline", "the policy (a name eval's table shows)")
	fs.BoolVar(&f.all, "all", false, "print every step, not only those where something happened")
	return cmd
}

func runPolicyExplain(cmd *cobra.Command, f *policyExplainFlags) error {
	job, market, err := f.jobAndMarket(cmd)
	if err != nil {
		return err
	}
	makers, err := pickPolicies([]string{f.policy})
	if err != nil {
		return err
	}
	spotOnly := policy.SpotOnlyDuration(job, market)
	factors, err := deadlineFactors([]string{f.deadline}, spotOnly)
	if err != nil {
		return err
	}
	if f.start < 0 || f.start >= market.Length {
		return fmt.Errorf("--start %s: the trace is %s long", f.start, market.Length.Round(time.Minute))
	}
	deadline := time.Duration(factors[0] * float64(spotOnly))
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s: %d iterations on at most %d GPUs, from %s into %s; deadline %s (%.2fx the %s spot-only run)\n\n",
		makers[0].Name, job.Iterations, job.MaxGPUs, f.start, market.Source, deadline.Round(time.Minute), factors[0], spotOnly.Round(time.Minute))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "time\tdone\ttime left\tspot capacity\tlost\tholds\tasks for\twhy")
	var last string
	observe := func(v *policy.View, req policy.Request) {
		holds := heldText(v.Spot, v.OnDemand)
		asks := fmt.Sprintf("%d spot + %d on-demand", req.Spot, req.OnDemand)
		now := holds + "|" + asks + "|" + req.Why
		if !f.all && len(v.Preempted) == 0 && now == last {
			return
		}
		last = now
		fmt.Fprintf(tw, "%s\t%.0f%%\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Elapsed.Round(time.Minute), 100*v.Done/float64(job.Iterations),
			v.TimeLeft().Round(time.Minute), capacityText(v.Capacity), lostText(v.Preempted), holds, asks, req.Why)
	}
	run, err := policy.Simulate(job, market, makers[0], f.start, policy.Options{Deadline: deadline, Observe: observe})
	if err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	explainSummary(out, run, policy.BestOnDemand(job, market, deadline))
	return nil
}

// explainSummary sums a run up against the best on-demand plan.
func explainSummary(w io.Writer, run policy.Run, base policy.OnDemandPlan) {
	verdict := "met the deadline"
	if !run.Met {
		verdict = "MISSED the deadline"
		if !run.Finished {
			verdict = "did not finish"
		}
	}
	fmt.Fprintf(w, "\n%s in %s: $%.2f ($%.2f of it on-demand), %.2fx the best on-demand plan (%d GPUs, %s, $%.2f)\n",
		verdict, run.Duration.Round(time.Minute), run.CostUSD, run.OnDemandUSD, run.CostUSD/base.CostUSD,
		base.GPUs, base.Duration.Round(time.Minute), base.CostUSD)
	fmt.Fprintf(w, "%d preemptions, %d restarts, %d on-demand purchases, %.0f iterations redone\n",
		run.Preemptions, run.Restarts, len(run.Purchases), run.Lost)
}

// heldText is what a job holds, spot per zone then on-demand: "2 us-east-2b, 1 us-west-2a + 3 on-demand".
func heldText(spot, od policy.Placement) string {
	parts := []string{}
	if s := zoneCounts(spot); s != "" {
		parts = append(parts, s)
	}
	if n := od.GPUs(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d on-demand", n))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " + ")
}

// capacityText is the spot GPUs the trace offered at a step, all zones together.
func capacityText(c map[string]int) string {
	total := 0
	for _, n := range c {
		total += n
	}
	return fmt.Sprintf("%d GPUs", total)
}

// lostText is what a preemption took at a step, per zone.
func lostText(p map[string]int) string {
	if len(p) == 0 {
		return "-"
	}
	return zoneCounts(p)
}

// zoneCounts lists a count per zone in zone order, leaving out zones of none.
func zoneCounts(p map[string]int) string {
	zones := make([]string, 0, len(p))
	for z, n := range p {
		if n > 0 {
			zones = append(zones, z)
		}
	}
	sort.Strings(zones)
	parts := make([]string, len(zones))
	for i, z := range zones {
		parts[i] = fmt.Sprintf("%d %s", p[z], z)
	}
	return strings.Join(parts, ", ")
}
