package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// safetensors (https://github.com/huggingface/safetensors) is the file format PyTorch,
// Hugging Face and most inference servers load weights from without running code: an 8-byte
// little-endian header length, a JSON header mapping each tensor name to its dtype, shape and
// [begin, end) byte range in the data that follows, and an optional "__metadata__" map of
// strings. Restores write it so a checkpoint leaves schooner in a form anything can read.

// stMaxHeader bounds the JSON header read (the reference implementation's limit is 100 MB).
const stMaxHeader = 100 << 20

// stMetadataKey is the header entry holding free-form string metadata.
const stMetadataKey = "__metadata__"

// stEntry is one tensor in a safetensors header.
type stEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// WriteSafetensors writes the tensors, in the order given, and metadata (may be nil) as a
// safetensors file. Names must be unique. Layers are not part of the format: put them in
// metadata if a reader needs them.
func WriteSafetensors(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	header := make(map[string]any, len(tensors)+1)
	var off int64
	for _, t := range tensors {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("writing safetensors: %w", err)
		}
		if t.Name == stMetadataKey {
			return fmt.Errorf("writing safetensors: a tensor may not be named %s", stMetadataKey)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("writing safetensors: tensor %s appears twice", t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		n := int64(len(t.Data))
		header[t.Name] = stEntry{DType: t.DType, Shape: shape, DataOffsets: [2]int64{off, off + n}}
		off += n
	}
	if len(metadata) > 0 {
		header[stMetadataKey] = metadata
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("encoding safetensors header: %w", err)
	}
	// The data starts 8-byte aligned: pad the header with spaces, as the format allows.
	if pad := (8 - len(hb)%8) % 8; pad > 0 {
		hb = append(hb, bytes.Repeat([]byte(" "), pad)...)
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hb)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return fmt.Errorf("writing safetensors header: %w", err)
	}
	if _, err := w.Write(hb); err != nil {
		return fmt.Errorf("writing safetensors header: %w", err)
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("writing safetensors tensor %s: %w", t.Name, err)
		}
	}
	return nil
}

// ReadSafetensors reads a whole safetensors file: the tensors in data order (Layer NoLayer,
// since the format has no layers) and the metadata (nil if none). It enforces the format's
// rules: known dtypes, sizes that match shapes, byte ranges that tile the data exactly.
func ReadSafetensors(r io.Reader) ([]Tensor, map[string]string, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, nil, fmt.Errorf("reading safetensors header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n < 2 || n > stMaxHeader {
		return nil, nil, fmt.Errorf("safetensors header length %d is outside [2, %d]", n, stMaxHeader)
	}
	hb := make([]byte, n)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, nil, fmt.Errorf("reading safetensors header: %w", err)
	}
	if hb[0] != '{' {
		return nil, nil, fmt.Errorf("safetensors header does not start with '{'")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hb, &raw); err != nil {
		return nil, nil, fmt.Errorf("decoding safetensors header: %w", err)
	}
	var metadata map[string]string
	if m, ok := raw[stMetadataKey]; ok {
		if err := json.Unmarshal(m, &metadata); err != nil {
			return nil, nil, fmt.Errorf("decoding safetensors %s (want a map of strings): %w", stMetadataKey, err)
		}
		delete(raw, stMetadataKey)
	}
	type located struct {
		name string
		e    stEntry
	}
	entries := make([]located, 0, len(raw))
	for name, msg := range raw {
		var e stEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, nil, fmt.Errorf("decoding safetensors entry %s: %w", name, err)
		}
		entries = append(entries, located{name, e})
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].e.DataOffsets, entries[j].e.DataOffsets
		return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1])
	})
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("reading safetensors data: %w", err)
	}
	tensors := make([]Tensor, 0, len(entries))
	var at int64
	for _, le := range entries {
		begin, end := le.e.DataOffsets[0], le.e.DataOffsets[1]
		if begin != at || end < begin || end > int64(len(data)) {
			return nil, nil, fmt.Errorf("safetensors tensor %s: byte range [%d, %d) does not follow the previous tensor at %d within %d data bytes",
				le.name, begin, end, at, len(data))
		}
		t := Tensor{Name: le.name, Layer: NoLayer, DType: le.e.DType, Shape: le.e.Shape, Data: data[begin:end:end]}
		if t.Shape == nil {
			t.Shape = []int64{}
		}
		if err := t.Validate(); err != nil {
			return nil, nil, fmt.Errorf("safetensors: %w", err)
		}
		tensors = append(tensors, t)
		at = end
	}
	if at != int64(len(data)) {
		return nil, nil, fmt.Errorf("safetensors data has %d bytes, tensors cover %d", len(data), at)
	}
	return tensors, metadata, nil
}
