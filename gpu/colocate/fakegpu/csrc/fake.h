/*
 * What the fake CUDA libraries and the fake program share: the fake function a CUfunction
 * points to, the launch configuration of cuLaunchKernelEx and the clock.
 */
#ifndef SCHOONER_FAKEGPU_FAKE_H
#define SCHOONER_FAKEGPU_FAKE_H

#include <stdint.h>
#include <time.h>

/* What a fake CUfunction points to (the app builds them): the kernel's name and how long it
 * runs. */
typedef struct {
	char name[64];
	int64_t dur_ns;
} fake_fn;

/* What a fake CUkernel points to: a library-managed kernel (CUDA 12's cuLibraryGetKernel), which
 * the launch APIs take in place of a CUfunction, as cuBLASLt passes its GEMMs. The fake driver
 * knows it by the magic: cuFuncGetName refuses it, cuKernelGetFunction gives the function. */
#define FAKE_KERNEL_MAGIC 0x6b65726eu
typedef struct {
	uint32_t magic;
	fake_fn *fn;
} fake_kernel;

/* The fake function behind a launch handle, a CUfunction or a CUkernel. */
static inline fake_fn *fake_fn_of(void *h)
{
	fake_kernel *k = (fake_kernel *)h;
	return k->magic == FAKE_KERNEL_MAGIC ? k->fn : (fake_fn *)h;
}

/* CUlaunchConfig, as far as the fakes read it. */
typedef struct {
	unsigned gx, gy, gz, bx, by, bz, smem;
	void *stream;
	void *attrs;
	unsigned n;
} launch_config;

/* now_ns is the monotonic clock in nanoseconds. */
static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
