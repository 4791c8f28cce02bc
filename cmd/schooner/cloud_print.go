package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/schooner-ml/schooner/cloud"
)

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTable prints items as aligned columns under header (tab-separated, like each row that
// row writes), or the line empty alone when there are none.
func printTable[T any](out io.Writer, empty, header string, items []T, row func(tw io.Writer, item T)) {
	if len(items) == 0 {
		fmt.Fprintln(out, empty)
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		row(tw, it)
	}
	_ = tw.Flush()
}

func printOfferings(out io.Writer, offers []cloud.Offering) {
	printTable(out, "no offerings match", "PROVIDER\tREGION\tZONE\tINSTANCE TYPE\tGPUS\tSPOT $/H\tON-DEMAND $/H\tSAVING\tSPOT CAPACITY",
		offers, func(tw io.Writer, o cloud.Offering) {
			capacity := "unknown"
			if o.SpotCapacity >= 0 {
				capacity = fmt.Sprint(o.SpotCapacity)
			}
			saving := "-"
			if o.OnDemandPrice > 0 {
				saving = fmt.Sprintf("%.0f%%", 100*(1-o.SpotPrice/o.OnDemandPrice))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d× %s\t%.3f\t%.3f\t%s\t%s\n", o.Provider, o.Region, o.Zone, o.InstanceType,
				o.GPUsPerInstance, o.GPUType, o.SpotPrice, o.OnDemandPrice, saving, capacity)
		})
}

func printInstances(out io.Writer, insts []cloud.Instance) {
	printTable(out, "no instances", "ID\tPROVIDER\tZONE\tINSTANCE TYPE\tGPUS\tCAPACITY\tSTATE\tJOB\t$/H\tLAUNCHED\tINTERRUPTION",
		insts, func(tw io.Writer, i cloud.Instance) {
			intr := "-"
			if i.Interruption != nil {
				intr = fmt.Sprintf("%s (deadline %s)", i.Interruption.Kind, i.Interruption.Deadline.Format("15:04:05"))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d× %s\t%s\t%s\t%s\t%.3f\t%s\t%s\n", i.ID, i.Provider, i.Zone, i.InstanceType,
				i.GPUs, i.GPUType, i.Capacity, i.State, i.JobID, i.PricePerHour, i.LaunchedAt.Format("2006-01-02 15:04:05"), intr)
		})
}
