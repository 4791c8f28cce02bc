/*
 * The few CUDA driver and runtime types and entry points the launch shim uses, declared by
 * their documented ABI so the shim builds with any C compiler, with or without the CUDA
 * toolkit's headers (the CI machine has none; the GPU machine's nvcc is not needed either).
 */
#ifndef SCHOONER_CUDA_ABI_H
#define SCHOONER_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int cudaError_t;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUgraphExec;
typedef void *cudaStream_t;
typedef void *cudaGraphExec_t;
typedef void *cudaKernel_t;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
#define CU_EVENT_DEFAULT 0
#define CU_EVENT_DISABLE_TIMING 2
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

typedef struct {
	unsigned int x, y, z;
} dim3;

typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

typedef struct {
	dim3 gridDim;
	dim3 blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
	void *attrs;
	unsigned int numAttrs;
} cudaLaunchConfig_t;

/* Driver entry points the shim calls (resolved from libcuda.so.1, never through the hooks). */
typedef CUresult (*pfn_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				       unsigned, CUstream, void **, void **);
typedef CUresult (*pfn_cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*pfn_cuGraphLaunch)(CUgraphExec, CUstream);
typedef CUresult (*pfn_cuGetProcAddress_v2)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*pfn_cuGetProcAddress)(const char *, void **, int, uint64_t);
typedef CUresult (*pfn_cuEventCreate)(CUevent *, unsigned);
typedef CUresult (*pfn_cuEventRecord)(CUevent, CUstream);
typedef CUresult (*pfn_cuEventQuery)(CUevent);
typedef CUresult (*pfn_cuEventElapsedTime)(float *, CUevent, CUevent);
typedef CUresult (*pfn_cuCtxGetCurrent)(CUcontext *);
typedef CUresult (*pfn_cuCtxSetCurrent)(CUcontext);
typedef CUresult (*pfn_cuCtxGetDevice)(CUdevice *);
typedef CUresult (*pfn_cuDeviceGetAttribute)(int *, int, CUdevice);
typedef CUresult (*pfn_cuOccupancy)(int *, CUfunction, int, size_t);
typedef CUresult (*pfn_cuFuncGetName)(const char **, CUfunction);
typedef CUresult (*pfn_cuKernelGetFunction)(CUfunction *, void *);
typedef CUresult (*pfn_cuStreamIsCapturing)(CUstream, int *);
typedef CUresult (*pfn_cuStreamBeginCapture)(CUstream, int);
typedef CUresult (*pfn_cuStreamEndCapture)(CUstream, void **);
typedef cudaError_t (*pfn_cudaStreamBeginCapture)(cudaStream_t, int);
typedef cudaError_t (*pfn_cudaStreamEndCapture)(cudaStream_t, void **);

/* Runtime entry points the shim wraps (resolved from the next library, libcudart). */
typedef cudaError_t (*pfn_cudaLaunchKernel)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*pfn_cudaLaunchKernelExC)(const cudaLaunchConfig_t *, const void *, void **);
typedef cudaError_t (*pfn_cudaGraphLaunch)(cudaGraphExec_t, cudaStream_t);
typedef cudaError_t (*pfn_cudaGetFuncBySymbol)(CUfunction *, const void *);
typedef cudaError_t (*pfn_cudaLastError)(void); /* cudaGetLastError, cudaPeekAtLastError */

#endif
