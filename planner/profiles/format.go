package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/schooner-ml/schooner/internal/atomicfile"
	"github.com/schooner-ml/schooner/internal/jsonerr"
	"github.com/schooner-ml/schooner/planner"
)

// Format names written into (and required of) schooner's profile files.
const (
	ModelFormat   = "schooner.model-profile/v1"
	NetworkFormat = "schooner.network-profile/v1"
)

// ModelFile is the content of a model profile file: a planner.ModelProfile (its fields
// inline), the format name, and the architecture when it is known, so that compute for GPU
// types the file does not cover can be derived.
type ModelFile struct {
	Format       string                `json:"format"`
	Architecture *planner.Architecture `json:"architecture,omitempty"`
	planner.ModelProfile
}

// NetworkFile is the content of a network profile file: a planner.Network, fields inline.
type NetworkFile struct {
	Format string `json:"format"`
	planner.Network
}

// ReadModel reads a model profile file.
func ReadModel(path string) (*planner.ModelProfile, error) {
	f, err := ReadModelFile(path)
	if err != nil {
		return nil, err
	}
	return &f.ModelProfile, nil
}

// ReadModelFile reads a model profile file with its architecture, and checks it: layer
// counts that agree between memory and every compute table, no negative or missing values,
// known GPU types, compute only for TP degrees that have memory.
func ReadModelFile(path string) (*ModelFile, error) {
	var f ModelFile
	if err := decodeFile(path, &f); err != nil {
		return nil, err
	}
	if f.Format != ModelFormat {
		return nil, fileErrorf(path, "format is %q, want %q", f.Format, ModelFormat)
	}
	if f.Architecture != nil {
		if err := f.Architecture.Validate(); err != nil {
			return nil, &FileError{Path: path, Err: err}
		}
	}
	if err := checkModel(&f.ModelProfile); err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	if f.Architecture != nil && f.Architecture.NumLayers() != f.NumLayers() {
		return nil, fileErrorf(path, "architecture has %d layers, mem has %d", f.Architecture.NumLayers(), f.NumLayers())
	}
	return &f, nil
}

// WriteModel writes m as a model profile file, without an architecture.
func WriteModel(path string, m *planner.ModelProfile) error {
	if m == nil {
		return errors.New("writing model profile, nil profile")
	}
	return WriteModelFile(path, &ModelFile{ModelProfile: *m})
}

// WriteModelFile writes f (its Format is set to ModelFormat) after checking it, replacing
// path atomically.
func WriteModelFile(path string, f *ModelFile) error {
	if f == nil {
		return errors.New("writing model profile, nil file")
	}
	if err := checkModel(&f.ModelProfile); err != nil {
		return fmt.Errorf("writing model profile %s, %w", path, err)
	}
	out := *f
	out.Format = ModelFormat
	return writeJSON(path, &out)
}

// ReadNetwork reads a network profile file and checks it.
func ReadNetwork(path string) (*planner.Network, error) {
	var f NetworkFile
	if err := decodeFile(path, &f); err != nil {
		return nil, err
	}
	if f.Format != NetworkFormat {
		return nil, fileErrorf(path, "format is %q, want %q", f.Format, NetworkFormat)
	}
	if err := checkNetwork(&f.Network); err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	return &f.Network, nil
}

// WriteNetwork writes n as a network profile file after checking it, replacing path
// atomically.
func WriteNetwork(path string, n *planner.Network) error {
	if n == nil {
		return errors.New("writing network profile, nil network")
	}
	if err := checkNetwork(n); err != nil {
		return fmt.Errorf("writing network profile %s, %w", path, err)
	}
	return writeJSON(path, &NetworkFile{Format: NetworkFormat, Network: *n})
}

// decodeFile parses path's JSON into v, refusing unknown fields and trailing data.
func decodeFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading profile, %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &FileError{Path: path, Err: jsonerr.Describe(data, err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fileErrorf(path, "unexpected data after the JSON value")
	}
	return nil
}

// writeJSON writes v indented to a temporary file beside path and renames it into place, so
// a reader never sees half a profile.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s, %w", path, err)
	}
	data = append(data, '\n')
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
