package devserver

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
)

func TestTheServersBenignErrorLinesAreDebugOnly(t *testing.T) {
	var out bytes.Buffer
	l := serverLogger{zl: zerolog.New(&out).Level(zerolog.WarnLevel)}
	l.Error("ContextMetadataInterceptor: Failed to set trailer")
	l.Error("unable to add metrics baggage to gRPC trailer")
	assert.Empty(t, out.String())
	l.Error("persistence failed")
	assert.Contains(t, out.String(), `"level":"error"`)
}
