// Package store is the object-storage face of the checkpoint remote tier: a narrow interface with
// an S3 implementation (aws-sdk-go-v2, any S3-compatible endpoint), a local-directory
// implementation for file:// stores and shared file systems, and an in-memory Fake for tests.
package store

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned for a key that does not exist.
var ErrNotFound = errors.New("object not found")

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key      string
	Size     int64
	Modified time.Time
}

// Store is what the checkpoint tier needs from object storage. Keys are slash-separated and
// relative to the store's own prefix.
type Store interface {
	// Put writes size bytes from r under key. The store verifies crc32c (CRC-32C of the whole
	// object) end to end and fails with an error if it does not match. Large objects are
	// uploaded in parts; an interrupted Put of the same key, size and checksum resumes from the
	// parts already stored.
	Put(ctx context.Context, key string, r io.ReaderAt, size int64, crc32c uint32) error
	// Get opens the object for reading. The caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// List returns the objects whose keys start with prefix, in lexical order.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Delete removes the keys; missing keys are not an error.
	Delete(ctx context.Context, keys ...string) error
	// String names the store for logs and errors (an URL without credentials).
	String() string
}

// Sweeper is a store that can remove what interrupted puts left behind: an S3 store's
// unfinished multipart uploads, a directory store's temporary files. A process killed in the
// middle of a Put leaves them, and nothing else ever deletes them (List does not show them, so
// retention does not either).
type Sweeper interface {
	// Sweep removes the leftovers of puts that have not progressed for olderThan, and returns
	// how many it removed. Puts in progress (by this or another machine) are younger than that
	// and are left alone.
	Sweep(ctx context.Context, olderThan time.Duration) (int, error)
}
