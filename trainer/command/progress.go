package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// ProgressPrefix starts a progress line on the program's stdout; the rest of the line is a
// JSON object: {"iteration":N,"last_checkpoint":S}. last_checkpoint is the newest step the
// program knows durable (-1 or absent: none).
const ProgressPrefix = "SCHOONER_PROGRESS "

// ProgressLine is one progress report of the program.
type ProgressLine struct {
	Iteration      int64  `json:"iteration"`
	LastCheckpoint *int64 `json:"last_checkpoint,omitempty"`
}

// ParseProgress reads a progress line. ok is false for any other line; err is set for a line
// that starts with the prefix but does not parse, so a typo in the program is logged instead
// of silently ignored.
func ParseProgress(line string) (p ProgressLine, ok bool, err error) {
	rest, found := strings.CutPrefix(strings.TrimRight(line, "\r\n"), ProgressPrefix)
	if !found {
		return p, false, nil
	}
	dec := json.NewDecoder(strings.NewReader(rest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, false, fmt.Errorf("reading progress line %q: %w", line, err)
	}
	if p.Iteration < 0 {
		return p, false, fmt.Errorf("reading progress line %q: negative iteration", line)
	}
	return p, true, nil
}

// lineWriter splits what a process writes into lines and hands each complete one to fn; a
// final unterminated line is handed over by flush. Long lines are cut at maxLine so a
// program that never prints a newline cannot exhaust memory.
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	fn  func(string)
}

const maxLine = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.fn(string(w.buf))
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.fn(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.fn(string(w.buf))
		w.buf = nil
	}
}
