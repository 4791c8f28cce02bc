/*
 * A program launching fake kernels the ways PyTorch's kernels reach the GPU: "runtime"
 * (__cudaLaunchKernel, as nvcc 13's stubs); "proc-address" (cuLaunchKernel from
 * cuGetProcAddress); "library-kernel" (the same with a CUkernel in place of the CUfunction, as
 * cuBLASLt launches its GEMMs); "dlsym" (cuLaunchKernelEx from dlsym on libcuda's handle, as
 * Triton); "stub" (cudaLaunchKernel with a host stub, then cudaGetLastError as PyTorch's launch
 * check: a non-zero last error fails the program as it fails a PyTorch op); and "capture": one
 * kernel run, then COUNT kernels captured into a graph on another stream while the first still
 * runs, as CUDA-graph warm-up does (exit 3 if the capture was invalidated).
 * Usage: fakeapp WAY KERNEL-NAME COUNT MS GRID. Prints the monotonic time after each launch
 * call returned ("launched NS") and after all have run ("done NS").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake.h"

typedef struct {
	unsigned x, y, z;
} dim3;

int __cudaLaunchKernel(void *k, dim3 g, dim3 b, void **args, size_t smem, void *s);
int cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args, size_t smem, void *s);
int cudaGetLastError(void);

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: fakeapp runtime|stub|proc-address|library-kernel|dlsym|capture KERNEL COUNT MS GRID\n");
		return 2;
	}
	static fake_fn fn;
	static fake_kernel kernel = {FAKE_KERNEL_MAGIC, &fn};
	snprintf(fn.name, sizeof fn.name, "%s", argv[2]);
	int count = atoi(argv[3]);
	fn.dur_ns = (int64_t)(atof(argv[4]) * 1e6);
	unsigned grid = (unsigned)atoi(argv[5]);

	void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
	if (!cuda) {
		fprintf(stderr, "fakeapp: %s\n", dlerror());
		return 1;
	}
	int (*sync)(void) = (int (*)(void))dlsym(cuda, "cuCtxSynchronize");
	int (*getproc)(const char *, void **, int, uint64_t, int *) =
		(int (*)(const char *, void **, int, uint64_t, int *))dlsym(cuda, "cuGetProcAddress_v2");
	int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
		      void **) = NULL;
	int (*launch_ex)(const launch_config *, void *, void **, void **) =
		(int (*)(const launch_config *, void *, void **, void **))dlsym(cuda, "cuLaunchKernelEx");
	if (getproc("cuLaunchKernel", (void **)&launch, 12000, 0, NULL) != 0) {
		fprintf(stderr, "fakeapp: cuGetProcAddress failed\n");
		return 1;
	}
	if (strcmp(argv[1], "capture") == 0) {
		int (*begin)(void *, int) = NULL;
		int (*end)(void *, void **) = NULL;
		if (getproc("cuStreamBeginCapture", (void **)&begin, 12000, 0, NULL) != 0 ||
		    getproc("cuStreamEndCapture", (void **)&end, 12000, 0, NULL) != 0)
			return 1;
		void *side = (void *)5, *graph = NULL;
		launch(&fn, grid, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL); /* runs: its end event is pending */
		begin(side, 0);
		struct timespec nap = {0, 50 * 1000000}; /* a tracker that polls now breaks the capture */
		nanosleep(&nap, NULL);
		for (int i = 0; i < count; i++)
			launch(&fn, grid, 1, 1, 256, 1, 1, 0, side, NULL, NULL);
		nanosleep(&nap, NULL);
		if (end(side, &graph) != 0) {
			fprintf(stderr, "fakeapp: the graph capture was invalidated\n");
			return 3;
		}
		sync();
		printf("done %lld\n", (long long)now_ns());
		return 0;
	}
	/* FAKE_LAUNCH_GAP_US: a pause after each launch (under a second), as a program that computes
	 * between them. */
	const char *g = getenv("FAKE_LAUNCH_GAP_US");
	struct timespec gap = {0, g ? (atol(g) % 1000000) * 1000 : 0};
	for (int i = 0; i < count; i++) {
		int r;
		if (strcmp(argv[1], "runtime") == 0) {
			r = __cudaLaunchKernel(&fn, (dim3){grid, 1, 1}, (dim3){256, 1, 1}, NULL, 0, NULL);
		} else if (strcmp(argv[1], "stub") == 0) {
			r = cudaLaunchKernel(&fn, (dim3){grid, 1, 1}, (dim3){256, 1, 1}, NULL, 0, NULL);
			if (r == 0)
				r = cudaGetLastError();
		} else if (strcmp(argv[1], "proc-address") == 0) {
			r = launch(&fn, grid, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
		} else if (strcmp(argv[1], "library-kernel") == 0) {
			r = launch(&kernel, grid, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
		} else {
			launch_config c = {grid, 1, 1, 256, 1, 1, 0, NULL, NULL, 0};
			r = launch_ex(&c, &fn, NULL, NULL);
		}
		if (r != 0) {
			fprintf(stderr, "fakeapp: launch %d failed: %d\n", i, r);
			return 1;
		}
		printf("launched %lld\n", (long long)now_ns());
		fflush(stdout);
		if (gap.tv_nsec)
			nanosleep(&gap, NULL);
	}
	sync();
	printf("done %lld\n", (long long)now_ns());
	return 0;
}
