package workers

import (
	"fmt"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/log"
)

// TemporalLogger lets the Temporal SDK log through zerolog, so SDK messages carry the same
// fields and format as schooner's own. The SDK passes alternating key/value pairs; a key that
// is not a string is formatted, and an odd trailing value is kept under "extra" rather than
// dropped, because losing a field in a log is worse than an ugly key.
type TemporalLogger struct {
	zl zerolog.Logger
}

var (
	_ log.Logger          = (*TemporalLogger)(nil)
	_ log.WithLogger      = (*TemporalLogger)(nil)
	_ log.WithSkipCallers = (*TemporalLogger)(nil)
)

// NewTemporalLogger adapts zl for the SDK.
func NewTemporalLogger(zl zerolog.Logger) *TemporalLogger {
	return &TemporalLogger{zl: zl}
}

func (l *TemporalLogger) Debug(msg string, keyvals ...any) { l.emit(l.zl.Debug(), msg, keyvals) }
func (l *TemporalLogger) Info(msg string, keyvals ...any)  { l.emit(l.zl.Info(), msg, keyvals) }
func (l *TemporalLogger) Warn(msg string, keyvals ...any)  { l.emit(l.zl.Warn(), msg, keyvals) }
func (l *TemporalLogger) Error(msg string, keyvals ...any) { l.emit(l.zl.Error(), msg, keyvals) }

// With returns a logger that adds keyvals to every entry; l is unchanged.
func (l *TemporalLogger) With(keyvals ...any) log.Logger {
	ctx := l.zl.With()
	forEachPair(keyvals, func(k string, v any) { ctx = ctx.Interface(k, v) })
	return &TemporalLogger{zl: ctx.Logger()}
}

// WithCallerSkip is accepted for the SDK's sake; zerolog here records no caller, so
// there is nothing to skip.
func (l *TemporalLogger) WithCallerSkip(int) log.Logger { return l }

func (l *TemporalLogger) emit(e *zerolog.Event, msg string, keyvals []any) {
	if e == nil { // level disabled
		return
	}
	forEachPair(keyvals, func(k string, v any) {
		if err, ok := v.(error); ok {
			e = e.AnErr(k, err)
			return
		}
		e = e.Interface(k, v)
	})
	e.Msg(msg)
}

func forEachPair(keyvals []any, f func(string, any)) {
	for i := 0; i < len(keyvals); i += 2 {
		if i+1 == len(keyvals) {
			f("extra", keyvals[i])
			return
		}
		key, ok := keyvals[i].(string)
		if !ok {
			key = fmt.Sprint(keyvals[i])
		}
		f(key, keyvals[i+1])
	}
}
