package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/schooner-ml/schooner/cloud"
)

// SQS is the part of the SQS API an EventQueue uses (the SDK's *sqs.Client).
type SQS interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// EventBridge detail types of the EC2 events an EventQueue reads (rules on source aws.ec2
// forward them to the queue).
const (
	DetailSpotInterruption = "EC2 Spot Instance Interruption Warning"
	DetailRebalance        = "EC2 Instance Rebalance Recommendation"
	DetailStateChange      = "EC2 Instance State-change Notification"
)

// SpotNoticeLead is how long before reclaiming a spot instance EC2 sends its interruption
// warning.
const SpotNoticeLead = 2 * time.Minute

// EventQueue reads EC2 interruption events from an SQS queue that EventBridge rules feed (the
// way Karpenter learns of interruptions) and keeps them as a cloud.EventSource, so the
// control plane's PreemptionRelay tells a job of a lost machine within a second instead of at
// its next poll: a reclaimed machine cannot say so itself. Interruption warnings and
// rebalance recommendations become notices; a state change to shutting-down, terminated,
// stopping or stopped becomes a preemption (the job confirms it with the provider before
// acting, so one it caused itself costs a Describe). Each instance is looked up once for its
// job tag (EC2 keeps a terminated instance describable for about an hour; one it no longer
// knows has no job, and the relay passes it by). Messages are deleted once kept; a message
// that does not parse is deleted and logged through OnError, never retried for ever.
type EventQueue struct {
	Client   SQS
	QueueURL string
	// Describe looks instances up (Provider.Describe), for their job tag and zone.
	Describe func(ctx context.Context, ids []string) ([]cloud.Instance, error)
	// OnError hears what could not be read (nil: ignored).
	OnError func(error)

	cloud.EventLog
}

var _ cloud.EventSource = (*EventQueue)(nil)

// NewEventQueue reads queueURL with the SDK's SQS client (configured as p's EC2 clients are,
// Options.Endpoint included) and looks instances up with p.
func NewEventQueue(ctx context.Context, p *Provider, queueURL string) (*EventQueue, error) {
	client, err := newSQS(ctx, p.opts, queueURL)
	if err != nil {
		return nil, err
	}
	return &EventQueue{Client: client, QueueURL: queueURL, Describe: p.Describe}, nil
}

// Run long-polls the queue until ctx ends.
func (q *EventQueue) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := q.Poll(ctx, 20); err != nil && ctx.Err() == nil {
			q.report(err)
			select { // a queue that fails (permissions, a deleted queue) is retried gently
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
	}
}

// Poll receives one batch (waiting up to wait seconds for it), keeps its events and deletes
// its messages.
func (q *EventQueue) Poll(ctx context.Context, wait int32) error {
	out, err := q.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.QueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: wait,
	})
	if err != nil {
		return fmt.Errorf("receiving from %s: %w", q.QueueURL, err)
	}
	for _, m := range out.Messages {
		e, ok, err := parseEC2Event(aws.ToString(m.Body))
		if err != nil {
			q.report(fmt.Errorf("message %s of %s: %w", aws.ToString(m.MessageId), q.QueueURL, err))
		}
		if ok {
			if err := q.keep(ctx, e); err != nil {
				q.report(err)
				continue // left in the queue: it comes back after its visibility timeout
			}
		}
		if _, err := q.Client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			q.report(fmt.Errorf("deleting message %s: %w", aws.ToString(m.MessageId), err))
		}
	}
	return nil
}

// keep looks the instance up for its job and records the event.
func (q *EventQueue) keep(ctx context.Context, e cloud.Event) error {
	if q.Describe != nil {
		found, err := q.Describe(ctx, []string{e.Instance.ID})
		if err != nil {
			return fmt.Errorf("describing %s: %w", e.Instance.ID, err)
		}
		for _, in := range found {
			if in.ID == e.Instance.ID {
				interruption := e.Instance.Interruption
				e.Instance = in
				if interruption != nil {
					interruption.Zone = in.Zone
				}
				e.Instance.Interruption = interruption
			}
		}
	}
	q.Add(e)
	return nil
}

func (q *EventQueue) report(err error) {
	if q.OnError != nil {
		q.OnError(err)
	}
}

// ec2Event is the part of an EventBridge event an EventQueue reads.
type ec2Event struct {
	Source     string    `json:"source"`
	DetailType string    `json:"detail-type"`
	Time       time.Time `json:"time"`
	Detail     struct {
		InstanceID string `json:"instance-id"`
		State      string `json:"state"`
	} `json:"detail"`
}

// parseEC2Event turns a message body into an event; ok is false for events that say nothing
// about a lost or threatened instance (a state change to running, another detail type).
func parseEC2Event(body string) (cloud.Event, bool, error) {
	var ev ec2Event
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return cloud.Event{}, false, fmt.Errorf("not an EventBridge event: %w", err)
	}
	if ev.Source != "aws.ec2" || ev.Detail.InstanceID == "" {
		return cloud.Event{}, false, errors.New("not an EC2 instance event")
	}
	e := cloud.Event{Time: ev.Time, Instance: cloud.Instance{ID: ev.Detail.InstanceID, Provider: "aws"}}
	switch ev.DetailType {
	case DetailSpotInterruption, DetailRebalance:
		e.Kind = cloud.EventNotice
		deadline := ev.Time.Add(SpotNoticeLead)
		if ev.DetailType == DetailRebalance {
			deadline = time.Time{} // a risk, not a date
		}
		e.Instance.Interruption = &cloud.Interruption{Kind: cloud.Notice, InstanceID: ev.Detail.InstanceID, Deadline: deadline, At: ev.Time}
	case DetailStateChange:
		switch ev.Detail.State {
		case "shutting-down", "terminated", "stopping", "stopped":
			e.Kind = cloud.EventPreempted
			e.Instance.Interruption = &cloud.Interruption{Kind: cloud.Preempted, InstanceID: ev.Detail.InstanceID, At: ev.Time}
		default:
			return cloud.Event{}, false, nil
		}
	default:
		return cloud.Event{}, false, nil
	}
	return e, true, nil
}
