package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/planner/calibrate"
	"github.com/schooner-ml/schooner/planner/profiles"
)

// newProfileCalibrateCommand is `schooner profile calibrate`: a model profile fitted to
// measured runs of this cluster.
func newProfileCalibrateCommand() *cobra.Command {
	var casesDir, model, profilesDir, out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Fit a model profile's memory overhead and compute times to measured runs of this cluster",
		Long: `calibrate reads measured runs (--cases: one JSON file per run, a plan and what it measured:
iteration time and peak memory per stage; docs/profiles.md, "Calibrating a cluster"), loads the
model's profile (--profiles, else the bundled one), and fits two things the simulator cannot
know from published data: the framework's memory overhead per GPU (CUDA context, library
workspaces, allocator slack: what no model term explains), and, per GPU type the runs use
alone, a factor on the compute times (this framework, these kernels, these clocks). It prints
the errors before and after and writes the calibrated profile (--out), which 'plan simulate'
and 'plan search' read with --profiles. The errors after are on the same runs: keep a few runs
apart and score them with 'go run ./bench/planaccuracy' before trusting the profile.

Three short runs are enough to start: one per micro-batch size you plan with, on the GPU type
you will use, each a few iterations after warm-up (the reference trainer's --measure-out
writes them; 'go run ./bench/gpu/accuracy -cases-out' turns them into case files).

  schooner profile calibrate --model OPT-350 --cases runs/ --out profiles/OPT-350.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if casesDir == "" || model == "" || out == "" {
				return errors.New("--cases, --model and --out are required")
			}
			files, err := calibrate.CaseFiles(casesDir)
			if err != nil {
				return err
			}
			var cases []calibrate.Case
			for _, f := range files {
				c, err := calibrate.ReadCaseFile(f)
				if err != nil {
					return fmt.Errorf("case %s: %w", f, err)
				}
				if c.Plan.Model == model {
					cases = append(cases, c)
				}
			}
			if len(cases) == 0 {
				return fmt.Errorf("no case in %s is a plan of %s", casesDir, model)
			}
			m, err := profiles.Load(model, profilesDir)
			if err != nil {
				return fmt.Errorf("loading the profile of %s, %w", model, err)
			}
			net, err := profiles.LoadNetwork(profilesDir)
			if err != nil {
				return fmt.Errorf("loading the network profile, %w", err)
			}
			res, err := calibrate.Calibrate(m, net, cases)
			if err != nil {
				return err
			}
			if err := profiles.WriteModelFile(out, &profiles.ModelFile{ModelProfile: *res.Profile}); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"cases": len(cases), "overhead_bytes_before": res.OverheadBefore,
					"overhead_bytes": res.OverheadBytes, "gpu_overheads": res.GPUOverheads, "time_factors": res.TimeFactors, "before": res.Before, "after": res.After,
					"notes": res.Notes, "written": out})
			}
			printCalibration(cmd.OutOrStdout(), len(cases), res, out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&casesDir, "cases", "", "folder of measured runs (*.json: plan + measured iteration time and peak memory per stage)")
	f.StringVar(&model, "model", "", "the model whose profile to calibrate (its runs are those of the folder's plans naming it)")
	f.StringVar(&profilesDir, "profiles", "", "profiles to start from: schooner's format or Sailor's layout (empty: the bundled ones)")
	f.StringVar(&out, "out", "", "where to write the calibrated model profile (schooner's format)")
	f.BoolVar(&asJSON, "json", false, "print the calibration as JSON")
	return cmd
}

func printCalibration(w io.Writer, n int, r calibrate.Result, out string) {
	fmt.Fprintf(w, "%d measured runs\n", n)
	fmt.Fprintf(w, "memory overhead per GPU: %.2f GiB → %.2f GiB\n", r.OverheadBefore/(1<<30), r.OverheadBytes/(1<<30))
	for _, g := range slices.Sorted(maps.Keys(r.GPUOverheads)) {
		o := r.GPUOverheads[g]
		fmt.Fprintf(w, "memory overhead per %s: %.2f GiB → %.2f GiB\n", g, o[0]/(1<<30), o[1]/(1<<30))
	}
	for _, g := range slices.Sorted(maps.Keys(r.TimeFactors)) {
		fmt.Fprintf(w, "compute times on %s: ×%.4f\n", g, r.TimeFactors[g])
	}
	pct := func(x float64) string {
		if math.IsNaN(x) {
			return "—"
		}
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	fmt.Fprintf(w, "median |error| on these runs: time %s → %s, peak memory %s → %s (in-sample: score runs kept apart with bench/planaccuracy)\n",
		pct(r.Before.Time), pct(r.After.Time), pct(r.Before.Memory), pct(r.After.Memory))
	for _, note := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", note)
	}
	fmt.Fprintf(w, "written: %s\n", out)
}
