package serving

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// One preemption relay signals training jobs and deployments alike: the names and the JSON
// must stay the same.
func TestPreemptionNoticeIsTrainingsJSON(t *testing.T) {
	assert.Equal(t, training.SignalPreemptionNotice, SignalPreemptionNotice)
	in := training.PreemptionNotice{InstanceID: "i-1", Kind: cloud.Notice, Deadline: time.Unix(100, 0).UTC()}
	data, err := json.Marshal(in)
	require.NoError(t, err)
	var got PreemptionNotice
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, PreemptionNotice(in), got)
	back, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(data), string(back))
	assert.Equal(t, training.ErrTypeInvalidSpec, ErrTypeInvalidSpec)
}

func TestDeployOptionsDefaultsAndModelID(t *testing.T) {
	o := DeployOptions{PollInterval: time.Second}.WithDefaults()
	assert.Equal(t, time.Second, o.PollInterval)
	assert.Equal(t, 10*time.Second, o.HeartbeatTimeout)
	assert.Equal(t, 3, o.MaxStageRestarts)
	assert.Equal(t, "tiny", valid().ModelID())
	assert.Equal(t, "own", Spec{Name: "own", Model: Model{Layers: 2}}.ModelID())
}
