//go:build linux

package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// directIOSupported says whether this platform has O_DIRECT at all; the file system may still
// refuse it, which openData detects.
const directIOSupported = true

// openData opens a slot's data file for writing. With direct set it asks for O_DIRECT so chunk
// writes bypass the page cache (no second copy of the checkpoint in memory, no writeback storm at
// fdatasync); file systems that refuse it (tmpfs, some FUSE) get a buffered file and false.
func openData(path string, direct bool) (*os.File, bool, error) {
	if direct {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_DIRECT, 0o644)
		if err == nil {
			return f, true, nil
		}
		if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.EOPNOTSUPP) {
			return nil, false, fmt.Errorf("opening %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("opening %s: %w", path, err)
	}
	return f, false, nil
}

// fdatasync makes f's data (and the metadata needed to read it back, such as its size) durable
// without forcing unrelated inode updates like mtime.
func fdatasync(f *os.File) error {
	serr, err := onFD(f, syscall.Fdatasync)
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("syncing %s: %w", f.Name(), err)
	}
	return nil
}

// onFD runs call on f's descriptor, again for as long as it is interrupted (EINTR). callErr is
// call's own error; err the error of reaching the descriptor.
func onFD(f *os.File, call func(fd int) error) (callErr, err error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	if err := sc.Control(func(fd uintptr) {
		for {
			if callErr = call(int(fd)); !errors.Is(callErr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return nil, err
	}
	return callErr, nil
}

// preallocate reserves size bytes for f so later chunk writes never allocate blocks or fail for
// lack of space halfway through a checkpoint; file systems without fallocate get a sparse
// Truncate instead.
func preallocate(f *os.File, size int64) error {
	ferr, err := onFD(f, func(fd int) error { return syscall.Fallocate(fd, 0, 0, size) })
	if err != nil {
		return fmt.Errorf("preallocating %s: %w", f.Name(), err)
	}
	if ferr == nil {
		return nil
	}
	if !errors.Is(ferr, syscall.EOPNOTSUPP) && !errors.Is(ferr, syscall.ENOSYS) {
		return fmt.Errorf("preallocating %d bytes for %s: %w", size, f.Name(), ferr)
	}
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("extending %s to %d bytes: %w", f.Name(), size, err)
	}
	return nil
}

// alignedAlloc maps n bytes of anonymous memory: page aligned, as O_DIRECT needs, and returned
// to the kernel on free rather than left to the garbage collector. The mapping asks for
// transparent huge pages: copying a checkpoint into 4 KiB pages costs a TLB miss every page, and
// a first touch a fault every page, which on a VM made the copy several times slower.
func alignedAlloc(n int) ([]byte, func() error, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping %d bytes of staging memory: %w", n, err)
	}
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) // advisory: kernels without THP ignore it
	return b, func() error { return syscall.Munmap(b) }, nil
}

// lockWait is how long a held lock is retried before the directory counts as in use.
const lockWait = 500 * time.Millisecond

// lockDir takes an exclusive advisory lock on dir/lock so two engines (a restarted agent and
// its not-yet-dead predecessor) never write the same slots. The kernel drops the lock when the
// process dies, so a crash never leaves the directory locked.
func lockDir(dir string) (func() error, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	sc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// A lock held by a live engine stays held; one that shows as held for a moment only is an
	// inherited copy of the lock's descriptor in a process between fork and exec (any fork of
	// this process while the lock was open), which the exec drops: wait that out briefly.
	var lerr error
	for deadline := time.Now().Add(lockWait); ; time.Sleep(10 * time.Millisecond) {
		if cerr := sc.Control(func(fd uintptr) { lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB) }); cerr != nil {
			lerr = cerr
		}
		if !errors.Is(lerr, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			break
		}
	}
	if lerr != nil {
		f.Close()
		if errors.Is(lerr, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("checkpoint directory %s is in use by another engine", dir)
		}
		return nil, fmt.Errorf("locking %s: %w", path, lerr)
	}
	return f.Close, nil
}
