package agent

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// saveBuffer is a client's save buffer as the agent holds it: the file it opened (never through
// a symbolic link), checked to be the client's own regular file, and mapped read-only with the
// size it had when checked. The agent trusts nothing about it beyond that: the client may
// replace, grow or shrink it at any time, so every save re-checks it (current), and a shrink
// that lands during the copy is a fault the engine turns into a failed save
// (checkpoint.ErrSourceFault), followed by check.
type saveBuffer struct {
	path string
	f    *os.File
	m    *mapping
}

// openSaveBuffer opens path with O_NOFOLLOW and maps it, refusing anything but a regular file
// with one link owned by uid (the connected client's user): a symbolic or hard link planted
// under a protocol name would otherwise make the agent read, commit and upload any file it can
// read.
func openSaveBuffer(path string, uid uint32) (*saveBuffer, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("shared memory %s is a symbolic link; the agent maps only the client's own regular files", path)
		}
		return nil, fmt.Errorf("opening shared memory %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("reading shared memory %s: %w", path, err)
	}
	if err := checkClientFile(path, &st, uid); err != nil {
		_ = f.Close()
		return nil, err
	}
	m, err := mapOpen(f, path, st.Size, false)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &saveBuffer{path: path, f: f, m: m}, nil
}

// checkClientFile accepts a regular file with a single link, owned by uid.
func checkClientFile(path string, st *unix.Stat_t, uid uint32) error {
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("shared memory %s is not a regular file", path)
	case st.Uid != uid:
		return fmt.Errorf("shared memory %s belongs to uid %d, not to the client's uid %d", path, st.Uid, uid)
	case st.Nlink != 1:
		return fmt.Errorf("shared memory %s has %d links; the agent maps only files with one", path, st.Nlink)
	}
	return nil
}

// size is the mapped (verified) length.
func (b *saveBuffer) size() int64 { return b.m.size() }

// data is the mapping.
func (b *saveBuffer) data() []byte { return b.m.data }

// current reports whether path still names this very file and the file still has the mapped
// size, so the mapping can serve the next save.
func (b *saveBuffer) current(path string) bool {
	if b == nil || b.path != path {
		return false
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || uint64(st.Dev) != b.m.dev || st.Ino != b.m.ino {
		return false
	}
	return b.check() == nil
}

// check fails unless the open file still holds at least the mapped bytes: called before a
// save and once its bytes are copied, so a client that truncated its buffer meanwhile gets an
// error instead of a checkpoint of whatever the pages held.
func (b *saveBuffer) check() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(b.f.Fd()), &st); err != nil {
		return fmt.Errorf("reading shared memory %s: %w", b.path, err)
	}
	if st.Size < b.size() {
		return fmt.Errorf("shared memory %s shrank from %d to %d bytes during the save", b.path, b.size(), st.Size)
	}
	return nil
}

// close unmaps the buffer and closes its file; the file itself stays.
func (b *saveBuffer) close() error {
	if b == nil {
		return nil
	}
	err := b.m.unmap()
	if cerr := b.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing shared memory %s: %w", b.path, cerr)
	}
	return err
}
