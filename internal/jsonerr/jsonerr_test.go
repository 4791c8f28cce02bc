package jsonerr

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDescribe(t *testing.T) {
	type doc struct {
		Name string `json:"name"`
	}
	decode := func(raw string) error {
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.DisallowUnknownFields()
		var d doc
		return Describe([]byte(raw), dec.Decode(&d))
	}
	for raw, want := range map[string]string{
		"{\n  \"name\": \"x\",,\n}": "malformed JSON at line 2, column 16: invalid character ','",
		"{\n\"name\": 7}":           `wrong type at line 2, column 10: field "name" wants string, got JSON number`,
		"":                          "malformed JSON: the file is empty",
		`{"name": `:                 "malformed JSON: the file ends in the middle of a value",
		`{"nmae": "x"}`:             `json: unknown field "nmae"`,
	} {
		assert.ErrorContains(t, decode(raw), want, "%q", raw)
	}
	var d doc
	raw := []byte(`{"name": `)
	assert.ErrorContains(t, Describe(raw, json.Unmarshal(raw, &d)), "malformed JSON at line 1, column 10: unexpected end of JSON input")
	assert.Nil(t, Describe(nil, nil))
}

func TestPosition(t *testing.T) {
	data := []byte("ab\ncd\n")
	assert.Equal(t, "line 1, column 1", Position(data, 0))
	assert.Equal(t, "line 2, column 2", Position(data, 4))
	assert.Equal(t, "line 3, column 1", Position(data, 99), "an offset past the end is the end")
}
