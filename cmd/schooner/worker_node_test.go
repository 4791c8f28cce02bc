//go:build !agentonly

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node agent's notice flags are checked before it connects to anything.
func TestWorkerNodeRefusesABadWatchBeforeConnecting(t *testing.T) {
	t.Parallel()
	for want, args := range map[string][]string{
		"unknown --watch \"azure\"":                   {"--watch", "azure"},
		"give --imds-endpoint or --gce-metadata, not": {"--imds-endpoint", "http://127.0.0.1:1/imds/i-1", "--gce-metadata", "http://127.0.0.1:2"},
	} {
		_, err := executeFresh(newNodeWorkerCommand, append(args, "--address", "127.0.0.1:1")...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), want)
		assert.NotContains(t, err.Error(), "connecting to Temporal")
	}
}

// A control worker's --cloud and endpoints are checked before it connects (it waited for
// Temporal first, then failed on the cloud).
func TestWorkerControlRefusesABadCloudBeforeConnecting(t *testing.T) {
	t.Parallel()
	for want, args := range map[string][]string{
		"invalid --cloud \"azure\"":      {"--cloud", "azure"},
		"invalid --aws-endpoint \"bad\"": {"--cloud", "aws", "--aws-endpoint", "bad"},
		"invalid --gcp-endpoint \"x:1\"": {"--cloud", "gcp", "--gcp-endpoint", "x:1"},
	} {
		_, err := executeFresh(newControlWorkerCommand, append(args, "--address", "127.0.0.1:1")...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), want)
		assert.NotContains(t, err.Error(), "connecting to Temporal")
	}
}
