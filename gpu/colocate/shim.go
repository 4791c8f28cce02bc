package colocate

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed board.c board.h shim/*.c shim/*.h
var shimSources embed.FS

// shimFiles are the C files of the launch shim, in compile order, under their embedded paths.
var shimFiles = []string{"shim/hooks.c", "shim/gate.c", "shim/profile.c", "board.c"}

// BuildShim compiles the launch shim (an LD_PRELOAD library) into dir with the C compiler the
// node has ($CC, else cc; nvcc's host compiler is one) and returns its path. The library is
// named by a hash of its sources, so a node builds it once per schooner version.
func BuildShim(ctx context.Context, dir string) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(shimSources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := shimSources.ReadFile(p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	lib := filepath.Join(dir, "libschooner-colocate-"+sum+".so")
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	}
	src, err := os.MkdirTemp(dir, "shim-src-")
	if err != nil {
		return "", fmt.Errorf("launch shim: %w", err)
	}
	defer os.RemoveAll(src)
	if err := os.CopyFS(src, shimSources); err != nil {
		return "", fmt.Errorf("launch shim: writing sources: %w", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	tmp := lib + ".tmp"
	args := []string{"-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-o", tmp}
	args = append(args, shimFiles...)
	args = append(args, "-ldl", "-lpthread")
	cmd := exec.CommandContext(ctx, cc, args...)
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("launch shim: %s %s: %w\n%s", cc, strings.Join(args, " "), err, out)
	}
	return lib, os.Rename(tmp, lib)
}
