package pgtest

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The server takes the superuser's password and no other, and is gone, directory and all,
// once its test ends.
func TestServerAuthenticatesAndGoesAway(t *testing.T) {
	var s *Server
	t.Run("running", func(t *testing.T) {
		s = Start(t)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		require.NoError(t, err)
		var one int
		require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))
		require.NoError(t, conn.Close(ctx))

		cfg, err := pgx.ParseConfig(s.URL("postgres"))
		require.NoError(t, err)
		cfg.Password = "wrong"
		_, err = pgx.ConnectConfig(ctx, cfg)
		require.Error(t, err, "a wrong password is refused")
	})
	if s == nil {
		t.Skip("no server ran")
	}
	_, err := net.Dial("tcp", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)))
	assert.Error(t, err, "the server stopped")
	_, err = os.Stat(s.Dir)
	assert.True(t, os.IsNotExist(err), "its directory is removed: %v", err)
}
