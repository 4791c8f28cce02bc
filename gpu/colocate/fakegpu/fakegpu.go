// Package fakegpu builds a fake CUDA for testing the colocation runtime where there is no GPU:
// a libcuda.so.1 whose kernels "run" on per-stream timelines for the time their fake function
// names, a libcudart.so that reaches the driver only through looked-up entry points (as the
// real runtime does), and a program that launches fake kernels the three ways PyTorch's reach
// the GPU. Nothing here touches a GPU; a test that uses it says so.
package fakegpu

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

//go:embed csrc/*.c csrc/*.h
var sources embed.FS

// GPU is a built fake: Dir holds libcuda.so.1 and libcudart.so (put it on LD_LIBRARY_PATH);
// App is the launching program.
type GPU struct {
	Dir string
	App string
}

// Build compiles the fake into dir with the C compiler ($CC, else cc).
func Build(ctx context.Context, dir string) (GPU, error) {
	src, err := fs.Sub(sources, "csrc")
	if err != nil {
		return GPU{}, err
	}
	if err := os.CopyFS(dir, src); err != nil {
		return GPU{}, fmt.Errorf("fake GPU: %w", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	for _, args := range [][]string{
		{"-shared", "-fPIC", "-o", "libcuda.so.1", "fakecuda.c"},
		{"-shared", "-fPIC", "-o", "libcudart.so", "fakecudart.c", "-ldl"},
		{"-o", "fakeapp", "fakeapp.c", "-L.", "-lcudart", "-ldl", "-Wl,-rpath," + dir},
	} {
		cmd := exec.CommandContext(ctx, cc, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return GPU{}, fmt.Errorf("fake GPU: %s %v: %w\n%s", cc, args, err, out)
		}
	}
	return GPU{Dir: dir, App: filepath.Join(dir, "fakeapp")}, nil
}

// Way is how the fake program launches: "runtime" (__cudaLaunchKernel, as nvcc 13's stubs),
// "proc-address" (cuLaunchKernel from cuGetProcAddress), "library-kernel" (the same with a
// CUkernel in place of the CUfunction, as cuBLASLt launches its GEMMs), "dlsym"
// (cuLaunchKernelEx from dlsym on libcuda's handle, as Triton), or "capture" (one kernel run,
// then the rest captured into a graph while it runs; exit 3 if the capture was invalidated).
type Way string

// The ways.
const (
	Runtime       Way = "runtime"
	ProcAddress   Way = "proc-address"
	LibraryKernel Way = "library-kernel"
	Dlsym         Way = "dlsym"
	Capture       Way = "capture"
)

// Command is the fake program's command line: count launches of a kernel named kernel that
// runs ms milliseconds on a grid of grid blocks. It prints "launched NS" after each launch and
// "done NS" once all have run (monotonic nanoseconds).
func (g GPU) Command(way Way, kernel string, count int, ms float64, grid int) []string {
	return []string{g.App, string(way), kernel, strconv.Itoa(count), strconv.FormatFloat(ms, 'f', -1, 64), strconv.Itoa(grid)}
}

// Env is what the fake program needs in its environment.
func (g GPU) Env() []string { return []string{"LD_LIBRARY_PATH=" + g.Dir} }
