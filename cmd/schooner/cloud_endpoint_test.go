package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// An endpoint override that is not an http(s) URL is refused at once, naming the flag; the
// SDKs failed only after their retries, about an empty scheme.
func TestCloudEndpointMustBeAURL(t *testing.T) {
	t.Parallel()
	for _, tc := range [][]string{
		{"instances", "--cloud", "aws", "--aws-endpoint", "notaurl"},
		{"offerings", "--cloud", "gcp", "--gcp-endpoint", "127.0.0.1:7241"},
		{"offerings", "--cloud", "aws", "--aws-endpoint", "ftp://x"},
	} {
		_, err := execute(newCloudCommand(), tc...)
		assert.ErrorContains(t, err, "invalid --"+tc[3][2:]+" ", "%v", tc)
		assert.ErrorContains(t, err, "want an http or https URL with a host", "%v", tc)
	}
	assert.NoError(t, checkEndpoint("--aws-endpoint", "http://127.0.0.1:7240", defaultSimEC2Addr))
	assert.NoError(t, checkEndpoint("--aws-endpoint", "", defaultSimEC2Addr))
}
