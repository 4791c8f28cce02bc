/*
 * A fake libcuda.so.1 for testing the launch shim on a machine without a GPU: a kernel
 * "runs" on its stream's timeline for the duration its fake function names, events complete
 * when their stream's timeline passes them, and cuGetProcAddress hands out these functions.
 * Streams do not contend with each other; only the order and timing of launches matter here.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake.h"

typedef int CUresult;

typedef struct {
	int64_t at;
	unsigned flags; /* 2: CU_EVENT_DISABLE_TIMING, which the real driver cannot time */
} fake_event;

static int64_t busy_until[64];
/* Graph capture, as the real driver's global mode has it: a stream capturing records launches
 * instead of running them, and an event query anywhere while a capture is open invalidates it
 * (its end then fails). */
static int capturing[64];
static int captures_open, capture_invalidated;

static int64_t *timeline(void *stream) { return &busy_until[(uintptr_t)stream % 64]; }

/* The microseconds an environment variable gives (0 when unset), read once into *cache. */
static long env_us(const char *name, long *cache)
{
	if (*cache < 0) {
		const char *v = getenv(name);
		*cache = v ? atol(v) : 0;
	}
	return *cache;
}

/* FAKE_LAUNCH_COST_US: the host time a launch takes before its kernel is submitted (default
 * none), as the real driver's 2-5 us on an H100: a start event recorded on an idle stream
 * just before the launch fires that long before the kernel starts. */
static void launch_cost(void)
{
	static long cache = -1;
	long us = env_us("FAKE_LAUNCH_COST_US", &cache);
	for (int64_t until = now_ns() + us * 1000; us > 0 && now_ns() < until;)
		;
}

/* FAKE_START_DELAY_US: how long a kernel submitted to an idle stream waits before it starts
 * (default none), as one does on a real GPU whose SMs another process's kernel still holds. */
static int64_t start_delay_ns(void)
{
	static long cache = -1;
	return env_us("FAKE_START_DELAY_US", &cache) * 1000;
}

static void run_on(void *stream, int64_t dur)
{
	launch_cost();
	int64_t *t = timeline(stream), n = now_ns();
	*t = (*t > n ? *t : n + start_delay_ns()) + dur;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			unsigned smem, void *s, void **p, void **e)
{
	(void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)p, (void)e;
	if (capturing[(uintptr_t)s % 64])
		return 0; /* recorded into the graph */
	run_on(s, fake_fn_of(f)->dur_ns);
	return 0;
}

CUresult cuLaunchKernelEx(const launch_config *c, void *f, void **p, void **e)
{
	(void)p, (void)e;
	run_on(c->stream, fake_fn_of(f)->dur_ns);
	return 0;
}

CUresult cuEventCreate(void **e, unsigned flags)
{
	static fake_event pool[1 << 16];
	static int used;
	if (used == (1 << 16))
		return 2; /* out of memory */
	pool[used].flags = flags;
	*e = &pool[used++];
	return 0;
}

CUresult cuEventRecord(void *e, void *s)
{
	int64_t t = *timeline(s), n = now_ns();
	((fake_event *)e)->at = t > n ? t : n;
	return 0;
}

/* FAKE_QUERY_US: how long each event query takes (default none), as a driver whose answers are
 * slow (under MPS, or a busy host) would. */
static void query_delay(void)
{
	static long cache = -1;
	long us = env_us("FAKE_QUERY_US", &cache);
	if (us > 0) {
		struct timespec d = {us / 1000000, (us % 1000000) * 1000};
		nanosleep(&d, NULL);
	}
}

CUresult cuEventQuery(void *e)
{
	query_delay();
	if (captures_open) {
		capture_invalidated = 1;
		return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
	}
	return now_ns() >= ((fake_event *)e)->at ? 0 : 600;
}

CUresult cuStreamBeginCapture_v2(void *s, int mode)
{
	(void)mode;
	capturing[(uintptr_t)s % 64] = 1;
	captures_open++;
	return 0;
}

CUresult cuStreamEndCapture(void *s, void **graph)
{
	capturing[(uintptr_t)s % 64] = 0;
	captures_open--;
	*graph = (void *)1;
	if (capture_invalidated) {
		capture_invalidated = 0;
		return 901; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
	}
	return 0;
}

CUresult cuStreamIsCapturing(void *s, int *status)
{
	*status = capturing[(uintptr_t)s % 64];
	return 0;
}

CUresult cuEventElapsedTime(float *ms, void *a, void *b)
{
	if ((((fake_event *)a)->flags | ((fake_event *)b)->flags) & 2)
		return 400; /* CUDA_ERROR_INVALID_HANDLE, as for an event created without timing */
	*ms = (float)(((fake_event *)b)->at - ((fake_event *)a)->at) / 1e6f;
	return 0;
}

CUresult cuCtxGetCurrent(void **c)
{
	*c = (void *)1;
	return 0;
}

CUresult cuCtxSetCurrent(void *c)
{
	(void)c;
	return 0;
}

CUresult cuCtxGetDevice(int *d)
{
	*d = 0;
	return 0;
}

CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
	(void)dev;
	*v = attr == 16 ? 132 : 0;
	return 0;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int threads, size_t smem)
{
	(void)f, (void)threads, (void)smem;
	*n = 1;
	return 0;
}

/* A CUkernel is not a CUfunction: refused, as the real driver refuses a handle of another kind. */
CUresult cuFuncGetName(const char **name, void *f)
{
	if (((fake_kernel *)f)->magic == FAKE_KERNEL_MAGIC)
		return 400; /* CUDA_ERROR_INVALID_HANDLE */
	*name = ((fake_fn *)f)->name;
	return 0;
}

/* A fake CUkernel gives its function; a fake cudaKernel_t is the fake function itself
 * (fakecudart hands the stub pointer on). */
CUresult cuKernelGetFunction(void **f, void *kernel)
{
	fake_kernel *k = (fake_kernel *)kernel;
	*f = k->magic == FAKE_KERNEL_MAGIC ? (void *)k->fn : kernel;
	return 0;
}

/* Waits until every stream's timeline has passed. */
CUresult cuCtxSynchronize(void)
{
	int64_t last = 0;
	for (int i = 0; i < 64; i++)
		if (busy_until[i] > last)
			last = busy_until[i];
	while (now_ns() < last) {
		struct timespec nap = {0, 200000};
		nanosleep(&nap, NULL);
	}
	return 0;
}

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, uint64_t flags, int *status)
{
	(void)version, (void)flags;
	static const struct {
		const char *name;
		void *fn;
	} table[] = {{"cuLaunchKernel", (void *)cuLaunchKernel},
		     {"cuLaunchKernelEx", (void *)cuLaunchKernelEx},
		     {"cuEventRecord", (void *)cuEventRecord},
		     {"cuCtxSynchronize", (void *)cuCtxSynchronize},
		     {"cuStreamBeginCapture", (void *)cuStreamBeginCapture_v2},
		     {"cuStreamEndCapture", (void *)cuStreamEndCapture},
		     {"cuGetProcAddress", (void *)cuGetProcAddress_v2}};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		if (strcmp(sym, table[i].name) == 0) {
			*pfn = table[i].fn;
			if (status)
				*status = 0;
			return 0;
		}
	}
	*pfn = NULL;
	return 500; /* CUDA_ERROR_NOT_FOUND */
}
