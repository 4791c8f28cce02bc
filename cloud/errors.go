package cloud

import (
	"errors"
	"fmt"
)

// The kinds of cloud failure schooner reacts to differently. Check with errors.Is.
var (
	// ErrInsufficientCapacity: the zone has no capacity of this type now. Try another
	// offering; mark this one unavailable for a while.
	ErrInsufficientCapacity = errors.New("insufficient capacity")
	// ErrQuota: an account limit; retrying elsewhere in the same account will not help soon.
	ErrQuota = errors.New("quota exceeded")
	// ErrThrottled: too many requests; retry the same call with backoff.
	ErrThrottled = errors.New("request throttled")
	// ErrNotFound: the instance, zone or type does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidRequest: the request itself is wrong; retrying will not help.
	ErrInvalidRequest = errors.New("invalid request")
)

// Error carries a provider's own code and message beside the kind, so logs keep what the
// provider said while code branches on the kind.
type Error struct {
	Kind     error
	Provider string
	Code     string
	Message  string
	// Offering is set for capacity errors so the caller can mark exactly what was short.
	Offering *OfferingKey
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s", e.Provider, e.Kind)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Offering != nil {
		s += " [" + e.Offering.String() + "]"
	}
	return s
}

// Is makes errors.Is(err, ErrInsufficientCapacity) and the like work.
func (e *Error) Is(target error) bool { return e.Kind == target }

// AsError returns the *Error inside err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// IsInsufficientCapacity, IsQuota, IsThrottled, IsNotFound and IsInvalidRequest are the
// errors.Is checks spelled out, for call sites that read better with them.
func IsInsufficientCapacity(err error) bool { return errors.Is(err, ErrInsufficientCapacity) }
func IsQuota(err error) bool                { return errors.Is(err, ErrQuota) }
func IsThrottled(err error) bool            { return errors.Is(err, ErrThrottled) }
func IsNotFound(err error) bool             { return errors.Is(err, ErrNotFound) }
func IsInvalidRequest(err error) bool       { return errors.Is(err, ErrInvalidRequest) }

// Retryable reports whether the same call may succeed later without changing it.
func Retryable(err error) bool { return IsThrottled(err) }

// ShouldTryElsewhere reports whether the request may succeed on another offering.
func ShouldTryElsewhere(err error) bool { return IsInsufficientCapacity(err) }
