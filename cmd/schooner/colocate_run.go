package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/colocation"
	"github.com/schooner-ml/schooner/gpu/colocate"
	"github.com/schooner-ml/schooner/internal/atomicfile"
	"github.com/schooner-ml/schooner/serving/stage"
)

// newColocateRunCommand is `schooner colocate run`: a pair on this machine's GPU, supervised
// here, with progress every second and the result at the end.
func newColocateRunCommand(g *globals) *cobra.Command {
	var hp, be, out string
	var cl clusterPairFlags
	var asJSON bool
	pair := colocation.Pair{Params: colocation.DefaultParams()}
	var mps string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run an HP and a BE program colocated on one GPU (this machine's, or a node's through Temporal), under the launch shim",
		Long: `run starts the HP program, then the BE program, each through /bin/sh with the launch shim
preloaded (built here with the C compiler, once), under an MPS daemon of their own where MPS is
installed (--mps), and supervises them until the HP program ends: every --window it reads the
HP side's slowdown (each HP kernel's time from eligible to done against the fastest seen for
it) and moves the BE budget and SM limit; a BE side still too costly at the smallest budget is
paused for a cooldown, then evicted (stopped). Kernel profiles persist in --profiles between
runs. The BE program is stopped when the HP program ends.

With --node the pair runs on that node agent through the Colocation workflow: placement first
decides from the node's interference study (--study, the JSON 'schooner gpu interference run'
wrote, and --kinds, the study workloads the two programs resemble) whether the BE side may share
the GPU at all; --force skips it. Progress comes from the node's heartbeats; 'schooner colocate
status ID' shows it from anywhere.

  schooner colocate run --hp 'python3 -m my_server' --be 'python3 train.py --steps 10000'
  schooner colocate run --hp ./serve --be ./batch --target 1.05 --mps on --json --out pair.json
  schooner colocate run --node i-0abc --study results/h200/i-0abc.json --kinds decode-chain+train-step \
    --hp 'python3 -m my_server' --be 'python3 train.py'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pair.HP = colocation.Program{Command: shellCommand(hp)}
			pair.BE = colocation.Program{Command: shellCommand(be)}
			pair.MPS = colocation.MPSMode(mps)
			if err := pair.WithDefaults().Validate(); err != nil {
				return err
			}
			var res colocation.Result
			var err error
			switch {
			case cl.node != "":
				in, ierr := cl.colocationInput(pair)
				if ierr != nil {
					return ierr
				}
				res, err = runOnNode(cmd, g, cl, in)
			case cl.study != "" || cl.kinds != "" || cl.force:
				return errNoNodeForStudy
			default:
				res, err = runHere(cmd, pair)
			}
			if out != "" {
				if werr := atomicfile.Write(out, func(w io.Writer) error { return printJSON(w, res) }); werr != nil {
					return werr
				}
			}
			if asJSON {
				if perr := printJSON(cmd.OutOrStdout(), res); perr != nil {
					return perr
				}
			} else {
				printColocation(cmd.OutOrStdout(), res)
			}
			if err != nil {
				return err
			}
			if res.HPExit != 0 {
				return fmt.Errorf("the HP program exited with code %d", res.HPExit)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&hp, "hp", "", "the latency-critical program's command line (run with /bin/sh -c)")
	f.StringVar(&be, "be", "", "the best-effort program's command line (run with /bin/sh -c)")
	f.Float64Var(&pair.Params.TargetSlowdown, "target", pair.Params.TargetSlowdown, "the HP side's tolerated slowdown against the GPU alone")
	f.DurationVar(&pair.Params.Budget, "budget", pair.Params.Budget, "starting cap on queued BE work")
	f.DurationVar(&pair.Params.MinBudget, "min-budget", pair.Params.MinBudget, "smallest BE budget before throttling")
	f.DurationVar(&pair.Params.MaxBudget, "max-budget", pair.Params.MaxBudget, "largest BE budget")
	f.DurationVar(&pair.Params.IdleBudget, "idle-budget", 0, "cap on queued BE work while the HP program has no kernel running, where larger than the budget (0: the budget)")
	f.Float64Var(&pair.Params.SMShare, "sm-share", pair.Params.SMShare, "fraction of the SMs complementary BE kernels may hold beside running HP work")
	f.DurationVar(&pair.Params.Window, "window", pair.Params.Window, "how often the supervisor adapts")
	f.DurationVar(&pair.Params.Cooldown, "cooldown", pair.Params.Cooldown, "how long a throttled BE side is paused")
	f.IntVar(&pair.Params.ThrottleAfter, "throttle-after", pair.Params.ThrottleAfter, "windows over target at the smallest budget before a throttle")
	f.IntVar(&pair.Params.EvictAfter, "evict-after", pair.Params.EvictAfter, "throttles in a row before the BE side is evicted")
	f.StringVar(&mps, "mps", string(colocation.MPSAuto), "run the pair under an MPS daemon of its own: auto (where installed), on, off")
	f.DurationVar(&pair.BEDelay, "be-delay", 0, "start the BE program this long after the HP program")
	f.StringVar(&pair.ProfileDir, "profiles", "", "folder of the kernel profiles kept between runs (hp.tsv, be.tsv; default: the cache folder schooner/colocate-profiles of the machine that runs the pair)")
	f.BoolVar(&pair.WholeGEMMs, "whole-gemms", false, "leave a Python BE program's large matrix products whole (by default they are cut to the budget)")
	f.IntVar(&pair.BEThreadPercentage, "be-thread-percentage", 0, "under MPS, limit the BE program to this percentage of the SMs (0: all), so that persistent GEMM kernels fit beside running HP work")
	f.BoolVar(&pair.BENormalPriority, "be-normal-priority", false, "under MPS, run the BE program at the normal client priority (by default below normal, so the HP program's blocks are scheduled first)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.StringVar(&out, "out", "", "also write the result as JSON to this file")
	f.StringVar(&cl.node, "node", "", "run on this node agent through the Colocation workflow (default: here, without Temporal)")
	f.StringVar(&cl.study, "study", "", "with --node: the node's interference study (JSON) placement decides on")
	f.StringVar(&cl.kinds, "kinds", "", "with --node: the study workloads the programs resemble, LC+BE (e.g. decode-chain+train-step)")
	f.BoolVar(&cl.force, "force", false, "with --node: place without interference evidence")
	f.StringVar(&cl.id, "id", "", "with --node: the workflow id (default schooner-colocate-<time>)")
	addClientFlags(f, &cl.cfg)
	return cmd
}

// newColocationRunner is the runner of `colocate run` and of a node agent with GPUs: a Python
// BE program's GEMMs are cut to the budget where trainer/python is found.
func newColocationRunner(log io.Writer) *colocate.Runner {
	r := &colocate.Runner{ProfileDir: filepath.Join(userCacheDir(), "schooner", "colocate-profiles")}
	if dir, err := stage.FindPythonPath(); err == nil {
		r.PythonPath = dir
	} else {
		fmt.Fprintf(log, "colocation: a Python BE program's GEMMs will stay whole: %v\n", err)
	}
	return r
}

// runHere runs the pair on this machine, printing progress every second.
func runHere(cmd *cobra.Command, pair colocation.Pair) (colocation.Result, error) {
	ctx, stop := interruptible(cmd)
	defer stop()
	errw := cmd.ErrOrStderr()
	last := time.Time{}
	return newColocationRunner(errw).Run(ctx, pair, func(s colocation.Status) {
		if time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintln(errw, progressLine(s))
		}
	})
}

func shellCommand(s string) []string {
	if s == "" {
		return nil
	}
	return []string{"/bin/sh", "-c", s}
}

func userCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return d
	}
	return os.TempDir()
}

func progressLine(s colocation.Status) string {
	return fmt.Sprintf("%6.1fs  HP %d kernels, slowdown %.2f× (run %.2f×)  |  BE %d kernels, %s, budget %s, %d SMs beside, waited %s",
		s.Elapsed.Seconds(), s.HPKernels, s.Slowdown, s.MeanSlowdown, s.BEKernels, s.BEState, s.Budget, s.SMLimit, s.BEWaited.Round(time.Millisecond))
}

func printColocation(w io.Writer, r colocation.Result) {
	fmt.Fprintf(w, "HP: exit %d, %d kernels, slowdown %.3f× over the run\n", r.HPExit, r.HPKernels, r.MeanSlowdown)
	beExit := fmt.Sprint(r.BEExit)
	if r.BEExit == -1 {
		beExit = "stopped when the HP side ended"
	}
	fmt.Fprintf(w, "BE: %s, %d kernels (%d beside HP work), waited %s in %d waits, final state %s\n",
		beExit, r.BEKernels, r.BEBeside, r.BEWaited.Round(time.Millisecond), r.BEWaits, r.BEState)
	if by := r.BEWaitsBy; r.BEWaits > 0 {
		fmt.Fprintf(w, "BE waits held first by: HP work not complemented %d, the SM limit %d, the budget %d, a pause %d\n",
			by.HP, by.SMs, by.Budget, by.Paused)
	}
	if r.SMs == 0 && r.HPKernels == 0 && r.BEKernels == 0 {
		// No shim opened a device: a machine without a GPU, or programs that never ran CUDA.
		fmt.Fprint(w, "GPU: none seen, neither program launched a kernel, so nothing was gated")
	} else {
		fmt.Fprintf(w, "GPU: %d SMs, MPS %v", r.SMs, r.MPS)
	}
	if r.Note != "" {
		fmt.Fprintf(w, " (%s)", r.Note)
	}
	fmt.Fprintln(w)
	for _, side := range []struct {
		name  string
		stats map[string]any
	}{{"HP", r.HPShim}, {"BE", r.BEShim}} {
		if side.stats != nil {
			fmt.Fprintf(w, "%s shim: launches %v\n", side.name, side.stats["launches"])
		}
	}
	for _, e := range r.Events {
		fmt.Fprintf(w, "  %s\n", e)
	}
}
