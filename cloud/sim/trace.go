package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"
)

// ErrBadTrace marks a trace that cannot be used; the wrapping error says what is wrong.
var ErrBadTrace = errors.New("malformed trace")

// Unit is what a trace counts.
type Unit string

const (
	// Instances: each count is how many instances of the offering could be held (SkyPilot's
	// spot-traces).
	Instances Unit = "instances"
	// GPUs: each count is how many GPUs could be held (Sailor's traces); attached to an
	// offering it becomes floor(count / GPUs per instance) instances.
	GPUs Unit = "gpus"
)

// Step says that from At (since the start of the trace) Count was obtainable.
type Step struct {
	At    time.Duration
	Count int
}

// Trace is a recorded availability: a step function of time. Before the first step nothing
// is obtainable; after the last step its count holds for ever (replays do not wrap, so a
// long simulation ends in a steady state rather than in a jump back to the trace's start).
type Trace struct {
	// Source names where the trace came from (a file), for messages.
	Source string
	Unit   Unit
	// Gap is the tick of a regularly sampled trace (SkyPilot), 0 for irregular ones.
	Gap   time.Duration
	Steps []Step
}

// CountAt returns the count d after the start of the trace.
func (t *Trace) CountAt(d time.Duration) int {
	n := 0
	for _, s := range t.Steps {
		if s.At > d {
			break
		}
		n = s.Count
	}
	return n
}

// Validate checks what a replay relies on: at least one step, times not negative and
// strictly increasing, counts not negative, a known unit.
func (t *Trace) Validate() error {
	if err := t.validate(); err != nil {
		if t.Source != "" {
			return fmt.Errorf("trace %s: %w: %v", t.Source, ErrBadTrace, err)
		}
		return fmt.Errorf("trace: %w: %v", ErrBadTrace, err)
	}
	return nil
}

func (t *Trace) validate() error {
	if t.Unit != Instances && t.Unit != GPUs {
		return fmt.Errorf("unknown unit %q", t.Unit)
	}
	if len(t.Steps) == 0 {
		return errors.New("no steps")
	}
	for i, s := range t.Steps {
		if s.Count < 0 {
			return fmt.Errorf("negative count %d at step %d", s.Count, i)
		}
		if s.At < 0 {
			return fmt.Errorf("negative time %s at step %d", s.At, i)
		}
		if i > 0 && s.At <= t.Steps[i-1].At {
			return fmt.Errorf("time %s at step %d does not increase (previous %s)", s.At, i, t.Steps[i-1].At)
		}
	}
	return nil
}

// instanceSteps converts the steps to whole instances of gpusPerInstance GPUs.
func (t *Trace) instanceSteps(gpusPerInstance int) []Step {
	out := append([]Step(nil), t.Steps...)
	if t.Unit == GPUs && gpusPerInstance > 0 {
		for i := range out {
			out[i].Count /= gpusPerInstance
		}
	}
	return out
}

// LoadTrace reads a trace file in either format ParseTrace knows; errors name the file.
func LoadTrace(path string) (*Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading trace: %w", err)
	}
	t, err := parseTrace(data)
	if err != nil {
		return nil, fmt.Errorf("loading trace %s: %w", path, err)
	}
	t.Source = path
	return t, nil
}

// ParseTrace reads a trace, telling the format by its first character:
//
//   - an object is SkyPilot's spot-traces format, {"metadata":{"gap_seconds":N},"data":[...]},
//     one instance count per tick of N seconds (other keys, such as "prices", are ignored);
//   - an array is Sailor's format, [{"Time": seconds, "GPUs": n}, ...], n GPUs obtainable from
//     that time on.
func ParseTrace(data []byte) (*Trace, error) {
	t, err := parseTrace(data)
	if err != nil {
		return nil, fmt.Errorf("parsing trace: %w", err)
	}
	return t, nil
}

func parseTrace(data []byte) (*Trace, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: empty file", ErrBadTrace)
	}
	// The parsers get the file as it is (but for a byte-order mark), so that the lines their
	// errors name are the file's.
	body := bytes.TrimPrefix(data, []byte("\ufeff"))
	switch trimmed[0] {
	case '{':
		return parseSkyPilot(body)
	case '[':
		return parseSailor(body)
	}
	return nil, fmt.Errorf("%w: not JSON (expected an object or an array)", ErrBadTrace)
}

func parseSkyPilot(data []byte) (*Trace, error) {
	var doc struct {
		Metadata *struct {
			GapSeconds *float64 `json:"gap_seconds"`
		} `json:"metadata"`
		Data *[]float64 `json:"data"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: skypilot format: %s", ErrBadTrace, jsonError(data, err))
	}
	switch {
	case doc.Metadata == nil || doc.Metadata.GapSeconds == nil:
		return nil, fmt.Errorf("%w: skypilot format: missing metadata.gap_seconds", ErrBadTrace)
	case *doc.Metadata.GapSeconds <= 0:
		return nil, fmt.Errorf("%w: skypilot format: gap_seconds must be positive, got %g", ErrBadTrace, *doc.Metadata.GapSeconds)
	case doc.Data == nil:
		return nil, fmt.Errorf("%w: skypilot format: missing data", ErrBadTrace)
	case len(*doc.Data) == 0:
		return nil, fmt.Errorf("%w: skypilot format: empty data", ErrBadTrace)
	}
	gap := seconds(*doc.Metadata.GapSeconds)
	t := &Trace{Unit: Instances, Gap: gap, Steps: make([]Step, len(*doc.Data))}
	for i, v := range *doc.Data {
		n, err := count(v)
		if err != nil {
			return nil, fmt.Errorf("%w: skypilot format: data[%d]: %v", ErrBadTrace, i, err)
		}
		t.Steps[i] = Step{At: time.Duration(i) * gap, Count: n}
	}
	return t, nil
}

func parseSailor(data []byte) (*Trace, error) {
	var rows []struct {
		Time *float64 `json:"Time"`
		GPUs *float64 `json:"GPUs"`
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, fmt.Errorf("%w: sailor format: %s", ErrBadTrace, jsonError(data, err))
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: sailor format: empty list", ErrBadTrace)
	}
	t := &Trace{Unit: GPUs, Steps: make([]Step, len(rows))}
	for i, r := range rows {
		if r.Time == nil || r.GPUs == nil {
			return nil, fmt.Errorf("%w: sailor format: entry %d lacks Time or GPUs", ErrBadTrace, i)
		}
		if *r.Time < 0 {
			return nil, fmt.Errorf("%w: sailor format: entry %d: negative Time %g", ErrBadTrace, i, *r.Time)
		}
		if i > 0 && *r.Time <= *rows[i-1].Time {
			return nil, fmt.Errorf("%w: sailor format: entry %d: Time %g does not increase (previous %g)",
				ErrBadTrace, i, *r.Time, *rows[i-1].Time)
		}
		n, err := count(*r.GPUs)
		if err != nil {
			return nil, fmt.Errorf("%w: sailor format: entry %d: GPUs: %v", ErrBadTrace, i, err)
		}
		t.Steps[i] = Step{At: seconds(*r.Time), Count: n}
	}
	return t, nil
}

// jsonError is a decoding error with the line and column it happened at, when the decoder
// says where: a trace of a hundred thousand entries is not searched by byte offset.
func jsonError(data []byte, err error) string {
	var offset int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	}
	if offset < 0 || offset > int64(len(data)) {
		return err.Error()
	}
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	return fmt.Sprintf("line %d, column %d: %v", line, max(col, 1), err)
}

// count accepts a JSON number that is a whole, non-negative count.
func count(v float64) (int, error) {
	switch {
	case v < 0:
		return 0, fmt.Errorf("negative count %g", v)
	case v != math.Trunc(v):
		return 0, fmt.Errorf("count %g is not a whole number", v)
	case v > math.MaxInt32:
		return 0, fmt.Errorf("count %g is too large", v)
	}
	return int(v), nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
