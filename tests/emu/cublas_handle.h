/* The emulated cuBLAS handle and the helpers its entry points share, for
 * the v2 sources and the legacy one (cublas_api.h is common to cublas.h
 * and cublas_v2.h, which refuse to meet in one translation unit). */
#ifndef EMU_CUBLAS_HANDLE_H
#define EMU_CUBLAS_HANDLE_H

#include <cublas_api.h>
#include <pthread.h>
#include <stdint.h>

#include "emu.h"

/* The release the library stands for: this toolkit's (cuBLAS 13), or,
 * built with EMU_CUBLAS_RELEASE=12, the CUDA 12 release that CUDA 12
 * builds of JAX and CuPy carry (libcublas.so.12, cuBLAS 12.9.1: see
 * meson.build). Each release's handles are its own: a handle one release
 * made is one the other never initialised, and gets its
 * CUBLAS_STATUS_NOT_INITIALIZED. */
#if defined(EMU_CUBLAS_RELEASE) && EMU_CUBLAS_RELEASE == 12
#define EMU_BLAS_MAGIC 0x32314c42u /* "BL12" while the handle lives */
#define EMU_CUBLAS_VER_MAJOR 12
#define EMU_CUBLAS_VER_MINOR 9
#define EMU_CUBLAS_VER_PATCH 1
#else
#define EMU_BLAS_MAGIC 0x424c4153u /* "BLAS" while the handle lives */
#define EMU_CUBLAS_VER_MAJOR CUBLAS_VER_MAJOR
#define EMU_CUBLAS_VER_MINOR CUBLAS_VER_MINOR
#define EMU_CUBLAS_VER_PATCH CUBLAS_VER_PATCH
#endif
/* cublas_api.h's CUBLAS_VERSION formula for the release. */
#define EMU_CUBLAS_VERSION                                                   \
    (EMU_CUBLAS_VER_MAJOR * 10000 + EMU_CUBLAS_VER_MINOR * 100 +             \
     EMU_CUBLAS_VER_PATCH)

/* cublas_api.h declares the struct and leaves it to the library. Settings
 * are behind `lock`: one handle may be used from many threads. */
struct cublasContext {
    uint32_t magic;
    pthread_mutex_t lock;
    int device;                      /* bound at creation */
    CUstream stream;                 /* NULL: the legacy default stream */
    cublasPointerMode_t pointer_mode;
    cublasMath_t math_mode;
    cublasEmulationStrategy_t emulation_strategy;
    void *workspace;                 /* user workspace, or NULL */
    size_t workspace_size;
    int sm_count_target;             /* 0: the device's */
};

/* A consistent copy of a handle's settings, taken once per call. */
struct emu_blas_config {
    int device;
    CUstream stream;
    cublasPointerMode_t pointer_mode;
    cublasMath_t math_mode;
    cublasEmulationStrategy_t emulation_strategy;
    int sm_count_target;
};

/* Copies the settings of `handle`. Fails with NOT_INITIALIZED for a NULL
 * or destroyed handle. */
cublasStatus_t emu_blas_config(cublasHandle_t handle,
                               struct emu_blas_config *config);

/* Binds the calling thread to the handle's device, as the library's own
 * runtime does lazily, and queues `op` on `stream`. Fails with
 * EXECUTION_FAILED when the work cannot be queued (op->release is then
 * called). */
cublasStatus_t emu_blas_enqueue(const struct emu_blas_config *config,
                                const struct emu_op *op);

/* Creates a handle on the calling thread's device (binding the primary
 * context as the runtime would). Fails with NOT_INITIALIZED when no device
 * can be bound, ALLOC_FAILED without memory. No fault injection. */
cublasStatus_t emu_blas_create(cublasHandle_t *handle);

/* Waits for the handle's device and frees a valid handle. */
void emu_blas_destroy(cublasHandle_t handle);

/* The whole cublasSgemm_v2 contract (checks, pointer and math modes,
 * queueing) under the entry point name `name`, with 64-bit sizes. */
cublasStatus_t emu_blas_sgemm(cublasHandle_t handle, const char *name,
                              cublasOperation_t transa,
                              cublasOperation_t transb, int64_t m, int64_t n,
                              int64_t k, const float *alpha, const float *A,
                              int64_t lda, const float *B, int64_t ldb,
                              const float *beta, float *C, int64_t ldc);

/* Leaves `status` for the legacy API's cublasGetError, as a failed legacy
 * core function does (nothing while the legacy context is not
 * initialised). For the generated stubs of legacy functions. */
void emu_blas_legacy_error(cublasStatus_t status);

#endif
