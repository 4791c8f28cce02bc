package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// defaultRegion is used when neither Options nor the SDK configuration name one.
const defaultRegion = "us-east-1"

// newClients loads the SDK configuration once and makes one EC2 client per region.
func newClients(ctx context.Context, opts Options) (map[string]EC2, []string, error) {
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
		return nil, nil, fmt.Errorf("loading aws configuration: %w", err)
	}
	if opts.Endpoint != "" && opts.Credentials == nil {
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("schooner-sim", "schooner-sim", "")
		}
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
