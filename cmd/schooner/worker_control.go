package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/aws"
	"github.com/schooner-ml/schooner/cloud/gcp"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
)

// controlJobFlags give a standalone control worker what the job activities need: the cloud
// they buy machines from, and the control plane's policies (profiles, store roots, limits).
// Without --cloud the worker serves the workflows and the node registry only, and jobs wait
// for a control worker that has it.
type controlJobFlags struct {
	cloud      cloudFlags
	profiles   string
	storeRoots []string
	limits     training.Limits
	// eventsQueue is the SQS queue URL EventBridge rules feed with EC2 interruption events.
	eventsQueue string
	// gcePoll is how often GCE's zone operations are read for preemptions (0: not).
	gcePoll time.Duration
}

func addControlJobFlags(fs *pflag.FlagSet, f *controlJobFlags) {
	fs.StringVar(&f.cloud.cloud, "cloud", "", "where jobs buy machines: aws, gcp, aws+gcp, or sim (the simulated market of a running 'schooner dev', through its EC2 and Compute faces); empty: serve workflows only, and run no job activities")
	addProviderFlags(fs, &f.cloud)
	fs.StringVar(&f.profiles, "profiles", "", "directory of model and network profiles (empty: the built-in ones)")
	fs.StringSliceVar(&f.storeRoots, "store-root", nil, "a directory file:// checkpoint stores may be in (repeatable; default /var/lib/schooner and the OS temp dir)")
	fs.Var(&limitsFile{limits: &f.limits}, "limits", "YAML file of job limits; absent fields keep the defaults")
	fs.DurationVar(&f.gcePoll, "gcp-preemptions", 0, "read GCE's zone operations for preemptions this often (e.g. 5s; one list per zone each time) and tell the jobs at once; 0: jobs see them at their own polls")
	fs.StringVar(&f.eventsQueue, "aws-events-queue", "", "SQS queue URL of EC2 interruption events (EventBridge rules; docs/operations.md): jobs hear of a reclaimed machine at once")
}

// relayEvents reads the --aws-events-queue, if set, and signals each preemption to its job
// until ctx ends; stop waits for it.
func (f *controlJobFlags) relayEvents(ctx context.Context, c client.Client, log zerolog.Logger) (stop func(), err error) {
	if f.eventsQueue == "" {
		return func() {}, nil
	}
	p, err := f.cloud.awsProvider(ctx, f.cloud.awsEndpoint)
	if err != nil {
		return nil, err
	}
	return startSQSRelay(ctx, p.(*aws.Provider), f.eventsQueue, workers.NewReporter(c), log)
}

// startSQSRelay long-polls queueURL (EC2 events from EventBridge) and signals every
// preemption to its job until ctx ends or stop is called.
func startSQSRelay(ctx context.Context, p *aws.Provider, queueURL string, rep trainingact.JobReporter, log zerolog.Logger) (stop func(), err error) {
	q, err := aws.NewEventQueue(ctx, p, queueURL)
	if err != nil {
		return nil, err
	}
	qlog := log.With().Str("component", "sqs-events").Logger()
	q.OnError = func(err error) { qlog.Warn().Err(err).Msg("reading interruption events") }
	return startRelay(ctx, q, "sqs", rep, log), nil
}

// eventFeed is an event source that runs until its context ends.
type eventFeed interface {
	cloud.EventSource
	Run(ctx context.Context)
}

// startRelay runs feed and a PreemptionRelay over it until ctx ends or stop is called.
func startRelay(ctx context.Context, feed eventFeed, name string, rep trainingact.JobReporter, log zerolog.Logger) (stop func()) {
	fctx, cancel := context.WithCancel(ctx)
	go feed.Run(fctx)
	relay := &workers.PreemptionRelay{Source: feed, Reporter: rep,
		Logger: log.With().Str("component", "preemption-relay").Str("source", name).Logger()}
	relay.Start(fctx)
	return func() { cancel(); relay.Stop() }
}

// relayGCEPreemptions follows GCE's zone operations every --gcp-preemptions, if set.
func (f *controlJobFlags) relayGCEPreemptions(ctx context.Context, c client.Client, log zerolog.Logger) (stop func(), err error) {
	if f.gcePoll <= 0 {
		return func() {}, nil
	}
	p, err := f.cloud.gcpProvider(ctx, f.cloud.gcpEndpoint)
	if err != nil {
		return nil, err
	}
	flog := log.With().Str("component", "gce-preemptions").Logger()
	feed := &gcp.PreemptionFeed{P: p.(*gcp.Provider), Interval: f.gcePoll, OnError: func(err error) { flog.Warn().Err(err).Msg("reading preemptions") }}
	return startRelay(ctx, feed, "gce-operations", workers.NewReporter(c), log), nil
}

// check refuses a --cloud or endpoint the worker could not use, before it connects to
// Temporal (which it may wait minutes for).
func (f *controlJobFlags) check() error {
	if err := f.cloud.checkCloud("for workflows only"); err != nil {
		return err
	}
	if err := checkEndpoint("--aws-endpoint", f.cloud.awsEndpoint, defaultSimEC2Addr); err != nil {
		return err
	}
	return checkEndpoint("--gcp-endpoint", f.cloud.gcpEndpoint, defaultSimGCEAddr)
}

// options are the control worker's: with a cloud, the training, fleet and serving activities
// on it.
func (f *controlJobFlags) options(ctx context.Context, log zerolog.Logger) (workers.ControlOptions, string, error) {
	if f.cloud.cloud == "" {
		return workers.ControlOptions{}, "no --cloud: serving workflows only; training and serving jobs need a control worker with --cloud", nil
	}
	p, note, err := f.cloud.provider(ctx, true)
	if err != nil {
		return workers.ControlOptions{}, "", fmt.Errorf("--cloud %s: %w", f.cloud.cloud, err)
	}
	return workers.ControlOptions{Training: &trainingact.Control{Provider: p, ProfilesDir: f.profiles, Verify: trainsim.VerifyStep,
		StoreRoots: f.storeRoots, Limits: f.limits, Logger: log}}, note, nil
}
