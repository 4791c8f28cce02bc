/*
 * The launch shim's parts: hooks.c catches every kernel launch (runtime, driver, graphs, and
 * the driver entry points handed out by dlsym and cuGetProcAddress); gate.c profiles each
 * kernel, gates the BE side's launches with the admission rule of ../board.c and keeps the
 * board's books as launches complete; profile.c keeps the kernel profiles.
 */
#ifndef SCHOONER_SHIM_H
#define SCHOONER_SHIM_H

#include "cuda_abi.h"
#include "../board.h"

/* Where a launch came in, for the statistics that show the shim saw every kind. */
enum { SRC_RUNTIME, SRC_RUNTIME_EX, SRC_DRIVER, SRC_DRIVER_EX, SRC_GRAPH, SRC_COUNT };

enum { ROLE_OFF = 0, ROLE_HP = 1, ROLE_BE = 2 };

/* One kernel and launch shape: what profiles are keyed by. */
typedef struct {
	const void *fn; /* CUfunction, host stub, cudaKernel_t or graph exec */
	unsigned grid[3], block[3], smem;
	int src;
	int kernel_handle; /* fn is a cudaKernel_t (__cudaLaunchKernel), not a host stub */
} sch_shape;

typedef struct sch_profile sch_profile;
struct sch_profile {
	sch_shape shape;
	char name[160];
	int64_t fastest_ns; /* 0: not yet measured */
	int64_t seeded_ns;  /* the fastest time a profile file gave (0: none), kept as read */
	int64_t timed_fastest_ns; /* the fastest event-timed run of this process (0: none) */
	int64_t runs;
	int64_t hp_launches; /* HP launches of the shape so far (which of them to time) */
	int sms;   /* SMs the grid occupies, from the occupancy API */
	int bound; /* SCH_COMPUTE, SCH_MEMORY, SCH_UNKNOWN */
	int used;
};

typedef struct sch_ticket sch_ticket;

/* Driver entry points, resolved from libcuda.so.1 (hooks.c). */
extern pfn_cuEventCreate drv_cuEventCreate;
extern pfn_cuEventRecord drv_cuEventRecord;
extern pfn_cuEventQuery drv_cuEventQuery;
extern pfn_cuEventElapsedTime drv_cuEventElapsedTime;
extern pfn_cuCtxGetCurrent drv_cuCtxGetCurrent;
extern pfn_cuCtxSetCurrent drv_cuCtxSetCurrent;
extern pfn_cuCtxGetDevice drv_cuCtxGetDevice;
extern pfn_cuDeviceGetAttribute drv_cuDeviceGetAttribute;
extern pfn_cuOccupancy drv_cuOccupancy;
extern pfn_cuFuncGetName drv_cuFuncGetName;
extern pfn_cuKernelGetFunction drv_cuKernelGetFunction;
extern pfn_cuStreamIsCapturing drv_cuStreamIsCapturing;
extern pfn_cudaGetFuncBySymbol rt_cudaGetFuncBySymbol;
extern pfn_cudaLastError rt_cudaGetLastError, rt_cudaPeekAtLastError;
int sch_resolve_driver(void);

/* gate.c */
int sch_role(void);
sch_ticket *sch_before(const sch_shape *shape, CUstream stream);
void sch_after(sch_ticket *t, int launched, CUstream stream);
void sch_count_lookup(int via_proc_address);
void sch_capture_begin(void);
void sch_capture_end(void);

/* profile.c */
sch_profile *sch_profile_of(const sch_shape *shape, int sm_count);
void sch_profiles_load(const char *path);
void sch_profiles_save(const char *path);
int sch_bound_from_name(const char *name);
void sch_profile_lock(void);
void sch_profile_unlock(void);

#endif
