package devserver

import (
	"strings"

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

func (l serverLogger) Debug(msg string, tags ...tag.Tag) { emit(l.zl.Debug(), msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)  { emit(l.zl.Info(), msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)  { emit(l.zl.Warn(), msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag) {
	if benign(msg) {
		emit(l.zl.Debug(), msg, tags)
		return
	}
	emit(l.zl.Error(), msg, tags)
}

// benignErrors are server log lines at error level that report nothing wrong with the call:
// the context-metadata interceptor and the metrics interceptor (server common/metrics/grpc.go)
// try to set a gRPC trailer on a call whose response headers were already sent, and say so
// (the call itself succeeded and its response is returned unchanged; the second was seen as
// the one ERR line of `schooner demo serve` runs, "transport: SendHeader called multiple
// times"). Users read an ERR line as a failure, so these go to debug.
var benignErrors = []string{
	"ContextMetadataInterceptor: Failed to set trailer",
	"unable to add metrics baggage to gRPC trailer",
}

func benign(msg string) bool {
	for _, b := range benignErrors {
		if strings.HasPrefix(msg, b) {
			return true
		}
	}
	return false
}
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
