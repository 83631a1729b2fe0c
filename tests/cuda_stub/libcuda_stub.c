/* A stand-in libcuda.so.1 for tests/test_launch_stub_driver.py: just enough of the CUDA
 * driver API for Triton's own C helpers (cubin loading, device attributes) and its
 * generated kernel launcher to be built, loaded and called on a machine without a GPU.
 * Nothing runs: cuLaunchKernelEx records what it was asked to launch (grid, block, stream,
 * function and the first kernel parameters as 64-bit words), which the test reads back
 * through stub_launches / stub_launch (stub_record_words sets how many parameters).
 * Built with Triton's cuda.h so the structs match. */
#include <stdint.h>
#include <string.h>
#include "cuda.h"

#define MAX_RECORDED 64
#define MAX_WORDS 8

typedef struct {
  unsigned grid[3], block[3], shared;
  uint64_t stream, function;
  uint64_t words[MAX_WORDS];
} launch_record;

static launch_record records[MAX_RECORDED];
static int n_launches = 0;
static int words_to_record = 2;  /* kernel parameters copied per launch (set by the test) */

void stub_record_words(int n) { words_to_record = n < MAX_WORDS ? n : MAX_WORDS; }
static const uint64_t FUNCTION_HANDLE = 0xF00D, MODULE_HANDLE = 0xBEEF, CONTEXT_HANDLE = 0xC0DE;

int stub_launches(void) { return n_launches; }

/* The i-th launch: grid[3], block[3], shared, stream, function, words[n_words]. */
int stub_launch(int i, uint64_t *out, int n_words) {
  if (i < 0 || i >= n_launches || i >= MAX_RECORDED || n_words > MAX_WORDS) return -1;
  const launch_record *r = &records[i];
  for (int k = 0; k < 3; k++) { out[k] = r->grid[k]; out[3 + k] = r->block[k]; }
  out[6] = r->shared; out[7] = r->stream; out[8] = r->function;
  for (int k = 0; k < n_words; k++) out[9 + k] = r->words[k];
  return 0;
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                  void **kernelParams, void **extra) {
  (void)extra;
  if (n_launches < MAX_RECORDED) {
    launch_record *r = &records[n_launches];
    memset(r, 0, sizeof *r);
    r->grid[0] = config->gridDimX; r->grid[1] = config->gridDimY; r->grid[2] = config->gridDimZ;
    r->block[0] = config->blockDimX; r->block[1] = config->blockDimY;
    r->block[2] = config->blockDimZ; r->shared = config->sharedMemBytes;
    r->stream = (uint64_t)(uintptr_t)config->hStream;
    r->function = (uint64_t)(uintptr_t)f;
    /* 8 bytes from each of the first parameters (the test knows which are pointers and
     * doubles, and reads only the low 4 bytes of 32-bit ones) */
    for (int k = 0; k < words_to_record; k++)
      memcpy(&r->words[k], kernelParams[k], sizeof(uint64_t));
  }
  n_launches++;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
  (void)error; *pStr = "stub libcuda error"; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
  *pctx = (CUcontext)(uintptr_t)CONTEXT_HANDLE; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) { (void)ctx; return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit) {
  (void)limit; *pvalue = 1024; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value) {
  (void)limit; (void)value; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  (void)dev; *pctx = (CUcontext)(uintptr_t)CONTEXT_HANDLE; return CUDA_SUCCESS;
}
/* An H200's values for what Triton asks. */
CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  (void)dev;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *pi = 232448; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *pi = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
    default: *pi = 1; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  (void)image; *module = (CUmodule)(uintptr_t)MODULE_HANDLE; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  (void)hmod; (void)name; *hfunc = (CUfunction)(uintptr_t)FUNCTION_HANDLE; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
  (void)hfunc;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
    default: *pi = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  (void)hfunc; (void)attrib; (void)value; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  (void)hfunc; (void)config; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
                                              const CUlaunchConfig *config) {
  (void)func; (void)config; *numClusters = 1; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                       CUdeviceptr ptr) {
  (void)attribute; *(CUdeviceptr *)data = ptr; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                        CUpointer_attribute *attributes, void **data,
                                        CUdeviceptr ptr) {
  (void)numAttributes; (void)attributes; (void)data; (void)ptr; return CUDA_SUCCESS;
}
/* Triton 3.9's helpers also ask for these. */
CUresult CUDAAPI cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int *version) { *version = 13000; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGetCount(int *count) { *count = 1; return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) { *device = 0; return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleUnload(CUmodule hmod) { (void)hmod; return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *status) {
  (void)hStream; *status = CU_STREAM_CAPTURE_STATUS_NONE; return CUDA_SUCCESS;
}
