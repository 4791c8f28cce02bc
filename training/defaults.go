package training

// number is what a limit or an option of this package is measured in.
type number interface {
	~int | ~int64 | ~float64 // time.Duration is an ~int64
}

// orDefault sets *v to d when it is zero or negative: the package's rule for "unset".
func orDefault[T number](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
