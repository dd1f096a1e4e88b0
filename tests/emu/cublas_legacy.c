/* The emulated legacy cuBLAS API (cublas.h): one implicit context from
 * cublasInit, its stream from cublasSetKernelStream, errors kept for
 * cublasGetError, and cublasSgemm over the v2 GEMM. */
#include <cublas.h>
#include <pthread.h>
#include <stdint.h>

#include "cublas_handle.h"
#include "emu.h"

/*
 * Facts this follows, checked against the real libcublas.so.13 on a
 * machine without a GPU: cublasGetError answers NOT_INITIALIZED while
 * there is no context; cublasShutdown without one succeeds;
 * cublasSetKernelStream without one is NOT_INITIALIZED; cublasAlloc and
 * cublasFree need no context (n or elemSize <= 0 is INVALID_VALUE, a
 * failing device allocation or free is INTERNAL_ERROR, cublasFree(NULL)
 * succeeds); cublasInit fails with NOT_INITIALIZED when no device can be
 * used. The documented rest: core functions (cublasSgemm) return nothing
 * and leave their status for cublasGetError, which reads and clears it;
 * a successful call leaves an earlier error in place.
 */

static pthread_mutex_t legacy_lock = PTHREAD_MUTEX_INITIALIZER;
static cublasHandle_t legacy_handle;            /* NULL: not initialised */
static cublasStatus_t legacy_error = CUBLAS_STATUS_SUCCESS;

cublasStatus_t
cublasInit(void)
{
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    int fault;

    pthread_mutex_lock(&legacy_lock);
    if (legacy_handle != NULL)
        goto out;
    fault = emu_fault("cublasInit", CUBLAS_STATUS_NOT_INITIALIZED);
    if (fault != 0) {
        st = (cublasStatus_t)fault;
        goto out;
    }
    st = emu_blas_create(&legacy_handle);
    if (st != CUBLAS_STATUS_SUCCESS)
        legacy_handle = NULL;
    legacy_error = CUBLAS_STATUS_SUCCESS;
out:
    pthread_mutex_unlock(&legacy_lock);
    return st;
}

cublasStatus_t
cublasShutdown(void)
{
    pthread_mutex_lock(&legacy_lock);
    if (legacy_handle != NULL)
        emu_blas_destroy(legacy_handle);
    legacy_handle = NULL;
    legacy_error = CUBLAS_STATUS_SUCCESS;
    pthread_mutex_unlock(&legacy_lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasGetError(void)
{
    cublasStatus_t st = CUBLAS_STATUS_NOT_INITIALIZED;

    pthread_mutex_lock(&legacy_lock);
    if (legacy_handle != NULL) {
        st = legacy_error;
        legacy_error = CUBLAS_STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&legacy_lock);
    return st;
}

cublasStatus_t
cublasSetKernelStream(cudaStream_t stream)
{
    cublasStatus_t st = CUBLAS_STATUS_NOT_INITIALIZED;

    pthread_mutex_lock(&legacy_lock);
    if (legacy_handle != NULL) {
        pthread_mutex_lock(&legacy_handle->lock);
        legacy_handle->stream = stream;
        pthread_mutex_unlock(&legacy_handle->lock);
        st = CUBLAS_STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&legacy_lock);
    return st;
}

cublasStatus_t
cublasAlloc(int n, int elemSize, void **devicePtr)
{
    CUdeviceptr p = 0;
    CUresult r;

    if (n <= 0 || elemSize <= 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    r = emu_runtime_bind(0);
    if (r == CUDA_SUCCESS)
        r = cuMemAlloc(&p, (size_t)n * (size_t)elemSize);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return CUBLAS_STATUS_ALLOC_FAILED;
    if (r != CUDA_SUCCESS)
        return CUBLAS_STATUS_INTERNAL_ERROR;
    *devicePtr = (void *)(uintptr_t)p;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasFree(void *devicePtr)
{
    if (devicePtr == NULL)
        return CUBLAS_STATUS_SUCCESS;
    if (emu_runtime_bind(0) != CUDA_SUCCESS ||
        cuMemFree((CUdeviceptr)(uintptr_t)devicePtr) != CUDA_SUCCESS)
        return CUBLAS_STATUS_INTERNAL_ERROR;
    return CUBLAS_STATUS_SUCCESS;
}

/* 'N', 'T' and 'C' in either case; anything else is not an operation
 * (op_out is then left as CUBLAS_OP_N and the result is 0). */
static int
legacy_op(char c, cublasOperation_t *op_out)
{
    *op_out = CUBLAS_OP_N;
    switch (c) {
    case 'N':
    case 'n':
        return 1;
    case 'T':
    case 't':
        *op_out = CUBLAS_OP_T;
        return 1;
    case 'C':
    case 'c':
        *op_out = CUBLAS_OP_C;
        return 1;
    default:
        return 0;
    }
}

/* Keeps a failed core function's status until cublasGetError reads it. */
static void
legacy_record(cublasStatus_t st)
{
    if (st != CUBLAS_STATUS_SUCCESS && legacy_handle != NULL)
        legacy_error = st;
}

void
emu_blas_legacy_error(cublasStatus_t status)
{
    pthread_mutex_lock(&legacy_lock);
    legacy_record(status);
    pthread_mutex_unlock(&legacy_lock);
}

void
cublasSgemm(char transa, char transb, int m, int n, int k, float alpha,
            const float *A, int lda, const float *B, int ldb, float beta,
            float *C, int ldc)
{
    cublasOperation_t ta, tb;
    cublasStatus_t st;

    pthread_mutex_lock(&legacy_lock);
    if (legacy_handle == NULL) {
        st = CUBLAS_STATUS_NOT_INITIALIZED;
    } else if (!legacy_op(transa, &ta) || !legacy_op(transb, &tb)) {
        st = CUBLAS_STATUS_INVALID_VALUE;
    } else {
        /* The context's handle stays in host pointer mode: the scalars
         * are this call's own. */
        st = emu_blas_sgemm(legacy_handle, "cublasSgemm", ta, tb, m, n, k,
                            &alpha, A, lda, B, ldb, &beta, C, ldc);
    }
    legacy_record(st);
    pthread_mutex_unlock(&legacy_lock);
}
