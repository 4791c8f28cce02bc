package agent

import (
	"context"
	"fmt"

	"github.com/schooner-ml/schooner/checkpoint"
)

// defaultWiring connects the agent to the checkpoint package: the local engine, the remote tier
// and its uploader, and how a restore picks its step.
func defaultWiring() wiring {
	return wiring{
		openEngine:  openEngine,
		localSource: checkpoint.LocalRoot,
		newRemote:   newRemote,
		newUploader: newUploader,
		encode:      checkpoint.EncodeShard,
		tryDurable:  checkpoint.TryDurable,
	}
}

// openEngine opens a rank's checkpoint.Engine under the agent's root.
func openEngine(o engineOptions) (engine, error) {
	e, err := checkpoint.Open(checkpoint.Options{
		Dir:           checkpoint.RankDir(o.Dir, o.Rank),
		Rank:          o.Rank,
		MaxInFlight:   o.Agent.MaxInFlight,
		Writers:       o.Agent.Writers,
		ChunkSize:     o.Agent.ChunkSize,
		StagingBytes:  o.Agent.StagingBytes,
		KeepCommitted: o.Agent.KeepCommitted,
		DirectIO:      o.Agent.DirectIO,
		Logger:        o.Agent.Logger,
		OnCommit:      o.OnCommit,
	})
	if err != nil {
		return nil, err
	}
	return engineAdapter{e}, nil
}

// engineAdapter fits checkpoint.Engine to the agent's engine interface.
type engineAdapter struct{ e *checkpoint.Engine }

func (a engineAdapter) Save(ctx context.Context, r saveArgs) (pending, error) {
	p, err := a.e.Save(ctx, checkpoint.SaveRequest{Step: r.Step, Shard: r.Shard, Plan: r.Plan, Extra: r.Extra, Emergency: r.Emergency, Check: r.Check})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (a engineAdapter) Latest() (checkpoint.ShardMeta, bool) { return a.e.Latest() }

func (a engineAdapter) Intact(ctx context.Context) (checkpoint.ShardMeta, error) {
	return a.e.Intact(ctx)
}

func (a engineAdapter) Acquire(step int64) (*openShard, error) {
	r, err := a.e.Acquire(step)
	if err != nil {
		return nil, err
	}
	return &openShard{Meta: r.Meta, Data: r.ReaderAt, Close: r.Close}, nil
}

func (a engineAdapter) Reserve(n int64) (int, error) { return a.e.Reserve(n) }

func (a engineAdapter) Close() error { return a.e.Close() }

// newRemote is the remote tier over the agent's store.
func newRemote(o Options) (checkpoint.Source, error) {
	return &checkpoint.Remote{Store: o.Store, Retain: o.Retain, StaleAfter: o.StaleUploads, Logger: o.Logger}, nil
}

// newUploader starts a checkpoint.Uploader to remote.
func newUploader(remote checkpoint.Source, o Options, onDone func(checkpoint.ShardMeta, bool, error)) (uploader, error) {
	r, ok := remote.(*checkpoint.Remote)
	if !ok {
		return nil, fmt.Errorf("uploading needs a *checkpoint.Remote, not %T", remote)
	}
	return checkpoint.NewUploader(checkpoint.UploaderOptions{Remote: r, Concurrency: o.UploadConcurrency, OnDone: onDone, Logger: o.Logger}), nil
}
