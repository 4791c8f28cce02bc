package sim

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/schooner-ml/schooner/checkpoint"
)

// The simulated tensors of one layer: names, shapes and sizes. They are small on purpose (6 KiB
// a layer) so a checkpoint of a 32-layer model moves in milliseconds on a laptop, yet every
// byte is checked on restore.
var layerTensors = []struct {
	suffix string
	shape  []int64
}{
	{"attn.w", []int64{16, 32}},
	{"mlp.w", []int64{32, 32}},
}

// decay pulls every value toward zero each iteration, so the state stays bounded however long
// a job runs.
const decay float32 = 0.999

// TensorName is the checkpoint name of the idx-th simulated tensor of layer, e.g.
// "layers.3.attn.w".
func TensorName(layer, idx int) string {
	return fmt.Sprintf("layers.%d.%s", layer, layerTensors[idx].suffix)
}

// layerState is one layer's simulated tensors at some iteration.
type layerState struct {
	layer int
	vals  [][]float32 // one slice per entry of layerTensors
}

// freshLayer is layer's state at iteration 0.
func freshLayer(seed int64, layer int) *layerState {
	s := &layerState{layer: layer, vals: make([][]float32, len(layerTensors))}
	for ti, lt := range layerTensors {
		n := numElements(lt.shape)
		v := make([]float32, n)
		for k := range v {
			// The initial values: in [-0.5, 0.5), a function of seed, layer, tensor, element.
			v[k] = unitNoise(seed, layer, ti, -1, k) * 0.5
		}
		s.vals[ti] = v
	}
	return s
}

// step advances the layer from iteration it to it+1. Each conversion to float32 is explicit so
// the compiler may not fuse the multiply and the add: the result is the same on every machine.
func (s *layerState) step(seed int64, it int64) {
	for ti, v := range s.vals {
		for k, x := range v {
			delta := unitNoise(seed, s.layer, ti, it, k) * 1e-3
			v[k] = float32(float32(x*decay) + delta)
		}
	}
}

// tensors encodes the layer as checkpoint tensors (little-endian float32).
func (s *layerState) tensors() []checkpoint.Tensor {
	out := make([]checkpoint.Tensor, len(layerTensors))
	for ti, lt := range layerTensors {
		v := s.vals[ti]
		b := make([]byte, 4*len(v))
		for k, x := range v {
			binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(x))
		}
		out[ti] = checkpoint.Tensor{Name: TensorName(s.layer, ti), Layer: s.layer, DType: checkpoint.Float32,
			Shape: append([]int64(nil), lt.shape...), Data: b}
	}
	return out
}

// layerFromTensors rebuilds layer's state from restored tensors, found by name; it fails when
// one is missing or has another type or size, which would mean the checkpoint is not ours.
func layerFromTensors(layer int, byName map[string]checkpoint.Tensor) (*layerState, error) {
	s := &layerState{layer: layer, vals: make([][]float32, len(layerTensors))}
	for ti, lt := range layerTensors {
		name := TensorName(layer, ti)
		t, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("tensor %s is missing", name)
		}
		n := numElements(lt.shape)
		if t.DType != checkpoint.Float32 || int64(len(t.Data)) != 4*n {
			return nil, fmt.Errorf("tensor %s is %s with %d bytes, want F32 with %d", name, t.DType, len(t.Data), 4*n)
		}
		v := make([]float32, n)
		for k := range v {
			v[k] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*k:]))
		}
		s.vals[ti] = v
	}
	return s, nil
}

// ExpectedLayer computes, from scratch, the simulated tensors of layer after iteration
// iterations of an uninterrupted run: the reference every checkpoint is compared with.
func ExpectedLayer(seed int64, layer int, iteration int64) []checkpoint.Tensor {
	s := freshLayer(seed, layer)
	for it := int64(0); it < iteration; it++ {
		s.step(seed, it)
	}
	return s.tensors()
}

// unitNoise is a deterministic value in [-1, 1) for (seed, layer, tensor, iteration, element):
// a splitmix64 hash of the coordinates, so it needs no random stream that a restore would have
// to carry.
func unitNoise(seed int64, layer, tensor int, it int64, k int) float32 {
	h := uint64(seed)
	h = mix(h ^ uint64(layer)*0x9e3779b97f4a7c15)
	h = mix(h ^ uint64(tensor)*0xbf58476d1ce4e5b9)
	h = mix(h ^ uint64(it)*0x94d049bb133111eb)
	h = mix(h ^ uint64(k))
	// 24 random bits give a float32 exactly.
	return float32(int32(h>>40)-(1<<23)) / (1 << 23)
}

// mix is the splitmix64 finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func numElements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}
