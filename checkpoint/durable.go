package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
)

// blockAlign is the alignment of every data write: offsets, lengths and buffer addresses are
// multiples of it, which satisfies O_DIRECT on every common block size (512 B and 4 KiB).
const blockAlign = 4096

// alignUp rounds n up to a multiple of blockAlign.
func alignUp(n int64) int64 { return (n + blockAlign - 1) / blockAlign * blockAlign }

// writeSyncedAt writes b at off in f and makes it durable before returning.
func writeSyncedAt(f *os.File, b []byte, off int64) error {
	if _, err := f.WriteAt(b, off); err != nil {
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return fdatasync(f)
}

// absDir cleans dir for logs and error messages.
func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}
