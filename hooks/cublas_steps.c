/* The steps of a converted cuBLAS GEMM: issued on the shim's own cuBLAS
 * handle (one per thread and context) with the Ex GEMMs, the vendor
 * amp_hook_gemm runs them through. */
#include "cublas_real.h"

#include "base/log.h"
#include "base/shim.h"
#include "cublas_hook.h"
#include "device/device.h"
#include "own.h"
#include "run/gemm.h"

#include <stdint.h>

/* ---- The shim's own handles: one per thread and context ------------------- */

/* A cuBLAS handle in the device pointer mode the steps use (own.h keeps
 * one per thread and context, and leaves it at thread exit for the next
 * thread in the context). */
struct amp_cublas_own {
    cublasHandle_t handle;
};

static int
amp_cublas_own_make(void *obj)
{
    struct amp_cublas_own *own = obj;
    cublasStatus_t s = amp_cublas_fn.cublasCreate_v2(&own->handle);

    if (s == CUBLAS_STATUS_SUCCESS) {
        /* A handle that takes a setting is one the steps can use. */
        s = amp_cublas_fn.cublasSetPointerMode_v2(own->handle,
                                             CUBLAS_POINTER_MODE_DEVICE);
        if (s != CUBLAS_STATUS_SUCCESS)
            amp_cublas_fn.cublasDestroy_v2(own->handle);
    }
    if (s != CUBLAS_STATUS_SUCCESS)
        amp_log(AMP_LOG_INFO, "the shim's cuBLAS handle: status %d", (int)s);
    return s != CUBLAS_STATUS_SUCCESS;
}

/* A handle of an ended context died with it. */
static void
amp_cublas_own_drop(void *obj, int live)
{
    struct amp_cublas_own *own = obj;

    if (!live)
        return;
    /* Off the program's stream first: it may be gone already. */
    amp_cublas_fn.cublasSetStream_v2(own->handle, NULL);
    amp_cublas_fn.cublasDestroy_v2(own->handle);
}

static AMP_THREAD_HOT struct amp_own_table amp_cublas_owns;

static void amp_cublas_own_exit(void);

static const struct amp_own_kind amp_cublas_own_kind = {
    .what = "cuBLAS handle",
    .size = sizeof(struct amp_cublas_own),
    .make = amp_cublas_own_make,
    .drop = amp_cublas_own_drop,
    .at_exit = amp_cublas_own_exit,
};

static void
amp_cublas_own_exit(void)
{
    amp_own_release(&amp_cublas_owns, &amp_cublas_own_kind);
}

/* ---- The steps of a converted call ------------------------------------------ */

static cudaDataType
amp_cuda_type(enum amp_dtype t)
{
    if (t == AMP_DTYPE_F16)
        return CUDA_R_16F;
    if (t == AMP_DTYPE_BF16)
        return CUDA_R_16BF;
    return CUDA_R_32F;
}

static cublasOperation_t
amp_cublas_op(enum amp_op op)
{
    return op == AMP_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T;
}

/* Issues one step with the Ex GEMM of its batch kind on own. The sizes fit
 * int: amp_gemm_try checked the descriptor. */
static cublasStatus_t
amp_step_issue(cublasHandle_t own, const struct amp_gemm_desc *d,
               const struct amp_gemm_step *s)
{
    cublasOperation_t ta = amp_cublas_op(d->transa);
    cublasOperation_t tb = amp_cublas_op(d->transb);
    cudaDataType tab = amp_cuda_type(s->type_ab), tc = amp_cuda_type(s->type_c);
    cublasComputeType_t compute =
        (cublasComputeType_t)amp_compute_vendor(s->compute);
    const void *a = (const void *)(uintptr_t)s->a;
    const void *b = (const void *)(uintptr_t)s->b;
    void *c = (void *)(uintptr_t)s->c;
    int m = (int)d->m, n = (int)d->n;
    /* tf32x3's one product of three times K: cuBLAS asks lda >= k of a
     * transposed A and ldb >= k of a plain B, which the copies' layout
     * gives (amp_gemm_prepare keeps 3k within int). */
    int k = (int)(s->k_parts ? s->k_parts * d->k : d->k);
    cublasStatus_t st;

    st = amp_cublas_fn.cublasSetPointerMode_v2(
        own, s->scalars_on_device ? CUBLAS_POINTER_MODE_DEVICE
                                  : CUBLAS_POINTER_MODE_HOST);
    /* bf16x9 is emulated whatever the sizes (PERFORMANT, the default,
     * might run FP32 under its name). */
    if (st == CUBLAS_STATUS_SUCCESS &&
        compute == CUBLAS_COMPUTE_32F_EMULATED_16BFX9)
        st = amp_cublas_fn.cublasSetEmulationStrategy
                 ? amp_cublas_fn.cublasSetEmulationStrategy(
                       own, CUBLAS_EMULATION_STRATEGY_EAGER)
                 : CUBLAS_STATUS_NOT_SUPPORTED;
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    switch (s->batch_kind) {
    case AMP_BATCH_STRIDED:
        return amp_cublas_fn.cublasGemmStridedBatchedEx(
            own, ta, tb, m, n, k, s->alpha, a, tab, (int)s->lda, s->stride_a,
            b, tab, (int)s->ldb, s->stride_b, s->beta, c, tc, (int)s->ldc,
            s->stride_c, (int)s->batch, compute, CUBLAS_GEMM_DEFAULT);
    case AMP_BATCH_ARRAY:
        return amp_cublas_fn.cublasGemmBatchedEx(
            own, ta, tb, m, n, k, s->alpha, (const void *const *)a, tab,
            (int)s->lda, (const void *const *)b, tab, (int)s->ldb, s->beta,
            (void *const *)c, tc, (int)s->ldc, (int)s->batch, compute,
            CUBLAS_GEMM_DEFAULT);
    case AMP_BATCH_NONE:
        break;
    }
    return amp_cublas_fn.cublasGemmEx(own, ta, tb, m, n, k, s->alpha, a, tab,
                                 (int)s->lda, b, tab, (int)s->ldb, s->beta, c,
                                 tc, (int)s->ldc, compute,
                                 CUBLAS_GEMM_DEFAULT);
}

/* Issues every step of run on own set to the call's stream. */
static enum amp_status
amp_steps_issue(void *own_handle, const void *call, struct amp_gemm_run *run)
{
    cublasHandle_t own = own_handle;
    const struct amp_gemm_desc *d = &run->desc;
    cublasStatus_t s;
    int i;

    (void)call;
    s = amp_cublas_fn.cublasSetStream_v2(own, (cudaStream_t)run->stream);
    /* The program's SM carve-out, or the device's SMs again: the handle
     * keeps what the last call set. */
    if (s == CUBLAS_STATUS_SUCCESS)
        s = amp_cublas_fn.cublasSetSmCountTarget
                ? amp_cublas_fn.cublasSetSmCountTarget(own, d->sm_count_target)
                : d->sm_count_target ? CUBLAS_STATUS_NOT_SUPPORTED
                                     : CUBLAS_STATUS_SUCCESS;
    for (i = 0; i < run->nsteps && s == CUBLAS_STATUS_SUCCESS; i++)
        s = amp_step_issue(own, d, &run->steps[i]);
    if (s == CUBLAS_STATUS_SUCCESS)
        return AMP_OK;
    amp_log(AMP_LOG_INFO, "%s: a %s step returned cuBLAS status %d", d->api,
            amp_mode_name(run->mode), (int)s);
    return AMP_ERR_DRIVER;
}

/* The calling thread's cuBLAS handle for the steps. */
static void *
amp_cublas_own(struct amp_dev *dev, int make)
{
    struct amp_cublas_own *own;

    pthread_once(&amp_cublas_once, amp_cublas_resolve);
    if (!amp_cublas_fn.cublasCreate_v2 ||
        !amp_cublas_fn.cublasSetPointerMode_v2 ||
        !amp_cublas_fn.cublasDestroy_v2 || !amp_cublas_fn.cublasSetStream_v2 ||
        !amp_cublas_fn.cublasGemmEx ||
        !amp_cublas_fn.cublasGemmStridedBatchedEx ||
        !amp_cublas_fn.cublasGemmBatchedEx)
        return NULL;
    own = amp_own_get(&amp_cublas_owns, &amp_cublas_own_kind, dev, make);
    return own ? own->handle : NULL;
}

const struct amp_gemm_vendor amp_cublas_vendor = {
    .own = amp_cublas_own,
    .issue = amp_steps_issue,
};
