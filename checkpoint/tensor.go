package checkpoint

import (
	"fmt"
	"strings"
)

// DType is a tensor element type, named as PyTorch and safetensors name them.
type DType string

// The element types a checkpoint can hold.
const (
	Float64  DType = "F64"
	Float32  DType = "F32"
	Float16  DType = "F16"
	BFloat16 DType = "BF16"
	Int64    DType = "I64"
	Int32    DType = "I32"
	Int16    DType = "I16"
	Int8     DType = "I8"
	Uint8    DType = "U8"
	Bool     DType = "BOOL"
)

var dtypeSizes = map[DType]int{
	Float64: 8, Float32: 4, Float16: 2, BFloat16: 2, Int64: 8, Int32: 4, Int16: 2, Int8: 1, Uint8: 1, Bool: 1,
}

// Size is the element size in bytes, or 0 for an unknown type.
func (d DType) Size() int { return dtypeSizes[d] }

// dtypeNames are the names ParseDType accepts, lower-cased: the safetensors name, then
// PyTorch's.
var dtypeNames = map[string]DType{
	"f64": Float64, "float64": Float64, "double": Float64,
	"f32": Float32, "float32": Float32, "float": Float32,
	"f16": Float16, "float16": Float16, "half": Float16,
	"bf16": BFloat16, "bfloat16": BFloat16,
	"i64": Int64, "int64": Int64, "long": Int64,
	"i32": Int32, "int32": Int32, "int": Int32,
	"i16": Int16, "int16": Int16, "short": Int16,
	"i8": Int8, "int8": Int8,
	"u8": Uint8, "uint8": Uint8,
	"bool": Bool,
}

// ParseDType accepts the safetensors names (F32) and the PyTorch names (float32, torch.float32).
func ParseDType(s string) (DType, error) {
	if d, ok := dtypeNames[strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "torch.")]; ok {
		return d, nil
	}
	return "", fmt.Errorf("unknown dtype %q (want one of F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)", s)
}

// NoLayer marks a tensor that belongs to no transformer layer (an optimizer step counter, an RNG
// state): it goes with every pipeline stage on restore.
const NoLayer = -1

// Tensor is one named array of a model or optimizer state. Names are unique within a step across
// all ranks: data-parallel replicas hold the same names and only one of them needs to save them.
type Tensor struct {
	Name  string  `json:"name"`
	Layer int     `json:"layer"` // model layer index, or NoLayer
	DType DType   `json:"dtype"`
	Shape []int64 `json:"shape"`
	Data  []byte  `json:"-"` // little-endian, row-major; len = NumElements × DType.Size()
}

// NumElements is the product of the shape (1 for a scalar).
func (t Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Validate checks that the name, type and shape agree with the bytes.
func (t Tensor) Validate() error {
	if t.Name == "" {
		return fmt.Errorf("tensor without a name")
	}
	if t.DType.Size() == 0 {
		return fmt.Errorf("tensor %s: unknown dtype %q", t.Name, t.DType)
	}
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("tensor %s: negative dimension in shape %v", t.Name, t.Shape)
		}
	}
	if want := t.NumElements() * int64(t.DType.Size()); want != int64(len(t.Data)) {
		return fmt.Errorf("tensor %s: shape %v of %s needs %d bytes, has %d", t.Name, t.Shape, t.DType, want, len(t.Data))
	}
	return nil
}

// Shard is what one rank saves for one step.
type Shard struct {
	Rank    int      `json:"rank"`
	Tensors []Tensor `json:"tensors"`
}

// Size is the number of tensor bytes in the shard.
func (s Shard) Size() int64 {
	var n int64
	for _, t := range s.Tensors {
		n += int64(len(t.Data))
	}
	return n
}

// Validate checks every tensor and that names are unique.
func (s Shard) Validate() error {
	if s.Rank < 0 {
		return fmt.Errorf("shard rank %d is negative", s.Rank)
	}
	seen := make(map[string]bool, len(s.Tensors))
	for _, t := range s.Tensors {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("rank %d: %w", s.Rank, err)
		}
		if seen[t.Name] {
			return fmt.Errorf("rank %d: tensor %s appears twice", s.Rank, t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}
