/*
 * Kernel profiles, keyed by kernel and launch shape (never by position in the program): the
 * fastest time seen for the kernel (its time alone, as near as the run shows it), the SMs its
 * grid occupies and whether it is compute- or memory-bound. A profile file written by an
 * earlier run (or by hand, from the interference study or Nsight) seeds them by kernel name.
 */
#define _GNU_SOURCE
#include "shim.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_SIZE 16384 /* power of two */
#define LOADED_MAX 16384

static sch_profile table[TABLE_SIZE];
static sch_profile overflow = {.name = "(profile table full)", .bound = SCH_UNKNOWN};
static sch_profile loaded[LOADED_MAX];
static int nloaded;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void sch_profile_lock(void) { pthread_mutex_lock(&mu); }
void sch_profile_unlock(void) { pthread_mutex_unlock(&mu); }

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

static int same_shape(const sch_shape *a, const sch_shape *b)
{
	return a->fn == b->fn && memcmp(a->grid, b->grid, sizeof a->grid) == 0 &&
	       memcmp(a->block, b->block, sizeof a->block) == 0 && a->smem == b->smem;
}

static int same_named_shape(const sch_profile *a, const sch_profile *b)
{
	return strcmp(a->name, b->name) == 0 && memcmp(a->shape.grid, b->shape.grid, sizeof a->shape.grid) == 0 &&
	       memcmp(a->shape.block, b->shape.block, sizeof a->shape.block) == 0 && a->shape.smem == b->shape.smem;
}

/* A kernel's bound guessed from its name, for kernels no profile names: matrix-vector products
 * (one weight read per product: decode's GEMVs), element-wise, reduction, copy and
 * normalisation kernels are memory-bound; GEMM, convolution and attention kernels
 * compute-bound; the rest unknown (they then never run beside busy HP work). A name is a
 * guess: a skinny GEMM kernel is named like any GEMM and is memory-bound all the same, which
 * only a measured profile (the file) tells. */
int sch_bound_from_name(const char *name)
{
	static const char *memory_first[] = {"gemv", NULL};
	static const char *compute[] = {"gemm", "xmma", "cutlass", "wgmma", "nvjet", "conv", "mma_", "flash",
					"attention", "matmul", NULL};
	static const char *memory[] = {"elementwise", "reduce", "copy", "fill", "cat_", "index", "scatter",
				       "gather", "softmax", "norm", "vectorized", "unrolled", NULL};
	for (int i = 0; memory_first[i]; i++)
		if (strcasestr(name, memory_first[i]))
			return SCH_MEMORY;
	for (int i = 0; compute[i]; i++)
		if (strcasestr(name, compute[i]))
			return SCH_COMPUTE;
	for (int i = 0; memory[i]; i++)
		if (strcasestr(name, memory[i]))
			return SCH_MEMORY;
	return SCH_UNKNOWN;
}

/* The function of a runtime host stub, through cudaGetFuncBySymbol, without a trace in the
 * application's error state. A stub this runtime did not register (one of a library that links
 * its own cudart) fails the lookup, and the runtime keeps that failure as the thread's last
 * error: the launch check PyTorch runs after every kernel (cudaGetLastError) then reports
 * "invalid device function" for a launch that succeeded (what we take to have killed a training
 * step under the shim on an H100). So: look up only while no error is pending (one that is belongs to the
 * application and must reach it unchanged), and take back the error a failed lookup leaves. */
static int stub_function(CUfunction *f, const void *fn)
{
	if (!rt_cudaGetFuncBySymbol || !rt_cudaGetLastError || !rt_cudaPeekAtLastError)
		return 0;
	if (rt_cudaPeekAtLastError() != 0)
		return 0;
	if (rt_cudaGetFuncBySymbol(f, fn) == 0)
		return 1;
	rt_cudaGetLastError();
	*f = NULL;
	return 0;
}

/* A driver launch's handle is a CUfunction, or a CUkernel in its place: the launch APIs take
 * either since CUDA 12, and cuBLASLt (we infer) launches its library-managed GEMMs that way. A
 * CUkernel is not a CUfunction to cuFuncGetName or the occupancy query: on an H100 every kernel
 * launched through the driver API (all of cuBLASLt's GEMMs) came through as a nameless "fn@…",
 * so each was taken for a kernel of unknown bound, covering as many SMs as it has blocks, and
 * none ever ran beside HP work. The function of the current context behind a CUkernel answers
 * both. (Driver calls
 * leave no error state behind: only the runtime API keeps a last error.) */
static CUfunction driver_function(void *h)
{
	const char *name = NULL;
	CUfunction f = NULL;
	if (drv_cuFuncGetName && drv_cuFuncGetName(&name, (CUfunction)h) == CUDA_SUCCESS && name)
		return (CUfunction)h;
	if (drv_cuKernelGetFunction && drv_cuKernelGetFunction(&f, h) == CUDA_SUCCESS && f)
		return f;
	return (CUfunction)h;
}

/* The driver function behind a launch: for driver launches the handle's (driver_function); for
 * runtime launches, the function of a cudaKernel_t (what nvcc 13's stubs pass to
 * __cudaLaunchKernel) or of a host stub, whichever the handle is. NULL for graphs and when
 * neither lookup works. */
static CUfunction function_of(const sch_shape *s)
{
	CUfunction f = NULL;
	switch (s->src) {
	case SRC_DRIVER:
	case SRC_DRIVER_EX:
		return driver_function((void *)s->fn);
	case SRC_GRAPH:
		return NULL;
	}
	if (s->kernel_handle && drv_cuKernelGetFunction &&
	    drv_cuKernelGetFunction(&f, (void *)s->fn) == CUDA_SUCCESS)
		return f;
	if (stub_function(&f, s->fn))
		return f;
	if (!s->kernel_handle && drv_cuKernelGetFunction &&
	    drv_cuKernelGetFunction(&f, (void *)s->fn) == CUDA_SUCCESS)
		return f;
	return NULL;
}

static void name_of(const sch_shape *s, CUfunction f, char *out, size_t n)
{
	const char *name = NULL;
	if (s->src == SRC_GRAPH)
		snprintf(out, n, "cuda-graph@%p", s->fn);
	else if (f && drv_cuFuncGetName && drv_cuFuncGetName(&name, f) == CUDA_SUCCESS && name)
		snprintf(out, n, "%s", name);
	else
		snprintf(out, n, "fn@%p", s->fn);
}

/* SMs the grid occupies: its blocks over how many fit on one SM, capped at the device's. */
static int sms_of(const sch_shape *s, CUfunction f, int sm_count)
{
	uint64_t blocks = (uint64_t)s->grid[0] * s->grid[1] * s->grid[2];
	int threads = (int)(s->block[0] * s->block[1] * s->block[2]);
	int per_sm = 1;
	if (s->src == SRC_GRAPH || sm_count <= 0)
		return sm_count > 0 ? sm_count : 1;
	if (f && drv_cuOccupancy && drv_cuOccupancy(&per_sm, f, threads, s->smem) != CUDA_SUCCESS)
		per_sm = 1;
	if (per_sm < 1)
		per_sm = 1;
	uint64_t sms = (blocks + per_sm - 1) / per_sm;
	return sms > (uint64_t)sm_count ? sm_count : (int)sms;
}

/* The profile of a shape, created on first sight; call with the lock held. */
sch_profile *sch_profile_of(const sch_shape *s, int sm_count)
{
	uint64_t h = mix(0, (uint64_t)(uintptr_t)s->fn);
	for (int i = 0; i < 3; i++)
		h = mix(mix(h, s->grid[i]), s->block[i]);
	h = mix(h, s->smem);
	for (uint64_t i = 0; i < TABLE_SIZE; i++) {
		sch_profile *p = &table[(h + i) & (TABLE_SIZE - 1)];
		if (p->used && same_shape(&p->shape, s))
			return p;
		if (p->used)
			continue;
		p->used = 1;
		p->shape = *s;
		CUfunction f = function_of(s);
		name_of(s, f, p->name, sizeof p->name);
		p->sms = sms_of(s, f, sm_count);
		p->bound = sch_bound_from_name(p->name);
		for (int j = 0; j < nloaded; j++) {
			if (same_named_shape(&loaded[j], p)) {
				p->fastest_ns = loaded[j].fastest_ns;
				p->seeded_ns = loaded[j].fastest_ns;
				p->bound = loaded[j].bound;
				if (loaded[j].sms > 0)
					p->sms = loaded[j].sms;
				loaded[j].used = 2; /* matched: saved from the live entry */
				break;
			}
		}
		return p;
	}
	return &overflow;
}

static const char *bound_name(int b)
{
	return b == SCH_COMPUTE ? "compute" : b == SCH_MEMORY ? "memory" : "unknown";
}

static int bound_parse(const char *s)
{
	return strcmp(s, "compute") == 0 ? SCH_COMPUTE : strcmp(s, "memory") == 0 ? SCH_MEMORY : SCH_UNKNOWN;
}

/* The file: one kernel a line, tab-separated: name, grid x,y,z, block x,y,z, shared memory,
 * fastest ns, SMs, bound. Lines starting with # are comments. */
void sch_profiles_load(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno != ENOENT) /* a first run has none yet */
			fprintf(stderr, "schooner-colocate: profiles %s: %s (starting unprofiled)\n", path, strerror(errno));
		return;
	}
	char line[1024];
	while (nloaded < LOADED_MAX && fgets(line, sizeof line, f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		sch_profile p = {0};
		char bound[32] = "";
		long long ns = 0;
		if (sscanf(line, "%159[^\t]\t%u,%u,%u\t%u,%u,%u\t%u\t%lld\t%d\t%31s", p.name, &p.shape.grid[0],
			   &p.shape.grid[1], &p.shape.grid[2], &p.shape.block[0], &p.shape.block[1], &p.shape.block[2],
			   &p.shape.smem, &ns, &p.sms, bound) != 11)
			continue;
		p.fastest_ns = ns;
		p.bound = bound_parse(bound);
		p.used = 1;
		loaded[nloaded++] = p;
	}
	fclose(f);
}

static void write_one(FILE *f, const sch_profile *p)
{
	fprintf(f, "%s\t%u,%u,%u\t%u,%u,%u\t%u\t%lld\t%d\t%s\n", p->name, p->shape.grid[0], p->shape.grid[1],
		p->shape.grid[2], p->shape.block[0], p->shape.block[1], p->shape.block[2], p->shape.smem,
		(long long)p->fastest_ns, p->sms, bound_name(p->bound));
}

void sch_profiles_save(const char *path)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "# schooner colocation kernel profiles: name, grid, block, shared memory, fastest ns, SMs, bound\n");
	sch_profile_lock();
	for (int i = 0; i < TABLE_SIZE; i++)
		if (table[i].used && table[i].fastest_ns > 0 && table[i].shape.src != SRC_GRAPH)
			write_one(f, &table[i]);
	for (int j = 0; j < nloaded; j++)
		if (loaded[j].used == 1)
			write_one(f, &loaded[j]);
	sch_profile_unlock();
	if (fclose(f) == 0)
		rename(tmp, path);
}
