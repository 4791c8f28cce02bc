package main

import (
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

// profileResult is the profile as written and as the planner's commands will see it.
type profileResult struct {
	file   *profiles.ModelFile
	loaded *planner.ModelProfile
	dir    string
}

// check reads the profile back the way 'schooner plan simulate --profiles DIR' will, so a
// profile that the planner cannot use fails here, on the GPU node, and not later on the
// control plane.
func (r *profileRun) check() (*profileResult, error) {
	f, err := profiles.ReadModelFile(r.out)
	if err != nil {
		return nil, fmt.Errorf("checking the profile the profiler wrote, %w", err)
	}
	if want := r.arch.Layers + 2; f.NumLayers() != want {
		return nil, fmt.Errorf("checking the profile the profiler wrote, %s has %d layers, want %d (embedding, %d blocks, head)",
			r.out, f.NumLayers(), want, r.arch.Layers)
	}
	if c := f.Compute[r.gpu]; c == nil || len(c.Times) == 0 {
		return nil, fmt.Errorf("checking the profile the profiler wrote, %s has no compute for %s, the GPU type it was asked to measure (it has %s)",
			r.out, r.gpu, joinOrNoneStrings(computeGPUs(f.Compute)))
	}
	dir := filepath.Dir(r.out)
	m, err := profiles.Load(f.Name, dir)
	if err != nil {
		return nil, fmt.Errorf("loading %s as 'schooner plan simulate --profiles %s' would, %w", f.Name, dir, err)
	}
	if !reflect.DeepEqual(m.Compute[r.gpu], f.Compute[r.gpu]) {
		return nil, fmt.Errorf("loading %s from %s, another file there describes the same model and is read instead of %s: give each profile a directory of its own or remove the other",
			f.Name, dir, filepath.Base(r.out))
	}
	return &profileResult{file: f, loaded: m, dir: dir}, nil
}

// printProfileSummary says what was measured, in the units a planner user thinks in: the
// time of one microbatch through the whole model, and the peak memory of the whole model on
// one GPU group as the simulator will predict it.
func printProfileSummary(out io.Writer, r *profileRun, res *profileResult) {
	f, c := res.file, res.file.Compute[r.gpu]
	n := f.NumLayers()
	fmt.Fprintf(out, "\nwrote %s (%s; loads with --profiles %s)\n\n", r.out, profiles.ModelFormat, res.dir)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s: %d transformer blocks, %d planner layers (embedding, blocks, head), seq len %d\n",
		f.Name, r.arch.Layers, n, f.SeqLen)
	kind := "measured"
	if c.Derived {
		kind = "DERIVED, not measured"
	}
	fmt.Fprintf(tw, "GPU\t%s (%s)\n", r.gpu, kind)
	if c.Source != "" {
		fmt.Fprintf(tw, "source\t%s\n", c.Source)
	}
	tps := sortedIntKeys(c.Times)
	fmt.Fprintf(tw, "TP degrees\t%s\n", joinInts(tps))
	var mbss []int
	for _, tp := range tps {
		mbss = mergeInts(mbss, sortedIntKeys(c.Times[tp]))
	}
	fmt.Fprintf(tw, "micro-batch sizes\t%s\n", joinInts(mbss))
	if mm := f.MemoryModel; mm != nil {
		fmt.Fprintf(tw, "memory model\t%.1f bytes per parameter, %s overhead per GPU (measured)\n", mm.BytesPerParam, fmtGiB2(mm.Overhead(r.gpu)))
	} else {
		fmt.Fprintf(tw, "memory model\tnone in the file: the planner's defaults apply (%d bytes per parameter, %s overhead)\n",
			planner.TrainingBytesPerParam, fmtGiB2(planner.MemOverheadBytes))
	}
	_ = tw.Flush()
	fmt.Fprintln(out)

	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TP\tMBS\tFWD+BWD\tPER SAMPLE\tUPDATE\tPEAK MEM (whole model)")
	for _, tp := range tps {
		for _, mbs := range sortedIntKeys(c.Times[tp]) {
			var fwdbwd, update float64
			for _, l := range c.Times[tp][mbs] {
				fwdbwd += l.Fwd + l.Bwd
				update += l.Update
			}
			peak := "-"
			if b, ok := planner.PeakMemory(res.loaded, r.gpu, tp, mbs, 0, n-1, 0, 1, 1); ok {
				peak = fmtGiB2(b)
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", tp, mbs, fmtSeconds(fwdbwd), fmtSeconds(fwdbwd/float64(mbs)), fmtSeconds(update), peak)
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "\nFWD+BWD is one microbatch through every layer; PEAK MEM is the simulator's prediction for the whole model on one GPU group.")
	if missing := missingMeasurements(r, c); len(missing) > 0 {
		fmt.Fprintf(out, "note: not measured (the profiler left them out, e.g. out of memory): %s\n", strings.Join(missing, ", "))
	}
}

// missingMeasurements lists the requested (TP, micro-batch size) pairs the file lacks.
func missingMeasurements(r *profileRun, c *planner.Compute) []string {
	var out []string
	for _, tp := range r.tps {
		for _, mbs := range r.mbs {
			if _, ok := c.Times[tp][mbs]; !ok {
				out = append(out, fmt.Sprintf("TP %d mbs %d", tp, mbs))
			}
		}
	}
	return out
}

func sortedIntKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// mergeInts is the sorted union of two sorted lists.
func mergeInts(a, b []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, x := range append(append([]int(nil), a...), b...) {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Ints(out)
	return out
}

// computeGPUs lists the GPU types a profile has compute for, sorted.
func computeGPUs(c map[gpu.Type]*planner.Compute) []string {
	out := make([]string, 0, len(c))
	for g := range c {
		out = append(out, string(g))
	}
	sort.Strings(out)
	return out
}

func joinOrNoneStrings(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// fmtGiB2 shows the second decimal: a micro-batch's activations are often under 0.1 GiB.
func fmtGiB2(b float64) string { return fmt.Sprintf("%.2f GiB", b/(1<<30)) }
