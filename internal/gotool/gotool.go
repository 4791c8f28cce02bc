// Package gotool finds the Go commands that tests and benchmarks run (versitygw, the
// temporal CLI) or builds them once per machine, so nothing has to be installed by hand.
//
// Binary looks on PATH, then in $(go env GOPATH)/bin, and otherwise builds the pinned release
// with `go install <package>@<version>` into os.UserCacheDir()/schooner/tools/<name>-<version>
// (~/.cache/... on Linux). A file lock there makes the test binaries that `go test ./...` runs
// side by side build it once. The first build needs the Go module proxy (or a module cache
// that holds the tool and its dependencies); later runs reuse the binary. A tool that can be
// neither found nor built is an error for the caller to fail on, never a reason to skip.
package gotool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// Tool is a Go command pinned to a release.
type Tool struct {
	Name    string // the binary's name, e.g. "versitygw"
	Package string // its main package's import path
	Version string // the release to build, e.g. "v1.8.0"
}

// InstallHint says what to do when the tool can be neither found nor built.
func (t Tool) InstallHint() string {
	return fmt.Sprintf("install %s %s yourself with `go install %s@%s` (it needs the Go module proxy, or GOPROXY=off with a module cache that holds it) and put it on PATH",
		t.Name, t.Version, t.Package, t.Version)
}

// CacheDir is where Binary builds the tool when none is installed.
func (t Tool) CacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "schooner", "tools", t.Name+"-"+t.Version)
}

type found struct {
	path string
	err  error
}

var (
	mu     sync.Mutex
	cached = map[Tool]*found{}
)

// Binary is the path of the tool to run: the one on PATH, else the one in
// $(go env GOPATH)/bin, else the copy built into CacheDir (building it the first time). A
// copy already installed is used whatever its version. The answer is kept for the process.
func (t Tool) Binary() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if f, ok := cached[t]; ok {
		return f.path, f.err
	}
	p, err := t.find()
	cached[t] = &found{p, err}
	return p, err
}

func (t Tool) find() (string, error) {
	if p, err := exec.LookPath(t.Name); err == nil {
		return p, nil
	}
	for _, dir := range filepath.SplitList(gopath()) {
		if p := filepath.Join(dir, "bin", t.Name); isFile(p) {
			return p, nil
		}
	}
	return t.build()
}

// gopath is $GOPATH, else what `go env GOPATH` says, else ~/go.
func gopath() string {
	if p := os.Getenv("GOPATH"); p != "" {
		return p
	}
	if gobin, err := goCommand(); err == nil {
		if out, err := exec.Command(gobin, "env", "GOPATH").Output(); err == nil {
			if p := string(bytes.TrimSpace(out)); p != "" {
				return p
			}
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, "go")
	}
	return ""
}

// build installs the tool into CacheDir unless it is there already; a lock file beside the
// directory keeps concurrent test binaries from building it twice.
func (t Tool) build() (string, error) {
	dir := t.CacheDir()
	bin := filepath.Join(dir, t.Name)
	if isFile(bin) {
		return bin, nil
	}
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%s is not on PATH nor in $(go env GOPATH)/bin, and building it into %s failed (%s): %s",
			t.Name, dir, fmt.Sprintf(format, args...), t.InstallHint())
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fail("%v", err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return fail("locking %s.lock: %v", dir, err)
	}
	defer unlock()
	if isFile(bin) { // another test binary built it while this one waited for the lock
		return bin, nil
	}
	gobin, err := goCommand()
	if err != nil {
		return fail("%v", err)
	}
	// Install into a scratch directory and rename it into place, so an interrupted build
	// never leaves a partial binary where the next run would take it.
	partial := dir + ".partial"
	if err := os.RemoveAll(partial); err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(partial)
	fmt.Fprintf(os.Stderr, "gotool: building %s %s into %s (once per machine; PATH has none)\n", t.Name, t.Version, dir)
	cmd := exec.Command(gobin, "install", t.Package+"@"+t.Version)
	cmd.Dir = os.TempDir() // outside any module: pkg@version builds with the tool's own go.mod
	cmd.Env = append(os.Environ(), "GOBIN="+partial, "GOWORK=off",
		"GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		_, err = fail("go install %s@%s: %v", t.Package, t.Version, err)
		return "", fmt.Errorf("%w\ngo install said:\n%s", err, bytes.TrimSpace(out))
	}
	if err := os.RemoveAll(dir); err != nil { // a directory without the binary in it
		return fail("%v", err)
	}
	if err := os.Rename(partial, dir); err != nil {
		return fail("%v", err)
	}
	if !isFile(bin) {
		return fail("go install did not write %s", bin)
	}
	return bin, nil
}

// goCommand is the go command: the one on PATH, as `go test` is usually run, else $GOROOT/bin/go.
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); isFile(p) {
			return p, nil
		}
	}
	return "", errors.New("the go command is not on PATH and GOROOT is not set")
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
