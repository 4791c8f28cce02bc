package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
)

// rankDirPrefix starts the name of every rank directory under a local root.
const rankDirPrefix = "rank-"

// RankDir is the directory of rank's engine under root, so every tool agrees on the layout.
func RankDir(root string, rank int) string {
	return filepath.Join(root, fmt.Sprintf("%s%05d", rankDirPrefix, rank))
}

// localRoot is a Source over the engine directories of several ranks on one file system (one
// node's ranks, or a shared volume). It only reads: engines may be writing while it looks, and
// a slot reused under a read is detected and reported as absent.
type localRoot struct {
	dir string
	log zerolog.Logger
}

// LocalRoot reads the rank directories under dir (RankDir(dir, r)).
func LocalRoot(dir string, log zerolog.Logger) Source {
	return &localRoot{dir: dir, log: log.With().Str("component", "checkpoint").Str("source", dir).Logger()}
}

// String names the source for logs.
func (r *localRoot) String() string { return "local:" + r.dir }

// ranks lists the rank numbers that have a directory.
func (r *localRoot) ranks() ([]int, error) {
	entries, err := os.ReadDir(r.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.dir, err)
	}
	var out []int
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), rankDirPrefix) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), rankDirPrefix))
		if err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// DurableSteps lists, newest first, the steps that every rank 0..World-1 of the step's plan has
// committed. A step whose ranks disagree on the world size needs the largest one.
func (r *localRoot) DurableSteps(ctx context.Context) ([]int64, error) {
	ranks, err := r.ranks()
	if err != nil {
		return nil, err
	}
	have := make(map[int64]map[int]bool)
	world := make(map[int64]int)
	for _, rank := range ranks {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("listing durable steps: %w", err)
		}
		d, err := scanDir(RankDir(r.dir, rank))
		if err != nil {
			return nil, err
		}
		for _, s := range d.committedSlots() {
			if s.meta.Rank != rank {
				r.log.Warn().Int("dir_rank", rank).Int("meta_rank", s.meta.Rank).Int64("step", s.meta.Step).
					Msg("ignoring a shard whose metadata names another rank")
				continue
			}
			if have[s.meta.Step] == nil {
				have[s.meta.Step] = make(map[int]bool)
			}
			have[s.meta.Step][rank] = true
			world[s.meta.Step] = max(world[s.meta.Step], s.meta.Plan.World)
		}
		// A commit whose metadata was damaged afterwards still counts as there: reading it
		// reports it corrupt (and a restore falls back past it) instead of the step vanishing.
		for _, dm := range d.damaged {
			if have[dm.step] == nil {
				have[dm.step] = make(map[int]bool)
			}
			have[dm.step][rank] = true
			world[dm.step] = max(world[dm.step], 1)
		}
	}
	var steps []int64
	for step, got := range have {
		complete := world[step] >= 1
		for rank := 0; complete && rank < world[step]; rank++ {
			complete = got[rank]
		}
		if complete {
			steps = append(steps, step)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i] > steps[j] })
	return steps, nil
}

// ReadShard reads and verifies rank's newest committed shard of step.
func (r *localRoot) ReadShard(ctx context.Context, step int64, rank int) (Shard, ShardMeta, error) {
	dir := RankDir(r.dir, rank)
	d, err := scanDir(dir)
	if err != nil {
		return Shard{}, ShardMeta{}, err
	}
	for _, s := range d.committedSlots() {
		if s.meta.Step != step {
			continue
		}
		shard, err := readShardData(ctx, filepath.Join(dir, slotDataName(s.idx)), s.meta)
		// A live engine may have reused the slot under the read: only a slot whose metadata
		// is unchanged afterwards vouches for what was read.
		if m, crc, merr := readSlotMeta(filepath.Join(dir, slotMetaName(s.idx))); merr != nil || m.Seq != s.meta.Seq || crc != s.metaCRC {
			return Shard{}, ShardMeta{}, fmt.Errorf("step %d rank %d: slot %d was reused while being read: %w", step, rank, s.idx, ErrNoCheckpoint)
		}
		if err != nil {
			return Shard{}, ShardMeta{}, err
		}
		return shard, s.meta, nil
	}
	for _, dm := range d.damaged {
		if dm.step == step {
			return Shard{}, ShardMeta{}, fmt.Errorf("step %d rank %d: %s: %w", step, rank, dm.why, ErrCorrupt)
		}
	}
	return Shard{}, ShardMeta{}, fmt.Errorf("step %d rank %d in %s: %w", step, rank, dir, ErrNoCheckpoint)
}
