package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/workers"
)

// storeFlagHelp describes --store once for every command that takes it.
const storeFlagHelp = "where the checkpoints are: s3://bucket/prefix[?endpoint=…&region=…], file:///dir, or local:///dir (a node's engine directories)"

func addCkptStoreCommands(cmd *cobra.Command, g *globals) {
	cmd.AddCommand(newCkptLsCommand(g), newCkptVerifyCommand(g), newCkptRestoreCommand(g))
}

// ckptLogger is the shared logger, writing where the command's errors go (so tests see it).
func ckptLogger(cmd *cobra.Command, g *globals) (zerolog.Logger, error) {
	return workers.NewLogger(workers.LogOptions{Level: g.logLevel, Format: g.logFormat, Out: cmd.ErrOrStderr()})
}

// openCkptSource opens --store with the command's logger (ckptLogger), which it returns too:
// the remote tier over an object store, or a local root of engine directories (local:///dir).
// remote is nil for a local root.
func openCkptSource(cmd *cobra.Command, g *globals, url string) (src checkpoint.Source, remote *checkpoint.Remote, log zerolog.Logger, err error) {
	log, err = ckptLogger(cmd, g)
	if err != nil {
		return nil, nil, log, err
	}
	if url == "" {
		return nil, nil, log, errors.New("--store is required, e.g. --store s3://bucket/job-7 or --store file:///var/lib/ckpt")
	}
	if rest, ok := strings.CutPrefix(url, "local://"); ok {
		if !filepath.IsAbs(rest) {
			return nil, nil, log, fmt.Errorf("store URL %q: the path must be absolute, as in local:///var/lib/schooner/ckpt", url)
		}
		if err := storeDirExists(url, rest); err != nil {
			return nil, nil, log, err
		}
		return checkpoint.LocalRoot(rest, log), nil, log, nil
	}
	if u, perr := store.ParseURL(url); perr == nil && u.Scheme == store.SchemeFile {
		if err := storeDirExists(url, u.Dir); err != nil {
			return nil, nil, log, err
		}
	}
	s, err := store.Open(cmd.Context(), url, store.WithLogger(log))
	if err != nil {
		return nil, nil, log, err
	}
	// Retain < 0: these commands only read, and must never prune.
	r := &checkpoint.Remote{Store: s, Retain: -1, Logger: log}
	return r, r, log, nil
}

// storeDirExists refuses a directory store that is not there: these commands only read, and
// "no checkpoints" for a mistyped path reads like an empty store.
func storeDirExists(url, dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store %q: %s does not exist (nothing was ever checkpointed there; check the path)", url, dir)
	case err != nil:
		return fmt.Errorf("store %q: %w", url, err)
	case !fi.IsDir():
		return fmt.Errorf("store %q: %s is not a directory", url, dir)
	}
	return nil
}

func newCkptLsCommand(g *globals) *cobra.Command {
	var url string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the checkpoint steps in a store, newest first",
		Long: `ls lists every step in a checkpoint store, newest first: durable steps (every rank's shard
uploaded and the step's COMMIT written) and incomplete ones (an upload in progress or
abandoned), with the parallel plan they were taken under, their size, when they were taken
and whether they were emergency checkpoints taken on a preemption notice.

  schooner ckpt ls --store s3://ckpts/job-7
  schooner ckpt ls --store file:///mnt/nfs/ckpt --json
  schooner ckpt ls --store local:///var/lib/schooner/ckpt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, remote, _, err := openCkptSource(cmd, g, url)
			if err != nil {
				return err
			}
			var infos []checkpoint.StepInfo
			if remote != nil {
				infos, err = remote.Steps(cmd.Context())
			} else {
				infos, err = localStepInfos(cmd.Context(), src)
			}
			if err != nil {
				return err
			}
			if asJSON {
				if infos == nil {
					infos = []checkpoint.StepInfo{}
				}
				return printJSON(cmd.OutOrStdout(), infos)
			}
			printStepInfos(cmd.OutOrStdout(), infos)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "store", "", storeFlagHelp)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the steps as JSON")
	return cmd
}

// localStepInfos describes a local root's durable steps; only those are visible there.
func localStepInfos(ctx context.Context, src checkpoint.Source) ([]checkpoint.StepInfo, error) {
	steps, err := src.DurableSteps(ctx)
	if err != nil {
		return nil, err
	}
	infos := make([]checkpoint.StepInfo, len(steps))
	for i, s := range steps {
		infos[i] = checkpoint.StepInfo{Step: s, Durable: true}
	}
	return infos, nil
}

func printStepInfos(out io.Writer, infos []checkpoint.StepInfo) {
	printTable(out, "no checkpoints", "STEP\tSTATE\tWORLD\tPLAN\tSIZE\tCREATED\tEMERGENCY", infos, func(tw io.Writer, in checkpoint.StepInfo) {
		state := "durable"
		if !in.Durable {
			state = fmt.Sprintf("incomplete (%d of %d ranks)", len(in.Ranks), in.World)
		}
		if in.Problem != "" {
			state += " [unreadable: " + in.Problem + "]"
		}
		plan, world, size, created := "-", "-", "-", "-"
		if in.World > 0 {
			world = fmt.Sprint(in.World)
			plan = fmt.Sprintf("pp=%d dp=%d tp=%d", in.Plan.PP, in.Plan.DP, in.Plan.TP)
		}
		if in.Size > 0 {
			size = humanBytes(in.Size)
		}
		if !in.Created.IsZero() {
			created = in.Created.Local().Format(time.DateTime)
		}
		emergency := "-"
		if in.Emergency {
			emergency = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", in.Step, state, world, plan, size, created, emergency)
	})
}

// humanBytes prints a byte count in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// sortedDesc sorts steps newest first.
func sortedDesc(steps []int64) []int64 {
	sort.Slice(steps, func(i, j int) bool { return steps[i] > steps[j] })
	return steps
}
