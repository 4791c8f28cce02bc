package kvcache

// DefaultChunkTokens is how many tokens one chunk of a get carries: DéjàVu restores in chunks
// of 100 tokens, big enough to stream at full speed, small enough to overlap with the copy in.
const DefaultChunkTokens = 100

// tokens is how many positions the snapshot covers.
func (s snapshot) tokens() int { return s.promptTokens + len(s.steps) }

// chunks gathers the snapshot into chunks of at most n tokens of every local layer, in token
// order, each laid out [layers, 2, kv_heads, tokens, head_dim], and hands them to emit.
func (s snapshot) chunks(n int, emit func(tokens [2]int, data []byte) error) error {
	if s.acked < 0 {
		return nil
	}
	total, layers := s.tokens(), s.hi-s.lo
	row, tb := s.layout.rowBytes(), s.layout.tokenBytes()
	for a := 0; a < total; a += n {
		b := min(a+n, total)
		m := b - a
		buf := make([]byte, layers*tb*m)
		for li := range layers {
			dst := buf[li*tb*m : (li+1)*tb*m]
			for _, p := range s.prompt[s.lo+li] {
				if from, to := max(a, p.t0), min(b, p.t1); from < to {
					copyTokens(dst, m, a, p.data, p.t1-p.t0, p.t0, from, to, s.layout.KVHeads, row)
				}
			}
			for pos := max(a, s.promptTokens); pos < b; pos++ {
				src := s.steps[pos-s.promptTokens].data[li*tb : (li+1)*tb]
				copyTokens(dst, m, a, src, 1, pos, pos, pos+1, s.layout.KVHeads, row)
			}
		}
		if err := emit([2]int{a, b}, buf); err != nil {
			return err
		}
	}
	return nil
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
