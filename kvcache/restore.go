package kvcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// LayerKV is one layer's restored cache: Data is [2, KVHeads, Tokens, HeadDim], K then V,
// ready to copy into a KV pool.
type LayerKV struct {
	Layer  int
	Layout Layout
	Tokens int
	Data   []byte
}

// K is the layer's keys, [KVHeads, Tokens, HeadDim].
func (l LayerKV) K() []byte { return l.Data[:len(l.Data)/2] }

// V is the layer's values, [KVHeads, Tokens, HeadDim].
func (l LayerKV) V() []byte { return l.Data[len(l.Data)/2:] }

// Restored is a request's cache as read back from a holder.
type Restored struct {
	Request   string
	AckedStep int // the step the cache stands at; -1: nothing to restore
	Tokens    int // positions [0, Tokens) of every layer
	Layers    []LayerKV
}

// Assembler collects a get's chunks (in any order, of any token and layer ranges) and lays
// them out per layer. Pass its Add to Client.Get.
type Assembler struct {
	request string
	layout  Layout
	set     bool
	layers  map[int][]piece
}

// Add takes one chunk; it keeps the chunk's data.
func (a *Assembler) Add(c Chunk) error {
	elem := ElemSize(c.DType)
	nl, nt := c.Layers[1]-c.Layers[0], c.Tokens[1]-c.Tokens[0]
	if elem == 0 || len(c.Shape) != 5 || nl <= 0 || nt < 0 || c.Shape[0] != nl || c.Shape[1] != 2 || c.Shape[3] != nt {
		return fmt.Errorf("chunk of %s: layers %v, tokens %v, dtype %q, shape %v do not agree", c.Request, c.Layers, c.Tokens, c.DType, c.Shape)
	}
	lay := Layout{DType: c.DType, KVHeads: c.Shape[2], HeadDim: c.Shape[4]}
	if !a.set {
		a.request, a.layout, a.set, a.layers = c.Request, lay, true, map[int][]piece{}
	}
	if c.Request != a.request || lay != a.layout {
		return fmt.Errorf("chunk of %s %+v does not match %s %+v", c.Request, lay, a.request, a.layout)
	}
	per := lay.tokenBytes() * nt
	if len(c.Data) != per*nl {
		return fmt.Errorf("chunk of %s tokens %v has %d bytes, shape %v needs %d", c.Request, c.Tokens, len(c.Data), c.Shape, per*nl)
	}
	for i := range nl {
		l := c.Layers[0] + i
		a.layers[l] = append(a.layers[l], piece{t0: c.Tokens[0], t1: c.Tokens[1], data: c.Data[i*per : (i+1)*per]})
	}
	return nil
}

// ErrIncomplete is returned when the chunks leave a hole: a layer missing tokens, or layers
// with different lengths.
var ErrIncomplete = errors.New("kv cache chunks are incomplete")

// Finish lays the chunks out per layer, in layer order, after the get's end.
func (a *Assembler) Finish(end End) (Restored, error) {
	out := Restored{Request: end.Request, AckedStep: end.AckedStep}
	if !a.set {
		if end.AckedStep >= 0 {
			return out, fmt.Errorf("%w: %s is acked to step %d but no chunk came", ErrIncomplete, end.Request, end.AckedStep)
		}
		return out, nil
	}
	ls := make([]int, 0, len(a.layers))
	for l := range a.layers {
		ls = append(ls, l)
	}
	slices.Sort(ls)
	for i, l := range ls {
		if i > 0 && l != ls[i-1]+1 {
			return out, fmt.Errorf("%w: %s has layers %d and %d but none between", ErrIncomplete, a.request, ls[i-1], l)
		}
		ps := a.layers[l]
		slices.SortFunc(ps, func(x, y piece) int { return x.t0 - y.t0 })
		end := 0
		for _, p := range ps {
			if p.t0 != end {
				return out, fmt.Errorf("%w: layer %d of %s jumps from token %d to %d", ErrIncomplete, l, a.request, end, p.t0)
			}
			end = p.t1
		}
		if i == 0 {
			out.Tokens = end
		} else if end != out.Tokens {
			return out, fmt.Errorf("%w: layer %d of %s has %d tokens, layer %d has %d", ErrIncomplete, l, a.request, end, ls[0], out.Tokens)
		}
		data := make([]byte, a.layout.tokenBytes()*end)
		for _, p := range ps {
			copyTokens(data, end, 0, p.data, p.t1-p.t0, p.t0, p.t0, p.t1, a.layout.KVHeads, a.layout.rowBytes())
		}
		out.Layers = append(out.Layers, LayerKV{Layer: l, Layout: a.layout, Tokens: end, Data: data})
	}
	return out, nil
}

// Assemble is Add over chunks, then Finish.
func Assemble(chunks []Chunk, end End) (Restored, error) {
	var a Assembler
	for _, c := range chunks {
		if err := a.Add(c); err != nil {
			return Restored{}, err
		}
	}
	return a.Finish(end)
}

// Restore reads a request's replica from a holder and lays it out per layer.
func (c *Client) Restore(ctx context.Context, request string) (Restored, error) {
	var a Assembler
	end, err := c.Get(ctx, request, a.Add)
	if err != nil {
		return Restored{}, err
	}
	return a.Finish(end)
}

// MinAcked is a request's resume point across the holders of its stages: the smallest acked
// step of their answers, -1 when one of them holds nothing complete (the request must be
// recomputed) or when there is no answer.
func MinAcked(ends ...End) (int, error) {
	if len(ends) == 0 {
		return -1, nil
	}
	m := ends[0].AckedStep
	for _, e := range ends[1:] {
		if e.Request != ends[0].Request {
			return -1, fmt.Errorf("answers about %s and %s mixed", ends[0].Request, e.Request)
		}
		m = min(m, e.AckedStep)
	}
	return max(m, -1), nil
}
