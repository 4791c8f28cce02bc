package kvcache

import (
	"fmt"
	"math"
)

// Ops of section 3 of docs/serving-protocol.md.
const (
	opHello          = "hello"
	opHelloOK        = "hello_ok"
	opPut            = "put"
	opPutStep        = "put_step"
	opAck            = "ack"
	opError          = "error"
	opDrop           = "drop"
	opDropDeployment = "drop_deployment"
	opDropped        = "dropped"
	opGet            = "get"
	opChunk          = "chunk"
	opEnd            = "end"
	opList           = "list"
	opHeld           = "held"
	opShm            = "shm"
	opLend           = "lend"
	opLent           = "lent"
	opFilled         = "filled"
)

// Roles a peer names in its hello. The holder accepts every op on either; the role says what
// the peer does, for logs.
const (
	RoleWriter = "writer"
	RoleReader = "reader"
)

// KindPrompt is the only kind of put: the cache of a request's tokens, layer by layer.
const KindPrompt = "prompt"

// Wire headers. Field names and JSON spellings are the protocol's; keep them in step with the doc.

type putMsg struct {
	Op      string  `json:"op"`
	Request string  `json:"request"`
	Kind    string  `json:"kind"`
	Layer   int     `json:"layer"`
	Tokens  [2]int  `json:"tokens"`
	DType   string  `json:"dtype"`
	Shape   []int   `json:"shape"`
	Last    bool    `json:"last,omitempty"`
	Layers  *[2]int `json:"layers,omitempty"`
	Step    *int    `json:"step,omitempty"`
}

type entryMsg struct {
	Request string `json:"request"`
	Token   int    `json:"token"`
	// Step is the entry's own step; absent, the frame's. Continuous batching mixes requests
	// at different steps in one put_step.
	Step *int `json:"step,omitempty"`
}

// stepOf is the step an entry of a put_step stands for: its own, else the frame's.
func (e entryMsg) stepOf(frameStep int) int {
	if e.Step != nil {
		return *e.Step
	}
	return frameStep
}

type putStepMsg struct {
	Op      string     `json:"op"`
	Step    int        `json:"step"`
	Entries []entryMsg `json:"entries"`
	Layers  [2]int     `json:"layers"`
	DType   string     `json:"dtype"`
	Shape   []int      `json:"shape"`
}

type ackMsg struct {
	Op      string  `json:"op"`
	Request string  `json:"request"`
	Step    int     `json:"step"`
	Layer   *int    `json:"layer,omitempty"`
	Tokens  *[2]int `json:"tokens,omitempty"`
}

type errorMsg struct {
	Op      string `json:"op"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Request string `json:"request,omitempty"`
	Step    *int   `json:"step,omitempty"`
}

type requestMsg struct {
	Op      string `json:"op"`
	Request string `json:"request"`
	// Shm asks a get over a unix socket for one shm answer (the replica in a memory file
	// passed with the frame) instead of chunks.
	Shm bool `json:"shm,omitempty"`
	// Into asks a get over a unix socket to write the replica into the memory the reader lent
	// (see lendMsg) and answer with an shm frame that passes no file.
	Into bool `json:"into,omitempty"`
	// Stream, with Into, sends the shm frame before the copy and then filled frames as the
	// chunks land, so the reader moves each to its GPU while the holder copies the next.
	Stream bool `json:"stream,omitempty"`
	// Arena, with Into and Stream, lets the answer point at the prompt's pieces where they lie
	// in the arena (the reader mapped it at lend) and copy only the decode steps.
	Arena bool `json:"arena,omitempty"`
	// WaitMS lets a get wait, at most this long, while its replica is short of WantStep
	// (default 0: the complete prompt) and another process's writer of the stage is still
	// sending (writers.go): a stage handed over keeps streaming what it queued.
	WaitMS   int  `json:"wait_ms,omitempty"`
	WantStep *int `json:"want_step,omitempty"`
	// Expect, with WaitMS, holds the get until the replica reaches WantStep whether or not a
	// writer is sending now: the reader knows the prompt is on its way (a token worker taking
	// a request from a prompt worker, which may not have sent its first byte yet).
	Expect bool `json:"expect,omitempty"`
	// FromStep (> 0) asks for the decode steps from this one on, without the prompt: a reader
	// that preloaded the replica up to step FromStep-1 fetches only what came since (from.go).
	FromStep int `json:"from_step,omitempty"`
}

// filledMsg says chunks [0, Upto) of a streamed into-get are in the lent memory; the last one
// of a get has Upto equal to its number of chunks.
type filledMsg struct {
	Op      string `json:"op"`
	Request string `json:"request"`
	Upto    int    `json:"upto"`
}

// lendMsg lends the holder a reader's memory file (by path, under LendDir with LendPrefix) of
// Size bytes: the holder maps it once and writes later replicas into it, so a reader that
// page-locked the file for its GPU restores with one DMA and no copy on its side.
type lendMsg struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Arena asks for the holder's arena too (arena.go): its descriptor comes with lent.
	Arena bool `json:"arena,omitempty"`
}

type lentMsg struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	// ArenaSize is the bytes of the arena whose read-only descriptor rides on this frame (0:
	// none, and ArenaError says why when one was asked for).
	ArenaSize  int64  `json:"arena_size,omitempty"`
	ArenaError string `json:"arena_error,omitempty"`
}

type droppedMsg struct {
	Op         string `json:"op"`
	Request    string `json:"request,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	Requests   int    `json:"requests"`
	Bytes      int64  `json:"bytes"`
}

type chunkMsg struct {
	Op      string `json:"op"`
	Request string `json:"request"`
	Layers  [2]int `json:"layers"`
	Tokens  [2]int `json:"tokens"`
	DType   string `json:"dtype"`
	Shape   []int  `json:"shape"`
}

type endMsg struct {
	Op        string `json:"op"`
	Request   string `json:"request"`
	AckedStep int    `json:"acked_step"`
	// FromStep repeats a get's from_step: the chunks start at that step, not at token 0. A
	// holder that predates the field sends neither it nor fewer chunks.
	FromStep int `json:"from_step,omitempty"`
}

type heldMsg struct {
	Op       string `json:"op"`
	Requests []Held `json:"requests"`
}

type helloMsg struct {
	Op         string `json:"op"`
	Role       string `json:"role"`
	Deployment string `json:"deployment"`
	Stage      int    `json:"stage"`
	Version    int    `json:"version"`
	// Process names the peer's process (optional): a get that waits for another process's
	// writer (requestMsg.WaitMS) does not wait for its own.
	Process string `json:"process,omitempty"`
}

type helloOKMsg struct {
	Op      string `json:"op"`
	Version int    `json:"version"`
}

// Held is one request a holder keeps for the connection's (deployment, stage): the answer to list.
type Held struct {
	Request   string `json:"request"`
	AckedStep int    `json:"acked_step"`
	Bytes     int64  `json:"bytes"`
}

// Layout is what every tensor of one request's replica shares.
type Layout struct {
	DType   string // "bf16", "f16" or "f32"
	KVHeads int
	HeadDim int
}

// ElemSize is the bytes of one element of the dtype, 0 for an unknown dtype.
func ElemSize(dtype string) int {
	switch dtype {
	case "bf16", "f16":
		return 2
	case "f32":
		return 4
	}
	return 0
}

// rowBytes is the bytes of one token of one head: head_dim elements.
func (l Layout) rowBytes() int { return l.HeadDim * ElemSize(l.DType) }

// tokenBytes is the bytes of one token of one layer, K and V: [2, kv_heads, head_dim].
func (l Layout) tokenBytes() int { return 2 * l.KVHeads * l.rowBytes() }

// shapeBytes multiplies a shape by the element size, refusing negative dimensions and
// products beyond limit (so a hostile header cannot overflow the arithmetic).
func shapeBytes(shape []int, elem int, limit uint64) (int, error) {
	n := uint64(elem)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d != 0 && n > math.MaxInt32*uint64(math.MaxInt32)/uint64(d) {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		n *= uint64(d)
	}
	if n > limit {
		return 0, fmt.Errorf("shape %v is %d bytes, over the limit of %d", shape, n, limit)
	}
	return int(n), nil
}
