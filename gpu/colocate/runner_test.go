package colocate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/colocation"
)

func fakeProgram(g *fakeGPU, args ...string) colocation.Program {
	return colocation.Program{Command: append([]string{g.app}, args...), Env: []string{"LD_LIBRARY_PATH=" + g.dir}}
}

func testRunner(t *testing.T) *Runner {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { devnull.Close() })
	return &Runner{WorkDir: t.TempDir(), Stdout: devnull, StopGrace: 2 * time.Second}
}

func TestRunnerRunsAPairToTheHPSidesEndAndKeepsTheProfiles(t *testing.T) {
	g := newFakeGPU(t)
	r := testRunner(t)
	var progress []colocation.Status
	profiles := filepath.Join(t.TempDir(), "profiles")
	pair := colocation.Pair{
		// HP runs 20 kernels of 50 ms: a second, so the BE program's ten short kernels end
		// before it even when a loaded CI machine is slow to start the BE process (with 15 ms
		// kernels the HP side ended at 320 ms, before the BE side had finished, once in CI).
		HP:         fakeProgram(g, "runtime", "hp_gemm_kernel", "20", "50", "132"),
		BE:         fakeProgram(g, "dlsym", "be_vectorized_elementwise", "10", "0.05", "10"),
		MPS:        colocation.MPSOff,
		ProfileDir: profiles,
	}
	pair.Params = colocation.DefaultParams()
	pair.Params.Window = 20 * time.Millisecond
	res, err := r.Run(context.Background(), pair, func(s colocation.Status) { progress = append(progress, s) })
	require.NoError(t, err)

	require.Zero(t, res.HPExit)
	require.Zero(t, res.BEExit, "BE ended by itself: %v", res.Events)
	require.False(t, res.Evicted)
	require.Equal(t, 132, res.SMs, "the SM count the shim read from the device")
	require.Equal(t, int64(20), res.HPKernels)
	require.Equal(t, int64(10), res.BEKernels)
	require.InDelta(t, 1.0, res.MeanSlowdown, 0.05, "the fake GPU's streams do not contend")
	require.Equal(t, 20.0, res.HPShim["launches"].(map[string]any)["runtime"])
	require.Equal(t, 10.0, res.BEShim["launches"].(map[string]any)["driver_ex"])
	require.NotEmpty(t, progress)
	require.Contains(t, res.Events[len(res.Events)-1], "HP exited with code 0")
	for side, want := range map[string]string{"hp.tsv": "hp_gemm_kernel\t132,1,1", "be.tsv": "be_vectorized_elementwise\t10,1,1"} {
		b, err := os.ReadFile(filepath.Join(profiles, side))
		require.NoError(t, err)
		require.Contains(t, string(b), want)
	}
}

// evictAtOnce is a supervisor that evicts the BE side at its first window.
type evictAtOnce struct{}

func (evictAtOnce) Control() Decision { return Decision{Budget: 100 * us, SMLimit: 66} }
func (evictAtOnce) Step(time.Time, Snapshot) Decision {
	return Decision{Budget: 100 * us, State: colocation.Evicted, Reason: "HP slowdown over the target: BE evicted"}
}

func TestRunnerStopsAnEvictedBESideAndTheHPSideGoesOn(t *testing.T) {
	g := newFakeGPU(t)
	r := testRunner(t)
	r.newSupervisor = func(colocation.Params, int) (stepper, error) { return evictAtOnce{}, nil }
	pair := colocation.Pair{
		HP:  fakeProgram(g, "proc-address", "hp_gemm_kernel", "10", "30", "132"),
		BE:  fakeProgram(g, "runtime", "be_gemm_kernel", "1000", "10", "132"),
		MPS: colocation.MPSOff,
		SMs: 132,
	}
	res, err := r.Run(context.Background(), pair, nil)
	require.NoError(t, err)
	require.True(t, res.Evicted)
	require.Equal(t, "evicted", res.BEState)
	require.Equal(t, 128+15, res.BEExit, "SIGTERM: %v", res.Events)
	require.Zero(t, res.HPExit)
	require.Equal(t, int64(10), res.HPKernels)
	require.Less(t, res.BEKernels, int64(1000))
}

func TestRunnerRefusesABadPairAndMissingMPS(t *testing.T) {
	r := testRunner(t)
	_, err := r.Run(context.Background(), colocation.Pair{BE: colocation.Program{Command: []string{"true"}}}, nil)
	require.ErrorContains(t, err, "hp.command")
	if _, err := os.Stat("/usr/bin/nvidia-cuda-mps-control"); err == nil {
		t.Skip("MPS is installed here")
	}
	_, err = r.Run(context.Background(), colocation.Pair{
		HP: colocation.Program{Command: []string{"true"}}, BE: colocation.Program{Command: []string{"true"}}, MPS: colocation.MPSOn,
	}, nil)
	require.ErrorContains(t, err, "nvidia-cuda-mps-control is not installed")
}

func TestRunnerCutsAPythonBESidesGEMMsUnlessAskedNotTo(t *testing.T) {
	g := newFakeGPU(t)
	for _, whole := range []bool{false, true} {
		r := testRunner(t)
		r.PythonPath = "/opt/schooner/trainer/python"
		seen := filepath.Join(t.TempDir(), "env")
		pair := colocation.Pair{
			HP:         fakeProgram(g, "runtime", "hp_gemm_kernel", "5", "20", "132"),
			BE:         colocation.Program{Command: []string{"/bin/sh", "-c", `echo "$PYTHONPATH|$SCHOONER_COLOCATE_ROLE" > ` + seen}, Env: []string{"PYTHONPATH=/user/lib"}},
			MPS:        colocation.MPSOff,
			WholeGEMMs: whole,
		}
		_, err := r.Run(context.Background(), pair, nil)
		require.NoError(t, err)
		b, err := os.ReadFile(seen)
		require.NoError(t, err)
		want := "/opt/schooner/trainer/python/schooner_colocate/boot:/opt/schooner/trainer/python:/user/lib|be\n"
		if whole {
			want = "/user/lib|be\n"
		}
		require.Equal(t, want, string(b))
	}
}

// Under MPS the BE program runs below the normal client priority unless the pair says
// otherwise, and on a share of the SMs when the pair names one; the HP program always at normal
// on all of them. (A stand-in for nvidia-cuda-mps-control on the
// PATH: no GPU here.)
func TestRunnerRunsTheBESideBelowNormalPriorityUnderMPS(t *testing.T) {
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "nvidia-cuda-mps-control"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, normal := range []bool{false, true} {
		out := t.TempDir()
		side := func(name, sleep string) colocation.Program {
			return colocation.Program{Command: []string{"/bin/sh", "-c",
				`echo "${CUDA_MPS_CLIENT_PRIORITY:-unset} ${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:-all}" > ` +
					filepath.Join(out, name) + "; sleep " + sleep}}
		}
		pair := colocation.Pair{HP: side("hp", "1"), BE: side("be", "30"), MPS: colocation.MPSOn, BENormalPriority: normal}
		if normal {
			pair.BEThreadPercentage = 50
		}
		pair.Params = colocation.DefaultParams()
		res, err := testRunner(t).Run(context.Background(), pair, nil)
		require.NoError(t, err)
		require.True(t, res.MPS)
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(out, name))
			require.NoError(t, err)
			return strings.TrimSpace(string(b))
		}
		require.Equal(t, "unset all", read("hp"))
		if normal {
			require.Equal(t, "unset 50", read("be"), "normal priority, half the SMs")
		} else {
			require.Equal(t, "1 all", read("be"))
		}
	}
}
