package store

import (
	"fmt"
	"strings"
)

// validKey rejects keys that would escape a store's prefix or map to no file: the Dir store
// turns keys into paths, so the same rules apply to every store and a key that works against
// the Fake works everywhere.
func validKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty object key")
	}
	if strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return fmt.Errorf("object key %q must not start or end with a slash", key)
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("object key %q has an empty path segment", key)
		case seg == "." || seg == "..":
			return fmt.Errorf("object key %q has a %q segment", key, seg)
		case strings.HasPrefix(seg, tempPrefix):
			return fmt.Errorf("object key %q has a segment starting with %q, which is reserved", key, tempPrefix)
		case strings.ContainsAny(seg, "\\\x00"):
			return fmt.Errorf("object key %q contains a backslash or NUL", key)
		}
	}
	return nil
}

// cleanPrefix turns a user-given prefix ("job-7", "/job-7/") into the form keys are appended
// to ("job-7/"), or "" for none.
func cleanPrefix(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return ""
	}
	return p + "/"
}
