package devserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseDatabase(t *testing.T) {
	for _, raw := range []string{"", "sqlite"} {
		p, err := parseDatabase(raw)
		require.NoError(t, err)
		assert.Nil(t, p, "%q is SQLite", raw)
	}

	p, err := parseDatabase("postgresql://temporal:s3cret@db.example:6543/?sslmode=require")
	require.NoError(t, err)
	assert.Equal(t, "db.example:6543", p.Addr)
	assert.Equal(t, "temporal", p.Name, "no database in the URL: temporal")
	assert.Equal(t, "temporal_visibility", p.VisibilityName())
	assert.Equal(t, map[string]string{"sslmode": "require", "connect_timeout": "10"}, p.Attrs)
	assert.NotContains(t, p.redacted, "s3cret")

	p, err = parseDatabase("postgres://me@[::1]/dev?connect_timeout=3")
	require.NoError(t, err)
	assert.Equal(t, "[::1]:5432", p.Addr)
	assert.Equal(t, "3", p.Attrs["connect_timeout"])
}

// Every bad URL is an error that names the flag and never shows the password.
func TestParseDatabaseErrors(t *testing.T) {
	for raw, want := range map[string]string{
		"mysql://u:s3cret@h/db":                     "want sqlite or a URL postgres://",
		"postgres://u:s3cret%zz@h/db":               "want sqlite or a URL postgres://",
		"postgres://u@h/db%zz?password=s3cret":      "want sqlite or a URL postgres://",
		"/var/lib/temporal.db":                      "want sqlite or a URL postgres://",
		"postgres://:s3cret@h/db":                   "no user",
		"postgres://u:s3cret@/db?host=/run/pg":      "no host",
		"postgres://u:s3cret@h/my-db":               "database name",
		"postgres://u:s3cret@h/db?password=s3cret2": "parameter password",
		"postgres://u:s3cret@h/db?dbname=other":     "parameter dbname",
	} {
		_, err := parseDatabase(raw)
		require.Error(t, err, raw)
		assert.Contains(t, err.Error(), "--db", raw)
		assert.Contains(t, err.Error(), want, raw)
		assert.NotContains(t, err.Error(), "s3cret", raw)
	}
}
