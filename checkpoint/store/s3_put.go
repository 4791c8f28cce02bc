package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// errStaleUpload means a resumed multipart upload completed with the metadata of other
// content: S3 does not show a pending upload's metadata, so resumption is judged from part
// checksums and confirmed only after completion.
var errStaleUpload = errors.New("resumed upload carried another object's metadata")

// Put writes the object, verifying its CRC-32C before sending and the stored result after. An
// object already stored with the same size and checksum is left alone, so retrying a Put that
// succeeded costs one HEAD request.
func (s *S3) Put(ctx context.Context, key string, r io.ReaderAt, size int64, crc uint32) error {
	if err := validKey(key); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("putting %s: negative size %d", key, size)
	}
	same, err := s.holds(ctx, key, size, crc)
	if err != nil {
		// Not fatal: a policy without s3:ListBucket answers 403 for a missing key.
		s.opts.Logger.Debug().Err(err).Str("key", key).Msg("cannot tell whether the object is already stored")
	}
	if same {
		s.opts.Logger.Debug().Str("key", key).Msg("object already stored with this checksum")
		return nil
	}
	if size <= s.opts.PartSize {
		return s.putSingle(ctx, key, r, size, crc)
	}
	parts, err := checksumParts(key, r, size, crc, s.opts.PartSize)
	if err != nil {
		return err
	}
	err = s.putMultipart(ctx, key, r, size, crc, parts, true)
	if errors.Is(err, errStaleUpload) {
		s.opts.Logger.Warn().Str("key", key).Msg("resumed upload belonged to other content; uploading afresh")
		err = s.putMultipart(ctx, key, r, size, crc, parts, false)
	}
	return err
}

// putSingle sends an object of at most one part in one request.
func (s *S3) putSingle(ctx context.Context, key string, r io.ReaderAt, size int64, crc uint32) error {
	buf, err := readChecked(key, r, size, crc)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.opts.Bucket, Key: aws.String(s.full(key)), Body: bytes.NewReader(buf),
		ContentLength: aws.Int64(size), ChecksumCRC32C: aws.String(crcBase64(crc)),
		Metadata: objectMetadata(size, crc),
	})
	if err != nil {
		return s.wrap("putting", key, err)
	}
	s.bytesUp.Add(size)
	return s.verify(ctx, key, size, crc)
}

// holds reports whether key already stores an object of this size and checksum.
func (s *S3) holds(ctx context.Context, key string, size int64, crc uint32) (bool, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.opts.Bucket, Key: aws.String(s.full(key))})
	if err != nil {
		if isNotFound(err) {
			return false, nil
		}
		return false, s.wrap("checking", key, err)
	}
	return aws.ToInt64(out.ContentLength) == size && out.Metadata[metaCRC32C] == crcHex(crc), nil
}

// verify reads back the stored object's size and checksum metadata.
func (s *S3) verify(ctx context.Context, key string, size int64, crc uint32) error {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.opts.Bucket, Key: aws.String(s.full(key))})
	if err != nil {
		return s.wrap("verifying", key, err)
	}
	if got := aws.ToInt64(out.ContentLength); got != size {
		return fmt.Errorf("verifying %s in %s: stored %d bytes, sent %d", key, s, got, size)
	}
	if got := out.Metadata[metaCRC32C]; got != crcHex(crc) {
		return fmt.Errorf("verifying %s in %s: stored checksum metadata %q, sent %s: %w", key, s, got, crcHex(crc), errStaleUpload)
	}
	return nil
}

// part is one piece of a multipart upload with its locally computed checksum.
type part struct {
	num  int32
	off  int64
	size int64
	crc  uint32
}

// checksumParts reads the object once, computing each part's CRC-32C and the whole object's,
// and refuses data whose whole checksum is not the promised one before anything is sent.
func checksumParts(key string, r io.ReaderAt, size int64, crc uint32, partSize int64) ([]part, error) {
	n := (size + partSize - 1) / partSize
	parts := make([]part, 0, n)
	whole := crc32.New(castagnoli)
	buf := make([]byte, 1<<20)
	for i := int64(0); i < n; i++ {
		p := part{num: int32(i + 1), off: i * partSize, size: min(partSize, size-i*partSize)}
		h := crc32.New(castagnoli)
		got, err := io.CopyBuffer(io.MultiWriter(h, whole), io.NewSectionReader(r, p.off, p.size), buf)
		if err != nil {
			return nil, fmt.Errorf("reading part %d of %s: %w", p.num, key, err)
		}
		if got != p.size {
			return nil, fmt.Errorf("reading part %d of %s: data ends after %d of %d bytes", p.num, key, p.off+got, size)
		}
		p.crc = h.Sum32()
		parts = append(parts, p)
	}
	if got := whole.Sum32(); got != crc {
		return nil, mismatch("object "+key, got, crc)
	}
	return parts, nil
}

// putMultipart sends the parts the service lacks (all of them when not resuming), completes
// the upload and verifies the result.
func (s *S3) putMultipart(ctx context.Context, key string, r io.ReaderAt, size int64, crc uint32, parts []part, resume bool) error {
	full := s.full(key)
	var id string
	done := map[int32]types.CompletedPart{}
	if resume {
		var err error
		if id, done, err = s.resumable(ctx, key, parts); err != nil {
			// Not fatal: a policy may deny s3:ListBucketMultipartUploads; upload afresh.
			s.opts.Logger.Warn().Err(err).Str("key", key).Msg("cannot look for an upload to resume")
			id, done = "", map[int32]types.CompletedPart{}
		}
	}
	if id == "" {
		out, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
			Bucket: &s.opts.Bucket, Key: aws.String(full), Metadata: objectMetadata(size, crc),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
		})
		if err != nil {
			return s.wrap("starting the upload of", key, err)
		}
		id = aws.ToString(out.UploadId)
	} else {
		s.opts.Logger.Info().Str("key", key).Str("upload", id).Int("have", len(done)).Int("parts", len(parts)).
			Msg("resuming multipart upload")
	}
	var todo []part
	for _, p := range parts {
		if _, ok := done[p.num]; !ok {
			todo = append(todo, p)
		}
	}
	sent, err := s.sendParts(ctx, key, id, r, todo)
	for _, cp := range sent {
		done[aws.ToInt32(cp.PartNumber)] = cp
	}
	if err != nil {
		return err // the upload stays, for the next Put to resume
	}
	completed := make([]types.CompletedPart, 0, len(done))
	for _, cp := range done {
		completed = append(completed, cp)
	}
	sort.Slice(completed, func(i, j int) bool { return *completed[i].PartNumber < *completed[j].PartNumber })
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.opts.Bucket, Key: aws.String(full), UploadId: aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: completed},
	})
	if err != nil {
		return s.wrap("completing the upload of", key, err)
	}
	return s.verify(ctx, key, size, crc)
}

// sendParts uploads parts, PartConcurrency at a time, and returns those that made it. The
// first failure stops the rest.
func (s *S3) sendParts(ctx context.Context, key, id string, r io.ReaderAt, todo []part) ([]types.CompletedPart, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		sent     []types.CompletedPart
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, s.opts.PartConcurrency)
	for _, p := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cp, err := s.sendPart(ctx, key, id, r, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				return
			}
			sent = append(sent, cp)
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("uploading %s: %w", key, ctx.Err())
	}
	return sent, firstErr
}

// sendPart uploads one part with its checksum, which the service verifies.
func (s *S3) sendPart(ctx context.Context, key, id string, r io.ReaderAt, p part) (types.CompletedPart, error) {
	sum := aws.String(crcBase64(p.crc))
	out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: &s.opts.Bucket, Key: aws.String(s.full(key)), UploadId: aws.String(id),
		PartNumber: aws.Int32(p.num), Body: io.NewSectionReader(r, p.off, p.size),
		ContentLength: aws.Int64(p.size), ChecksumCRC32C: sum,
	})
	if err != nil {
		return types.CompletedPart{}, s.wrap(fmt.Sprintf("uploading part %d of", p.num), key, err)
	}
	s.partsUp.Add(1)
	s.bytesUp.Add(p.size)
	return types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(p.num), ChecksumCRC32C: sum}, nil
}
