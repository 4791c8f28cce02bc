package planner

// PeakSuffixes runs req's search and returns the most suffixes one task's programme held at
// once, for the tests of package planner_test.
func PeakSuffixes(req Request) (*Result, int64, error) {
	s, err := newSearch(req)
	if err != nil {
		return nil, 0, err
	}
	res, err := s.run()
	return res, s.peakLabels.Load(), err
}
