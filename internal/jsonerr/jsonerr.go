// Package jsonerr says where in a JSON file encoding/json found a problem, counted the way a
// person reading the file counts: line and column. The planner's plan files and profiles
// report their errors through it, so both read alike.
package jsonerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Describe adds the line and column of a syntax or type error to its message and says plainly
// when the input is empty or cut short. Errors that carry no offset (an unknown field, which
// names itself) pass through.
func Describe(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("malformed JSON at %s: %w", Position(data, syn.Offset), err)
	case errors.As(err, &typ):
		return fmt.Errorf("wrong type at %s: field %q wants %s, got JSON %s", Position(data, typ.Offset), typ.Field, typ.Type, typ.Value)
	case errors.Is(err, io.EOF):
		return errors.New("malformed JSON: the file is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: the file ends in the middle of a value")
	}
	return err
}

// Position is "line L, column C" of byte offset in data (both counted from 1).
func Position(data []byte, offset int64) string {
	offset = min(max(offset, 0), int64(len(data)))
	line, col := 1, 1
	for _, b := range data[:offset] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d", line, col)
}
