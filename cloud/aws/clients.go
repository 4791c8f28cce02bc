package aws

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// defaultRegion is used when neither Options nor the SDK configuration name one.
const defaultRegion = "us-east-1"

// newClients loads the SDK configuration once and makes one EC2 client per region.
func newClients(ctx context.Context, opts Options) (map[string]EC2, []string, error) {
	cfg, err := loadConfig(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	regions := opts.Regions
	if len(regions) == 0 {
		r := cfg.Region
		if r == "" {
			r = defaultRegion
		}
		regions = []string{r}
	}
	clients := make(map[string]EC2, len(regions))
	for _, region := range regions {
		clients[region] = ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			o.Region = region
			o.Retryer = newRetryer(opts)
			if opts.Endpoint != "" {
				o.BaseEndpoint = aws.String(opts.Endpoint)
			}
		})
	}
	return clients, regions, nil
}

// loadConfig loads the SDK configuration (with Options' credentials); against a simulator
// endpoint it never asks the instance metadata service and falls back to dummy credentials.
func loadConfig(ctx context.Context, opts Options) (aws.Config, error) {
	var load []func(*config.LoadOptions) error
	if opts.Credentials != nil {
		load = append(load, config.WithCredentialsProvider(opts.Credentials))
	}
	if opts.Endpoint != "" {
		// Off EC2 (where a simulator runs) the instance-role lookup only times out.
		load = append(load, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading aws configuration: %w", err)
	}
	if opts.Endpoint != "" && opts.Credentials == nil {
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("schooner-sim", "schooner-sim", "")
		}
	}
	return cfg, nil
}

// newSQS is an SQS client for the region of queueURL (https://sqs.<region>.amazonaws.com/...),
// else the first of Options.Regions, else the configuration's; Options.Endpoint overrides its
// endpoint as it does EC2's.
func newSQS(ctx context.Context, opts Options, queueURL string) (*sqs.Client, error) {
	cfg, err := loadConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	region := cfg.Region
	if len(opts.Regions) > 0 {
		region = opts.Regions[0]
	}
	if u, err := url.Parse(queueURL); err == nil {
		if parts := strings.Split(u.Hostname(), "."); len(parts) >= 3 && parts[0] == "sqs" {
			region = parts[1]
		}
	}
	if region == "" {
		region = defaultRegion
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.Region = region
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
	}), nil
}

// newRetryer is the SDK's standard retryer, which retries throttling (RequestLimitExceeded)
// and transient faults with jittered backoff, told not to retry capacity and quota errors.
func newRetryer(opts Options) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		if opts.RetryMaxAttempts > 0 {
			o.MaxAttempts = opts.RetryMaxAttempts
		}
		if opts.RetryMaxBackoff > 0 {
			o.MaxBackoff = opts.RetryMaxBackoff
		}
		o.Retryables = append([]retry.IsErrorRetryable{noRetryOnShortage}, o.Retryables...)
	})
}
