package stage

import (
	"bytes"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// tailSize is how much of a worker's output is kept for its StageResult.
const tailSize = 4 << 10

// tail keeps the end of a worker's output (stdout and stderr together) and logs its lines.
type tail struct {
	mu      sync.Mutex
	buf     []byte
	partial []byte
	log     zerolog.Logger
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailSize {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailSize:]...)
	}
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.log.Info().Str("line", string(t.partial[:i])).Msg("inference worker")
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > tailSize {
		t.partial = t.partial[:0]
	}
	return len(p), nil
}

// String is the kept end of the output, trimmed.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > tailSize {
		b = b[len(b)-tailSize:]
	}
	return strings.TrimSpace(string(b))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
