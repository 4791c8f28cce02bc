package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// The record tags of the heap dump format ("go1.7 heap dump", runtime/heapdump.go).
const (
	tagEOF             = 0
	tagObject          = 1
	tagOtherRoot       = 2
	tagType            = 3
	tagGoroutine       = 4
	tagStackFrame      = 5
	tagParams          = 6
	tagFinalizer       = 7
	tagItab            = 8
	tagOSThread        = 9
	tagMemStats        = 10
	tagQueuedFinalizer = 11
	tagData            = 12
	tagBSS             = 13
	tagDefer           = 14
	tagPanic           = 15
	tagMemProf         = 16
	tagAllocSample     = 17
)

const dumpHeader = "go1.7 heap dump\n"

// object is one live heap object: its address, its slot's size (the span's element size), and
// the heap addresses its pointer fields hold (what keeps other objects alive).
type object struct {
	addr uint64
	size uint64
	ptrs []uint64
}

// frame is one line of an allocation stack.
type frame struct {
	fn, file string
	line     uint64
}

// dump is what the analysis needs of a heap dump, in the dump's order.
type dump struct {
	objects []object
	// stacks are the memory profile's buckets by id; samples ties an object's address to
	// the bucket of its allocation.
	stacks  map[uint64][]frame
	samples map[uint64]uint64
	// heapInuse and heapAlloc are the runtime's MemStats at the dump: their difference is
	// the free space in spans in use, what the reconstruction should come to.
	heapInuse, heapAlloc uint64
	goVersion            string
	// arenaStart and arenaEnd bound the heap's addresses.
	arenaStart, arenaEnd uint64
}

type reader struct {
	r   *bufio.Reader
	err error
}

func (r *reader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(r.r)
	if err != nil {
		r.err = err
	}
	return v
}

// skipN skips n varints.
func (r *reader) skipN(n int) {
	for range n {
		r.uint()
	}
}

// bytes reads a length-prefixed byte string; keep false discards it without holding it.
func (r *reader) bytes(keep bool) string {
	n := r.uint()
	if r.err != nil {
		return ""
	}
	if !keep {
		if _, err := r.r.Discard(int(n)); err != nil {
			r.err = err
		}
		return ""
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = err
	}
	return string(b)
}

// fields skips a field list (kind, offset pairs up to a zero kind).
func (r *reader) fields() {
	for r.err == nil && r.uint() != 0 {
		r.uint()
	}
}

// pointers reads a field list and returns the values at its pointer offsets in contents that
// fall inside the heap's arenas [lo, hi).
func (r *reader) pointers(contents []byte, lo, hi uint64) []uint64 {
	var out []uint64
	for r.err == nil && r.uint() != 0 {
		off := r.uint()
		if off+8 > uint64(len(contents)) {
			continue
		}
		if p := binary.LittleEndian.Uint64(contents[off:]); p >= lo && p < hi {
			out = append(out, p)
		}
	}
	return out
}

func readDump(path string) (*dump, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &reader{r: bufio.NewReaderSize(f, 1<<20)}
	head := make([]byte, len(dumpHeader))
	if _, err := io.ReadFull(r.r, head); err != nil || string(head) != dumpHeader {
		return nil, fmt.Errorf("%s is not a Go heap dump (it does not start with %q)", path, dumpHeader)
	}
	d := &dump{stacks: map[uint64][]frame{}, samples: map[uint64]uint64{}}
	for {
		tag := r.uint()
		if r.err != nil {
			return nil, fmt.Errorf("%s: %w (a truncated dump?)", path, r.err)
		}
		switch tag {
		case tagEOF:
			return d, nil
		case tagObject:
			addr := r.uint()
			size := r.uint()
			contents := make([]byte, size)
			if _, err := io.ReadFull(r.r, contents); err != nil {
				r.err = err
			}
			d.objects = append(d.objects, object{addr: addr, size: size, ptrs: r.pointers(contents, d.arenaStart, d.arenaEnd)})
		case tagOtherRoot:
			r.bytes(false)
			r.uint()
		case tagType:
			r.skipN(2)
			r.bytes(false)
			r.uint()
		case tagGoroutine:
			r.skipN(5 + 2 + 1)
			r.bytes(false)
			r.skipN(4)
		case tagStackFrame:
			r.skipN(3)
			r.bytes(false)
			r.skipN(3)
			r.bytes(false)
			r.fields()
		case tagParams:
			r.skipN(2) // byte order, pointer size
			d.arenaStart, d.arenaEnd = r.uint(), r.uint()
			r.bytes(false)
			d.goVersion = r.bytes(true)
			r.uint()
		case tagFinalizer, tagQueuedFinalizer:
			r.skipN(5)
		case tagItab:
			r.skipN(2)
		case tagOSThread:
			r.skipN(3)
		case tagMemStats:
			var m [24]uint64
			for i := range m {
				m[i] = r.uint()
			}
			d.heapAlloc, d.heapInuse = m[6], m[9]
			r.skipN(256 + 1)
		case tagData, tagBSS:
			r.uint()
			r.bytes(false)
			r.fields()
		case tagDefer:
			r.skipN(7)
		case tagPanic:
			r.skipN(6)
		case tagMemProf:
			id := r.uint()
			r.uint() // the size of one allocation
			n := r.uint()
			stack := make([]frame, 0, n)
			for range n {
				fn := r.bytes(true)
				file := r.bytes(true)
				stack = append(stack, frame{fn: fn, file: file, line: r.uint()})
			}
			r.skipN(2) // allocs, frees
			d.stacks[id] = stack
		case tagAllocSample:
			addr := r.uint()
			d.samples[addr] = r.uint()
		default:
			return nil, fmt.Errorf("%s: unknown record tag %d (a dump format this reader does not know)", path, tag)
		}
	}
}
