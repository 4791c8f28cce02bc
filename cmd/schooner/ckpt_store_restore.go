package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/internal/atomicfile"
)

// restoreFlags are the inputs of `schooner ckpt restore`.
type restoreFlags struct {
	store string
	to    string
	step  int64
	stage int
	pp    int
	force bool
}

// restoreManifest is DIR/step-N.json: what was restored, from where, under which plan.
type restoreManifest struct {
	Step        int64                   `json:"step"`
	Source      string                  `json:"source"`
	Plan        checkpoint.PlanInfo     `json:"plan"`
	Stage       *int                    `json:"stage,omitempty"`
	StageLayers *checkpoint.StageLayers `json:"stage_layers,omitempty"`
	Tensors     map[string]int          `json:"tensors"` // name → layer
	Shards      []checkpoint.ShardMeta  `json:"shards"`
	Restored    time.Time               `json:"restored"`
}

func newCkptRestoreCommand(g *globals) *cobra.Command {
	var f restoreFlags
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Restore a checkpoint into a safetensors file",
		Long: `restore reads a step's shards from every rank, verifies them, merges them by tensor name and
writes DIR/step-N.safetensors (loadable with safetensors.torch.load_file) and DIR/step-N.json
(the plan, each tensor's layer and the shards' metadata).

Without --step it takes the newest durable step and falls back, with a warning, past steps
that turn out corrupt or incomplete; with --step it restores exactly that step or fails.
--stage K writes only what pipeline stage K loads (its layers and the layer-less tensors);
--pp P splits the layers into P stages (default: the checkpoint's own pipeline), so a
checkpoint taken under one pipeline split restores under another.

  schooner ckpt restore --store s3://ckpts/job-7 --to ./restored
  schooner ckpt restore --store s3://ckpts/job-7 --to ./restored --step 1200 --force
  schooner ckpt restore --store local:///var/lib/schooner/ckpt --to /tmp/r --stage 1 --pp 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRestore(cmd, g, &f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.store, "store", "", storeFlagHelp)
	fs.StringVar(&f.to, "to", "", "directory to write step-N.safetensors and step-N.json into (created if missing)")
	fs.Int64Var(&f.step, "step", -1, "the step to restore (default: the newest durable step that verifies)")
	fs.IntVar(&f.stage, "stage", -1, "restore only this pipeline stage's tensors (default: all)")
	fs.IntVar(&f.pp, "pp", 0, "pipeline stages to split the layers into for --stage (default: the checkpoint's)")
	fs.BoolVar(&f.force, "force", false, "overwrite existing output files")
	return cmd
}

func runRestore(cmd *cobra.Command, g *globals, f *restoreFlags) error {
	if f.to == "" {
		return errors.New("--to is required: the directory to restore into")
	}
	if f.pp < 0 || (f.pp > 0 && f.stage < 0) {
		return errors.New("--pp needs --stage, and must be positive")
	}
	src, _, log, err := openCkptSource(cmd, g, f.store)
	if err != nil {
		return err
	}
	if f.step >= 0 {
		if err := refuseOverwrite(f.to, f.step, f.force); err != nil {
			return err
		}
	}
	snap, err := checkpoint.LoadSnapshot(cmd.Context(), &progressSource{Source: src, out: cmd.ErrOrStderr()}, f.step, log)
	if err != nil {
		return err
	}
	if err := refuseOverwrite(f.to, snap.Step, f.force); err != nil {
		return err
	}
	m := restoreManifest{Step: snap.Step, Source: src.String(), Plan: snap.Plan, Shards: snap.Shards,
		Tensors: map[string]int{}, Restored: time.Now().UTC()}
	var tensors []checkpoint.Tensor
	if f.stage >= 0 {
		plan := stagePlan(snap, f.pp)
		if f.stage >= len(plan.Stages) {
			return fmt.Errorf("--stage %d: the pipeline has stages 0..%d", f.stage, len(plan.Stages)-1)
		}
		tensors = snap.ForStage(plan, f.stage)
		m.Stage, m.StageLayers = &f.stage, &plan.Stages[f.stage]
	} else {
		for _, n := range snap.Names() {
			tensors = append(tensors, snap.Tensors[n])
		}
	}
	for _, t := range tensors {
		m.Tensors[t.Name] = t.Layer
	}
	if err := os.MkdirAll(f.to, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", f.to, err)
	}
	base := filepath.Join(f.to, fmt.Sprintf("step-%d", snap.Step))
	meta := map[string]string{"format": "pt", "schooner.step": strconv.FormatInt(snap.Step, 10)}
	if err := atomicfile.Write(base+".safetensors", func(w io.Writer) error {
		return checkpoint.WriteSafetensors(w, tensors, meta)
	}); err != nil {
		return err
	}
	if err := atomicfile.Write(base+".json", func(w io.Writer) error { return printJSON(w, m) }); err != nil {
		return err
	}
	var size int64
	for _, t := range tensors {
		size += int64(len(t.Data))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "restored step %d from %s: %d tensors, %s → %s.safetensors\n",
		snap.Step, src, len(tensors), humanBytes(size), base)
	return nil
}

// stagePlan is the pipeline split --stage refers to: the checkpoint's own stages when pp is 0
// or equals its pipeline degree, else the layers divided as evenly as possible into pp stages.
func stagePlan(snap *checkpoint.Snapshot, pp int) checkpoint.PlanInfo {
	if pp == 0 {
		pp = max(snap.Plan.PP, 1)
	}
	if len(snap.Plan.Stages) == pp {
		return snap.Plan
	}
	layers := 0
	for _, t := range snap.Tensors {
		layers = max(layers, t.Layer+1)
	}
	plan := checkpoint.PlanInfo{World: pp, PP: pp, DP: 1, TP: 1}
	for i := range pp {
		plan.Stages = append(plan.Stages, checkpoint.StageLayers{First: i * layers / pp, End: (i + 1) * layers / pp})
	}
	return plan
}

// refuseOverwrite fails if a restore of step would replace files, unless forced.
func refuseOverwrite(dir string, step int64, force bool) error {
	if force {
		return nil
	}
	for _, ext := range []string{".safetensors", ".json"} {
		p := filepath.Join(dir, fmt.Sprintf("step-%d%s", step, ext))
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s exists; pass --force to overwrite it", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("checking %s: %w", p, err)
		}
	}
	return nil
}

// progressSource reports each shard read on stderr: a large restore takes minutes.
type progressSource struct {
	checkpoint.Source
	out io.Writer
}

func (p *progressSource) ReadShard(ctx context.Context, step int64, rank int) (checkpoint.Shard, checkpoint.ShardMeta, error) {
	start := time.Now()
	shard, meta, err := p.Source.ReadShard(ctx, step, rank)
	if err == nil {
		fmt.Fprintf(p.out, "read step %d rank %d (of %d): %s in %.1fs\n", step, rank, meta.Plan.World, humanBytes(meta.Size), time.Since(start).Seconds())
	}
	return shard, meta, err
}
