// Package defaults fills in unset options by the one rule the packages share: a number that
// is zero or negative is unset and takes its default.
package defaults

// Number is what an option is measured in (time.Duration is an ~int64).
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Positive sets *v to d unless *v is positive.
func Positive[T Number](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
