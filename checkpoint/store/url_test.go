package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/checkpoint/store/s3test"
)

func TestOpenFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ckpt")
	s, err := store.Open(context.Background(), "file://"+dir)
	require.NoError(t, err)
	assert.IsType(t, &store.Dir{}, s)
	assert.Equal(t, "file://"+dir, s.String())
}

func TestOpenS3(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	s, err := store.Open(context.Background(), "s3://bucket/job-7/?endpoint=http://127.0.0.1:7070&region=eu-west-1&path_style=true&part_size=8MiB")
	require.NoError(t, err)
	require.IsType(t, &store.S3{}, s)
	assert.Equal(t, "s3://bucket/job-7/?endpoint=http%3A%2F%2F127.0.0.1%3A7070", s.String())
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"":                                 "no scheme",
		"/var/ckpt":                        "no scheme",
		"gs://bucket":                      `unsupported scheme "gs"`,
		"s3:///prefix":                     "missing bucket name",
		"s3://key:secret@bucket/p":         "credentials do not belong in the URL",
		"s3://b/p?endpoint=127.0.0.1:7070": "endpoint",
		"s3://b/p?path_style=maybe":        "path_style",
		"s3://b/p?part_size=big":           "part_size",
		"s3://b/p?part_size=1MiB":          "below the S3 minimum",
		"s3://b/p?regoin=x&color=red":      "unknown query parameter(s) color, regoin",
		"file://host/dir":                  "take no host",
		"file:relative/dir":                "must be absolute",
		"file:///dir?x=1":                  "take no query",
	}
	for url, want := range cases {
		_, err := store.ParseURL(url)
		assert.ErrorContains(t, err, want, "ParseURL(%q)", url)
		_, err = store.Open(context.Background(), url)
		assert.ErrorContains(t, err, want, "URL %q", url)
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	u, err := store.ParseURL("file:///var/lib/ckpt")
	require.NoError(t, err)
	assert.Equal(t, store.URL{Scheme: store.SchemeFile, Dir: "/var/lib/ckpt"}, u)
	u, err = store.ParseURL("file://localhost/var/lib/ckpt")
	require.NoError(t, err)
	assert.Equal(t, "/var/lib/ckpt", u.Dir)

	u, err = store.ParseURL("s3://bucket/job-7/?endpoint=http://127.0.0.1:7070&region=eu-west-1&path_style=false&part_size=8MiB")
	require.NoError(t, err)
	assert.Equal(t, store.URL{Scheme: store.SchemeS3, S3: store.S3Options{Bucket: "bucket", Prefix: "job-7",
		Endpoint: "http://127.0.0.1:7070", Region: "eu-west-1", VirtualHostStyle: true, PartSize: 8 << 20}}, u)
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"8388608": 8 << 20, "8MiB": 8 << 20, "64M": 64 << 20, "1GiB": 1 << 30, "5 MiB": 5 << 20, "10B": 10} {
		got, err := store.ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "-1", "1.5GiB", "MiB"} {
		_, err := store.ParseSize(in)
		assert.Error(t, err, in)
	}
}

func TestOpenAgainstGateway(t *testing.T) {
	g := s3test.Start(t)
	g.Env(t)
	s, err := store.Open(context.Background(), g.URL("via-url"))
	require.NoError(t, err)
	put(t, s, "a/b", []byte("over the wire"))
	assert.Equal(t, []byte("over the wire"), get(t, s, "a/b"))
}
