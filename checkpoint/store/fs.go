package store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// tempPrefix starts the names of files a Dir store is still writing; List skips them and keys
// may not use it.
const tempPrefix = ".schooner-tmp-"

// Dir is a Store in a local directory or a shared file system (NFS, a persistent disk): keys
// are relative paths. A Put is atomic and durable: temp file, fsync, rename, fsync of the
// directory.
type Dir struct {
	root string
}

// NewDir makes (if needed) and opens a directory store.
func NewDir(root string) (*Dir, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("directory store path %q must be absolute", root)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating directory store: %w", err)
	}
	return &Dir{root: filepath.Clean(root)}, nil
}

// String is the store's file:// URL.
func (d *Dir) String() string { return "file://" + filepath.ToSlash(d.root) }

// path is the file that holds key.
func (d *Dir) path(key string) string { return filepath.Join(d.root, filepath.FromSlash(key)) }

// Put copies the object into a temp file while computing its CRC-32C, and makes it visible
// under key only when the checksum matches and the bytes are on disk.
func (d *Dir) Put(ctx context.Context, key string, r io.ReaderAt, size int64, crc uint32) (err error) {
	if err := validKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dst := d.path(key)
	dir := filepath.Dir(dst)
	f, err := createTemp(dir, tempPrefix+filepath.Base(dst)+"-")
	if err != nil {
		return fmt.Errorf("putting %s in %s: %w", key, d, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	h := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(f, h), io.NewSectionReader(r, 0, size))
	if err != nil {
		return fmt.Errorf("writing %s in %s: %w", key, d, err)
	}
	if n != size {
		return fmt.Errorf("writing %s in %s: data ends after %d of %d bytes", key, d, n, size)
	}
	if got := h.Sum32(); got != crc {
		return mismatch("object "+key, got, crc)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s in %s: %w", key, d, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s in %s: %w", key, d, err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return fmt.Errorf("renaming %s into place in %s: %w", key, d, err)
	}
	return SyncDir(dir)
}

// createTemp makes dir and a temp file in it. A concurrent Delete may remove the directory
// once it is empty, between the two steps; one more try then succeeds.
func createTemp(dir, pattern string) (*os.File, error) {
	var err error
	for range 2 {
		if err = os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		var f *os.File
		if f, err = os.CreateTemp(dir, pattern); err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, err
}

// SyncDir makes the creation, renaming or removal of files in dir durable, so what was done
// before a crash is still there after it.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening directory %s to sync it: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// Get opens the object's file; a missing key wraps ErrNotFound.
func (d *Dir) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := validKey(key); err != nil {
		return nil, err
	}
	f, err := os.Open(d.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("getting %s from %s: %w", key, d, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("getting %s from %s: %w", key, d, err)
	}
	return f, nil
}

// List walks the directory and returns the files whose keys start with prefix, skipping files
// still being written.
func (d *Dir) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var infos []ObjectInfo
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // deleted while walking
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(e.Name(), tempPrefix) {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if e.IsDir() {
			// Skip subtrees that cannot hold a matching key.
			if key != "." && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		infos = append(infos, ObjectInfo{Key: key, Size: fi.Size(), Modified: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s*: %w", prefix, err)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	return infos, nil
}

// Delete removes the keys' files and then any directories the removal left empty.
func (d *Dir) Delete(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if err := validKey(k); err != nil {
			return err
		}
	}
	dirs := map[string]bool{}
	for _, k := range keys {
		if err := os.Remove(d.path(k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("deleting %s from %s: %w", k, d, err)
		}
		for dir := filepath.Dir(d.path(k)); dir != d.root && strings.HasPrefix(dir, d.root); dir = filepath.Dir(dir) {
			dirs[dir] = true
		}
	}
	// Deepest first, so a parent is tried after its children; a directory that is not empty
	// (or is being written to) simply stays.
	ordered := make([]string, 0, len(dirs))
	for dir := range dirs {
		ordered = append(ordered, dir)
	}
	sort.Slice(ordered, func(i, j int) bool { return len(ordered[i]) > len(ordered[j]) })
	for _, dir := range ordered {
		_ = os.Remove(dir)
	}
	return nil
}

// Sweep removes temp files of puts that were not written to for olderThan: a Put writes its
// temp file continuously until it renames it, so an older one belongs to a process that died.
func (d *Dir) Sweep(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	n := 0
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() || !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), tempPrefix) {
			return nil
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			return nil
		}
		if err := os.Remove(p); err == nil {
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("sweeping temp files in %s: %w", d, err)
	}
	return n, nil
}
