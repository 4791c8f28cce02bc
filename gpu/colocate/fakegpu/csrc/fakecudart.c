/*
 * A fake libcudart.so for testing the launch shim: like the real runtime, it reaches the driver
 * only through entry points it looks up with dlsym on libcuda's handle and cuGetProcAddress,
 * so a launch through it enters the shim at the runtime and again at the driver.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fake.h"

typedef struct {
	unsigned x, y, z;
} dim3;
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
			 void **, void **);
typedef int (*getproc_fn)(const char *, void **, int, uint64_t, int *);

static launch_fn driver_launch;

static int resolve(void)
{
	if (driver_launch)
		return 0;
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	getproc_fn gp = h ? (getproc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!gp || gp("cuLaunchKernel", (void **)&driver_launch, 12000, 0, NULL) != 0)
		return 3;
	return 0;
}

/* Kernels are fake functions: the host stub pointer is the fake CUfunction itself. */
int __cudaLaunchKernel(void *k, dim3 g, dim3 b, void **args, size_t smem, void *s)
{
	if (resolve())
		return 3;
	return driver_launch(k, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)smem, s, args, NULL);
}

int cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args, size_t smem, void *s)
{
	return __cudaLaunchKernel((void *)fn, g, b, args, smem, s);
}

/* The runtime's last error, per thread as in the real one: a failed call sets it, and
 * cudaGetLastError returns and clears it. PyTorch reads it after every launch it makes. */
static __thread int last_error;

enum { invalid_device_function = 98 };

int cudaGetLastError(void)
{
	int e = last_error;
	last_error = 0;
	return e;
}

int cudaPeekAtLastError(void) { return last_error; }

/* A kernel named "foreign..." stands for a stub another runtime registered (a library with a
 * statically linked cudart): this runtime does not know it, fails the lookup with
 * cudaErrorInvalidDeviceFunction and keeps that as the thread's last error, as the real one
 * does. */
int cudaGetFuncBySymbol(void **f, const void *sym)
{
	if (strncmp(((const fake_fn *)sym)->name, "foreign", 7) == 0) {
		last_error = invalid_device_function;
		return invalid_device_function;
	}
	*f = (void *)sym;
	return 0;
}
