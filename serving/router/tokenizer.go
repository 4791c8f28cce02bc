package router

import (
	"strings"
	"unicode/utf8"
)

// Tokenizer turns a text prompt into token ids and generated tokens back into bytes of text.
type Tokenizer interface {
	Encode(text string) []int
	// Decode appends the bytes of tokens to dst. The bytes of one token need not be valid
	// UTF-8 on their own; the router holds back incomplete characters of a stream.
	Decode(dst []byte, tokens []int) []byte
}

// Bytes is the byte-level tokenizer: a token is one byte of the UTF-8 text, its id the byte's
// value 0..255. Generated ids above 255 (a worker with a larger vocabulary) decode to U+FFFD.
type Bytes struct{}

// Encode returns the bytes of text as token ids.
func (Bytes) Encode(text string) []int {
	ids := make([]int, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int(text[i])
	}
	return ids
}

// Decode appends one byte per token.
func (Bytes) Decode(dst []byte, tokens []int) []byte {
	for _, t := range tokens {
		if t < 0 || t > 255 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			continue
		}
		dst = append(dst, byte(t))
	}
	return dst
}

// completeUTF8 splits b into the longest prefix that does not end inside a UTF-8 character
// and the rest (at most 3 bytes), so a stream never sends half a character. Invalid bytes are
// not held back: only a prefix of a valid multi-byte sequence is.
func completeUTF8(b []byte) (ready, rest []byte) {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i], b[i:]
			}
			break
		}
	}
	return b, nil
}

// validText replaces invalid UTF-8 so JSON carries what the client will see anyway.
func validText(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }
