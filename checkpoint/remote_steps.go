package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// StepInfo describes one step in the remote store, durable or not, for listings.
type StepInfo struct {
	Step      int64     `json:"step"`
	Durable   bool      `json:"durable"`
	World     int       `json:"world"` // 0 when no metadata could be read
	Plan      PlanInfo  `json:"plan"`
	Size      int64     `json:"size"` // data bytes stored
	Created   time.Time `json:"created"`
	Emergency bool      `json:"emergency,omitempty"`
	Ranks     []int     `json:"ranks"`             // ranks with data and metadata stored
	Problem   string    `json:"problem,omitempty"` // why the step's details could not be read
}

// remoteStepObjects is what a listing shows of one step.
type remoteStepObjects struct {
	keys   []string
	data   map[int]int64 // rank → data size
	meta   map[int]bool
	commit bool
}

// scanSteps lists the store and groups the layout's objects by step.
func (r *Remote) scanSteps(ctx context.Context) (map[int64]*remoteStepObjects, error) {
	objs, err := r.Store.List(ctx, remoteStepPrefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.Store, err)
	}
	steps := map[int64]*remoteStepObjects{}
	for _, o := range objs {
		k, ok := parseRemoteKey(o.Key)
		if !ok {
			continue
		}
		s := steps[k.step]
		if s == nil {
			s = &remoteStepObjects{data: map[int]int64{}, meta: map[int]bool{}}
			steps[k.step] = s
		}
		s.keys = append(s.keys, o.Key)
		switch {
		case k.commit:
			s.commit = true
		case k.data:
			s.data[k.rank] = o.Size
		case k.meta:
			s.meta[k.rank] = true
		}
	}
	return steps, nil
}

// Steps describes every step in the store, newest first: durable ones from their COMMIT,
// incomplete ones from whatever metadata they have.
func (r *Remote) Steps(ctx context.Context) ([]StepInfo, error) {
	steps, err := r.scanSteps(ctx)
	if err != nil {
		return nil, err
	}
	infos := make([]StepInfo, 0, len(steps))
	for step, s := range steps {
		info := StepInfo{Step: step, Durable: s.commit}
		for rank, size := range s.data {
			info.Size += size
			if s.meta[rank] {
				info.Ranks = append(info.Ranks, rank)
			}
		}
		sort.Ints(info.Ranks)
		if err := r.describe(ctx, &info); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			info.Problem = err.Error()
		}
		infos = append(infos, info)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Step > infos[j].Step })
	return infos, nil
}

// describe fills world, plan, time and emergency flag from the COMMIT or, for an incomplete
// step, from the metadata of the lowest rank that has some.
func (r *Remote) describe(ctx context.Context, info *StepInfo) error {
	if info.Durable {
		c, err := r.Commit(ctx, info.Step)
		if err != nil {
			return err
		}
		info.World, info.Plan, info.Created, info.Emergency = c.World, c.Plan, c.Created, c.Emergency
		return nil
	}
	var errs []error
	for _, rank := range info.Ranks {
		m, err := r.readMeta(ctx, info.Step, rank)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if info.World == 0 {
			info.World, info.Plan = m.Plan.World, m.Plan
		}
		if m.Created.After(info.Created) {
			info.Created = m.Created
		}
		info.Emergency = info.Emergency || m.Emergency
	}
	return errors.Join(errs...)
}

// Prune deletes every step older than the Retain newest durable steps, incomplete ones
// included: a restore always takes a newer durable step, so they can never be needed. COMMIT
// objects go first, so a half-deleted step never looks durable. With no durable step nothing is
// deleted.
func (r *Remote) Prune(ctx context.Context) error {
	keep := r.retain()
	if keep < 0 {
		return nil
	}
	steps, err := r.scanSteps(ctx)
	if err != nil {
		return err
	}
	var durable []int64
	for step, s := range steps {
		if s.commit {
			durable = append(durable, step)
		}
	}
	if len(durable) == 0 {
		return nil
	}
	sort.Slice(durable, func(i, j int) bool { return durable[i] > durable[j] })
	oldest := durable[min(keep, len(durable))-1]
	var commits, rest []string
	var pruned []int64
	for step, s := range steps {
		if step >= oldest {
			continue
		}
		pruned = append(pruned, step)
		for _, k := range s.keys {
			if k == remoteCommitKey(step) {
				commits = append(commits, k)
			} else {
				rest = append(rest, k)
			}
		}
	}
	if len(pruned) == 0 {
		return nil
	}
	sort.Slice(pruned, func(i, j int) bool { return pruned[i] < pruned[j] })
	for _, keys := range [][]string{commits, rest} {
		if len(keys) == 0 {
			continue
		}
		if err := r.Store.Delete(ctx, keys...); err != nil {
			return fmt.Errorf("pruning steps %v: %w", pruned, err)
		}
	}
	r.Logger.Info().Ints64("steps", pruned).Int64("oldest_kept", oldest).Str("store", r.Store.String()).
		Msg("pruned old checkpoints from the remote store")
	return nil
}
