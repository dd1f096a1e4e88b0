/* Legacy cuBLAS hooks (cublas.h): cublasSgemm, which has no handle and
 * reports errors through cublasGetError, runs on the converted path like
 * the v2 calls; cublasSetKernelStream is remembered for it. */
#include "cublas_legacy_symbols.h"

#include "base/caller.h"
#include "base/resolve.h"
#include "base/shim.h"
#include "cublas_hook.h"
#include "measure/stats.h"
#include "process/process.h"
#include "run/gemm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define AMP_EXPORT __attribute__((visibility("default")))
#define AMP_CUBLAS_SONAME "libcublas.so.13"

/* ---- The real functions --------------------------------------------------- */

#define AMP_PFN_TYPE(ret, name, params) typedef ret(*amp_pfn_##name) params;
AMP_CUBLAS_LEGACY_SYMBOLS(AMP_PFN_TYPE)
#undef AMP_PFN_TYPE

static struct {
#define AMP_REAL_MEMBER(ret, name, params) amp_pfn_##name name;
    AMP_CUBLAS_LEGACY_SYMBOLS(AMP_REAL_MEMBER)
#undef AMP_REAL_MEMBER
} amp_legacy_real;

#define AMP_NAME_STRING(ret, name, params) #name,
static const char *const amp_legacy_names[] = {
    AMP_CUBLAS_LEGACY_SYMBOLS(AMP_NAME_STRING)};
#undef AMP_NAME_STRING

#define AMP_REAL_SLOT(ret, name, params) (void **)&amp_legacy_real.name,
static void **const amp_legacy_slots[] = {
    AMP_CUBLAS_LEGACY_SYMBOLS(AMP_REAL_SLOT)};
#undef AMP_REAL_SLOT

static pthread_once_t amp_legacy_once = PTHREAD_ONCE_INIT;

static void
amp_legacy_resolve(void)
{
    amp_resolve_all(AMP_CUBLAS_SONAME, amp_legacy_names, amp_legacy_slots,
                    (int)(sizeof amp_legacy_names / sizeof *amp_legacy_names));
}

/* Resolves once; the log is open before resolution reports. */
static void
amp_legacy_start(void)
{
    amp_process_start();
    pthread_once(&amp_legacy_once, amp_legacy_resolve);
}

static struct amp_api_stats amp_legacy_stats[] = {
#define AMP_API_STATS(ret, name, params) AMP_API_STATS_INIT(#name),
    AMP_CUBLAS_LEGACY_HOOKED(AMP_API_STATS)
#undef AMP_API_STATS
};

enum {
#define AMP_API_ENUM(ret, name, params) AMP_LEGACY_##name,
    AMP_CUBLAS_LEGACY_HOOKED(AMP_API_ENUM)
#undef AMP_API_ENUM
};

/* The legacy function `api` (its index in the hooked list, which comes
 * first) that the call returning to ret runs, and in *route how the call
 * is served: another cuBLAS release's, whose implicit context is its own
 * (passed through, nothing of it remembered), else the one the shim
 * resolved; NULL when there is none. */
static void *
amp_legacy_function(int api, const void *ret, struct amp_route *route)
{
    amp_legacy_start();
    *route = amp_route(AMP_LIB_CUBLAS, amp_legacy_names[api], ret);
    return route->other ? route->fn : *amp_legacy_slots[api];
}

/* In a hook of `name`: `route` and `real` (amp_legacy_function). */
#define AMP_LEGACY_REAL(name)                                                \
    struct amp_route route;                                                  \
    amp_pfn_##name real;                                                     \
    *(void **)&real = amp_legacy_function(AMP_LEGACY_##name,                 \
                                          __builtin_return_address(0),       \
                                          &route)

/* The legacy context's stream, as the last successful
 * cublasSetKernelStream set it (NULL: the legacy default stream), and
 * whether a cublasInit succeeded with no cublasShutdown since. */
static _Atomic(uintptr_t) amp_legacy_stream;
static atomic_int amp_legacy_ready;

/* ---- cublasSgemm ------------------------------------------------------------ */

static int
amp_legacy_op(char op, enum amp_op *out)
{
    *out = op == 'N' || op == 'n' ? AMP_OP_N : AMP_OP_T;
    return strchr("NnTtCc", op) != NULL && op != '\0';
}

/* The legacy call as a descriptor: host scalars, never pedantic (the
 * legacy context has no math mode), the kernel stream. Before cublasInit
 * the arguments count as invalid: the real call reports the error. */
static void
amp_legacy_describe(struct amp_gemm_desc *d, char transa, char transb, int m,
                    int n, int k, const float *alpha, const float *A,
                    int lda, const float *B, int ldb, const float *beta,
                    float *C, int ldc)
{
    memset(d, 0, sizeof(*d));
    d->ops_valid = amp_legacy_op(transa, &d->transa);
    d->ops_valid &= amp_legacy_op(transb, &d->transb);
    d->ops_valid &= atomic_load(&amp_legacy_ready);
    d->api = amp_legacy_stats[AMP_LEGACY_cublasSgemm].name;
    d->stats = &amp_legacy_stats[AMP_LEGACY_cublasSgemm];
    d->m = m;
    d->n = n;
    d->k = k;
    d->lda = lda;
    d->ldb = ldb;
    d->ldc = ldc;
    d->batch_kind = AMP_BATCH_NONE;
    d->batch = 1;
    d->a = (amp_devptr)(uintptr_t)A;
    d->b = (amp_devptr)(uintptr_t)B;
    d->c = (amp_devptr)(uintptr_t)C;
    d->alpha = alpha;
    d->beta = beta;
    d->stream = (amp_stream)atomic_load(&amp_legacy_stream);
}

/* A converted call sets no error; anything else runs the real legacy
 * cublasSgemm, which sets cublasGetError's status itself. */
AMP_EXPORT void
cublasSgemm(char transa, char transb, int m, int n, int k, float alpha,
            const float *A, int lda, const float *B, int ldb, float beta,
            float *C, int ldc)
{
    struct amp_gemm_desc d;
    struct amp_hook h;
    AMP_LEGACY_REAL(cublasSgemm);

    if (!real)
        return;
    if (amp_hook_enter(&h, &amp_legacy_stats[AMP_LEGACY_cublasSgemm])) {
        if (route.other) {
            h.outcome = AMP_OUTCOME_PASSTHROUGH;
        } else {
            amp_legacy_describe(&d, transa, transb, m, n, k, &alpha, A, lda,
                                B, ldb, &beta, C, ldc);
            d.caller = __builtin_return_address(0);
            d.from_library = route.library;
            if (amp_hook_gemm(&h, &d) == AMP_HOOK_DONE)
                return;
        }
    }
    real(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    /* The status is cublasGetError's to report and to clear: the shadow
     * run completes on the argument checks that let it start. */
    amp_hook_end(&h, 1);
}

/* ---- The legacy context: passed through, remembered ------------------------- */

/* Runs a pass-through call: counted, and its status handed back. */
static cublasStatus
amp_legacy_passthrough(struct amp_hook *h, cublasStatus status)
{
    h->outcome = AMP_OUTCOME_PASSTHROUGH;
    amp_hook_end(h, status == CUBLAS_STATUS_SUCCESS);
    return status;
}

AMP_EXPORT cublasStatus
cublasSetKernelStream(cudaStream_t stream)
{
    struct amp_hook h;
    cublasStatus status;
    AMP_LEGACY_REAL(cublasSetKernelStream);

    if (!real)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    amp_hook_enter(&h, &amp_legacy_stats[AMP_LEGACY_cublasSetKernelStream]);
    status = real(stream);
    if (status == CUBLAS_STATUS_SUCCESS && !route.other)
        atomic_store(&amp_legacy_stream, (uintptr_t)stream);
    return amp_legacy_passthrough(&h, status);
}

AMP_EXPORT cublasStatus
cublasInit(void)
{
    struct amp_hook h;
    cublasStatus status;
    AMP_LEGACY_REAL(cublasInit);

    if (!real)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    amp_hook_enter(&h, &amp_legacy_stats[AMP_LEGACY_cublasInit]);
    status = real();
    if (status == CUBLAS_STATUS_SUCCESS && !route.other)
        atomic_store(&amp_legacy_ready, 1);
    return amp_legacy_passthrough(&h, status);
}

AMP_EXPORT cublasStatus
cublasShutdown(void)
{
    struct amp_hook h;
    cublasStatus status;
    AMP_LEGACY_REAL(cublasShutdown);

    if (!real)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    amp_hook_enter(&h, &amp_legacy_stats[AMP_LEGACY_cublasShutdown]);
    status = real();
    if (status == CUBLAS_STATUS_SUCCESS && !route.other) {
        atomic_store(&amp_legacy_ready, 0);
        atomic_store(&amp_legacy_stream, 0);
    }
    return amp_legacy_passthrough(&h, status);
}
