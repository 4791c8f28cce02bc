package servingact

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/stage"
)

type noDeployment struct{}

func (noDeployment) StageReady(context.Context, string, serving.StageReady) error { return nil }
func (noDeployment) Stages(context.Context, string) (serving.Pipeline, error) {
	return serving.Pipeline{}, nil
}

func TestRunStageRefusesABadAssignmentForGood(t *testing.T) {
	n := &Node{Supervisor: &stage.Supervisor{NodeID: "i-1", Deployment: noDeployment{}}}
	_, err := n.RunStage(context.Background(), serving.StageAssignment{Deployment: "d", Depth: 2, Stage: 3})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, ErrTypeBadAssignment, app.Type())
	assert.True(t, app.NonRetryable())
	assert.Contains(t, err.Error(), "stage 3 is not in a pipeline of 2 stages")
}
