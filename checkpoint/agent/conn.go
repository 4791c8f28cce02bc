package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint"
)

// maxRequestBytes bounds one request line: the index of a shard with many thousand tensors is
// well under it, and a client that sends garbage without a newline cannot grow the agent.
const maxRequestBytes = 64 << 20

// conn is one client connection. Requests are handled one at a time, in order; a reader
// goroutine watches the socket so a client that goes away cancels the request in progress.
type conn struct {
	a      *Agent
	nc     net.Conn
	ctx    context.Context
	cancel context.CancelFunc
	log    zerolog.Logger

	rank      *rankState      // set by hello
	uid       uint32          // the client's user: its save buffers must be its own
	buf       *saveBuffer     // the client's save buffer, kept mapped between saves
	saveFiles map[string]bool // the client's buffers: removed when the connection ends
	loadFiles map[string]bool // restores handed out: removed when the connection ends

	closeOnce sync.Once
}

func newConn(a *Agent, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(a.ctx)
	return &conn{a: a, nc: nc, ctx: ctx, cancel: cancel, log: a.log, uid: peerUID(nc),
		saveFiles: map[string]bool{}, loadFiles: map[string]bool{}}
}

// close ends the connection; serve cleans up.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		_ = c.nc.Close()
	})
}

// serve reads requests and writes responses until the client or the agent closes.
func (c *conn) serve() {
	defer c.a.untrack(c)
	defer c.leave()
	defer c.cleanup()
	defer c.close()
	lines := make(chan []byte, 1)
	go c.read(lines)
	w := bufio.NewWriter(c.nc)
	enc := json.NewEncoder(w)
	for line := range lines {
		resp := c.handle(line)
		if err := enc.Encode(resp); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// read passes request lines on; at the end of the stream it cancels the request in progress.
func (c *conn) read(lines chan<- []byte) {
	defer close(lines)
	defer c.cancel()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		line, err := readLine(r)
		if len(line) > 0 {
			select {
			case lines <- line:
			case <-c.ctx.Done():
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.log.Debug().Err(err).Msg("reading from checkpoint client")
			}
			return
		}
	}
}

// readLine reads one newline-terminated line of at most maxRequestBytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxRequestBytes {
			return nil, fmt.Errorf("request longer than %d bytes", maxRequestBytes)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// handle answers one request. A memory fault in this goroutine (a client that shrank its buffer
// under the agent, in remote mode's in-memory encode) fails the request instead of the agent;
// the engine's copy goroutines recover from such faults themselves (checkpoint.ErrSourceFault).
func (c *conn) handle(line []byte) (resp Response) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			c.log.Error().Interface("panic", p).Msg("checkpoint request failed")
			resp = failure(fmt.Errorf("handling request: %v", p))
		}
	}()
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return failure(badRequest("decoding request: %v", err))
	}
	var err error
	switch req.Op {
	case OpHello:
		resp, err = c.hello(req)
	case OpSave:
		resp, err = c.save(req)
	case OpWait:
		resp, err = c.wait(req)
	case OpLoad:
		resp, err = c.load(req)
	case OpStatus:
		resp, err = c.status()
	case OpPoll:
		resp, err = c.poll()
	case OpReserve:
		resp, err = c.reserve(req)
	default:
		err = badRequest("unknown op %q", req.Op)
	}
	if err != nil {
		return failure(err)
	}
	resp.OK = true
	return resp
}

// cleanup unmaps the save buffer and removes the files of the connection.
func (c *conn) cleanup() {
	if err := c.buf.close(); err != nil {
		c.log.Warn().Err(err).Msg("unmapping save buffer")
	}
	c.buf = nil
	for path := range c.saveFiles {
		_ = removeShm(path)
	}
	for path := range c.loadFiles {
		_ = removeShm(path)
	}
}

// leave unbinds the connection from its rank, so an unused rank's engine is released.
func (c *conn) leave() {
	if c.rank != nil {
		c.a.leave(c.rank)
	}
}

// requestError is a request the agent cannot act on as sent.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}

// failure turns an error into a response with a code the client can act on.
func failure(err error) Response {
	code := CodeFailed
	var re *requestError
	switch {
	case errors.As(err, &re):
		code = CodeBadRequest
	case errors.Is(err, checkpoint.ErrNoCheckpoint):
		code = CodeNoCheckpoint
	case errors.Is(err, checkpoint.ErrClosed):
		code = CodeClosed
	}
	return Response{OK: false, Error: err.Error(), Code: code}
}
