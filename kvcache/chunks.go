package kvcache

// DefaultChunkTokens is how many tokens one chunk of a get carries: DéjàVu restores in chunks
// of 100 tokens, big enough to stream at full speed, small enough to overlap with the copy in.
const DefaultChunkTokens = 100

// tokens is how many positions the snapshot covers.
func (s snapshot) tokens() int { return s.promptTokens + len(s.steps) }

// rangesFrom is the token ranges of at most n tokens from token start to the end, in order.
func (s snapshot) rangesFrom(start, n int) [][2]int {
	if s.acked < 0 {
		return nil
	}
	total := s.tokens()
	out := make([][2]int, 0, max(0, (total-start+n-1)/n))
	for a := start; a < total; a += n {
		out = append(out, [2]int{a, min(a+n, total)})
	}
	return out
}

// chunkBytes is the bytes of a chunk of tokens [a,b) of every local layer.
func (s snapshot) chunkBytes(a, b int) int { return (s.hi - s.lo) * s.layout.tokenBytes() * (b - a) }

// chunks gathers the snapshot from token start on into chunks of at most n tokens of every
// local layer, in token order, each laid out [layers, 2, kv_heads, tokens, head_dim], and hands
// them to emit.
func (s snapshot) chunks(start, n int, emit func(tokens [2]int, data []byte) error) error {
	for _, r := range s.rangesFrom(start, n) {
		buf := make([]byte, s.chunkBytes(r[0], r[1]))
		s.fill(buf, r[0], r[1])
		if err := emit(r, buf); err != nil {
			return err
		}
	}
	return nil
}

// fill writes tokens [a,b) of every local layer into dst (chunkBytes(a,b) bytes), laid out
// [layers, 2, kv_heads, b-a, head_dim]: the payload of the chunk of those tokens.
func (s snapshot) fill(dst []byte, a, b int) {
	layers := s.hi - s.lo
	row, tb := s.layout.rowBytes(), s.layout.tokenBytes()
	m := b - a
	for li := range layers {
		d := dst[li*tb*m : (li+1)*tb*m]
		for _, p := range s.prompt[s.lo+li] {
			if from, to := max(a, p.t0), min(b, p.t1); from < to {
				copyTokens(d, m, a, p.data, p.t1-p.t0, p.t0, from, to, s.layout.KVHeads, row)
			}
		}
		for pos := max(a, s.promptTokens); pos < b; pos++ {
			src := s.steps[pos-s.promptTokens].data[li*tb : (li+1)*tb]
			copyTokens(d, m, a, src, 1, pos, pos, pos+1, s.layout.KVHeads, row)
		}
	}
}

// copyTokens copies tokens [from,to) of one layer between two [2, heads, tokens, head_dim]
// tensors: src covers tokens [srcT0, srcT0+srcN), dst [dstT0, dstT0+dstN). row is the bytes
// of one head of one token.
func copyTokens(dst []byte, dstN, dstT0 int, src []byte, srcN, srcT0, from, to, heads, row int) {
	w := (to - from) * row
	for kh := range 2 * heads {
		d := (kh*dstN + from - dstT0) * row
		s := (kh*srcN + from - srcT0) * row
		copy(dst[d:d+w], src[s:s+w])
	}
}
