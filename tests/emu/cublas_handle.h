/* The emulated cuBLAS handle and the helpers its entry points share. */
#ifndef EMU_CUBLAS_HANDLE_H
#define EMU_CUBLAS_HANDLE_H

#include <cublas_v2.h>
#include <pthread.h>
#include <stdint.h>

#include "emu.h"

#define EMU_BLAS_MAGIC 0x424c4153u /* "BLAS" while the handle lives */

/* cublas_api.h declares the struct and leaves it to the library. Settings
 * are behind `lock`: one handle may be used from many threads. */
struct cublasContext {
    uint32_t magic;
    pthread_mutex_t lock;
    int device;                      /* bound at creation */
    CUstream stream;                 /* NULL: the legacy default stream */
    cublasPointerMode_t pointer_mode;
    cublasMath_t math_mode;
    void *workspace;                 /* user workspace, or NULL */
    size_t workspace_size;
};

/* A consistent copy of a handle's settings, taken once per call. */
struct emu_blas_config {
    int device;
    CUstream stream;
    cublasPointerMode_t pointer_mode;
    cublasMath_t math_mode;
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

/* 1 when NVIDIA_TF32_OVERRIDE=0 forbids TF32 everywhere (read once). */
int emu_blas_tf32_disabled(void);

#endif
