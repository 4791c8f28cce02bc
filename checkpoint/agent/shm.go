package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// shmPrefix starts the name of every shared-memory file of the protocol, so the agent maps only
// files meant for it and a person can tell what is filling /dev/shm.
const shmPrefix = "schooner-ckpt-"

// DefaultShmDir is /dev/shm, the RAM-backed file system both sides can map without the pages
// ever reaching a disk, or the temporary directory on systems without one.
func DefaultShmDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// mapping is a file mapped into memory, shared with the other process.
type mapping struct {
	path string
	data []byte // nil for an empty file: mmap refuses a length of 0
	dev  uint64
	ino  uint64
}

// createShm creates a fresh shared-memory file of size bytes in dir and maps it for writing.
func createShm(dir, kind string, size int64) (*mapping, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("naming shared memory: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s%s-%d-%s", shmPrefix, kind, os.Getpid(), hex.EncodeToString(rnd[:])))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating shared memory: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("sizing shared memory %s to %d bytes: %w", path, size, err)
	}
	m, err := mapOpen(f, path, size, true)
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	return m, nil
}

// openShm maps an existing shared-memory file, read-only unless writable.
func openShm(path string, writable bool) (*mapping, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("opening shared memory: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading shared memory %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("shared memory %s is not a regular file", path)
	}
	return mapOpen(f, path, fi.Size(), writable)
}

func mapOpen(f *os.File, path string, size int64, writable bool) (*mapping, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("reading shared memory %s: %w", path, err)
	}
	m := &mapping{path: path, dev: uint64(st.Dev), ino: st.Ino}
	if size == 0 {
		return m, nil
	}
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping shared memory %s (%d bytes): %w", path, size, err)
	}
	m.data = data
	return m, nil
}

// size is the mapped length.
func (m *mapping) size() int64 { return int64(len(m.data)) }

// sameFile reports whether path still names the mapped file with the mapped size, so a cached
// mapping is reused only while the client keeps writing into the same buffer.
func (m *mapping) sameFile(path string) bool {
	if m.path != path {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false
	}
	return uint64(st.Dev) == m.dev && st.Ino == m.ino && st.Size == m.size()
}

// unmap releases the mapping; the file stays.
func (m *mapping) unmap() error {
	if m == nil || m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	if err != nil {
		return fmt.Errorf("unmapping shared memory %s: %w", m.path, err)
	}
	return nil
}

// removeShm deletes a shared-memory file; one already gone is not an error (either side may
// remove it first).
func removeShm(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing shared memory %s: %w", path, err)
	}
	return nil
}

// checkShmPath accepts only files of the protocol directly inside dir, so a client cannot make
// the agent map an arbitrary file.
func checkShmPath(dir, path string) error {
	clean := filepath.Clean(path)
	if !filepath.IsAbs(clean) || filepath.Dir(clean) != filepath.Clean(dir) || !strings.HasPrefix(filepath.Base(clean), shmPrefix) {
		return fmt.Errorf("shared memory %q is not a %s* file directly in %s", path, shmPrefix, dir)
	}
	return nil
}
