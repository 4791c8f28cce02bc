package devserver

import (
	"fmt"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
	toolschema "go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
)

// A schema is one of Temporal's two PostgreSQL schemas: its directory in the server's
// embedded schema files (go.temporal.io/server/schema) and the version this server needs.
type schema struct {
	dir     string
	version string
}

var (
	defaultSchema    = schema{dir: "postgresql/v12/temporal", version: pgschema.Version}
	visibilitySchema = schema{dir: "postgresql/v12/visibility", version: pgschema.VisibilityVersion}
)

// postgresStores makes the two databases ready for this server, the way Temporal's
// deployments do with temporal-sql-tool: create-database, setup-schema -v 0.0, then
// update-schema over the versioned directory; then it writes the namespace. Each step is a
// no-op where it was done before, so a second start changes nothing and a database of an
// older Temporal is brought up to date. A database this call created and could not finish is
// dropped again.
func postgresStores(p *postgresDB, opts Options, logger log.Logger) (stores, error) {
	for _, db := range []struct {
		name   string
		schema schema
	}{{p.Name, defaultSchema}, {p.VisibilityName(), visibilitySchema}} {
		created, err := p.ensureDatabase(db.name, logger)
		if err != nil {
			return stores{}, err
		}
		if err := p.setupSchema(db.name, db.schema, logger); err != nil {
			if !created {
				return stores{}, err
			}
			if dropErr := p.dropDatabase(db.name, logger); dropErr != nil {
				return stores{}, fmt.Errorf("%w; dropping database %s, which this start created, failed too: %v", err, db.name, p.redact(dropErr))
			}
			return stores{}, fmt.Errorf("%w (database %s, created by this start, was dropped again)", err, db.name)
		}
	}
	main, visibility := p.sqlConfig(p.Name), p.sqlConfig(p.VisibilityName())
	if err := createNamespace(opts, main); err != nil {
		return stores{}, fmt.Errorf("--db: %w", p.redact(err))
	}
	return stores{
		data:         map[string]config.DataStore{"postgres": {SQL: main}, "postgres-visibility": {SQL: visibility}},
		defaultStore: "postgres", visibilityStore: "postgres-visibility",
	}, nil
}

// setupSchema brings database name to schema s with Temporal's schema tool.
func (p *postgresDB) setupSchema(name string, s schema, logger log.Logger) error {
	conn, err := sqltool.NewConnection(p.sqlConfig(name), logger)
	if err != nil {
		return p.explain(err, name)
	}
	defer conn.Close()
	// Version tables and version 0.0, unless a version is recorded already.
	if err := toolschema.NewSetupSchemaTask(conn, &toolschema.SetupConfig{InitialVersion: "0.0"}, logger).Run(); err != nil {
		return fmt.Errorf("--db: setting up the Temporal schema in database %s on %s: %w", name, p.Addr, p.redact(err))
	}
	before, err := conn.ReadSchemaVersion()
	if err != nil {
		return fmt.Errorf("--db: reading the schema version of database %s on %s: %w", name, p.Addr, p.redact(err))
	}
	if before == s.version {
		return nil // the tool would only warn that there is nothing to do
	}
	// Every versioned change after the recorded version, up to this server's; a database of a
	// newer Temporal fails here rather than with this older server running on it.
	update := &toolschema.UpdateConfig{DBName: name, SchemaName: s.dir, TargetVersion: s.version}
	if err := toolschema.NewUpdateSchemaTask(conn, update, logger).Run(); err != nil {
		return fmt.Errorf("--db: updating the Temporal schema of database %s on %s from version %s to %s: %w",
			name, p.Addr, before, s.version, p.redact(err))
	}
	logger.Info("Temporal schema updated", tag.NewStringTag("database", name),
		tag.NewStringTag("from", before), tag.NewStringTag("to", s.version))
	return nil
}
