package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// writeCases writes every measured configuration as a case of bench/planaccuracy (a plan and
// what it measured), so measured plans of any origin are scored by one harness.
func writeCases(ms []measurement, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range ms {
		m := &ms[i]
		if m.IterSeconds == nil {
			continue
		}
		p, err := planOf(m, m.Name)
		if err != nil {
			return fmt.Errorf("line %d: %w", m.line, err)
		}
		plan, err := json.Marshal(p)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%02d-%s", i+1, m.config())
		c := map[string]any{
			"name":     name,
			"source":   fmt.Sprintf("schooner_train.train on %s (%s, torch %s), measured line %d", m.GPU, m.GPUType, m.Torch, m.line),
			"plan":     json.RawMessage(plan),
			"measured": map[string]any{"iter_seconds": *m.IterSeconds, "peak_mem_bytes": m.PeakMem},
		}
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, safeFileName(name)+".json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func safeFileName(s string) string {
	out := []rune(s)
	for i, r := range out {
		if !(r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')) {
			out[i] = '_'
		}
	}
	return string(out)
}
