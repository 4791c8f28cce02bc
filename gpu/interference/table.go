package interference

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/schooner-ml/schooner/interference"
)

// WriteTable prints the study's rows, one block per pair, then the mechanisms the machine
// refused. A simulated study says so first.
func WriteTable(w io.Writer, s interference.Study, rows []Row) error {
	if s.Simulated {
		fmt.Fprintln(w, "SIMULATED: these figures come from a model of a GPU, not from one; never place jobs with them.")
	}
	if s.Partial() {
		done := s.StepsDone()
		fmt.Fprintf(w, "PARTIAL: %d of %d steps measured, %d missing (the first: %s); the rows below are those measured.\n",
			done, done+len(s.Missing), len(s.Missing), s.Missing[0])
	}
	card := ""
	if s.GPU.UUID != "" {
		card = " (" + s.GPU.UUID + ")"
	}
	fmt.Fprintf(w, "%s%s, driver %s, %s; %d requests per run, median of %d runs\n\n", s.GPU.Model, card, s.GPU.Driver,
		s.StartedAt.Format("2006-01-02 15:04 MST"), s.Request.Requests, s.Request.Repeats)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pair\tmechanism\tLC p50\tLC p99\tLC p99 ms\tBE throughput\tfront")
	last := interference.Pair{}
	for _, r := range rows {
		pair := ""
		if r.Pair != last {
			pair, last = r.Pair.String(), r.Pair
		}
		front := ""
		if r.OnFront {
			front = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f×\t%.2f×\t%.2f\t%.0f%%\t%s\n", pair, r.Mechanism, r.LCP50x, r.LCP99x, r.LCP99Ms,
			100*r.BEFraction, front)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.Unavailable) > 0 {
		fmt.Fprintln(w, "\nunavailable on this machine:")
		for _, u := range s.Unavailable {
			fmt.Fprintf(w, "  %s: %s\n", u.Mechanism, u.Reason)
		}
	}
	if err := writeCounters(w, s.Counters); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nLC: the latency-critical side against it alone; BE: the best-effort side's throughput against it alone;\n* on the pair's Pareto front (no other mechanism gives BE as much with a p99 at most as slow).")
	return err
}

// writeCounters prints each workload's Nsight Compute counters, one line each, percentages of
// peak (or why there are none).
func writeCounters(w io.Writer, cs []interference.Counters) error {
	if len(cs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nNsight Compute counters (each workload alone; % of peak, kernel-time weighted):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tkernels\tSM\tmemory\tDRAM\tL1 hit\tL2 hit\toccupancy")
	for _, c := range cs {
		if c.Unavailable != "" {
			fmt.Fprintf(tw, "%s\tunavailable: %s\n", c.Workload, c.Unavailable)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d", c.Workload, c.Kernels)
		for _, k := range interference.CounterMetrics {
			if v, ok := c.Metrics[k]; ok {
				fmt.Fprintf(tw, "\t%.1f", v)
			} else {
				fmt.Fprint(tw, "\t–")
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
