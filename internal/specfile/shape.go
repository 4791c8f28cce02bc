package specfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// MaxBytes is the largest spec file read at all.
const MaxBytes = 1 << 20

// checkShape rejects what a YAML-to-JSON conversion would silently drop or merge: a second
// document (`---`), and a key given twice in one mapping (the last one would win). JSON is
// read by the same parser, since JSON is YAML.
func checkShape(data []byte) error {
	if len(data) > MaxBytes {
		return fmt.Errorf("the spec is %d bytes, more than the %d a spec may have", len(data), MaxBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the spec is empty")
		}
		return err
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if !emptyDocument(&next) {
			return fmt.Errorf("line %d: a second document: a spec file holds one spec", next.Line)
		}
	}
	return duplicateKeys(&doc, "")
}

// duplicateKeys walks the document and names the first key given twice in one mapping.
func duplicateKeys(n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			p := path
			if n.Kind == yaml.SequenceNode {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			if err := duplicateKeys(c, p); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			field := k.Value
			if path != "" {
				field = path + "." + k.Value
			}
			if line, ok := seen[k.Value]; ok {
				return fmt.Errorf("line %d: %s is given twice (first on line %d)", k.Line, field, line)
			}
			seen[k.Value] = k.Line
			if err := duplicateKeys(v, field); err != nil {
				return err
			}
		}
	}
	return nil
}

// emptyDocument is a document with nothing in it, as a trailing `---` makes.
func emptyDocument(n *yaml.Node) bool {
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode || c.Value != "" {
			return false
		}
	}
	return true
}
