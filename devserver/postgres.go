package devserver

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql/driver"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql/session"
	"go.temporal.io/server/common/resolver"
	sqltool "go.temporal.io/server/tools/sql"
)

// maintenanceDB is the database connected to for CREATE DATABASE, as temporal-sql-tool's
// --defaultdb for PostgreSQL.
const maintenanceDB = "postgres"

// PostgreSQL error codes the start-up explains (Appendix A of the PostgreSQL manual).
const (
	pgInvalidPassword      = "28P01"
	pgInvalidAuthorization = "28000"
	pgUnknownDatabase      = "3D000"
	pgInsufficientPrivs    = "42501"
)

// sqlConfig is the Temporal SQL configuration of database name: Temporal's own PostgreSQL
// plugin on the pgx driver.
func (p *postgresDB) sqlConfig(name string) *config.SQL {
	return &config.SQL{
		PluginName: postgresql.PluginNamePGX,
		// Temporal writes the user into its DSN unescaped; the escaped form reads back as the
		// same user.
		User:              url.User(p.User).String(),
		Password:          p.Password,
		DatabaseName:      name,
		ConnectAddr:       p.Addr,
		ConnectProtocol:   "tcp",
		ConnectAttributes: maps.Clone(p.Attrs),
		// Each of the four services opens a pool per store; 10 each stays far below
		// PostgreSQL's default of 100 connections with room for the UI and psql.
		MaxConns:        10,
		MaxIdleConns:    10,
		MaxConnLifetime: time.Hour,
	}
}

// ensureDatabase makes sure database name exists, creating it (as temporal-sql-tool's
// create-database does) when it does not. created says it did.
func (p *postgresDB) ensureDatabase(name string, logger log.Logger) (created bool, err error) {
	err = p.ping(name)
	if err == nil {
		return false, nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgUnknownDatabase {
		return false, p.explain(err, name)
	}
	// The tool's connection only logs why it failed: try the maintenance database first.
	if err := p.ping(maintenanceDB); err != nil {
		return false, fmt.Errorf("--db: database %s does not exist, and creating it needs database %s: %w", name, maintenanceDB, p.explain(err, maintenanceDB))
	}
	if err := sqltool.DoCreateDatabase(p.sqlConfig(name), maintenanceDB, logger); err != nil {
		if errors.As(err, &pgErr) && pgErr.Code == pgInsufficientPrivs {
			return false, fmt.Errorf("--db: user %q may not create database %s on %s; create it as a superuser (CREATE DATABASE %s OWNER %q) or grant the role CREATEDB",
				p.User, name, p.Addr, name, p.User)
		}
		return false, fmt.Errorf("--db: creating database %s on %s: %w", name, p.Addr, p.explain(err, maintenanceDB))
	}
	return true, p.explain(p.ping(name), name)
}

// ping connects to database name the way the server will, so a wrong address or password
// fails here with its cause rather than later as an unavailable store.
func (p *postgresDB) ping(name string) error {
	s, err := session.NewSession(p.sqlConfig(name), &driver.PGXDriver{}, resolver.NewNoopResolver())
	if err != nil {
		return err
	}
	s.Close()
	return nil
}

// dropDatabase removes database name, which this start created and could not finish.
func (p *postgresDB) dropDatabase(name string, logger log.Logger) error {
	return sqltool.DoDropDatabase(p.sqlConfig(name), maintenanceDB, logger)
}

// explain turns a connection error into one that says what to check, naming the flag.
func (p *postgresDB) explain(err error, db string) error {
	if err == nil {
		return nil
	}
	err = p.redact(err)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case pgInvalidPassword, pgInvalidAuthorization:
			return fmt.Errorf("--db: PostgreSQL at %s refused user %q for database %s (%s): check the user and password in the URL and the server's pg_hba.conf",
				p.Addr, p.User, db, pgErr.Message)
		case pgUnknownDatabase:
			return fmt.Errorf("--db: PostgreSQL at %s has no database %s: %w", p.Addr, db, err)
		}
		return fmt.Errorf("--db: PostgreSQL at %s, database %s: %w", p.Addr, db, err)
	}
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &opErr) || errors.As(err, &dnsErr) || (errors.As(err, &netErr) && netErr.Timeout()) {
		host, port, _ := net.SplitHostPort(p.Addr)
		return fmt.Errorf("--db: cannot reach PostgreSQL at %s: %w; check that it runs and listens on host %s port %s (pg_isready -h %s -p %s) and that nothing between blocks it",
			p.Addr, err, host, port, host, port)
	}
	return fmt.Errorf("--db: connecting to PostgreSQL at %s as %q: %w", p.Addr, p.User, err)
}
