package checkpoint

// castagnoliReversed is the CRC-32C polynomial in the bit order hash/crc32 uses.
const castagnoliReversed = 0x82f63b78

// crcCombine returns the CRC-32C of a‖b from crcA = CRC32C(a), crcB = CRC32C(b) and len(b).
// Writers checksum their chunks independently and in any order; combining the chunk CRCs in
// chunk order gives the whole-data CRC without a second pass over the bytes.
//
// Appending lenB zero bytes to a multiplies its (unconditioned) CRC by x^(8·lenB) modulo the
// polynomial; that linear map over GF(2) is built by repeated squaring of the one-zero-bit
// operator, so the cost is logarithmic in lenB. The pre- and post-inversion of the standard CRC
// cancel out in the final xor.
func crcCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var odd, even [32]uint32
	// odd = operator for one zero bit.
	odd[0] = castagnoliReversed
	row := uint32(1)
	for i := 1; i < 32; i++ {
		odd[i] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four zero bits
	// Each round squares once more (a byte, then 2, 4, ... bytes) into the other matrix and
	// applies the operator when the matching bit of lenB is set.
	sq, prev := &even, &odd
	for ; lenB != 0; lenB >>= 1 {
		gf2Square(sq, prev)
		if lenB&1 != 0 {
			crcA = gf2Times(sq, crcA)
		}
		sq, prev = prev, sq
	}
	return crcA ^ crcB
}

// gf2Times multiplies the 32×32 bit matrix m by the vector v.
func gf2Times(m *[32]uint32, v uint32) uint32 {
	var sum uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

// gf2Square sets dst = m·m.
func gf2Square(dst, m *[32]uint32) {
	for i := 0; i < 32; i++ {
		dst[i] = gf2Times(m, m[i])
	}
}

// combineChunkCRCs folds per-chunk CRCs (in chunk order) into the CRC of the whole data.
func combineChunkCRCs(chunks []ChunkMeta) uint32 {
	var crc uint32
	for i, c := range chunks {
		if i == 0 {
			crc = c.CRC32C
			continue
		}
		crc = crcCombine(crc, c.CRC32C, c.Length)
	}
	return crc
}
