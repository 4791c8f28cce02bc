package training

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSpecReadsYAMLAndJSONAlike(t *testing.T) {
	y := []byte("name: a\nmodel: {name: OPT-350}\nglobal_batch: 8\niterations: 10\ncheckpoint: {every: 5, store: file:///tmp/x}\n")
	j := []byte(`{"name":"a","model":{"name":"OPT-350"},"global_batch":8,"iterations":10,"checkpoint":{"every":5,"store":"file:///tmp/x"}}`)
	fromYAML, err := ParseSpec(y, FormatYAML)
	require.NoError(t, err)
	fromJSON, err := ParseSpec(j, FormatJSON)
	require.NoError(t, err)
	assert.Equal(t, fromJSON, fromYAML)
	assert.Equal(t, int64(10), fromYAML.Iterations)
}

func TestParseSpecRejectsUnknownFields(t *testing.T) {
	for name, tc := range map[string]struct {
		data   string
		format Format
	}{
		"yaml top level": {"name: a\niteration: 10\n", FormatYAML},
		"yaml nested":    {"checkpoint: {evry: 5}\n", FormatYAML},
		"json":           {`{"name":"a","budgett":{}}`, FormatJSON},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSpec([]byte(tc.data), tc.format)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "unknown field")
		})
	}
}

func TestParseSpecRejectsBadSyntax(t *testing.T) {
	_, err := ParseSpec([]byte("name: [a\n"), FormatYAML)
	require.Error(t, err)
	_, err = ParseSpec([]byte("name: a\n"), FormatJSON)
	require.Error(t, err, "JSON format does not accept YAML")
	_, err = ParseSpec([]byte(`{"name":"a"}{"name":"b"}`), FormatJSON)
	require.Error(t, err)
}

func TestFormatOf(t *testing.T) {
	assert.Equal(t, FormatJSON, FormatOf("x/job.JSON"))
	assert.Equal(t, FormatYAML, FormatOf("job.yml"))
	assert.Equal(t, FormatYAML, FormatOf("job"))
}

// TestExamplesAreValid keeps examples/ honest: every training spec parses and validates
// (serve-*.yaml are serving deployments, checked by package serving).
func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*"))
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".yaml") && !strings.HasSuffix(f, ".json") || strings.HasPrefix(filepath.Base(f), "serve-") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			spec, err := ParseSpec(b, FormatOf(f))
			require.NoError(t, err)
			require.NoError(t, spec.WithDefaults().Validate())
		})
	}
	assert.GreaterOrEqual(t, n, 4)
}

func TestParseSpecRejectsWhatYAMLWouldDropOrMerge(t *testing.T) {
	for name, c := range map[string]struct {
		data   string
		format Format
		want   string
	}{
		"two documents":      {"name: a\niterations: 10\n---\nname: b\n", FormatYAML, "second document"},
		"duplicate key":      {"name: a\niterations: 10\niterations: 20\n", FormatYAML, "iterations is given twice"},
		"nested duplicate":   {"name: a\nmodel:\n  name: OPT-350\n  name: GPT-Neo-2.7\n", FormatYAML, "model.name is given twice"},
		"json duplicate key": {`{"name": "a", "name": "b"}`, FormatJSON, "name is given twice"},
		"empty":              {"", FormatYAML, "empty"},
		"too large":          {"name: " + strings.Repeat("x", MaxSpecFileBytes), FormatYAML, "more than"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSpec([]byte(c.data), c.format)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := ParseSpec([]byte("name: a\n---\n"), FormatYAML)
	require.NoError(t, err, "a trailing document marker alone is one document")
}
