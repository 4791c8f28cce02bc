package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// resumable finds an unfinished multipart upload of key whose stored parts all match the
// local parts (same number, size and CRC-32C) and returns its id and the parts it already
// holds. S3 does not show a pending upload's metadata, so part checksums are the test; a
// completed upload is verified against the metadata afterwards (errStaleUpload). Uploads of
// the key that hold other content can never be completed correctly and are aborted.
func (s *S3) resumable(ctx context.Context, key string, parts []part) (string, map[int32]types.CompletedPart, error) {
	uploads, err := s.uploads(ctx, s.full(key))
	if err != nil {
		return "", nil, s.wrap("listing unfinished uploads of", key, err)
	}
	var bestID string
	var best map[int32]types.CompletedPart
	var discard []string
	for _, u := range uploads {
		if aws.ToString(u.Key) != s.full(key) {
			continue
		}
		id := aws.ToString(u.UploadId)
		have, ok, err := s.matchParts(ctx, key, id, parts)
		if err != nil {
			return "", nil, err
		}
		switch {
		case !ok:
			discard = append(discard, id)
		case best == nil || len(have) > len(best):
			if best != nil {
				discard = append(discard, bestID)
			}
			bestID, best = id, have
		default:
			discard = append(discard, id)
		}
	}
	for _, id := range discard {
		s.opts.Logger.Info().Str("key", key).Str("upload", id).Msg("aborting an unfinished upload of other content")
		if err := s.abort(ctx, s.full(key), id); err != nil {
			s.opts.Logger.Warn().Err(err).Str("key", key).Str("upload", id).Msg("aborting an unfinished upload")
		}
	}
	if best == nil {
		best = map[int32]types.CompletedPart{}
	}
	return bestID, best, nil
}

// matchParts lists an upload's parts and reports whether every one matches the local part of
// the same number.
func (s *S3) matchParts(ctx context.Context, key, id string, parts []part) (map[int32]types.CompletedPart, bool, error) {
	have := map[int32]types.CompletedPart{}
	p := s3.NewListPartsPaginator(s.client, &s3.ListPartsInput{
		Bucket: &s.opts.Bucket, Key: aws.String(s.full(key)), UploadId: aws.String(id),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if isNoSuchUpload(err) { // finished or aborted meanwhile
				return nil, false, nil
			}
			return nil, false, s.wrap("listing the uploaded parts of", key, err)
		}
		for _, sp := range page.Parts {
			n := aws.ToInt32(sp.PartNumber)
			if n < 1 || int(n) > len(parts) {
				return nil, false, nil
			}
			lp := parts[n-1]
			if aws.ToInt64(sp.Size) != lp.size || aws.ToString(sp.ChecksumCRC32C) != crcBase64(lp.crc) {
				return nil, false, nil
			}
			have[n] = types.CompletedPart{ETag: sp.ETag, PartNumber: aws.Int32(n), ChecksumCRC32C: sp.ChecksumCRC32C}
		}
	}
	return have, true, nil
}

// uploads lists the unfinished multipart uploads whose keys start with prefix, newest first.
func (s *S3) uploads(ctx context.Context, prefix string) ([]types.MultipartUpload, error) {
	var all []types.MultipartUpload
	in := &s3.ListMultipartUploadsInput{Bucket: &s.opts.Bucket, Prefix: aws.String(prefix)}
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, err
		}
		all = append(all, out.Uploads...)
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	sort.SliceStable(all, func(i, j int) bool {
		return aws.ToTime(all[i].Initiated).After(aws.ToTime(all[j].Initiated))
	})
	return all, nil
}

// abort drops one unfinished upload and its parts.
func (s *S3) abort(ctx context.Context, fullKey, id string) error {
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: &s.opts.Bucket, Key: aws.String(fullKey), UploadId: aws.String(id),
	})
	if err != nil && !isNoSuchUpload(err) {
		return fmt.Errorf("aborting upload %s of %s: %w", id, fullKey, err)
	}
	return nil
}

// AbortStale aborts the unfinished multipart uploads under the store's prefix that began more
// than olderThan ago, and returns how many it aborted. Failed uploads are kept so that a later
// Put resumes them; this is the cleanup for those no Put came back for (their parts are billed).
func (s *S3) AbortStale(ctx context.Context, olderThan time.Duration) (int, error) {
	uploads, err := s.uploads(ctx, s.prefix)
	if err != nil {
		return 0, fmt.Errorf("listing unfinished uploads in %s: %w", s, err)
	}
	cutoff := time.Now().Add(-olderThan)
	n := 0
	for _, u := range uploads {
		if !aws.ToTime(u.Initiated).Before(cutoff) {
			continue
		}
		if err := s.abort(ctx, aws.ToString(u.Key), aws.ToString(u.UploadId)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Sweep is AbortStale: unfinished multipart uploads begun more than olderThan ago (a Put that
// resumes one keeps its original start, so olderThan must exceed the longest upload).
func (s *S3) Sweep(ctx context.Context, olderThan time.Duration) (int, error) {
	return s.AbortStale(ctx, olderThan)
}
