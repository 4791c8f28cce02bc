package checkpoint

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"time"
)

// FormatVersion is written into every ShardMeta; readers refuse versions they do not know.
const FormatVersion = 1

// Castagnoli is the CRC-32C table used for every checksum in a checkpoint: it is what modern CPUs
// compute in hardware and what S3 verifies natively (x-amz-checksum-crc32c).
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the checksum of b.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, Castagnoli) }

// StageLayers is the half-open range of model layers [First, End) one pipeline stage holds.
type StageLayers struct {
	First int `json:"first"`
	End   int `json:"end"`
}

// PlanInfo records the parallel layout a checkpoint was taken under, so a restore can tell
// whether it is resharding and a person can read what produced the checkpoint.
type PlanInfo struct {
	World  int           `json:"world"` // ranks that contribute a shard to every step
	PP     int           `json:"pp"`
	DP     int           `json:"dp"`
	TP     int           `json:"tp"`
	Stages []StageLayers `json:"stages,omitempty"`
	Note   string        `json:"note,omitempty"` // free text, e.g. the planner's summary
}

// Validate checks the plan is coherent.
func (p PlanInfo) Validate() error {
	if p.World < 1 {
		return fmt.Errorf("plan world size %d must be at least 1", p.World)
	}
	if p.PP < 0 || p.DP < 0 || p.TP < 0 {
		return fmt.Errorf("plan degrees must not be negative (pp=%d dp=%d tp=%d)", p.PP, p.DP, p.TP)
	}
	return nil
}

// TensorMeta locates one tensor inside a shard's data.
type TensorMeta struct {
	Name   string  `json:"name"`
	Layer  int     `json:"layer"`
	DType  DType   `json:"dtype"`
	Shape  []int64 `json:"shape"`
	Offset int64   `json:"offset"` // from the start of the shard's data
	Length int64   `json:"length"`
}

// ChunkMeta is one independently written and checksummed piece of a shard's data.
type ChunkMeta struct {
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	CRC32C uint32 `json:"crc32c"`
}

// ShardMeta is everything needed to read one rank's shard of one step back and verify it. It is
// the metadata of a local slot and, unchanged, the metadata object of the remote tier.
type ShardMeta struct {
	Format    int               `json:"format"`
	Step      int64             `json:"step"`
	Rank      int               `json:"rank"`
	Seq       uint64            `json:"seq"` // the writing engine's commit sequence number
	Plan      PlanInfo          `json:"plan"`
	Tensors   []TensorMeta      `json:"tensors"`
	Chunks    []ChunkMeta       `json:"chunks"`
	Size      int64             `json:"size"`   // bytes of data
	CRC32C    uint32            `json:"crc32c"` // of the whole data, so a remote copy is verified in one pass
	Created   time.Time         `json:"created"`
	Emergency bool              `json:"emergency,omitempty"` // taken on a preemption notice
	Extra     map[string]string `json:"extra,omitempty"`     // trainer's own small values (iteration, RNG seed)
}

// Validate checks internal consistency: tensors and chunks inside the data, chunks contiguous.
func (m ShardMeta) Validate() error {
	if m.Format != FormatVersion {
		return fmt.Errorf("shard format %d is not supported (want %d)", m.Format, FormatVersion)
	}
	if m.Step < 0 || m.Rank < 0 {
		return fmt.Errorf("shard step %d rank %d must not be negative", m.Step, m.Rank)
	}
	for _, t := range m.Tensors {
		if t.Offset < 0 || t.Length < 0 || t.Offset+t.Length > m.Size {
			return fmt.Errorf("tensor %s [%d,+%d) lies outside the %d data bytes", t.Name, t.Offset, t.Length, m.Size)
		}
	}
	var at int64
	for i, c := range m.Chunks {
		if c.Offset != at || c.Length <= 0 {
			return fmt.Errorf("chunk %d at %d+%d does not follow the previous chunk (expected offset %d)", i, c.Offset, c.Length, at)
		}
		at += c.Length
	}
	if at != m.Size {
		return fmt.Errorf("chunks cover %d bytes, data has %d", at, m.Size)
	}
	return nil
}

// Encode is the canonical JSON of the metadata.
func (m ShardMeta) Encode() ([]byte, error) { return json.Marshal(m) }

// DecodeShardMeta parses and validates metadata.
func DecodeShardMeta(b []byte) (ShardMeta, error) {
	var m ShardMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return ShardMeta{}, fmt.Errorf("decoding shard metadata: %w", err)
	}
	if err := m.Validate(); err != nil {
		return ShardMeta{}, err
	}
	return m, nil
}
