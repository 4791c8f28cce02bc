// Package frame reads and writes the frames of schooner's serving data path
// (docs/serving-protocol.md): a JSON header naming its "op" and an optional binary payload,
// each length-prefixed. The router, the KV-cache holder and their tests share it; the Python
// inference worker implements the same bytes.
package frame

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxHeader bounds a frame's JSON header against garbage lengths. Headers carry names and
// shapes, and one list that can be long: a submit's (or resubmit's) prompt token ids, up to
// serving's largest max_context (262,144 tokens, at most 7 bytes each as JSON: 1.8 MB). At
// 64 KiB, as before, a prompt of more than about 10,000 tokens could not reach a worker.
const MaxHeader = 4 << 20

// ErrTooLarge is returned for a header over MaxHeader or a payload over the reader's limit.
var ErrTooLarge = errors.New("frame too large")

// Header is the JSON part of a frame. Op names the message; the other fields are the
// message's own, decoded by the caller from Raw.
type Header struct {
	Op  string
	Raw json.RawMessage
}

// Decode unmarshals the header into v (a struct of the message's fields).
func (h Header) Decode(v any) error {
	if err := json.Unmarshal(h.Raw, v); err != nil {
		return fmt.Errorf("decoding %q header: %w", h.Op, err)
	}
	return nil
}

// Write sends one frame: header (marshalled as JSON, must have an "op" field) and payload.
func Write(w io.Writer, header any, payload []byte) error {
	h, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("encoding frame header: %w", err)
	}
	if len(h) > MaxHeader {
		return fmt.Errorf("%w: header of %d bytes", ErrTooLarge, len(h))
	}
	var pre [4]byte
	binary.BigEndian.PutUint32(pre[:], uint32(len(h)))
	var plen [8]byte
	binary.BigEndian.PutUint64(plen[:], uint64(len(payload)))
	bw, buffered := w.(*bufio.Writer)
	if !buffered {
		bw = bufio.NewWriterSize(w, 4+len(h)+8)
	}
	for _, b := range [][]byte{pre[:], h, plen[:], payload} {
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	if buffered {
		return nil // the caller flushes its own writer
	}
	return bw.Flush()
}

// Reader reads frames, refusing payloads over MaxPayload bytes.
type Reader struct {
	r          *bufio.Reader
	MaxPayload uint64
}

// NewReader reads frames from r with a payload limit.
func NewReader(r io.Reader, maxPayload uint64) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), MaxPayload: maxPayload}
}

// Next reads one frame. The payload is a fresh slice the caller owns.
func (r *Reader) Next() (Header, []byte, error) {
	var pre [4]byte
	if _, err := io.ReadFull(r.r, pre[:]); err != nil {
		return Header{}, nil, err
	}
	n := binary.BigEndian.Uint32(pre[:])
	if n > MaxHeader {
		return Header{}, nil, fmt.Errorf("%w: header of %d bytes", ErrTooLarge, n)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(r.r, raw); err != nil {
		return Header{}, nil, unexpected(err)
	}
	var op struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(raw, &op); err != nil || op.Op == "" {
		return Header{}, nil, fmt.Errorf("frame header is not a JSON object with an op: %q", truncate(raw))
	}
	var plen [8]byte
	if _, err := io.ReadFull(r.r, plen[:]); err != nil {
		return Header{}, nil, unexpected(err)
	}
	p := binary.BigEndian.Uint64(plen[:])
	if p > r.MaxPayload {
		return Header{}, nil, fmt.Errorf("%w: %q payload of %d bytes, limit %d", ErrTooLarge, op.Op, p, r.MaxPayload)
	}
	var payload []byte
	if p > 0 {
		payload = make([]byte, p)
		if _, err := io.ReadFull(r.r, payload); err != nil {
			return Header{}, nil, unexpected(err)
		}
	}
	return Header{Op: op.Op, Raw: raw}, payload, nil
}

// unexpected turns a clean EOF inside a frame into the truncation it is.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// Error is the protocol's error message.
type Error struct {
	Op      string `json:"op"` // "error"
	Code    string `json:"code"`
	Message string `json:"message"`
}

// NewError is an error frame header.
func NewError(code, format string, args ...any) Error {
	return Error{Op: "error", Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e Error) Error() string { return e.Code + ": " + e.Message }

// Hello opens every connection; HelloOK answers it.
type Hello struct {
	Op         string `json:"op"` // "hello"
	Role       string `json:"role"`
	Deployment string `json:"deployment"`
	Stage      int    `json:"stage"`
	Version    int    `json:"version"`
}

// Version is the protocol version of this package.
const Version = 1
