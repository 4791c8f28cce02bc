package devserver

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// postgresDB is where `schooner dev --db postgres://…` keeps the server's state: the default
// store in database Name and the visibility store beside it in Name_visibility, on one
// PostgreSQL server, as one role.
type postgresDB struct {
	Addr     string // host:port
	User     string
	Password string
	Name     string
	// Attrs are the URL's query parameters (sslmode, sslrootcert, …), handed to the driver.
	Attrs map[string]string
	// redacted is the URL as it may be printed: the password replaced.
	redacted string
}

// VisibilityName is the visibility store's database: a second database, as Temporal's own
// deployments keep it, so its schema versions apart from the default store's.
func (p *postgresDB) VisibilityName() string { return p.Name + "_visibility" }

// defaultDatabase is the database name when the URL names none.
const defaultDatabase = "temporal"

// dbName is a database name that needs no quoting anywhere: Temporal's tooling writes names
// into CREATE DATABASE and its DSN unescaped. 52 leaves room for "_visibility" within
// PostgreSQL's 63-byte identifiers.
var dbName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,51}$`)

// reservedAttrs are connection settings the URL's host, user and path carry; a query
// parameter would silently override them in the driver.
var reservedAttrs = []string{"host", "port", "user", "password", "dbname", "database"}

// parseDatabase reads Options.Database: nil for SQLite (empty or "sqlite"), the PostgreSQL
// target for a postgres:// or postgresql:// URL. Errors name the --db flag and never the
// password.
func parseDatabase(raw string) (*postgresDB, error) {
	if raw == "" || raw == "sqlite" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("invalid --db %q: want sqlite or a URL postgres://user:password@host:port/dbname?sslmode=disable", redactURL(raw))
	}
	bad := func(why string) error { return fmt.Errorf("invalid --db %s: %s", redactURL(raw), why) }
	if u.Hostname() == "" {
		return nil, bad("no host (a unix socket is not supported: use 127.0.0.1)")
	}
	if u.User == nil || u.User.Username() == "" {
		return nil, bad("no user: postgres://user:password@host:port/dbname")
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	p := &postgresDB{Addr: net.JoinHostPort(u.Hostname(), port), User: u.User.Username(), Name: strings.TrimPrefix(u.Path, "/"),
		Attrs: map[string]string{}, redacted: redactURL(raw)}
	p.Password, _ = u.User.Password()
	if p.Name == "" {
		p.Name = defaultDatabase
	}
	if !dbName.MatchString(p.Name) {
		return nil, bad(fmt.Sprintf("database name %q: use letters, digits and _ (at most 52), since %s_visibility is made beside it", p.Name, p.Name))
	}
	for k, vs := range u.Query() {
		for _, r := range reservedAttrs {
			if strings.EqualFold(k, r) {
				return nil, bad(fmt.Sprintf("parameter %s: put the %s in the URL itself", k, r))
			}
		}
		if len(vs) != 1 {
			return nil, bad(fmt.Sprintf("parameter %s given %d times", k, len(vs)))
		}
		p.Attrs[k] = vs[0]
	}
	if _, ok := p.Attrs["connect_timeout"]; !ok {
		// A host that drops packets would otherwise hold the start for the OS's TCP timeout.
		p.Attrs["connect_timeout"] = "10"
	}
	return p, nil
}

// redactURL is raw with any password replaced (a password query parameter too), even when
// raw does not parse as a URL.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		q := u.Query()
		for k := range q {
			if strings.EqualFold(k, "password") {
				q[k] = []string{"xxxxx"}
				u.RawQuery = q.Encode()
			}
		}
		return u.Redacted()
	}
	// Unparsable: keep what cannot hold a password, the scheme, user and host.
	raw, _, hasQuery := strings.Cut(raw, "?")
	if hasQuery {
		raw += "?…"
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	if user, _, hasPW := strings.Cut(rest[:at], ":"); hasPW {
		return scheme + "://" + user + ":xxxxx" + rest[at:]
	}
	return raw
}

// redact removes p's password from an error, should a driver ever quote it.
func (p *postgresDB) redact(err error) error {
	if err == nil || p.Password == "" || !strings.Contains(err.Error(), p.Password) {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), p.Password, "xxxxx"))
}
