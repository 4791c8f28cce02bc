package checkpoint_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
)

func TestSafetensorsRoundTrip(t *testing.T) {
	t.Parallel()
	tensors := []checkpoint.Tensor{
		rtFloats("model.layers.0.weight", checkpoint.NoLayer, 12, 1),
		{Name: "model.embed", Layer: checkpoint.NoLayer, DType: checkpoint.BFloat16, Shape: []int64{2, 3}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{Name: "flags", Layer: checkpoint.NoLayer, DType: checkpoint.Bool, Shape: []int64{3}, Data: []byte{1, 0, 1}},
		{Name: "step", Layer: checkpoint.NoLayer, DType: checkpoint.Int64, Shape: []int64{}, Data: make([]byte, 8)},
		{Name: "empty", Layer: checkpoint.NoLayer, DType: checkpoint.Float16, Shape: []int64{0, 4}, Data: []byte{}},
	}
	meta := map[string]string{"format": "pt", "schooner.step": "1200"}
	var buf bytes.Buffer
	require.NoError(t, checkpoint.WriteSafetensors(&buf, tensors, meta))

	raw := buf.Bytes()
	n := binary.LittleEndian.Uint64(raw[:8])
	assert.Zero(t, (8+n)%8, "the data starts 8-byte aligned")
	var header map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw[8:8+n], &header))
	assert.JSONEq(t, `{"dtype":"BF16","shape":[2,3],"data_offsets":[48,60]}`, string(header["model.embed"]))
	assert.JSONEq(t, `{"format":"pt","schooner.step":"1200"}`, string(header["__metadata__"]))

	got, gotMeta, err := checkpoint.ReadSafetensors(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, meta, gotMeta)
	require.Len(t, got, len(tensors))
	for i := range tensors {
		assert.Equal(t, tensors[i].Name, got[i].Name, "tensors come back in data order")
		assert.Equal(t, tensors[i].DType, got[i].DType)
		assert.Equal(t, tensors[i].Shape, got[i].Shape)
		assert.Equal(t, tensors[i].Data, got[i].Data)
	}

	buf.Reset()
	require.NoError(t, checkpoint.WriteSafetensors(&buf, nil, nil))
	got, gotMeta, err = checkpoint.ReadSafetensors(&buf)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Nil(t, gotMeta)
}

// A file laid out the way the reference implementation writes
// {"a": torch.zeros(2, dtype=torch.float16)}: compact JSON, space padding, no metadata.
func TestSafetensorsReadsReferenceFile(t *testing.T) {
	t.Parallel()
	header := `{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`
	for len(header)%8 != 0 {
		header += " "
	}
	var file bytes.Buffer
	_ = binary.Write(&file, binary.LittleEndian, uint64(len(header)))
	file.WriteString(header)
	file.Write([]byte{0, 0, 0, 0})
	got, meta, err := checkpoint.ReadSafetensors(&file)
	require.NoError(t, err)
	assert.Nil(t, meta)
	require.Len(t, got, 1)
	assert.Equal(t, checkpoint.Float16, got[0].DType)
	assert.Equal(t, []int64{2}, got[0].Shape)
}

func TestSafetensorsRejectsMalformed(t *testing.T) {
	t.Parallel()
	file := func(header string, data []byte) *bytes.Reader {
		var b bytes.Buffer
		_ = binary.Write(&b, binary.LittleEndian, uint64(len(header)))
		b.WriteString(header)
		b.Write(data)
		return bytes.NewReader(b.Bytes())
	}
	cases := map[string]*bytes.Reader{
		"header length":     bytes.NewReader([]byte{1, 2}),
		"outside [2,":       bytes.NewReader(binary.LittleEndian.AppendUint64(nil, 1<<40)),
		"start with '{'":    file(`  {}`, nil),
		"decoding":          file(`{"a":`, nil),
		"unknown dtype":     file(`{"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}}`, []byte{0}),
		"needs 8 bytes":     file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)),
		"does not follow":   file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)),
		"tensors cover":     file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 2)),
		"map of strings":    file(`{"__metadata__":{"a":1}}`, nil),
		"overlap-or-beyond": file(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, make([]byte, 2)),
	}
	for want, r := range cases {
		_, _, err := checkpoint.ReadSafetensors(r)
		if want == "overlap-or-beyond" {
			assert.ErrorContains(t, err, "does not follow", want)
			continue
		}
		assert.ErrorContains(t, err, want)
	}

	dup := []checkpoint.Tensor{rtFloats("x", 0, 1, 0), rtFloats("x", 0, 1, 0)}
	assert.ErrorContains(t, checkpoint.WriteSafetensors(&bytes.Buffer{}, dup, nil), "appears twice")
	bad := []checkpoint.Tensor{{Name: "x", DType: checkpoint.Float32, Shape: []int64{2}, Data: []byte{1}}}
	assert.ErrorContains(t, checkpoint.WriteSafetensors(&bytes.Buffer{}, bad, nil), "needs 8 bytes")
}
