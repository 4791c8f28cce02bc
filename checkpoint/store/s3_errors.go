package store

import (
	"errors"
	"fmt"
	"io"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// This file is the one place that knows how S3 services spell their errors.

// wrap names the operation, key and store in an SDK error, and turns not-found into ErrNotFound.
func (s *S3) wrap(op, key string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("%s %s from %s: %w", op, key, s, ErrNotFound)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch":
			return fmt.Errorf("%s %s in %s: %w: %w", op, key, s, ErrChecksum, err)
		}
	}
	return fmt.Errorf("%s %s in %s: %w", op, key, s, err)
}

// isNotFound recognizes a missing object however the service says it: a typed NoSuchKey, an
// API error code, or a bare 404 (HeadObject has no body to carry a code).
func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return true
		}
		return false // NoSuchBucket, NoSuchUpload and the like are not a missing object
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == 404
}

// isNoSuchUpload recognizes an upload id the service no longer knows.
func isNoSuchUpload(err error) bool {
	var nsu *types.NoSuchUpload
	if errors.As(err, &nsu) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "NoSuchUpload"
}

// checkedBody turns the SDK's response checksum failure (it validates x-amz-checksum-crc32c
// on GetObject when the service returns one) into ErrChecksum, so callers can tell stored
// bytes that rotted from a dropped connection.
type checkedBody struct {
	io.ReadCloser
	what string
}

func (b *checkedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && strings.Contains(err.Error(), "checksum did not match") {
		err = fmt.Errorf("reading %s: %w: %w", b.what, ErrChecksum, err)
	}
	return n, err
}
