package agent

import (
	"context"
	"fmt"

	"github.com/schooner-ml/schooner/checkpoint"
)

// Save copies the shard into the client's shared-memory buffer and hands it to the agent. It
// returns once the agent has copied the bytes out (the shard's memory may change again) and
// says whether the agent took it as an emergency save (asked for, or after a notice).
func (c *Client) Save(ctx context.Context, step int64, shard checkpoint.Shard, extra map[string]string, emergency bool) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shmDir == "" {
		return false, fmt.Errorf("save of step %d before hello", step)
	}
	index := make([]checkpoint.TensorMeta, len(shard.Tensors))
	var size int64
	for i, t := range shard.Tensors {
		size = alignUp(size, loadAlign)
		index[i] = checkpoint.TensorMeta{Name: t.Name, Layer: t.Layer, DType: t.DType, Shape: t.Shape, Offset: size, Length: int64(len(t.Data))}
		size += int64(len(t.Data))
	}
	if err := c.growBuffer(size); err != nil {
		return false, err
	}
	for i, t := range shard.Tensors {
		copy(c.buf.data[index[i].Offset:], t.Data)
	}
	resp, err := c.callLocked(ctx, Request{Op: OpSave, Step: step, Shm: c.buf.path, Tensors: index, Extra: extra, Emergency: emergency})
	if err != nil {
		return false, err
	}
	return resp.Emergency, nil
}

// growBuffer makes sure the save buffer holds size bytes, replacing it by one half again as big
// when it does not, so a shard that grows a little does not map a new file every step.
func (c *Client) growBuffer(size int64) error {
	if c.buf != nil && c.buf.size() >= size {
		return nil
	}
	want := max(size+size/2, 1<<20)
	m, err := createShm(c.shmDir, "save", want)
	if err != nil {
		return fmt.Errorf("growing the save buffer to %d bytes: %w", want, err)
	}
	c.dropBuffer()
	c.buf = m
	return nil
}

// dropBuffer unmaps and removes the save buffer.
func (c *Client) dropBuffer() {
	if c.buf == nil {
		return
	}
	_ = c.buf.unmap()
	_ = removeShm(c.buf.path)
	c.buf = nil
}

// LoadRequest selects what to restore (see Request for the meaning of each field).
type LoadRequest struct {
	Step   int64 // -1: the newest durable step
	Rank   *int  // whose shard; the hello rank when nil
	Stage  *int  // one pipeline stage of Plan
	Plan   *checkpoint.PlanInfo
	Layers []int // [first, end)
	All    bool
}

// Restored is a restored step.
type Restored struct {
	Step    int64
	Plan    checkpoint.PlanInfo
	Extra   map[string]string
	Source  string
	Tensors []checkpoint.Tensor
}

// Load restores a step: the agent writes the selected tensors into a fresh shared-memory file;
// Load copies them out and removes the file.
func (c *Client) Load(ctx context.Context, lr LoadRequest) (*Restored, error) {
	resp, err := c.call(ctx, Request{Op: OpLoad, Step: lr.Step, Rank: lr.Rank, Stage: lr.Stage, Plan: lr.Plan, Layers: lr.Layers, All: lr.All})
	if err != nil {
		return nil, err
	}
	defer func() { _ = removeShm(resp.Shm) }()
	m, err := openShm(resp.Shm, false)
	if err != nil {
		return nil, fmt.Errorf("reading restore of step %d: %w", resp.Step, err)
	}
	defer func() { _ = m.unmap() }()
	out := &Restored{Step: resp.Step, Extra: resp.Extra, Source: resp.Source}
	if resp.Plan != nil {
		out.Plan = *resp.Plan
	}
	var total int64
	for _, t := range resp.Tensors {
		if t.Offset < 0 || t.Length < 0 || t.Offset+t.Length > m.size() {
			return nil, fmt.Errorf("restore of step %d: tensor %s lies outside the %d bytes sent", resp.Step, t.Name, m.size())
		}
		total += t.Length
	}
	data := make([]byte, total)
	for _, t := range resp.Tensors {
		b := data[:t.Length:t.Length]
		data = data[t.Length:]
		copy(b, m.data[t.Offset:t.Offset+t.Length])
		out.Tensors = append(out.Tensors, checkpoint.Tensor{Name: t.Name, Layer: t.Layer, DType: t.DType, Shape: t.Shape, Data: b})
	}
	return out, nil
}
