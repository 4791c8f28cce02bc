package kvcache

import (
	"errors"
	"fmt"
)

// Error codes of section 3. Full and Conflict refuse one request of a frame and the
// connection goes on; every other code closes the connection.
const (
	CodeFull       = "full"        // the holder's byte budget is reached
	CodeConflict   = "conflict"    // the put does not continue the request's replica
	CodeBadRequest = "bad_request" // a malformed frame, an unknown op, a payload over the limit
	CodeVersion    = "version"     // the peer speaks another protocol version
	CodeOverloaded = "overloaded"  // the holder has too many connections
)

var (
	// ErrFull matches a refusal because the holder's byte budget is reached.
	ErrFull = errors.New("kv-cache holder full")
	// ErrConflict matches a refusal of a put that does not continue the request's replica
	// (a missing step, tokens that do not follow, another shape or layer range).
	ErrConflict = errors.New("put conflicts with the held replica")
	// ErrBadRequest matches a holder that rejected a frame as malformed and closed the connection.
	ErrBadRequest = errors.New("bad request")
	// ErrClosed is returned by a Client used after Close or after its connection ended.
	ErrClosed = errors.New("kv-cache client closed")
)

// HolderError is an error frame from the holder. errors.Is matches it against ErrFull,
// ErrConflict and ErrBadRequest by its code.
type HolderError struct {
	Code    string
	Message string
	Request string
	Step    int
}

func (e *HolderError) Error() string {
	return fmt.Sprintf("kv-cache holder: %s: %s", e.Code, e.Message)
}

// Is maps the code to the package's sentinel errors.
func (e *HolderError) Is(target error) bool {
	switch target {
	case ErrFull:
		return e.Code == CodeFull
	case ErrConflict:
		return e.Code == CodeConflict
	case ErrBadRequest:
		return e.Code == CodeBadRequest
	}
	return false
}

// perRequest reports whether an error code refuses one request and leaves the connection open.
func perRequest(code string) bool { return code == CodeFull || code == CodeConflict }

func refuse(code, format string, args ...any) *HolderError {
	return &HolderError{Code: code, Message: fmt.Sprintf(format, args...)}
}
