package sim

import (
	"context"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/agent"
)

// Agent is what the simulated trainer needs of its node's checkpoint agent: the calls of
// *agent.Client. It is an interface so a test can count or break calls; the tests in this
// package pass the real client of a real agent.
type Agent interface {
	Hello(ctx context.Context, rank int, plan checkpoint.PlanInfo) (int64, error)
	Save(ctx context.Context, step int64, shard checkpoint.Shard, extra map[string]string, emergency bool) (bool, error)
	Wait(ctx context.Context, step int64, d agent.Durability) (int64, error)
	Load(ctx context.Context, lr agent.LoadRequest) (*agent.Restored, error)
	Poll(ctx context.Context) (agent.PollResult, error)
	Close() error
}

var _ Agent = (*agent.Client)(nil)

// Dialer opens a new connection to the agent. The trainer opens two: one for training (saves,
// polls) and one that blocks in Wait until steps are durable, since one connection serves one
// request at a time.
type Dialer func(ctx context.Context) (Agent, error)

// DialSocket is the Dialer of an agent listening on the Unix socket path.
func DialSocket(path string) Dialer {
	return func(ctx context.Context) (Agent, error) {
		c, err := agent.Dial(ctx, path)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}
