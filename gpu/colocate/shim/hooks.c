/*
 * The launch shim's entry points (LD_PRELOAD), and the graph-capture ones it must know about: every way a PyTorch 2.11 process launches a
 * kernel passes here. libtorch_cuda calls the runtime's __cudaLaunchKernel and
 * cudaLaunchKernelExC; cuBLASLt, cuDNN and a statically linked runtime reach the driver through
 * entry points they look up with cuGetProcAddress; Triton's launcher looks cuLaunchKernelEx up
 * with dlsym on libcuda's handle, which no symbol interposition would catch. So the shim wraps
 * the runtime entries by name, the driver entries by name, and hands out its wrappers wherever
 * dlsym or cuGetProcAddress hands out a launch entry point. A thread-local flag keeps a launch
 * that enters through the runtime from being gated again when the runtime calls the driver.
 */
#define _GNU_SOURCE
#include "shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

pfn_cuEventCreate drv_cuEventCreate;
pfn_cuEventRecord drv_cuEventRecord;
pfn_cuEventQuery drv_cuEventQuery;
pfn_cuEventElapsedTime drv_cuEventElapsedTime;
pfn_cuCtxGetCurrent drv_cuCtxGetCurrent;
pfn_cuCtxSetCurrent drv_cuCtxSetCurrent;
pfn_cuCtxGetDevice drv_cuCtxGetDevice;
pfn_cuDeviceGetAttribute drv_cuDeviceGetAttribute;
pfn_cuOccupancy drv_cuOccupancy;
pfn_cuFuncGetName drv_cuFuncGetName;
pfn_cuKernelGetFunction drv_cuKernelGetFunction;
pfn_cuStreamIsCapturing drv_cuStreamIsCapturing;
pfn_cudaGetFuncBySymbol rt_cudaGetFuncBySymbol;
pfn_cudaLastError rt_cudaGetLastError, rt_cudaPeekAtLastError;

static void *(*real_dlsym)(void *, const char *);
static void *libcuda;
static pthread_once_t dlsym_once = PTHREAD_ONCE_INIT;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static __thread int inside;

/* The shim is built with hidden visibility; only the hooks are exported. */
#define EXPORT __attribute__((visibility("default")))

/* The real launch entry points, one per flavour (the _ptsz ones use the per-thread default
 * stream); filled by whichever lookup saw them first. */
static pfn_cuLaunchKernel real_cuLaunchKernel, real_cuLaunchKernel_ptsz;
static pfn_cuLaunchKernelEx real_cuLaunchKernelEx, real_cuLaunchKernelEx_ptsz;
static pfn_cuGraphLaunch real_cuGraphLaunch, real_cuGraphLaunch_ptsz;
static pfn_cuStreamBeginCapture real_cuStreamBeginCapture, real_cuStreamBeginCapture_ptsz;
static pfn_cuStreamEndCapture real_cuStreamEndCapture, real_cuStreamEndCapture_ptsz;
static pfn_cudaStreamBeginCapture real_cudaStreamBeginCapture;
static pfn_cudaStreamEndCapture real_cudaStreamEndCapture;
static pfn_cuGetProcAddress_v2 real_cuGetProcAddress_v2;
static pfn_cuGetProcAddress real_cuGetProcAddress;
static pfn_cudaLaunchKernel real_cudaLaunchKernel, real_cudaLaunchKernel_ptsz, real___cudaLaunchKernel;
static pfn_cudaLaunchKernelExC real_cudaLaunchKernelExC;
static pfn_cudaGraphLaunch real_cudaGraphLaunch;

static void find_real_dlsym(void)
{
	real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!real_dlsym)
		real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

static void *raw_dlsym(void *h, const char *sym)
{
	pthread_once(&dlsym_once, find_real_dlsym);
	return real_dlsym ? real_dlsym(h, sym) : NULL;
}

static void *driver_sym(const char *sym)
{
	return libcuda ? raw_dlsym(libcuda, sym) : NULL;
}

static void open_driver(void)
{
	libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!libcuda)
		return;
	drv_cuEventCreate = (pfn_cuEventCreate)driver_sym("cuEventCreate");
	drv_cuEventRecord = (pfn_cuEventRecord)driver_sym("cuEventRecord");
	drv_cuEventQuery = (pfn_cuEventQuery)driver_sym("cuEventQuery");
	drv_cuEventElapsedTime = (pfn_cuEventElapsedTime)driver_sym("cuEventElapsedTime_v2");
	if (!drv_cuEventElapsedTime)
		drv_cuEventElapsedTime = (pfn_cuEventElapsedTime)driver_sym("cuEventElapsedTime");
	drv_cuCtxGetCurrent = (pfn_cuCtxGetCurrent)driver_sym("cuCtxGetCurrent");
	drv_cuCtxSetCurrent = (pfn_cuCtxSetCurrent)driver_sym("cuCtxSetCurrent");
	drv_cuCtxGetDevice = (pfn_cuCtxGetDevice)driver_sym("cuCtxGetDevice");
	drv_cuDeviceGetAttribute = (pfn_cuDeviceGetAttribute)driver_sym("cuDeviceGetAttribute");
	drv_cuOccupancy = (pfn_cuOccupancy)driver_sym("cuOccupancyMaxActiveBlocksPerMultiprocessor");
	drv_cuFuncGetName = (pfn_cuFuncGetName)driver_sym("cuFuncGetName");
	drv_cuKernelGetFunction = (pfn_cuKernelGetFunction)driver_sym("cuKernelGetFunction");
	drv_cuStreamIsCapturing = (pfn_cuStreamIsCapturing)driver_sym("cuStreamIsCapturing");
	if (!drv_cuEventCreate || !drv_cuEventRecord || !drv_cuEventQuery || !drv_cuEventElapsedTime)
		fprintf(stderr, "schooner-colocate: libcuda.so.1 lacks the event API: launches pass ungated\n");
}

int sch_resolve_driver(void)
{
	pthread_once(&driver_once, open_driver);
	return libcuda != NULL;
}

static void resolve_runtime_helpers(void)
{
	if (!rt_cudaGetFuncBySymbol)
		rt_cudaGetFuncBySymbol = (pfn_cudaGetFuncBySymbol)raw_dlsym(RTLD_DEFAULT, "cudaGetFuncBySymbol");
	if (!rt_cudaGetLastError)
		rt_cudaGetLastError = (pfn_cudaLastError)raw_dlsym(RTLD_DEFAULT, "cudaGetLastError");
	if (!rt_cudaPeekAtLastError)
		rt_cudaPeekAtLastError = (pfn_cudaLastError)raw_dlsym(RTLD_DEFAULT, "cudaPeekAtLastError");
}

/* One gated launch: profile, gate (BE), start event, the real call, end event. */
#define GATED(SRC, FN, GX, GY, GZ, BX, BY, BZ, SMEM, STREAM, CALL)                                        \
	GATED_K(SRC, 0, FN, GX, GY, GZ, BX, BY, BZ, SMEM, STREAM, CALL)

#define GATED_K(SRC, KH, FN, GX, GY, GZ, BX, BY, BZ, SMEM, STREAM, CALL)                                  \
	do {                                                                                               \
		if (inside)                                                                                \
			return CALL;                                                                       \
		inside = 1;                                                                                \
		sch_resolve_driver();                                                                      \
		if ((SRC) == SRC_RUNTIME || (SRC) == SRC_RUNTIME_EX)                                       \
			resolve_runtime_helpers();                                                         \
		sch_shape shape = {.fn = (FN), .grid = {(GX), (GY), (GZ)}, .block = {(BX), (BY), (BZ)},   \
				   .smem = (unsigned)(SMEM), .src = (SRC), .kernel_handle = (KH)};        \
		sch_ticket *t = drv_cuEventRecord ? sch_before(&shape, (CUstream)(STREAM)) : NULL;        \
		__typeof__(CALL) r = CALL;                                                                 \
		sch_after(t, r == 0, (CUstream)(STREAM));                                                  \
		inside = 0;                                                                                \
		return r;                                                                                  \
	} while (0)

#define REAL(SLOT, NAME, GET)                                                                              \
	do {                                                                                               \
		if (!(SLOT))                                                                               \
			SLOT = (__typeof__(SLOT))(GET);                                                    \
		if (!(SLOT)) {                                                                             \
			fprintf(stderr, "schooner-colocate: %s not found\n", NAME);                        \
			return 999; /* cudaErrorUnknown / CUDA_ERROR_UNKNOWN */                            \
		}                                                                                          \
	} while (0)

/* DRIVER_HOOK defines the driver entry point NAME with the parameters PARAMS: it resolves the
 * driver's own NAME into SLOT and returns what IMPL makes of it and the arguments (ARGS). */
#define DRIVER_HOOK(NAME, SLOT, IMPL, PARAMS, ...)                                                         \
	EXPORT CUresult NAME PARAMS                                                                        \
	{                                                                                                  \
		sch_resolve_driver();                                                                      \
		REAL(SLOT, #NAME, driver_sym(#NAME));                                                      \
		return IMPL(SLOT, __VA_ARGS__);                                                            \
	}

/* Driver entry points. */

static CUresult launch_kernel(pfn_cuLaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
			      unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream s, void **p, void **e)
{
	GATED(SRC_DRIVER, f, gx, gy, gz, bx, by, bz, smem, s, real(f, gx, gy, gz, bx, by, bz, smem, s, p, e));
}

static CUresult launch_kernel_ex(pfn_cuLaunchKernelEx real, const CUlaunchConfig *c, CUfunction f, void **p,
				 void **e)
{
	GATED(SRC_DRIVER_EX, f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
	      c->sharedMemBytes, c->hStream, real(c, f, p, e));
}

static CUresult launch_graph(pfn_cuGraphLaunch real, CUgraphExec g, CUstream s)
{
	GATED(SRC_GRAPH, g, 0, 0, 0, 0, 0, 0, 0, s, real(g, s));
}

DRIVER_HOOK(cuLaunchKernel, real_cuLaunchKernel, launch_kernel,
	    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem,
	     CUstream s, void **p, void **e),
	    f, gx, gy, gz, bx, by, bz, smem, s, p, e)

DRIVER_HOOK(cuLaunchKernel_ptsz, real_cuLaunchKernel_ptsz, launch_kernel,
	    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem,
	     CUstream s, void **p, void **e),
	    f, gx, gy, gz, bx, by, bz, smem, s, p, e)

DRIVER_HOOK(cuLaunchKernelEx, real_cuLaunchKernelEx, launch_kernel_ex, (const CUlaunchConfig *c, CUfunction f, void **p, void **e), c, f, p, e)

DRIVER_HOOK(cuLaunchKernelEx_ptsz, real_cuLaunchKernelEx_ptsz, launch_kernel_ex, (const CUlaunchConfig *c, CUfunction f, void **p, void **e), c, f, p, e)

DRIVER_HOOK(cuGraphLaunch, real_cuGraphLaunch, launch_graph, (CUgraphExec g, CUstream s), g, s)

DRIVER_HOOK(cuGraphLaunch_ptsz, real_cuGraphLaunch_ptsz, launch_graph, (CUgraphExec g, CUstream s), g, s)

/* Graph capture: while a stream of the process captures, the tracker must not query events
 * (under the default global capture mode that invalidates the capture), so the shim counts
 * the captures open from their beginning to their end (sch_capture_begin/end). */
static CUresult begin_capture(pfn_cuStreamBeginCapture real, CUstream s, int mode)
{
	if (inside)
		return real(s, mode);
	sch_capture_begin();
	CUresult r = real(s, mode);
	if (r != CUDA_SUCCESS)
		sch_capture_end();
	return r;
}

static CUresult end_capture(pfn_cuStreamEndCapture real, CUstream s, void **graph)
{
	if (inside)
		return real(s, graph);
	CUresult r = real(s, graph);
	sch_capture_end();
	return r;
}

DRIVER_HOOK(cuStreamBeginCapture_v2, real_cuStreamBeginCapture, begin_capture, (CUstream s, int mode), s, mode)

DRIVER_HOOK(cuStreamBeginCapture_v2_ptsz, real_cuStreamBeginCapture_ptsz, begin_capture, (CUstream s, int mode), s,
	    mode)

DRIVER_HOOK(cuStreamEndCapture, real_cuStreamEndCapture, end_capture, (CUstream s, void **graph), s, graph)

DRIVER_HOOK(cuStreamEndCapture_ptsz, real_cuStreamEndCapture_ptsz, end_capture, (CUstream s, void **graph), s, graph)

EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t s, int mode)
{
	REAL(real_cudaStreamBeginCapture, "cudaStreamBeginCapture", raw_dlsym(RTLD_NEXT, "cudaStreamBeginCapture"));
	inside = 1;
	sch_capture_begin();
	cudaError_t r = real_cudaStreamBeginCapture(s, mode);
	if (r != 0)
		sch_capture_end();
	inside = 0;
	return r;
}

EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t s, void **graph)
{
	REAL(real_cudaStreamEndCapture, "cudaStreamEndCapture", raw_dlsym(RTLD_NEXT, "cudaStreamEndCapture"));
	inside = 1;
	cudaError_t r = real_cudaStreamEndCapture(s, graph);
	sch_capture_end();
	inside = 0;
	return r;
}

/* The wrapper to hand out instead of a real entry point, remembering the real one; NULL when
 * the symbol is not one the shim wraps. per_thread: the lookup asked for the per-thread
 * default stream flavour. */
static void *substitute(const char *sym, void *real, int per_thread)
{
/* A library whose own references to its entry points are bound through the global scope
 * hands out the shim's wrapper as "real": never store that, or a launch calls itself. */
#define SWAP(NAME, SLOT, WRAP)                                                                             \
	if (strcmp(sym, NAME) == 0) {                                                                      \
		if (real != (void *)WRAP)                                                                  \
			SLOT = (__typeof__(SLOT))real;                                                     \
		return (void *)WRAP;                                                                       \
	}
	if (per_thread) {
		SWAP("cuLaunchKernel", real_cuLaunchKernel_ptsz, cuLaunchKernel_ptsz);
		SWAP("cuLaunchKernelEx", real_cuLaunchKernelEx_ptsz, cuLaunchKernelEx_ptsz);
		SWAP("cuGraphLaunch", real_cuGraphLaunch_ptsz, cuGraphLaunch_ptsz);
		SWAP("cuStreamBeginCapture", real_cuStreamBeginCapture_ptsz, cuStreamBeginCapture_v2_ptsz);
		SWAP("cuStreamEndCapture", real_cuStreamEndCapture_ptsz, cuStreamEndCapture_ptsz);
	} else {
		SWAP("cuLaunchKernel", real_cuLaunchKernel, cuLaunchKernel);
		SWAP("cuLaunchKernelEx", real_cuLaunchKernelEx, cuLaunchKernelEx);
		SWAP("cuGraphLaunch", real_cuGraphLaunch, cuGraphLaunch);
		SWAP("cuStreamBeginCapture", real_cuStreamBeginCapture, cuStreamBeginCapture_v2);
		SWAP("cuStreamEndCapture", real_cuStreamEndCapture, cuStreamEndCapture);
	}
	SWAP("cuStreamBeginCapture_v2", real_cuStreamBeginCapture, cuStreamBeginCapture_v2);
	SWAP("cuStreamBeginCapture_v2_ptsz", real_cuStreamBeginCapture_ptsz, cuStreamBeginCapture_v2_ptsz);
	SWAP("cuStreamEndCapture_ptsz", real_cuStreamEndCapture_ptsz, cuStreamEndCapture_ptsz);
	SWAP("cuLaunchKernel_ptsz", real_cuLaunchKernel_ptsz, cuLaunchKernel_ptsz);
	SWAP("cuLaunchKernelEx_ptsz", real_cuLaunchKernelEx_ptsz, cuLaunchKernelEx_ptsz);
	SWAP("cuGraphLaunch_ptsz", real_cuGraphLaunch_ptsz, cuGraphLaunch_ptsz);
#undef SWAP
	return NULL;
}

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, uint64_t flags, int *status);
CUresult cuGetProcAddress(const char *sym, void **pfn, int version, uint64_t flags);

/* The lookup hooks hand out the lookup functions themselves too, or a caller that looks
 * cuGetProcAddress up first would see every later entry point unwrapped. */
static void *substitute_lookup(const char *sym, void *real)
{
	if (strcmp(sym, "cuGetProcAddress_v2") == 0) {
		if (real != (void *)cuGetProcAddress_v2)
			real_cuGetProcAddress_v2 = (pfn_cuGetProcAddress_v2)real;
		return (void *)cuGetProcAddress_v2;
	}
	if (strcmp(sym, "cuGetProcAddress") == 0) {
		if (real != (void *)cuGetProcAddress)
			real_cuGetProcAddress = (pfn_cuGetProcAddress)real;
		return (void *)cuGetProcAddress;
	}
	return NULL;
}

/* What cuGetProcAddress hands out: a launch entry point, or cuGetProcAddress itself (asked
 * for by its base name, in its CUDA 12 form when the caller asks for version 12.0 or later). */
static void handed_out(const char *sym, void **pfn, int version, uint64_t flags)
{
	void *w = substitute(sym, *pfn, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
	if (!w && strcmp(sym, "cuGetProcAddress") == 0)
		w = substitute_lookup(version >= 12000 ? "cuGetProcAddress_v2" : "cuGetProcAddress", *pfn);
	if (w) {
		*pfn = w;
		sch_count_lookup(1);
	}
}

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, uint64_t flags, int *status)
{
	sch_resolve_driver();
	REAL(real_cuGetProcAddress_v2, "cuGetProcAddress_v2", driver_sym("cuGetProcAddress_v2"));
	CUresult r = real_cuGetProcAddress_v2(sym, pfn, version, flags, status);
	if (r == CUDA_SUCCESS && sym && pfn && *pfn)
		handed_out(sym, pfn, version, flags);
	return r;
}

EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int version, uint64_t flags)
{
	sch_resolve_driver();
	REAL(real_cuGetProcAddress, "cuGetProcAddress", driver_sym("cuGetProcAddress"));
	CUresult r = real_cuGetProcAddress(sym, pfn, version, flags);
	if (r == CUDA_SUCCESS && sym && pfn && *pfn)
		handed_out(sym, pfn, version, flags);
	return r;
}

EXPORT void *dlsym(void *handle, const char *sym)
{
	void *real = raw_dlsym(handle, sym);
	if (!real || strncmp(sym, "cu", 2) != 0)
		return real;
	void *w = substitute(sym, real, 0);
	if (!w)
		w = substitute_lookup(sym, real);
	if (!w)
		return real;
	sch_count_lookup(0);
	return w;
}

/* Runtime entry points (libcudart, found next after the shim). */

EXPORT cudaError_t cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args, size_t smem, cudaStream_t s)
{
	REAL(real_cudaLaunchKernel, "cudaLaunchKernel", raw_dlsym(RTLD_NEXT, "cudaLaunchKernel"));
	GATED(SRC_RUNTIME, fn, g.x, g.y, g.z, b.x, b.y, b.z, smem, s, real_cudaLaunchKernel(fn, g, b, args, smem, s));
}

EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *fn, dim3 g, dim3 b, void **args, size_t smem, cudaStream_t s)
{
	REAL(real_cudaLaunchKernel_ptsz, "cudaLaunchKernel_ptsz", raw_dlsym(RTLD_NEXT, "cudaLaunchKernel_ptsz"));
	GATED(SRC_RUNTIME, fn, g.x, g.y, g.z, b.x, b.y, b.z, smem, s,
	      real_cudaLaunchKernel_ptsz(fn, g, b, args, smem, s));
}

/* CUDA 13's nvcc stubs launch through __cudaLaunchKernel with a cudaKernel_t. */
EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t smem, cudaStream_t s)
{
	REAL(real___cudaLaunchKernel, "__cudaLaunchKernel", raw_dlsym(RTLD_NEXT, "__cudaLaunchKernel"));
	GATED_K(SRC_RUNTIME, 1, k, g.x, g.y, g.z, b.x, b.y, b.z, smem, s, real___cudaLaunchKernel(k, g, b, args, smem, s));
}

EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *fn, void **args)
{
	REAL(real_cudaLaunchKernelExC, "cudaLaunchKernelExC", raw_dlsym(RTLD_NEXT, "cudaLaunchKernelExC"));
	GATED(SRC_RUNTIME_EX, fn, c->gridDim.x, c->gridDim.y, c->gridDim.z, c->blockDim.x, c->blockDim.y,
	      c->blockDim.z, c->dynamicSmemBytes, c->stream, real_cudaLaunchKernelExC(c, fn, args));
}

EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t g, cudaStream_t s)
{
	REAL(real_cudaGraphLaunch, "cudaGraphLaunch", raw_dlsym(RTLD_NEXT, "cudaGraphLaunch"));
	GATED(SRC_GRAPH, g, 0, 0, 0, 0, 0, 0, 0, s, real_cudaGraphLaunch(g, s));
}
