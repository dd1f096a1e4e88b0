/* The CUDA runtime and driver functions the shim hooks: the ones that end
 * a context the shim may have work and state in. Each X(ret, name, params)
 * names the exported symbol (the driver's versioned names, as CUDA 13's
 * cuda.h maps cuCtxDestroy to cuCtxDestroy_v2). */
#ifndef AMP_CUDA_SYMBOLS_H
#define AMP_CUDA_SYMBOLS_H

/* Names-only users (the ABI and preload tests) never expand prototypes. */
#ifndef AMP_SYMBOL_NAMES_ONLY
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

/* Hooked: exported by libampshim.so, checked by the ABI test. */
#define AMP_CUDA_HOOKED(X)                                                   \
    X(cudaError_t, cudaDeviceReset, (void))                                  \
    X(CUresult, cuDevicePrimaryCtxReset_v2, (CUdevice dev))                  \
    X(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice dev))                \
    X(CUresult, cuCtxDestroy_v2, (CUcontext ctx))

#endif
