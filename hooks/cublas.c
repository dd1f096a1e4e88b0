/* cuBLAS hooks: FP32 GEMMs run as FP16 Tensor Core GEMMs with FP32
 * accumulation when the decision allows, the original call otherwise. */
#include "cublas_symbols.h"

#include "device.h"
#include "gemm.h"
#include "log.h"
#include "resolve.h"
#include "shim.h"
#include "stats.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#define AMP_EXPORT __attribute__((visibility("default")))
#define AMP_CUBLAS_SONAME "libcublas.so.13"

/* ---- The real functions --------------------------------------------------- */

#define AMP_PFN_TYPE(ret, name, params) typedef ret(*amp_pfn_##name) params;
AMP_CUBLAS_SYMBOLS(AMP_PFN_TYPE)
#undef AMP_PFN_TYPE

static struct {
#define AMP_REAL_MEMBER(ret, name, params) amp_pfn_##name name;
    AMP_CUBLAS_SYMBOLS(AMP_REAL_MEMBER)
#undef AMP_REAL_MEMBER
} amp_real;

#define AMP_NAME_STRING(ret, name, params) #name,
static const char *const amp_cublas_names[] = {
    AMP_CUBLAS_SYMBOLS(AMP_NAME_STRING)};
#undef AMP_NAME_STRING

#define AMP_REAL_SLOT(ret, name, params) (void **)&amp_real.name,
static void **const amp_cublas_slots[] = {AMP_CUBLAS_SYMBOLS(AMP_REAL_SLOT)};
#undef AMP_REAL_SLOT

static pthread_once_t amp_cublas_once = PTHREAD_ONCE_INIT;

static void
amp_cublas_resolve(void)
{
    amp_resolve_all(AMP_CUBLAS_SONAME, amp_cublas_names, amp_cublas_slots,
                    (int)(sizeof amp_cublas_names / sizeof *amp_cublas_names));
}

/* ---- The shim's own handles: one per thread and context ------------------- */

#define AMP_OWN_HANDLES 8

struct amp_own_handle {
    struct amp_dev *dev;
    cublasHandle_t handle; /* NULL: creation failed, stays failed */
};

static _Thread_local struct {
    unsigned generation;
    int count;
    struct amp_own_handle slot[AMP_OWN_HANDLES];
} amp_own;

/* The calling thread's handle for dev's context, in device pointer mode.
 * NULL when one cannot be made (then calls in that context stay FP32). */
static cublasHandle_t
amp_own_handle(struct amp_dev *dev)
{
    struct amp_own_handle *own;
    cublasStatus_t s;
    int i;

    if (amp_own.generation != amp_shim_generation()) {
        /* Forked child: the parent's handles are not ours to use. */
        amp_own.count = 0;
        amp_own.generation = amp_shim_generation();
    }
    for (i = 0; i < amp_own.count; i++)
        if (amp_own.slot[i].dev == dev)
            return amp_own.slot[i].handle;
    if (amp_own.count == AMP_OWN_HANDLES || !amp_real.cublasCreate_v2 ||
        !amp_real.cublasSetPointerMode_v2 || !amp_real.cublasDestroy_v2)
        return NULL;
    own = &amp_own.slot[amp_own.count++];
    own->dev = dev;
    s = amp_real.cublasCreate_v2(&own->handle);
    if (s == CUBLAS_STATUS_SUCCESS) {
        s = amp_real.cublasSetPointerMode_v2(own->handle,
                                             CUBLAS_POINTER_MODE_DEVICE);
        if (s != CUBLAS_STATUS_SUCCESS)
            amp_real.cublasDestroy_v2(own->handle);
    }
    if (s != CUBLAS_STATUS_SUCCESS) {
        amp_log(AMP_LOG_WARN, "cannot create the shim's cuBLAS handle "
                "(status %d); this thread's calls stay FP32", (int)s);
        own->handle = NULL;
    }
    return own->handle;
}

/* ---- cublasSgemm_v2 ---------------------------------------------------------- */

static struct amp_api_stats amp_sgemm_stats =
    AMP_API_STATS_INIT("cublasSgemm_v2");

struct amp_sgemm_call {
    cublasHandle_t handle;
    cublasOperation_t transa, transb;
    int m, n, k;
    const float *alpha;
    const float *A;
    int lda;
    const float *B;
    int ldb;
    const float *beta;
    float *C;
    int ldc;
};

static cublasStatus_t
amp_sgemm_fp32(const struct amp_sgemm_call *c)
{
    return amp_real.cublasSgemm_v2(c->handle, c->transa, c->transb, c->m,
                                   c->n, c->k, c->alpha, c->A, c->lda, c->B,
                                   c->ldb, c->beta, c->C, c->ldc);
}

static int
amp_op_parse(cublasOperation_t op, enum amp_op *out)
{
    *out = op == CUBLAS_OP_N ? AMP_OP_N : AMP_OP_T;
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

/* The call as a descriptor; the handle's settings are read, never changed.
 * A handle cuBLAS refuses makes the arguments invalid. */
static void
amp_sgemm_describe(const struct amp_sgemm_call *c, struct amp_gemm_desc *d)
{
    cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    cudaStream_t stream = NULL;
    int ops_a = amp_op_parse(c->transa, &d->transa);
    int ops_b = amp_op_parse(c->transb, &d->transb);

    d->ops_valid =
        ops_a && ops_b && c->handle &&
        amp_real.cublasGetPointerMode_v2(c->handle, &pointer_mode) ==
            CUBLAS_STATUS_SUCCESS &&
        amp_real.cublasGetStream_v2(c->handle, &stream) ==
            CUBLAS_STATUS_SUCCESS &&
        amp_real.cublasGetMathMode(c->handle, &math) == CUBLAS_STATUS_SUCCESS;
    d->m = c->m;
    d->n = c->n;
    d->k = c->k;
    d->lda = c->lda;
    d->ldb = c->ldb;
    d->ldc = c->ldc;
    d->a = (amp_devptr)(uintptr_t)c->A;
    d->b = (amp_devptr)(uintptr_t)c->B;
    d->c = (amp_devptr)(uintptr_t)c->C;
    d->alpha = c->alpha;
    d->beta = c->beta;
    d->scalars_on_device = pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    d->pedantic = (math & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) ==
                  CUBLAS_PEDANTIC_MATH;
    d->stream = (amp_stream)stream;
}

/* Runs the call as an FP16 GEMM into the caller's C. Everything that can
 * fail happens before C is written; on failure C is untouched. */
static enum amp_status
amp_sgemm_f16(const struct amp_sgemm_call *c, const struct amp_gemm_desc *d)
{
    struct amp_gemm_f16 f16 = {0};
    struct amp_dev *dev = amp_dev_current();
    cublasHandle_t own;
    cublasStatus_t s;
    enum amp_status st;

    if (!dev)
        return AMP_ERR_UNAVAILABLE;
    if (amp_dev_stream_capturing(d->stream) != 0) {
        amp_log(AMP_LOG_INFO, "cublasSgemm_v2 during stream capture: FP32");
        return AMP_ERR_UNAVAILABLE;
    }
    own = amp_own_handle(dev);
    if (!own)
        return AMP_ERR_UNAVAILABLE;
    st = amp_gemm_prepare_f16(dev, d, amp_shim_config()->scratch_max, &f16);
    if (st != AMP_OK)
        return st;
    s = amp_real.cublasSetStream_v2(own, (cudaStream_t)d->stream);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = amp_real.cublasGemmEx(
            own, c->transa, c->transb, c->m, c->n, c->k,
            (const void *)(uintptr_t)f16.alpha,
            (const void *)(uintptr_t)f16.a16, CUDA_R_16F, (int)f16.lda16,
            (const void *)(uintptr_t)f16.b16, CUDA_R_16F, (int)f16.ldb16,
            (const void *)(uintptr_t)f16.beta, c->C, CUDA_R_32F, c->ldc,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    amp_gemm_release_f16(&f16);
    if (s != CUBLAS_STATUS_SUCCESS) {
        amp_log(AMP_LOG_INFO, "FP16 cublasGemmEx returned status %d", (int)s);
        return AMP_ERR_DRIVER;
    }
    return AMP_OK;
}

static cublasStatus_t
amp_sgemm(const struct amp_sgemm_call *c)
{
    struct amp_gemm_desc d;
    enum amp_gemm_skip skip;

    amp_sgemm_describe(c, &d);
    skip = amp_gemm_decide(&d, amp_shim_config()->mode);
    if (skip != AMP_GEMM_CONVERT) {
        amp_log(AMP_LOG_DEBUG, "cublasSgemm_v2 %dx%dx%d: FP32 (%s)", c->m,
                c->n, c->k, amp_gemm_skip_reason(skip));
        amp_stats_count(&amp_sgemm_stats, AMP_OUTCOME_FP32);
        return amp_sgemm_fp32(c);
    }
    if (amp_sgemm_f16(c, &d) == AMP_OK) {
        amp_log(AMP_LOG_DEBUG, "cublasSgemm_v2 %dx%dx%d: fp16", c->m, c->n,
                c->k);
        amp_stats_count(&amp_sgemm_stats, AMP_OUTCOME_CONVERTED);
        return CUBLAS_STATUS_SUCCESS;
    }
    amp_stats_count(&amp_sgemm_stats, AMP_OUTCOME_FALLBACK);
    return amp_sgemm_fp32(c);
}

AMP_EXPORT cublasStatus_t
cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
               cublasOperation_t transb, int m, int n, int k,
               const float *alpha, const float *A, int lda, const float *B,
               int ldb, const float *beta, float *C, int ldc)
{
    struct amp_sgemm_call call = {handle, transa, transb, m,   n,    k,  alpha,
                                  A,      lda,    B,      ldb, beta, C, ldc};
    cublasStatus_t status;

    amp_shim_config(); /* the log is open before resolution reports */
    pthread_once(&amp_cublas_once, amp_cublas_resolve);
    if (!amp_real.cublasSgemm_v2)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!amp_shim_enter())
        return amp_sgemm_fp32(&call);
    status = amp_sgemm(&call);
    amp_shim_leave();
    return status;
}
