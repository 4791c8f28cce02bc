package aws

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

// Through the real SQS client against the simulator's queue: a spot notice and a
// preemption arrive as events with the job's tag; a user's own terminate does not.
func TestEventQueueReadsInterruptionsFromSQS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	insts := e.mustCreate(t, ctx, spotReq("job-7", "us-east-1b", 3))
	q, err := NewEventQueue(ctx, e.p, e.face.SQSQueueURL())
	require.NoError(t, err)
	var errs []error
	q.OnError = func(err error) { errs = append(errs, err) }

	require.NoError(t, e.fake.AnnounceNotice(insts[0].ID, time.Now().Add(2*time.Minute)))
	require.NoError(t, e.fake.Preempt(insts[1].ID))
	require.NoError(t, e.p.Terminate(ctx, []string{insts[2].ID}))
	deadline := time.Now().Add(10 * time.Second)
	for len(q.EventsSince(0)) < 2 && time.Now().Before(deadline) {
		require.NoError(t, q.Poll(ctx, 1))
	}
	got := q.EventsSince(0)
	require.Len(t, got, 2, "%+v", got)
	assert.Equal(t, cloud.EventNotice, got[0].Kind)
	assert.Equal(t, insts[0].ID, got[0].Instance.ID)
	assert.Equal(t, "job-7", got[0].Instance.JobID, "the job tag comes from Describe")
	require.NotNil(t, got[0].Instance.Interruption)
	assert.Equal(t, "us-east-1b", got[0].Instance.Interruption.Zone)
	assert.Equal(t, cloud.EventPreempted, got[1].Kind)
	assert.Equal(t, insts[1].ID, got[1].Instance.ID)
	assert.Equal(t, "job-7", got[1].Instance.JobID)
	assert.Equal(t, int64(2), q.LastSeq())
	assert.Empty(t, q.EventsSince(2))
	assert.Empty(t, errs)

	// Deleted once kept: another poll brings nothing back.
	require.NoError(t, q.Poll(ctx, 0))
	assert.Len(t, q.EventsSince(0), 2)
}

func TestEventQueueParsesEventBridgeEvents(t *testing.T) {
	at := "2026-12-05T10:00:00Z"
	warn := `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","time":"` + at + `","detail":{"instance-id":"i-1","instance-action":"terminate"}}`
	e, ok, err := parseEC2Event(warn)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, cloud.EventNotice, e.Kind)
	assert.Equal(t, "2026-12-05T10:02:00Z", e.Instance.Interruption.Deadline.Format(time.RFC3339))
	rebalance := `{"source":"aws.ec2","detail-type":"EC2 Instance Rebalance Recommendation","time":"` + at + `","detail":{"instance-id":"i-1"}}`
	e, ok, _ = parseEC2Event(rebalance)
	require.True(t, ok)
	assert.True(t, e.Instance.Interruption.Deadline.IsZero(), "a rebalance recommendation names no date")
	for state, lost := range map[string]bool{"running": false, "pending": false, "shutting-down": true, "stopped": true} {
		e, ok, err = parseEC2Event(`{"source":"aws.ec2","detail-type":"EC2 Instance State-change Notification","time":"` + at + `","detail":{"instance-id":"i-1","state":"` + state + `"}}`)
		require.NoError(t, err)
		assert.Equal(t, lost, ok, state)
		if lost {
			assert.Equal(t, cloud.EventPreempted, e.Kind, state)
		}
	}
	_, _, err = parseEC2Event("not json")
	assert.Error(t, err)
	_, _, err = parseEC2Event(`{"source":"aws.s3","detail":{}}`)
	assert.Error(t, err)
}
