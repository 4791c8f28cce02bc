package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/checkpoint"
)

// Client is a trainer rank's connection to its node's agent (the Go side of the protocol, used
// by the simulated trainer and the tests). Calls are safe from several goroutines and run one
// at a time. A call whose context ends before the reply leaves the connection in an unknown
// state: the Client then refuses further calls, and the trainer dials again.
type Client struct {
	nc net.Conn
	r  *bufio.Reader

	mu     sync.Mutex
	broken error
	shmDir string
	rank   int
	buf    *mapping // the save buffer, reused while big enough
}

// Dial connects to the agent listening on the Unix socket path.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dialing checkpoint agent at %s: %w", path, err)
	}
	return &Client{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), rank: -1}, nil
}

// Hello binds the connection to rank under plan (the agent opens the rank's engine) and
// returns the rank's newest committed step, -1 for none.
func (c *Client) Hello(ctx context.Context, rank int, plan checkpoint.PlanInfo) (int64, error) {
	resp, err := c.call(ctx, Request{Op: OpHello, Rank: &rank, World: plan.World, Plan: &plan})
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.shmDir, c.rank = resp.ShmDir, rank
	c.mu.Unlock()
	if resp.Latest == nil {
		return -1, nil
	}
	return *resp.Latest, nil
}

// Reserve readies the rank's slots for shards of n bytes (after Hello) and returns how many
// hold that now.
func (c *Client) Reserve(ctx context.Context, n int64) (int, error) {
	resp, err := c.call(ctx, Request{Op: OpReserve, Bytes: n})
	return resp.Slots, err
}

// Wait blocks until step is committed locally or durable in the store, and returns the step
// that is: step itself, or a newer one that superseded it.
func (c *Client) Wait(ctx context.Context, step int64, d Durability) (int64, error) {
	resp, err := c.call(ctx, Request{Op: OpWait, Step: step, Durable: d})
	if err != nil {
		return 0, err
	}
	return resp.Step, nil
}

// Status returns the agent's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	resp, err := c.call(ctx, Request{Op: OpStatus})
	if err != nil {
		return Status{}, err
	}
	if resp.Status == nil {
		return Status{}, fmt.Errorf("agent sent a status reply without a status")
	}
	return *resp.Status, nil
}

// PollResult says whether to checkpoint now, and the preemption deadline when a notice came.
type PollResult struct {
	CheckpointNow bool
	Deadline      time.Time // zero without a notice
}

// Poll asks whether the rank should checkpoint now; cheap enough to call every step.
func (c *Client) Poll(ctx context.Context) (PollResult, error) {
	resp, err := c.call(ctx, Request{Op: OpPoll})
	if err != nil {
		return PollResult{}, err
	}
	p := PollResult{CheckpointNow: resp.CheckpointNow}
	if resp.Deadline != nil {
		p.Deadline = *resp.Deadline
	}
	return p, nil
}

// Close closes the connection and removes the save buffer.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken == nil {
		c.broken = checkpoint.ErrClosed
	}
	err := c.nc.Close()
	c.dropBuffer()
	return err
}

// call sends one request and reads its reply.
func (c *Client) call(ctx context.Context, req Request) (Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.callLocked(ctx, req)
}

func (c *Client) callLocked(ctx context.Context, req Request) (Response, error) {
	if c.broken != nil {
		return Response{}, fmt.Errorf("checkpoint agent connection unusable: %w", c.broken)
	}
	dl, _ := ctx.Deadline()
	if err := c.nc.SetDeadline(dl); err != nil {
		return Response{}, fmt.Errorf("setting deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	line, err := json.Marshal(req)
	if err != nil {
		return Response{}, fmt.Errorf("encoding %s request: %w", req.Op, err)
	}
	resp, err := c.roundTrip(append(line, '\n'))
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		c.broken = err
		return Response{}, fmt.Errorf("%s request to checkpoint agent: %w", req.Op, err)
	}
	if !resp.OK {
		return resp, fmt.Errorf("%s: %w", req.Op, &Error{Code: resp.Code, Message: resp.Error})
	}
	return resp, nil
}

func (c *Client) roundTrip(line []byte) (Response, error) {
	if _, err := c.nc.Write(line); err != nil {
		return Response{}, err
	}
	reply, err := readLine(c.r)
	if err != nil {
		return Response{}, err
	}
	var resp Response
	if err := json.Unmarshal(reply, &resp); err != nil {
		return Response{}, fmt.Errorf("decoding reply: %w", err)
	}
	return resp, nil
}

// Error is a request the agent refused or failed. It matches checkpoint.ErrNoCheckpoint and
// checkpoint.ErrClosed with errors.Is, so callers handle the agent like the engine.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return "checkpoint agent: " + e.Message }

// Is maps the error codes onto the checkpoint package's errors.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case CodeNoCheckpoint:
		return errors.Is(target, checkpoint.ErrNoCheckpoint)
	case CodeClosed:
		return errors.Is(target, checkpoint.ErrClosed)
	}
	return false
}
