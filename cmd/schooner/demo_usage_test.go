package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/devserver/stack"
)

// The bill's file and its directory appear with its first line, not before: a demo refused
// before any machine ran leaves nothing in --out.
func TestTheUsageReportIsCreatedAtItsFirstLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "demo-usage.jsonl")
	var o stack.Options
	u := useUsageReport(&o, path)
	require.Same(t, u, o.Usage)
	var out bytes.Buffer
	printUsageReport(&out, u, 0)
	assert.Contains(t, out.String(), "no machine has been billed yet")
	assert.NoDirExists(t, filepath.Dir(path))

	_, err := u.Write([]byte("{\"instance\":\"i-1\"}\n"))
	require.NoError(t, err)
	require.NoError(t, u.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "{\"instance\":\"i-1\"}\n", string(b))
	out.Reset()
	printUsageReport(&out, u, 0)
	assert.Contains(t, out.String(), path)
	assert.NotContains(t, out.String(), "warning")
}

// A report that cannot be created fails every line, and the summary says the bill is
// incomplete and why.
func TestAUsageReportThatCannotBeCreatedIsReportedIncomplete(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	u := &usageReport{path: filepath.Join(file, "demo-usage.jsonl")}
	for range 2 {
		_, err := u.Write([]byte("{}\n"))
		require.Error(t, err)
	}
	var out bytes.Buffer
	printUsageReport(&out, u, 2)
	assert.Contains(t, out.String(), "2 lines of the market's bill could not be written")
	assert.Contains(t, out.String(), "creating the report directory")
	require.NoError(t, u.Close())
}

// A run that billed nothing leaves no earlier run's bill in --out: beside this run's report it
// would read as this run's.
func TestARunThatBilledNothingRemovesAnEarlierRunsBill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo-usage.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("{\"instance\":\"i-old\"}\n"), 0o644))
	var o stack.Options
	u := useUsageReport(&o, path)
	require.NoError(t, u.Close())
	assert.NoFileExists(t, path)
	require.NoError(t, useUsageReport(&o, path).Close(), "nothing to remove is no error")
}
