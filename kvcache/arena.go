package kvcache

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// An arena is shared memory the holder keeps prompt KV in, so that a restore costs one DMA:
// a reader that lends memory may also map the arena (read-only) and page-lock it for its GPU
// ahead of any failure; a get then answers with where each prompt piece lies in the arena
// instead of copying it into the lent memory, and only the decode steps (small, one token
// each) are copied. It is made at the first lend that asks for it, the size of the budget,
// and its pages are allocated then: a reader page-locks the whole of it, and a page that came
// later would not be the page the reader's GPU mapping holds. Freed ranges keep their pages
// for the same reason (never punched).
type arena struct {
	mu   sync.Mutex
	fd   int
	mem  []byte
	free []extent // by offset, no two adjacent
}

type extent struct{ off, n int64 }

// arenaAlign keeps every piece's offset a multiple of 512 bytes (any element type's alignment,
// and the DMA engines' preferred one).
const arenaAlign = 512

func newArena(size int64) (*arena, error) {
	if size <= 0 {
		return nil, fmt.Errorf("arena of %d bytes", size)
	}
	fd, err := unix.MemfdCreate("schooner-kv-arena", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Fallocate(fd, 0, 0, size); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("allocating the arena's %d bytes: %w", size, err)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("mapping the arena: %w", err)
	}
	return &arena{fd: fd, mem: mem, free: []extent{{0, size}}}, nil
}

func (a *arena) size() int64 { return int64(len(a.mem)) }

func alignUp(n int64) int64 { return (n + arenaAlign - 1) &^ (arenaAlign - 1) }

// alloc takes n bytes, first fit; false when no free range is large enough (the caller keeps
// the piece elsewhere).
func (a *arena) alloc(n int64) (int64, bool) {
	if n <= 0 {
		return 0, false
	}
	n = alignUp(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, e := range a.free {
		if e.n < n {
			continue
		}
		if e.n == n {
			a.free = slices.Delete(a.free, i, i+1)
		} else {
			a.free[i] = extent{e.off + n, e.n - n}
		}
		return e.off, true
	}
	return 0, false
}

// release gives back what alloc(n) returned at off, merging it with its free neighbours.
func (a *arena) release(off, n int64) {
	n = alignUp(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	i, _ := slices.BinarySearchFunc(a.free, off, func(e extent, off int64) int { return cmp.Compare(e.off, off) })
	if (i > 0 && a.free[i-1].off+a.free[i-1].n > off) || (i < len(a.free) && off+n > a.free[i].off) {
		panic(fmt.Sprintf("kvcache arena: releasing [%d,%d) overlaps a free range", off, off+n))
	}
	switch left, right := i > 0 && a.free[i-1].off+a.free[i-1].n == off, i < len(a.free) && off+n == a.free[i].off; {
	case left && right:
		a.free[i-1].n += n + a.free[i].n
		a.free = slices.Delete(a.free, i, i+1)
	case left:
		a.free[i-1].n += n
	case right:
		a.free[i] = extent{off, n + a.free[i].n}
	default:
		a.free = slices.Insert(a.free, i, extent{off, n})
	}
}

// freeBytes is the bytes not allocated (in any number of ranges).
func (a *arena) freeBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int64
	for _, e := range a.free {
		n += e.n
	}
	return n
}

// readOnlyFD opens the arena anew for reading only: the descriptor a reader gets, so it can
// map the arena but never write into it.
func (a *arena) readOnlyFD() (int, error) {
	return unix.Open(fmt.Sprintf("/proc/self/fd/%d", a.fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

func (a *arena) close() {
	_ = unix.Munmap(a.mem)
	_ = unix.Close(a.fd)
}
