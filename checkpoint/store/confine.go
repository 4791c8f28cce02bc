package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultDataDir is the conventional data directory of a schooner node, where file:// stores
// of examples/command-trainer.yaml live.
const DefaultDataDir = "/var/lib/schooner"

// DefaultRoots are the directories a node lets file:// stores use when it is given no list:
// its own data directory (when not empty), DefaultDataDir, and the OS temporary directory
// (scratch space any local user can write to anyway; the demo's stores live there). Anything
// else — /etc, a home directory, /var/lib/<other> — needs an explicit root.
func DefaultRoots(dataDir string) []string {
	var roots []string
	if dataDir != "" {
		roots = append(roots, dataDir)
	}
	return append(roots, DefaultDataDir, os.TempDir())
}

// Confine checks that a file:// store URL names a directory inside one of roots, after
// cleaning the path (so ".." cannot climb out) and resolving symbolic links in the part of the
// path that exists (so a link inside a root cannot point out of it). Roots are resolved the same
// way. s3:// URLs are not paths and always pass; an invalid URL fails as ParseURL says. An empty
// roots allows no file:// store at all.
func Confine(rawURL string, roots []string) error {
	u, err := ParseURL(rawURL)
	if err != nil {
		return err
	}
	if u.Scheme != SchemeFile {
		return nil
	}
	dir, err := resolvePath(u.Dir)
	if err != nil {
		return fmt.Errorf("store URL %q: resolving %s: %w", rawURL, u.Dir, err)
	}
	for _, root := range roots {
		if root == "" || !filepath.IsAbs(root) {
			continue
		}
		r, err := resolvePath(root)
		if err != nil {
			continue
		}
		if within(r, dir) {
			return nil
		}
	}
	return &ConfineError{URL: rawURL, Dir: dir, Roots: roots}
}

// ConfineError is a file:// store outside the allowed roots.
type ConfineError struct {
	URL   string
	Dir   string // the directory it resolves to
	Roots []string
}

func (e *ConfineError) Error() string {
	allowed := "none"
	if len(e.Roots) > 0 {
		allowed = strings.Join(e.Roots, ", ")
	}
	return fmt.Sprintf("store URL %q resolves to %s, outside the directories this node allows for file:// stores (%s)", e.URL, e.Dir, allowed)
}

// ConfinedOpener wraps open (store.Open when nil) so it refuses file:// URLs outside roots
// before opening anything: nothing is created, written or deleted outside them.
func ConfinedOpener(open Opener, roots []string) Opener {
	return func(ctx context.Context, url string) (Store, error) {
		if err := Confine(url, roots); err != nil {
			return nil, err
		}
		if open == nil {
			return Open(ctx, url)
		}
		return open(ctx, url)
	}
}

// within reports whether path is root or below it; both are clean absolute paths.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// resolvePath cleans an absolute path and resolves the symbolic links of its longest existing
// prefix; the part that does not exist yet is appended as is (it holds no links, and ".." was
// cleaned away).
func resolvePath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is not absolute", p)
	}
	p = filepath.Clean(p)
	var rest []string
	for cur := p; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			// It exists but does not resolve: a dangling link, which MkdirAll would follow.
			return "", fmt.Errorf("%s is a symbolic link to nothing", cur)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}
