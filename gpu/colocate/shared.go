package colocate

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// SharedBoard is a board in a file (under /dev/shm on a node) that the launch shims of the HP
// and BE programs map beside the supervisor. The supervisor creates it before either program
// starts, so a shim finds it initialized or not at all.
type SharedBoard struct {
	*Board
	mem  []byte
	path string
}

// CreateSharedBoard creates (or replaces) the board file at path, initialized for smCount SMs
// and the supervisor's first decision.
func CreateSharedBoard(path string, smCount int, first Decision) (*SharedBoard, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("colocation board: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(int64(BoardSize)); err != nil {
		return nil, fmt.Errorf("colocation board %s: %w", path, err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, BoardSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("colocation board %s: mapping: %w", path, err)
	}
	b := boardAt(unsafe.Pointer(&mem[0]))
	b.Init(smCount, first.Budget, first.SMLimit)
	b.SetControl(first.Budget, first.SMLimit, first.State)
	return &SharedBoard{Board: b, mem: mem, path: path}, nil
}

// Path is the file the shims map (SCHOONER_COLOCATE_BOARD).
func (s *SharedBoard) Path() string { return s.path }

// Close unmaps the board and removes its file.
func (s *SharedBoard) Close() error {
	s.b = nil
	return errors.Join(syscall.Munmap(s.mem), os.Remove(s.path))
}
