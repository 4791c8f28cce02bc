package devserver

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/devserver/pgtest"
)

// startOn starts a headless server on database url and returns its error.
func startOn(t *testing.T, url string) error {
	t.Helper()
	port, err := FreePort("127.0.0.1")
	require.NoError(t, err)
	srv, err := Start(Options{Port: port, Headless: true, Database: url, ServerLogLevel: "error",
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)})
	if err == nil {
		srv.Stop()
	}
	return err
}

// Nothing listens at the address: the error says where it looked and what to check.
func TestPostgresUnreachable(t *testing.T) {
	port, err := FreePort("127.0.0.1")
	require.NoError(t, err)
	err = startOn(t, fmt.Sprintf("postgres://me:s3cret@127.0.0.1:%d/dev", port))
	require.Error(t, err)
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"--db", "cannot reach PostgreSQL", "127.0.0.1:" + strconv.Itoa(port), "pg_isready -h 127.0.0.1 -p " + strconv.Itoa(port)} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "s3cret")
}

// A wrong password and a role that may not create databases are refused with their cause,
// and nothing is left behind.
func TestPostgresRefusals(t *testing.T) {
	pg := pgtest.Start(t)
	wrong := fmt.Sprintf("postgres://%s:not-the-password@%s:%d/dev", pgtest.User, pg.Host, pg.Port)
	err := startOn(t, wrong)
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "--db")
	assert.Contains(t, err.Error(), "refused user \""+pgtest.User+"\"")
	assert.Contains(t, err.Error(), "password authentication failed")
	assert.NotContains(t, err.Error(), "not-the-password")

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.URL("postgres"))
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE ROLE plain LOGIN PASSWORD 'plain-pw'")
	require.NoError(t, err)
	err = startOn(t, fmt.Sprintf("postgres://plain:plain-pw@%s:%d/dev", pg.Host, pg.Port))
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "--db: user \"plain\" may not create database dev")
	assert.Contains(t, err.Error(), "CREATEDB")

	var dbs int
	require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname LIKE 'dev%'").Scan(&dbs))
	assert.Zero(t, dbs, "no database was created")
}
