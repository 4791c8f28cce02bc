package simgpu

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteTable prints the comparison, marked simulated: each mechanism's HP p50/p99 against
// dedicated and the BE side's progress against alone.
func WriteTable(w io.Writer, sc Scenario, rows []Row) error {
	fmt.Fprintf(w, "SIMULATED GPU (%d SMs; gpu/colocate/simgpu's block model, not a measurement): HP %d kernels a request every %s on average, BE kernels %s, %s simulated\n",
		sc.SMs, len(sc.HP), sc.Arrival, kernelTimes(sc), sc.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mechanism\tHP p50\t×\tHP p99\t×\tBE vs alone\trequests\tnote\t")
	for _, r := range rows {
		state := ""
		if r.Mechanism == Schooner {
			state = "BE " + r.Final.State.String()
		}
		// An HP side that served far fewer requests than alone fell behind its arrivals: its
		// queue grew all run, and its latencies grow with the run's length.
		if r.Requests < rows[0].Requests*9/10 {
			state += " HP saturated"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%.2f\t%.0f%%\t%d\t%s\t\n", r.Mechanism, r.HPP50.Round(time.Microsecond), r.P50Ratio,
			r.HPP99.Round(time.Microsecond), r.P99Ratio, 100*r.BEShare, r.Requests, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		for _, c := range r.Changes {
			fmt.Fprintf(w, "  %s supervisor at %s\n", r.Mechanism, c)
		}
	}
	return nil
}

func kernelTimes(sc Scenario) string {
	s := ""
	for i, k := range sc.BE {
		if i > 0 {
			s += ", "
		}
		s += k.Alone(sc.SMs).String()
	}
	return s
}
