package store

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
)

// ErrChecksum means the bytes a store read or received do not match the CRC-32C the caller
// gave. It is permanent: retrying the same Put reads the same bytes.
var ErrChecksum = errors.New("checksum mismatch")

// castagnoli is the CRC-32C table; it is what S3 verifies as x-amz-checksum-crc32c.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The user metadata every stored object carries, so a reader (and a resumed upload) can tell
// what the object should be without reading it.
const (
	metaSize   = "size"
	metaCRC32C = "crc32c"
)

// crcBase64 is the wire form of a CRC-32C in S3 checksum headers: base64 of the big-endian bytes.
func crcBase64(c uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	return base64.StdEncoding.EncodeToString(b[:])
}

// crcHex is the form of a CRC-32C in object user metadata: eight lowercase hex digits.
func crcHex(c uint32) string { return fmt.Sprintf("%08x", c) }

// objectMetadata is the user metadata written with an object of this size and checksum.
func objectMetadata(size int64, crc uint32) map[string]string {
	return map[string]string{metaSize: strconv.FormatInt(size, 10), metaCRC32C: crcHex(crc)}
}

// mismatch is the error for bytes whose checksum is not the one promised.
func mismatch(what string, got, want uint32) error {
	return fmt.Errorf("%s has CRC-32C %08x, expected %08x: %w", what, got, want, ErrChecksum)
}

// readChecked reads the size bytes of object key from r and checks them against crc, for a
// store that sends or keeps an object whole.
func readChecked(key string, r io.ReaderAt, size int64, crc uint32) ([]byte, error) {
	buf := make([]byte, size)
	if n, err := r.ReadAt(buf, 0); int64(n) != size {
		return nil, fmt.Errorf("reading %s: got %d of %d bytes: %w", key, n, size, err)
	}
	if got := crc32.Checksum(buf, castagnoli); got != crc {
		return nil, mismatch("object "+key, got, crc)
	}
	return buf, nil
}
