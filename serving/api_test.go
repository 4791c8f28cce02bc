package serving

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/schooner-ml/schooner/training"
)

// Both domains refuse a bad spec with the same error type, so clients tell it alike.
func TestInvalidSpecIsTrainingsErrorType(t *testing.T) {
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
