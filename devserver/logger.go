package devserver

import (
	"github.com/rs/zerolog"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger lets the embedded Temporal server log through schooner's zerolog logger, so
// server, SDK and schooner lines share one format. The server's panic and fatal levels are
// logged as errors: an embedded server must never take the whole process down by logging.
type serverLogger struct {
	zl zerolog.Logger
}

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

func (l serverLogger) Debug(msg string, tags ...tag.Tag)  { emit(l.zl.Debug(), msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)   { emit(l.zl.Info(), msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)   { emit(l.zl.Warn(), msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag)  { emit(l.zl.Error(), msg, tags) }
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { emit(l.zl.Error(), msg, tags) }
func (l serverLogger) Panic(msg string, tags ...tag.Tag)  { emit(l.zl.Error(), msg, tags) }
func (l serverLogger) Fatal(msg string, tags ...tag.Tag)  { emit(l.zl.Error(), msg, tags) }

func (l serverLogger) With(tags ...tag.Tag) log.Logger {
	ctx := l.zl.With()
	for _, t := range tags {
		ctx = ctx.Interface(t.Key(), t.Value())
	}
	return serverLogger{zl: ctx.Logger()}
}

func emit(e *zerolog.Event, msg string, tags []tag.Tag) {
	if e == nil {
		return
	}
	for _, t := range tags {
		if err, ok := t.Value().(error); ok {
			e = e.AnErr(t.Key(), err)
			continue
		}
		e = e.Interface(t.Key(), t.Value())
	}
	e.Msg(msg)
}
