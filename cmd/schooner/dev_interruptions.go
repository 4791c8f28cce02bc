//go:build !agentonly

package main

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/cloud/aws"
	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/devserver/stack"
)

// Interruption paths of `schooner dev --interruptions`.
const (
	interruptionsLog = "log" // the market's event log, read in process (the default)
	interruptionsSQS = "sqs" // EC2's EventBridge → SQS path through the simulated EC2 face
)

func checkInterruptions(v string) error {
	if v != interruptionsLog && v != interruptionsSQS {
		return fmt.Errorf("--interruptions %q: want %s or %s", v, interruptionsLog, interruptionsSQS)
	}
	return nil
}

// relayFromSQS replaces the stack's in-process preemption relay with one that reads the
// simulated EC2 face's SQS queue with the real SDK, as a control plane on AWS reads the queue
// its EventBridge rules feed. GCP's preemptions are then left to the jobs' own polls.
func relayFromSQS(ctx context.Context, s *stack.Stack, apis *simAPIs, rep trainingact.JobReporter, log zerolog.Logger) error {
	p, err := aws.New(ctx, aws.Options{Regions: catalog.KnownRegions("aws"), Endpoint: apis.ec2.Addr()})
	if err != nil {
		return err
	}
	s.Agents.Relay.Stop()
	stop, err := startSQSRelay(context.WithoutCancel(ctx), p, apis.ec2.SQSQueueURL(), rep, log)
	if err != nil {
		return err
	}
	s.Defer(stop)
	return nil
}
