// Package workers wires schooner together: which workflows and activities run on which task
// queue, how clients connect to a Temporal cluster, and the logging and metrics every
// process shares. It is the only layer that knows both Temporal and the domain packages.
package workers

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// LogOptions chooses how a schooner process logs.
type LogOptions struct {
	// Level is one of trace, debug, info, warn, error (default info).
	Level string
	// Format is console (human, coloured on a terminal) or json (default console).
	Format string
	// Out defaults to standard error.
	Out io.Writer
}

// NewLogger builds the zerolog logger every component of a process shares. Bad options are
// an error rather than a silent default, because a mistyped --log-level is worth knowing.
func NewLogger(opts LogOptions) (zerolog.Logger, error) {
	out := opts.Out
	if out == nil {
		out = os.Stderr
	}
	levelName := opts.Level
	if levelName == "" {
		levelName = "info"
	}
	level, err := zerolog.ParseLevel(strings.ToLower(levelName))
	if err != nil || levelName == "" {
		return zerolog.Nop(), fmt.Errorf("invalid --log-level %q: want trace, debug, info, warn or error", opts.Level)
	}
	var w io.Writer
	switch strings.ToLower(opts.Format) {
	case "", "console":
		cw := zerolog.ConsoleWriter{Out: out, TimeFormat: time.TimeOnly}
		if f, ok := out.(*os.File); !ok || !isatty.IsTerminal(f.Fd()) {
			cw.NoColor = true
		}
		w = cw
	case "json":
		w = out
	default:
		return zerolog.Nop(), fmt.Errorf("invalid --log-format %q: want console or json", opts.Format)
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}
