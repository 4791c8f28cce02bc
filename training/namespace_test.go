package training

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJobStoreGivesEveryJobAndRunItsOwnNamespace(t *testing.T) {
	got, err := JobStore("file:///var/lib/schooner/store", "train-demo-1", "run-a")
	require.NoError(t, err)
	assert.Equal(t, "file:///var/lib/schooner/store/jobs/train-demo-1/run-a", got)
	again, err := JobStore("file:///var/lib/schooner/store", "train-demo-1", "run-b")
	require.NoError(t, err)
	assert.NotEqual(t, got, again, "a resubmitted job does not adopt its predecessor's checkpoints")

	got, err = JobStore("s3://bucket/ckpt?endpoint=http://127.0.0.1:9000&region=us-east-1", "train-x", "r1")
	require.NoError(t, err)
	assert.Equal(t, "s3://bucket/ckpt/jobs/train-x/r1?endpoint=http://127.0.0.1:9000&region=us-east-1", got)

	for _, bad := range []string{"..", "a/b", "", "../../etc", "x y"} {
		_, err := JobStore("file:///s", bad, "r")
		assert.Error(t, err, "job id %q", bad)
	}
}
