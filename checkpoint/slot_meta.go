package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// slotMetaMagic starts a valid slot metadata file.
const slotMetaMagic = "SCHSLOT1"

// slotHeaderSize is the fixed header before the metadata JSON: magic, seq, JSON length, JSON
// CRC, header CRC, padding.
const slotHeaderSize = 32

// errNoSlotMeta marks slot metadata that is absent, invalidated or torn: the slot holds no
// checkpoint.
var errNoSlotMeta = errors.New("slot holds no valid metadata")

// encodeSlotMeta is the bytes of a slot's metadata file and the CRC of its JSON (which the
// pointer record repeats).
func encodeSlotMeta(m ShardMeta) ([]byte, uint32, error) {
	js, err := m.Encode()
	if err != nil {
		return nil, 0, fmt.Errorf("encoding metadata of step %d: %w", m.Step, err)
	}
	crc := CRC32C(js)
	b := make([]byte, slotHeaderSize+len(js))
	copy(b, slotMetaMagic)
	binary.LittleEndian.PutUint64(b[8:], m.Seq)
	binary.LittleEndian.PutUint32(b[16:], uint32(len(js)))
	binary.LittleEndian.PutUint32(b[20:], crc)
	binary.LittleEndian.PutUint32(b[24:], CRC32C(b[:24]))
	copy(b[slotHeaderSize:], js)
	return b, crc, nil
}

// readSlotMeta reads and verifies the metadata file at path. It returns errNoSlotMeta (wrapped)
// for anything that is not a complete, checksummed record whose seq matches its JSON.
func readSlotMeta(path string) (ShardMeta, uint32, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return ShardMeta{}, 0, errNoSlotMeta
	}
	if err != nil {
		return ShardMeta{}, 0, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	h := make([]byte, slotHeaderSize)
	if _, err := io.ReadFull(f, h); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return ShardMeta{}, 0, errNoSlotMeta
		}
		return ShardMeta{}, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	if string(h[:8]) != slotMetaMagic || binary.LittleEndian.Uint32(h[24:]) != CRC32C(h[:24]) {
		return ShardMeta{}, 0, errNoSlotMeta
	}
	seq := binary.LittleEndian.Uint64(h[8:])
	n := binary.LittleEndian.Uint32(h[16:])
	crc := binary.LittleEndian.Uint32(h[20:])
	js := make([]byte, n)
	if _, err := io.ReadFull(f, js); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return ShardMeta{}, 0, fmt.Errorf("%w: %s is truncated", errNoSlotMeta, path)
		}
		return ShardMeta{}, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	if CRC32C(js) != crc {
		return ShardMeta{}, 0, fmt.Errorf("%w: %s fails its checksum", errNoSlotMeta, path)
	}
	m, err := DecodeShardMeta(js)
	if err != nil {
		return ShardMeta{}, 0, fmt.Errorf("%w: %s: %v", errNoSlotMeta, path, err)
	}
	if m.Seq != seq {
		return ShardMeta{}, 0, fmt.Errorf("%w: %s has seq %d in its header and %d in its JSON", errNoSlotMeta, path, seq, m.Seq)
	}
	return m, crc, nil
}

// invalidSlotHeader overwrites a metadata header so the slot reads as empty.
var invalidSlotHeader = make([]byte, slotHeaderSize)
