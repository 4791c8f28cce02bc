package devserver

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/server/common/log"
	toolschema "go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"

	"github.com/schooner-ml/schooner/devserver/pgtest"
)

// schemaState is what a database records of its schema: the version and how many steps
// the schema tool has logged.
func schemaState(t *testing.T, url string) (version string, logged int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.NoError(t, conn.QueryRow(ctx, "SELECT curr_version FROM schema_version").Scan(&version))
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM schema_update_history").Scan(&logged))
	return version, logged
}

// A database left at an older Temporal's schema version is brought up to this server's, and
// preparing databases that are up to date changes nothing.
func TestPostgresSchemaIsUpdatedAndIdempotent(t *testing.T) {
	pg := pgtest.Start(t)
	p, err := parseDatabase(pg.URL("old"))
	require.NoError(t, err)
	logger := log.NewNoopLogger()

	// An older Temporal's database: created, set up and updated only to 1.10 by the same tool.
	_, err = p.ensureDatabase(p.Name, logger)
	require.NoError(t, err)
	conn, err := sqltool.NewConnection(p.sqlConfig(p.Name), logger)
	require.NoError(t, err)
	require.NoError(t, toolschema.NewSetupSchemaTask(conn, &toolschema.SetupConfig{InitialVersion: "0.0"}, logger).Run())
	require.NoError(t, toolschema.NewUpdateSchemaTask(conn, &toolschema.UpdateConfig{SchemaName: defaultSchema.dir, TargetVersion: "1.10"}, logger).Run())
	conn.Close()
	v, _ := schemaState(t, pg.URL(p.Name))
	require.Equal(t, "1.10", v)

	_, err = postgresStores(p, Options{Namespace: "default"}, logger)
	require.NoError(t, err)
	v, mainLogged := schemaState(t, pg.URL(p.Name))
	assert.Equal(t, defaultSchema.version, v)
	vv, visLogged := schemaState(t, pg.URL(p.VisibilityName()))
	assert.Equal(t, visibilitySchema.version, vv)

	_, err = postgresStores(p, Options{Namespace: "default"}, logger)
	require.NoError(t, err, "a second preparation of the same databases succeeds")
	v, again := schemaState(t, pg.URL(p.Name))
	assert.Equal(t, defaultSchema.version, v)
	assert.Equal(t, mainLogged, again, "and runs no schema step")
	_, again = schemaState(t, pg.URL(p.VisibilityName()))
	assert.Equal(t, visLogged, again)

	// A newer Temporal's database is refused, not run on by an older server.
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.URL(p.Name))
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "UPDATE schema_version SET curr_version = '1.99'")
	require.NoError(t, err)
	_, err = postgresStores(p, Options{Namespace: "default"}, logger)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--db: updating the Temporal schema of database old")
	assert.Contains(t, err.Error(), "from version 1.99 to "+defaultSchema.version)
}
