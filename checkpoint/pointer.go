package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// pointerFormat is the version of the pointer record layout.
const pointerFormat = 1

// pointerMagic starts every pointer record so a zeroed or foreign file is never mistaken for one.
const pointerMagic = "SCHPTR01"

// pointerSize is the encoded size of a record: magic, format, slot, seq, step, meta CRC, CRC.
const pointerSize = 8 + 4 + 4 + 8 + 8 + 4 + 4

// pointerNames are the two copies of the commit pointer. Commits alternate between them, always
// overwriting the copy that does not hold the current commit, so a write torn by a crash leaves
// the current commit readable in the other copy.
var pointerNames = [2]string{"pointer.a", "pointer.b"}

// pointerRecord is the commit point of a rank's engine: the newest committed checkpoint's
// sequence number and where its metadata lives. Every slot whose metadata is valid and whose seq
// is at most Seq is committed; the others were in flight when the engine stopped.
type pointerRecord struct {
	Seq     uint64
	Step    int64
	Slot    uint32
	MetaCRC uint32 // CRC-32C of the slot's metadata JSON, tying the record to one slot write
}

// encode lays the record out little-endian and appends its own CRC.
func (p pointerRecord) encode() []byte {
	b := make([]byte, pointerSize)
	copy(b, pointerMagic)
	binary.LittleEndian.PutUint32(b[8:], pointerFormat)
	binary.LittleEndian.PutUint32(b[12:], p.Slot)
	binary.LittleEndian.PutUint64(b[16:], p.Seq)
	binary.LittleEndian.PutUint64(b[24:], uint64(p.Step))
	binary.LittleEndian.PutUint32(b[32:], p.MetaCRC)
	binary.LittleEndian.PutUint32(b[36:], CRC32C(b[:36]))
	return b
}

// errBadPointer marks a pointer copy that is missing, torn or foreign.
var errBadPointer = errors.New("invalid pointer record")

// decodePointer checks magic, format and CRC.
func decodePointer(b []byte) (pointerRecord, error) {
	if len(b) < pointerSize || string(b[:8]) != pointerMagic {
		return pointerRecord{}, errBadPointer
	}
	if binary.LittleEndian.Uint32(b[36:]) != CRC32C(b[:36]) {
		return pointerRecord{}, fmt.Errorf("%w: checksum mismatch", errBadPointer)
	}
	if f := binary.LittleEndian.Uint32(b[8:]); f != pointerFormat {
		return pointerRecord{}, fmt.Errorf("%w: format %d is not supported", errBadPointer, f)
	}
	return pointerRecord{
		Slot:    binary.LittleEndian.Uint32(b[12:]),
		Seq:     binary.LittleEndian.Uint64(b[16:]),
		Step:    int64(binary.LittleEndian.Uint64(b[24:])),
		MetaCRC: binary.LittleEndian.Uint32(b[32:]),
	}, nil
}

// readPointers reads both copies of dir and returns the valid one with the highest seq and its
// index; ok is false when neither copy is valid (a fresh directory, or nothing ever committed).
func readPointers(dir string) (rec pointerRecord, copyIdx int, ok bool, err error) {
	for i, name := range pointerNames {
		b, rerr := readSmallFile(filepath.Join(dir, name), pointerSize)
		if rerr != nil {
			return pointerRecord{}, 0, false, rerr
		}
		p, derr := decodePointer(b)
		if derr != nil {
			continue
		}
		if !ok || p.Seq > rec.Seq {
			rec, copyIdx, ok = p, i, true
		}
	}
	return rec, copyIdx, ok, nil
}

// readSmallFile reads up to n bytes from the start of path; a missing file reads as empty.
func readSmallFile(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b[:m], nil
}

// pointerFiles are the engine's open handles on both pointer copies.
type pointerFiles struct {
	files   [2]*os.File
	current int  // copy holding the newest commit
	valid   bool // whether any commit exists
}

// openPointerFiles opens (creating) both copies in dir.
func openPointerFiles(dir string, current int, valid bool) (*pointerFiles, error) {
	pf := &pointerFiles{current: current, valid: valid}
	for i, name := range pointerNames {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			pf.close()
			return nil, fmt.Errorf("opening pointer copy %s: %w", name, err)
		}
		pf.files[i] = f
	}
	return pf, nil
}

// write commits rec: it overwrites the copy not holding the current commit and syncs it. Once
// it returns nil the commit survives a crash.
func (pf *pointerFiles) write(rec pointerRecord) error {
	next := 0
	if pf.valid {
		next = 1 - pf.current
	}
	if err := writeSyncedAt(pf.files[next], rec.encode(), 0); err != nil {
		return fmt.Errorf("writing pointer seq %d: %w", rec.Seq, err)
	}
	pf.current, pf.valid = next, true
	return nil
}

// close closes both copies.
func (pf *pointerFiles) close() error {
	var first error
	for i, f := range pf.files {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
		pf.files[i] = nil
	}
	return first
}
