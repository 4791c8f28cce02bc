package kvcache

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/schooner-ml/schooner/internal/frame"
)

// conn is one peer's connection: a goroutine reads and checks frames into the queue, another
// stores them and answers, in order.
type conn struct {
	h          *Holder
	c          net.Conn
	bw         *bufio.Writer
	deployment string
	stage      int
	role       string
	// peerProcess is the peer's process identity from its hello (its writer and reader
	// connections share it); lastRecv the wall time, in ns, bytes last came from the peer
	// (any bytes: a large frame on a slow link is still the writer sending).
	peerProcess string
	lastRecv    atomic.Int64
	werr        error
	// lent is the reader's memory this connection writes "into" gets to (see lend.go).
	lent []byte
	// arenaShared: the reader was given the arena's descriptor; unpin ends the pin of the
	// replica the last arena answer points into (at the next get or lend, or the end).
	arenaShared bool
	unpin       func()
}

func (h *Holder) serveConn(c net.Conn) {
	defer h.untrack(c)
	defer c.Close()
	cn := &conn{h: h, c: c, bw: bufio.NewWriterSize(c, 64<<10)}
	if h.connCount() > h.opts.MaxConns {
		cn.fail(refuse(CodeOverloaded, "the holder has %d connections, its limit", h.opts.MaxConns))
		return
	}
	r := frame.NewReader(recvClock{c, &cn.lastRecv}, h.opts.MaxPayload)
	if !cn.hello(r) {
		return
	}
	h.m.conns.Add(1)
	defer h.m.conns.Add(-1)
	if cn.role == RoleWriter {
		h.writers.add(cn)
		defer h.writers.remove(cn)
	}
	q := h.opts.NewQueue(h.opts.QueueDepth)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cn.process(q)
	}()
	cn.read(r, q)
	q.Close()
	<-done
	cn.unpinLast()
	cn.unlend()
	h.opts.Logger.Debug().Str("deployment", cn.deployment).Int("stage", cn.stage).Msg("kv-cache connection closed")
}

// hello reads the opening frame and answers it; false when the connection must end.
func (cn *conn) hello(r *frame.Reader) bool {
	_ = cn.c.SetReadDeadline(time.Now().Add(cn.h.opts.HelloTimeout))
	hdr, payload, err := r.Next()
	if err != nil {
		if !ioEnd(err) {
			cn.fail(refuse(CodeBadRequest, "reading hello: %v", err))
		}
		return false
	}
	var m helloMsg
	switch {
	case hdr.Op != opHello:
		cn.fail(refuse(CodeBadRequest, "the first frame must be hello, got %q", hdr.Op))
		return false
	case hdr.Decode(&m) != nil || len(payload) > 0:
		cn.fail(refuse(CodeBadRequest, "malformed hello"))
		return false
	case m.Version != frame.Version:
		cn.fail(refuse(CodeVersion, "this holder speaks version %d, not %d", frame.Version, m.Version))
		return false
	case m.Role != RoleWriter && m.Role != RoleReader:
		cn.fail(refuse(CodeBadRequest, "role %q is neither %q nor %q", m.Role, RoleWriter, RoleReader))
		return false
	case m.Deployment == "" || m.Stage < 0:
		cn.fail(refuse(CodeBadRequest, "hello needs a deployment and a stage >= 0"))
		return false
	}
	_ = cn.c.SetReadDeadline(time.Time{})
	cn.deployment, cn.stage, cn.role, cn.peerProcess = m.Deployment, m.Stage, m.Role, m.Process
	cn.write(helloOKMsg{Op: opHelloOK, Version: frame.Version}, nil)
	cn.flush()
	return cn.werr == nil
}

// read turns frames into queue items until the peer leaves or sends something malformed. A
// frame cut short (the peer died mid-frame) never reaches the queue.
func (cn *conn) read(r *frame.Reader, q Queue) {
	for {
		hdr, payload, err := r.Next()
		if err != nil {
			if !ioEnd(err) {
				q.Push(Item{fatal: refuse(CodeBadRequest, "%v", err)})
			}
			return
		}
		it, herr := cn.h.parse(hdr, payload)
		if herr != nil {
			q.Push(Item{fatal: herr})
			return
		}
		cn.h.m.received.Add(int64(len(payload)))
		if !q.Push(it) {
			return
		}
	}
}

// recvClock is the connection as its frame reader reads it, noting when bytes last came.
type recvClock struct {
	net.Conn
	at *atomic.Int64
}

func (r recvClock) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	if n > 0 {
		r.at.Store(time.Now().UnixNano())
	}
	return n, err
}

// ioEnd reports an error of the connection itself (the peer left, the holder closed it), as
// opposed to a malformed frame.
func ioEnd(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne)
}

// process stores and answers the queue's items in order. Answers are flushed whenever the
// queue runs empty, so a burst of put_steps is acked in few writes.
func (cn *conn) process(q Queue) {
	for {
		it, ok := q.Pop()
		if !ok {
			cn.flush()
			return
		}
		if it.fatal != nil {
			cn.fail(it.fatal)
			continue
		}
		cn.handle(it)
		if q.Len() == 0 {
			cn.flush()
		}
	}
}

// fail answers a connection-ending error and closes the connection, which stops the reader.
func (cn *conn) fail(e *HolderError) {
	cn.h.m.refused(e.Code)
	cn.write(errorMsg{Op: opError, Code: e.Code, Message: e.Message}, nil)
	cn.flush()
	_ = cn.c.Close()
}

// write sends one frame; after the first failure the connection is closed and later writes
// are dropped (the items are still stored: acks are promises about storage, not delivery).
func (cn *conn) write(hdr any, payload []byte) {
	if cn.werr != nil {
		return
	}
	_ = cn.c.SetWriteDeadline(time.Now().Add(cn.h.opts.WriteTimeout))
	if err := frame.Write(cn.bw, hdr, payload); err != nil {
		cn.werr = err
		_ = cn.c.Close()
	}
}

func (cn *conn) flush() {
	if cn.werr != nil {
		return
	}
	_ = cn.c.SetWriteDeadline(time.Now().Add(cn.h.opts.WriteTimeout))
	if err := cn.bw.Flush(); err != nil {
		cn.werr = err
		_ = cn.c.Close()
	}
}

func (cn *conn) key(request string) key { return key{cn.deployment, cn.stage, request} }

func (cn *conn) refusal(e *HolderError, request string, step *int) {
	cn.h.m.refused(e.Code)
	cn.write(errorMsg{Op: opError, Code: e.Code, Message: e.Message, Request: request, Step: step}, nil)
}

// handle stores or answers one item.
func (cn *conn) handle(it Item) {
	h := cn.h
	switch m := it.msg.(type) {
	case putMsg:
		h.m.puts.Add(1)
		args := putArgs{layer: m.Layer, tokens: m.Tokens, layout: Layout{m.DType, m.Shape[1], m.Shape[3]}, last: m.Last, data: it.payload}
		if m.Last {
			args.layers = *m.Layers
			if m.Step != nil {
				args.step = *m.Step
			}
		}
		acked, err := h.store.put(cn.key(m.Request), args)
		if err != nil {
			cn.refusal(err, m.Request, nil)
			return
		}
		h.m.acks.Add(1)
		cn.write(ackMsg{Op: opAck, Request: m.Request, Step: acked, Layer: &m.Layer, Tokens: &m.Tokens}, nil)
	case putStepMsg:
		h.m.steps.Add(1)
		res := h.store.putStep(cn.deployment, cn.stage, stepArgs{step: m.Step, entries: m.Entries, layers: m.Layers,
			layout: Layout{m.DType, m.Shape[3], m.Shape[4]}, data: it.payload})
		for i, e := range m.Entries {
			step := e.stepOf(m.Step)
			if res[i].err != nil {
				cn.refusal(res[i].err, e.Request, &step)
				continue
			}
			h.m.acks.Add(1)
			cn.write(ackMsg{Op: opAck, Request: e.Request, Step: step}, nil)
		}
	case lendMsg:
		cn.unpinLast()
		if err := cn.lend(m); err != nil {
			cn.refusal(err, "", nil)
			return
		}
		cn.answerLend(m)
	case requestMsg:
		cn.unpinLast()
		switch m.Op {
		case opDrop:
			b, found := h.store.drop(cn.key(m.Request))
			n := 0
			if found {
				n = 1
			}
			cn.write(droppedMsg{Op: opDropped, Request: m.Request, Requests: n, Bytes: b}, nil)
		case opDropDeployment:
			n, b := h.store.dropDeployment(cn.deployment)
			h.opts.Logger.Info().Str("deployment", cn.deployment).Int("requests", n).Int64("bytes", b).Msg("kv-cache deployment dropped")
			cn.write(droppedMsg{Op: opDropped, Deployment: cn.deployment, Requests: n, Bytes: b}, nil)
		case opGet:
			h.m.gets.Add(1)
			cn.awaitReplica(m)
			if uc, ok := cn.c.(*net.UnixConn); ok && (m.Shm || m.Into) && cn.getShm(uc, m) {
				return
			}
			cn.get(m.Request, m.FromStep)
		case opList:
			cn.write(heldMsg{Op: opHeld, Requests: h.store.list(cn.deployment, cn.stage)}, nil)
		}
	}
}

// get streams a consistent snapshot of the replica: chunks in token order (from fromStep's
// token when it is > 0, see from.go), then end with the step the chunks stand at.
func (cn *conn) get(request string, fromStep int) {
	s, done := cn.h.store.snapshot(cn.key(request))
	defer done()
	layers := s.hi - s.lo
	_ = s.chunks(s.startOf(fromStep), cn.h.opts.ChunkTokens, func(tokens [2]int, data []byte) error {
		cn.h.m.sent.Add(int64(len(data)))
		cn.write(chunkMsg{Op: opChunk, Request: request, Layers: [2]int{s.lo, s.hi}, Tokens: tokens, DType: s.layout.DType,
			Shape: []int{layers, 2, s.layout.KVHeads, tokens[1] - tokens[0], s.layout.HeadDim}}, data)
		return cn.werr
	})
	cn.write(endMsg{Op: opEnd, Request: request, AckedStep: s.acked, FromStep: max(fromStep, 0)}, nil)
}
