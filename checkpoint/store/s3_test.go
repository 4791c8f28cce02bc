package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/checkpoint/store/s3test"
)

// startS3 starts a gateway and opens a store on it under prefix.
func startS3(t *testing.T, prefix string) (*s3test.Gateway, *store.S3) {
	t.Helper()
	g := s3test.Start(t)
	s, err := g.Store(t, prefix)
	require.NoError(t, err)
	return g, s
}

// startSmallParts starts a gateway and opens a store on it with the smallest parts S3 allows,
// sent one at a time, so a test can fail an upload between parts.
func startSmallParts(t *testing.T) (*s3test.Gateway, *store.S3) {
	t.Helper()
	g := s3test.Start(t)
	s, err := store.NewS3(context.Background(), store.S3Options{
		Bucket: g.Bucket, Endpoint: g.Endpoint, AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey,
		PartSize: store.MinPartSize, PartConcurrency: 1,
	})
	require.NoError(t, err)
	return g, s
}

func TestS3Contract(t *testing.T) {
	t.Parallel()
	_, s := startS3(t, "job-1")
	testContract(t, s)
	assert.Contains(t, s.String(), "s3://ckpt/job-1/")
}

func TestS3MultipartRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, s := startS3(t, "")

	data := randomBytes(7, 12<<20+12345) // three 5 MiB parts
	put(t, s, "big", data)
	assert.Equal(t, data, get(t, s, "big"))
	assert.Equal(t, int64(3), s.Stats().PartsUploaded)

	// The same object again is recognised and not sent.
	before := s.Stats()
	put(t, s, "big", data)
	assert.Equal(t, before, s.Stats())

	// Metadata carries size and checksum for readers.
	head, err := s.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(g.Bucket), Key: aws.String("big")})
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%08x", crcOf(data)), head.Metadata["crc32c"])
	assert.Equal(t, fmt.Sprint(len(data)), head.Metadata["size"])

	// A wrong checksum is refused before anything is sent.
	before = s.Stats()
	err = s.Put(ctx, "big2", bytes.NewReader(data), int64(len(data)), crcOf(data)+1)
	require.ErrorIs(t, err, store.ErrChecksum)
	assert.Equal(t, before, s.Stats())
	_, err = s.Get(ctx, "big2")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// countingReader counts the bytes read from each part and can fail reads of one part once its
// checksum pass is over, as a dying disk or a killed process would interrupt an upload.
type countingReader struct {
	r        io.ReaderAt
	partSize int64
	mu       sync.Mutex
	read     map[int64]int64
	failPart int64 // -1: never
}

var errInjected = errors.New("injected read failure")

// newCountingReader reads data in parts of store.MinPartSize, failing part failPart (-1:
// none).
func newCountingReader(data []byte, failPart int64) *countingReader {
	return &countingReader{r: bytes.NewReader(data), partSize: store.MinPartSize, read: map[int64]int64{}, failPart: failPart}
}

// assertNoUploads checks that no multipart upload is left in the gateway's bucket.
func assertNoUploads(t *testing.T, g *s3test.Gateway, s *store.S3, why string) {
	t.Helper()
	uploads, err := s.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(g.Bucket)})
	require.NoError(t, err)
	assert.Empty(t, uploads.Uploads, why)
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	part := off / c.partSize
	c.mu.Lock()
	if part == c.failPart && c.read[part] >= c.partSize {
		c.mu.Unlock()
		return 0, errInjected
	}
	c.mu.Unlock()
	n, err := c.r.ReadAt(p, off)
	c.mu.Lock()
	c.read[part] += int64(n)
	c.mu.Unlock()
	return n, err
}

func TestS3ResumesInterruptedMultipart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, s := startSmallParts(t)

	const k = 2 // parts that make it before the failure
	data := randomBytes(11, 4*int(store.MinPartSize)+999)
	first := newCountingReader(data, k)
	err := s.Put(ctx, "shard", first, int64(len(data)), crcOf(data))
	require.ErrorIs(t, err, errInjected)
	assert.Equal(t, int64(k), s.Stats().PartsUploaded)
	_, err = s.Get(ctx, "shard")
	require.ErrorIs(t, err, store.ErrNotFound, "the object is not there until the upload completes")

	second := newCountingReader(data, -1)
	require.NoError(t, s.Put(ctx, "shard", second, int64(len(data)), crcOf(data)))
	assert.Equal(t, int64(5), s.Stats().PartsUploaded, "only the three missing parts are sent again")
	for part := int64(0); part < k; part++ {
		assert.Equal(t, store.MinPartSize, second.read[part], "part %d is read once, for its checksum, and not resent", part)
	}
	for part := int64(k); part < 5; part++ {
		assert.Greater(t, second.read[part], min(store.MinPartSize, int64(len(data))-part*store.MinPartSize), "part %d is read again to be sent", part)
	}
	assert.Equal(t, data, get(t, s, "shard"))

	assertNoUploads(t, g, s, "the resumed upload completed")
}

func TestS3AbandonsUploadOfOtherContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, s := startSmallParts(t)

	old := randomBytes(1, 3*int(store.MinPartSize))
	r := newCountingReader(old, 1)
	require.Error(t, s.Put(ctx, "shard", r, int64(len(old)), crcOf(old)))

	// Same key, new content: the unfinished upload must not be completed with its metadata.
	data := randomBytes(2, 3*int(store.MinPartSize))
	put(t, s, "shard", data)
	assert.Equal(t, data, get(t, s, "shard"))
	assert.Equal(t, int64(1+3), s.Stats().PartsUploaded)
	assertNoUploads(t, g, s, "the stale upload was aborted")
}

func TestS3AbortStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s := startS3(t, "job")
	data := randomBytes(3, 2*int(store.MinPartSize)+1)
	r := newCountingReader(data, 0)
	require.Error(t, s.Put(ctx, "shard", r, int64(len(data)), crcOf(data)))

	n, err := s.AbortStale(ctx, time.Hour)
	require.NoError(t, err)
	assert.Zero(t, n, "a fresh upload is kept for resumption")
	n, err = s.AbortStale(ctx, -time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

func TestS3ListPaginatesAndDeleteBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s := startS3(t, "many")
	const n = 1010 // more than one page (1000) and one delete batch (1000)
	var ks []string
	for i := range n {
		k := fmt.Sprintf("o/%05d", i)
		ks = append(ks, k)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, k := range ks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			assert.NoError(t, s.Put(ctx, k, bytes.NewReader([]byte(k)), int64(len(k)), crcOf([]byte(k))))
		}()
	}
	wg.Wait()
	infos, err := s.List(ctx, "o/")
	require.NoError(t, err)
	assert.Equal(t, ks, keys(infos))
	require.NoError(t, s.Delete(ctx, ks...))
	infos, err = s.List(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, infos)
}

// flippingReader returns the data on the first pass and a flipped byte on every later read of
// part 1, as memory changing under an upload would.
type flippingReader struct {
	data     []byte
	partSize int64
	mu       sync.Mutex
	seen     int64
}

func (f *flippingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := bytes.NewReader(f.data).ReadAt(p, off)
	f.mu.Lock()
	defer f.mu.Unlock()
	if off/f.partSize == 1 {
		if f.seen >= f.partSize && n > 0 {
			p[0] ^= 0xff
		}
		f.seen += int64(n)
	}
	return n, err
}

func TestS3ServiceRejectsBytesChangedInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s := startS3(t, "")
	data := randomBytes(5, 2*int(store.MinPartSize)+10)
	err := s.Put(ctx, "shard", &flippingReader{data: data, partSize: store.MinPartSize}, int64(len(data)), crcOf(data))
	require.ErrorIs(t, err, store.ErrChecksum)
	_, err = s.Get(ctx, "shard")
	assert.ErrorIs(t, err, store.ErrNotFound)
}
