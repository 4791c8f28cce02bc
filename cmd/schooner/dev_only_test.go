//go:build !agentonly

package main

import (
	"context"
	"io"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// A mistyped part is named before anything starts; both parts run end to end in
// integration/cluster.
func TestDevOnlyTakesServerOrMarket(t *testing.T) {
	err := runDevPart(context.Background(), &devFlags{only: "workers"}, zerolog.Nop(), io.Discard)
	require.EqualError(t, err, `--only "workers": want server or market`)
}
