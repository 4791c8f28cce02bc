package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/internal/defaults"
)

// Part sizes of multipart uploads. S3 refuses parts under 5 MiB (except the last); 64 MiB keeps
// the part count of a multi-GB shard in the hundreds and a lost part cheap to resend.
const (
	DefaultPartSize int64 = 64 << 20
	MinPartSize     int64 = 5 << 20
)

// defaultS3Region is used when neither the options nor the AWS configuration name a region;
// most S3-compatible services accept any region and sign with this one.
const defaultS3Region = "us-east-1"

// S3Options configures an S3 store. Only Bucket is required.
type S3Options struct {
	Bucket string
	Prefix string // keys are stored under this prefix ("job-7" → "job-7/step-…")
	// Endpoint is a custom S3-compatible endpoint (http://127.0.0.1:7070); empty means AWS.
	Endpoint string
	// Region signs requests; empty takes the AWS configuration's region, else us-east-1.
	Region string
	// VirtualHostStyle addresses buckets as bucket.host instead of host/bucket. Path style is
	// the default because every S3-compatible service accepts it and dotted bucket names
	// need it.
	VirtualHostStyle bool
	// AccessKeyID and SecretAccessKey are static credentials; empty uses the AWS default
	// chain (AWS_ACCESS_KEY_ID and friends, shared config, instance role).
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// PartSize is the multipart part size (default DefaultPartSize, at least MinPartSize).
	// Objects up to one part are sent in a single PutObject.
	PartSize int64
	// PartConcurrency is how many parts of one object are sent at once (default 4).
	PartConcurrency int
	Logger          zerolog.Logger
}

// S3 is a Store on Amazon S3 or any S3-compatible service (MinIO, versitygw, Ceph RGW, R2,
// GCS in interoperability mode). Every object carries its size and CRC-32C as user metadata
// and is sent with an x-amz-checksum-crc32c per request, so the service verifies each byte.
type S3 struct {
	client  *s3.Client
	opts    S3Options
	prefix  string
	partsUp atomic.Int64
	bytesUp atomic.Int64
}

// S3Stats counts what an S3 store sent, so tests and logs can tell a resumed upload from a
// fresh one.
type S3Stats struct {
	PartsUploaded int64 // multipart parts sent
	BytesUploaded int64 // object bytes sent, single-request puts and parts together
}

// NewS3 makes an S3 store. It talks to the service only when used.
func NewS3(ctx context.Context, opts S3Options) (*S3, error) {
	if opts.Bucket == "" {
		return nil, errors.New("s3 store needs a bucket")
	}
	if opts.PartSize == 0 {
		opts.PartSize = DefaultPartSize
	}
	if opts.PartSize < MinPartSize {
		return nil, fmt.Errorf("s3 part size %d is below the S3 minimum of %d bytes", opts.PartSize, MinPartSize)
	}
	defaults.Positive(&opts.PartConcurrency, 4)
	var load []func(*config.LoadOptions) error
	if opts.AccessKeyID != "" || opts.SecretAccessKey != "" {
		load = append(load, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(opts.AccessKeyID, opts.SecretAccessKey, opts.SessionToken)))
	}
	if opts.Endpoint != "" {
		// Off AWS the instance-role lookup can only time out.
		load = append(load, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("loading aws configuration: %w", err)
	}
	switch {
	case opts.Region != "":
	case cfg.Region != "":
		opts.Region = cfg.Region
	default:
		opts.Region = defaultS3Region
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Region = opts.Region
		o.UsePathStyle = !opts.VirtualHostStyle
		// Multipart objects carry a checksum of checksums the SDK cannot check; readers
		// verify those against the checkpoint's own CRCs, so the SDK's warning is noise.
		o.DisableLogOutputChecksumValidationSkipped = true
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
	})
	return &S3{client: client, opts: opts, prefix: cleanPrefix(opts.Prefix)}, nil
}

// Client is the underlying SDK client, for tests and tools that need a call the Store
// interface does not offer.
func (s *S3) Client() *s3.Client { return s.client }

// Stats reports what this store has sent so far.
func (s *S3) Stats() S3Stats {
	return S3Stats{PartsUploaded: s.partsUp.Load(), BytesUploaded: s.bytesUp.Load()}
}

// String is the store's URL, with the endpoint and without credentials.
func (s *S3) String() string {
	u := url.URL{Scheme: "s3", Host: s.opts.Bucket, Path: "/" + s.prefix}
	q := url.Values{}
	if s.opts.Endpoint != "" {
		q.Set("endpoint", s.opts.Endpoint)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// full is the bucket key of a store key.
func (s *S3) full(key string) string { return s.prefix + key }

// Get opens the object; a missing key wraps ErrNotFound.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := validKey(key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.opts.Bucket, Key: aws.String(s.full(key))})
	if err != nil {
		return nil, s.wrap("getting", key, err)
	}
	return &checkedBody{ReadCloser: out.Body, what: key + " from " + s.String()}, nil
}

// List returns the objects under prefix in lexical order, following every page.
func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var infos []ObjectInfo
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: &s.opts.Bucket, Prefix: aws.String(s.full(prefix)),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.wrap("listing", prefix+"*", err)
		}
		for _, o := range page.Contents {
			info := ObjectInfo{Key: aws.ToString(o.Key)[len(s.prefix):], Size: aws.ToInt64(o.Size)}
			if o.LastModified != nil {
				info.Modified = *o.LastModified
			}
			infos = append(infos, info)
		}
	}
	return infos, nil
}

// deleteBatch is the most keys one DeleteObjects call takes.
const deleteBatch = 1000

// Delete removes the keys in batches of a thousand; missing keys are not an error.
func (s *S3) Delete(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if err := validKey(k); err != nil {
			return err
		}
	}
	for start := 0; start < len(keys); start += deleteBatch {
		batch := keys[start:min(start+deleteBatch, len(keys))]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i, k := range batch {
			ids[i] = types.ObjectIdentifier{Key: aws.String(s.full(k))}
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: &s.opts.Bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return s.wrap("deleting", fmt.Sprintf("%d keys from %s", len(batch), batch[0]), err)
		}
		var errs []error
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			errs = append(errs, fmt.Errorf("deleting %s from %s: %s: %s", aws.ToString(e.Key), s, aws.ToString(e.Code), aws.ToString(e.Message)))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}
