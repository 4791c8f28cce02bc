package kvcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkOf is layers × tokens of request req as a holder would send it.
func chunkOf(req string, layers, tokens [2]int, lay Layout) Chunk {
	var data []byte
	for l := layers[0]; l < layers[1]; l++ {
		data = append(data, promptData(req, l, tokens[0], tokens[1], lay)...)
	}
	return Chunk{Request: req, Layers: layers, Tokens: tokens, DType: lay.DType,
		Shape: []int{layers[1] - layers[0], 2, lay.KVHeads, tokens[1] - tokens[0], lay.HeadDim}, Data: data}
}

func TestAssembleTakesChunksOfAnyCut(t *testing.T) {
	chunks := []Chunk{
		chunkOf("r", [2]int{2, 4}, [2]int{5, 9}, testLayout),
		chunkOf("r", [2]int{2, 3}, [2]int{0, 5}, testLayout),
		chunkOf("r", [2]int{3, 4}, [2]int{0, 5}, testLayout),
	}
	res, err := Assemble(chunks, End{Request: "r", AckedStep: 3})
	require.NoError(t, err)
	assert.Equal(t, 9, res.Tokens)
	require.Len(t, res.Layers, 2)
	for _, l := range res.Layers {
		want := expectLayer("r", l.Layer, 9, testLayout)
		assert.Equal(t, want, l.Data)
		assert.Equal(t, want[:len(want)/2], l.K())
	}
}

func TestAssembleRefusesHoles(t *testing.T) {
	_, err := Assemble([]Chunk{chunkOf("r", [2]int{0, 1}, [2]int{0, 4}, testLayout), chunkOf("r", [2]int{0, 1}, [2]int{5, 6}, testLayout)}, End{Request: "r", AckedStep: 1})
	assert.ErrorIs(t, err, ErrIncomplete)
	_, err = Assemble([]Chunk{chunkOf("r", [2]int{0, 1}, [2]int{0, 4}, testLayout), chunkOf("r", [2]int{1, 2}, [2]int{0, 3}, testLayout)}, End{Request: "r", AckedStep: 1})
	assert.ErrorIs(t, err, ErrIncomplete, "layers of different lengths")
	_, err = Assemble(nil, End{Request: "r", AckedStep: 4})
	assert.ErrorIs(t, err, ErrIncomplete, "acked but empty")
	bad := chunkOf("r", [2]int{0, 1}, [2]int{0, 4}, testLayout)
	bad.Data = bad.Data[1:]
	_, err = Assemble([]Chunk{bad}, End{Request: "r", AckedStep: 0})
	assert.Error(t, err)
}

func TestMinAckedIsTheResumePoint(t *testing.T) {
	step, err := MinAcked(End{Request: "r", AckedStep: 40}, End{Request: "r", AckedStep: 38}, End{Request: "r", AckedStep: 41})
	require.NoError(t, err)
	assert.Equal(t, 38, step)
	step, err = MinAcked(End{Request: "r", AckedStep: 40}, End{Request: "r", AckedStep: -1})
	require.NoError(t, err)
	assert.Equal(t, -1, step, "one stage without a replica: recompute")
	step, err = MinAcked()
	require.NoError(t, err)
	assert.Equal(t, -1, step)
	_, err = MinAcked(End{Request: "r", AckedStep: 1}, End{Request: "s", AckedStep: 1})
	assert.Error(t, err)
}
