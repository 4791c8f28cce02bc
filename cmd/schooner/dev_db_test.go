//go:build !agentonly

package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/devserver"
)

// --db reaches the embedded server, SCHOONER_DB stands in for it, and neither error shows
// the password.
func TestDevDatabaseFlag(t *testing.T) {
	args := []string{"--headless", "--port", "0", "--metrics-addr", "", "--data-dir", t.TempDir()}
	out, err := executeFresh(newDevCommand, append(args, "--db", "mysql://me:s3cret@db/temporal")...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `invalid --db "mysql://me:xxxxx@db/temporal": want sqlite or a URL postgres://`)
	assert.NotContains(t, out+err.Error(), "s3cret")

	port, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	t.Setenv("SCHOONER_DB", fmt.Sprintf("postgres://me:s3cret@127.0.0.1:%d/temporal", port))
	out, err = executeFresh(newDevCommand, args...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("--db: cannot reach PostgreSQL at 127.0.0.1:%d", port))
	assert.NotContains(t, out+err.Error(), "s3cret")
}
