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

func printOfferings(out io.Writer, offers []cloud.Offering) {
	if len(offers) == 0 {
		fmt.Fprintln(out, "no offerings match")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tREGION\tZONE\tINSTANCE TYPE\tGPUS\tSPOT $/H\tON-DEMAND $/H\tSAVING\tSPOT CAPACITY")
	for _, o := range offers {
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
	}
	_ = tw.Flush()
}

func printInstances(out io.Writer, insts []cloud.Instance) {
	if len(insts) == 0 {
		fmt.Fprintln(out, "no instances")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROVIDER\tZONE\tINSTANCE TYPE\tGPUS\tCAPACITY\tSTATE\tJOB\t$/H\tLAUNCHED\tINTERRUPTION")
	for _, i := range insts {
		intr := "-"
		if i.Interruption != nil {
			intr = fmt.Sprintf("%s (deadline %s)", i.Interruption.Kind, i.Interruption.Deadline.Format("15:04:05"))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d× %s\t%s\t%s\t%s\t%.3f\t%s\t%s\n", i.ID, i.Provider, i.Zone, i.InstanceType,
			i.GPUs, i.GPUType, i.Capacity, i.State, i.JobID, i.PricePerHour, i.LaunchedAt.Format("2006-01-02 15:04:05"), intr)
	}
	_ = tw.Flush()
}
