package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/policy"
)

// machineBill is what one kind of machine (spot or on-demand) came to in a run.
type machineBill struct {
	Machines int     `json:"machines"`
	Hours    float64 `json:"hours"`
	USD      float64 `json:"usd"`
}

// stackBill is a stack run's bill by machine, from the market's usage report: where the cost
// went, to set beside the trace-replay simulator's split of the same stretch.
type stackBill struct {
	Policy    string      `json:"policy"`
	Spot      machineBill `json:"spot"`
	OnDemand  machineBill `json:"on_demand"`
	Preempted int         `json:"preempted"`
}

// usagePath is where `schooner demo serve --out <dir>/<policy>-report` leaves its market's
// usage report.
func usagePath(dir, policyName string) string {
	return filepath.Join(dir, policyName+"-report", "demo-serve-usage.jsonl")
}

// readBill sums a usage report (sim.UsageRecord lines) by capacity.
func readBill(path, policyName string) (stackBill, error) {
	f, err := os.Open(path)
	if err != nil {
		return stackBill{}, err
	}
	defer f.Close()
	b := stackBill{Policy: policyName}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var r sim.UsageRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return stackBill{}, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		var m *machineBill
		switch r.Capacity {
		case cloud.Spot:
			m = &b.Spot
		case cloud.OnDemand:
			m = &b.OnDemand
		default:
			return stackBill{}, fmt.Errorf("%s:%d: capacity %q is neither spot nor on-demand", path, line, r.Capacity)
		}
		m.Machines++
		m.Hours += r.Hours
		m.USD += r.CostUSD
		if r.End == string(cloud.StatePreempted) {
			b.Preempted++
		}
	}
	return b, sc.Err()
}

// readBills reads the usage report of each policy's run under dir; a policy without one (not
// run, or run by a build that wrote none) is left out.
func readBills(dir string, policies []string) ([]stackBill, error) {
	var out []stackBill
	for _, p := range policies {
		b, err := readBill(usagePath(dir, p), p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// printBills sets each stack run's bill beside the simulator's split of the same policy on the
// stretch: machines (the simulator's are stage-hours, one machine per stage at a time), hours,
// cost and average price by capacity.
func printBills(w io.Writer, bills []stackBill, same []policy.ServingRun) {
	fmt.Fprintln(w, "| policy | source | spot machines | spot hours | spot cost | spot $/h | on-demand machines | on-demand hours | on-demand cost | total |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	perHour := func(usd, h float64) string {
		if h <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.3f", usd/h)
	}
	for _, b := range bills {
		fmt.Fprintf(w, "| %s | stack (the market's bill) | %d | %.2f | $%.3f | %s | %d | %.2f | $%.3f | $%.3f |\n", b.Policy,
			b.Spot.Machines, b.Spot.Hours, b.Spot.USD, perHour(b.Spot.USD, b.Spot.Hours),
			b.OnDemand.Machines, b.OnDemand.Hours, b.OnDemand.USD, b.Spot.USD+b.OnDemand.USD)
		for _, r := range same {
			if r.Policy != b.Policy {
				continue
			}
			od := r.CostUSD - r.SpotUSD
			fmt.Fprintf(w, "| %s | simulator | – | %.2f | $%.3f | %s | – | %.2f | $%.3f | $%.3f |\n", r.Policy,
				r.SpotHours, r.SpotUSD, perHour(r.SpotUSD, r.SpotHours), r.OnDemandHours, od, r.CostUSD)
		}
	}
}
