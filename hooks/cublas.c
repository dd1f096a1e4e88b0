/* cuBLAS hooks: every FP32 GEMM entry point of cublas_v2.h becomes one
 * descriptor per problem set, runs on the converted path the mode asks for
 * when the decision allows, and as the original call otherwise. */
#include "cublas_real.h"

#include "base/caller.h"
#include "base/log.h"
#include "base/resolve.h"
#include "base/shim.h"
#include "cublas_hook.h"
#include "own.h"
#include "device/device.h"
#include "measure/stats.h"
#include "process/process.h"
#include "run/gemm.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define AMP_EXPORT __attribute__((visibility("default")))
#define AMP_CUBLAS_SONAME "libcublas.so.13"

/* ---- The real functions --------------------------------------------------- */

/* Every hook declared from the list: a redeclaration that the compiler
 * checks against cublas_api.h's, and the only one of the FP16 GEMMs,
 * which the header declares for C++ only. */
#define AMP_DECLARE_HOOK(ret, name, params) ret name params;
AMP_CUBLAS_HOOKED(AMP_DECLARE_HOOK)
#undef AMP_DECLARE_HOOK

struct amp_cublas_fns amp_cublas_fn;

#define AMP_NAME_STRING(ret, name, params) #name,
static const char *const amp_cublas_names[] = {
    AMP_CUBLAS_SYMBOLS(AMP_NAME_STRING)};
#undef AMP_NAME_STRING

#define AMP_REAL_SLOT(ret, name, params) (void **)&amp_cublas_fn.name,
static void **const amp_cublas_slots[] = {AMP_CUBLAS_SYMBOLS(AMP_REAL_SLOT)};
#undef AMP_REAL_SLOT

pthread_once_t amp_cublas_once = PTHREAD_ONCE_INIT;

/* 1 once the real functions are resolved and the shim is disabled: the
 * hooks call them before building anything (AMPSHIM_DISABLE costs the
 * route's look-up, a load and a branch). Set after the resolution, so that
 * a thread that sees it sees the real functions. */
static atomic_int amp_cublas_bypass;

void
amp_cublas_resolve(void)
{
    amp_resolve_all(AMP_CUBLAS_SONAME, amp_cublas_names, amp_cublas_slots,
                    (int)(sizeof amp_cublas_names / sizeof *amp_cublas_names));
    atomic_store_explicit(&amp_cublas_bypass, amp_process_start()->disabled,
                          memory_order_release);
}

/* The hook may call `real`, its real function, straight away. */
#define AMP_BYPASS(real)                                                     \
    (atomic_load_explicit(&amp_cublas_bypass, memory_order_acquire) &&       \
     (real) != NULL)

/* ---- One set of counters per hooked API ----------------------------------- */

/* The hooked APIs in list order: they index the counters and, since the
 * hooked list comes first, the real functions' slots. */
enum amp_cublas_api {
#define AMP_API_ENUM(ret, name, params) AMP_API_##name,
    AMP_CUBLAS_HOOKED(AMP_API_ENUM)
#undef AMP_API_ENUM
    AMP_API_COUNT
};

static struct amp_api_stats amp_cublas_stats[AMP_API_COUNT] = {
#define AMP_API_STATS(ret, name, params) AMP_API_STATS_INIT(#name),
    AMP_CUBLAS_HOOKED(AMP_API_STATS)
#undef AMP_API_STATS
};

/* The real function that the call of api returning to ret runs when it
 * runs as the program made it, and in *route how it is served: the
 * definition of the cuBLAS release the caller depends on when that is
 * another release than 13 (passed through untouched), else the one the
 * shim resolved. NULL when there is none. */
static void *
amp_cublas_real(enum amp_cublas_api api, const void *ret,
                struct amp_route *route)
{
    amp_process_start(); /* the log is open before resolution reports */
    pthread_once(&amp_cublas_once, amp_cublas_resolve);
    *route = amp_route(AMP_LIB_CUBLAS, amp_cublas_names[api], ret);
    return route->other ? route->fn : *amp_cublas_slots[api];
}

/* In a hook of `name`: `route`, how its call is served, and `real`, the
 * function it runs as the program made it (amp_cublas_real). */
#define AMP_HOOK_REAL(name)                                                  \
    struct amp_route route;                                                  \
    amp_pfn_##name real;                                                     \
    *(void **)&real = amp_cublas_real(AMP_API_##name,                        \
                                      __builtin_return_address(0), &route)

/* ---- A call as the application made it ----------------------------------- */

/* The element and compute types of a call; the FP32-typed entry points
 * have CUDA_R_32F and CUBLAS_COMPUTE_32F. */
struct amp_types {
    cudaDataType a, b, c;
    cublasComputeType_t compute;
};

#define AMP_FP32_TYPES                                                       \
    .types = {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F}

/* Every argument of the non-grouped entry points. */
struct amp_call {
    enum amp_cublas_api api;
    const void *caller;       /* the exported hook's return address */
    const struct amp_route *route; /* how it is served */
    int missing;              /* no real function to run */
    cublasHandle_t handle;
    cublasOperation_t transa, transb;
    int64_t m, n, k;
    const void *alpha;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    const void *beta;
    void *c;
    int64_t ldc;
    enum amp_batch batch_kind;
    int64_t batch;
    long long stride_a, stride_b, stride_c;
    struct amp_types types;
    int algo_unknown;         /* an Ex call's algo is none of cuBLAS's */
};

/* 1 when the call is an FP32 GEMM (*pedantic: one the program asked to
 * keep strictly FP32); 0 for half, mixed, complex or integer ones. */
static int
amp_call_fp32(const struct amp_types *t, int *pedantic)
{
    *pedantic = 0;
    if (t->a != CUDA_R_32F || t->b != CUDA_R_32F || t->c != CUDA_R_32F)
        return 0;
    return amp_compute_fp32(t->compute, pedantic);
}

int
amp_compute_fp32(int compute, int *pedantic)
{
    switch ((cublasComputeType_t)compute) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        return 1;
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
        *pedantic = 1; /* the program chose its FP32 method */
        return 1;
    default:
        return 0;
    }
}

int
amp_compute_vendor(enum amp_compute c)
{
    switch (c) {
    case AMP_COMPUTE_32F_FAST_TF32:
        return CUBLAS_COMPUTE_32F_FAST_TF32;
    case AMP_COMPUTE_32F_EMULATED_16BFX9:
        return CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
    case AMP_COMPUTE_32F:
        break;
    }
    return CUBLAS_COMPUTE_32F;
}

/* 1 when t is a complex type. */
static int
amp_type_complex(cudaDataType t)
{
    switch (t) {
    case CUDA_C_16F: case CUDA_C_16BF: case CUDA_C_32F: case CUDA_C_64F:
    case CUDA_C_4I: case CUDA_C_4U: case CUDA_C_8I: case CUDA_C_8U:
    case CUDA_C_16I: case CUDA_C_16U: case CUDA_C_32I: case CUDA_C_32U:
    case CUDA_C_64I: case CUDA_C_64U:
        return 1;
    default:
        return 0;
    }
}

enum amp_cover
amp_cover_of_data(int type_a, int type_c)
{
    cudaDataType a = (cudaDataType)type_a;

    if (amp_type_complex(a))
        return AMP_COVER_COMPLEX;
    switch (a) {
    case CUDA_R_64F:
        return AMP_COVER_FP64;
    case CUDA_R_16F:
    case CUDA_R_16BF:
        return AMP_COVER_HALF;
    case CUDA_R_8I:
    case CUDA_R_8U:
        return AMP_COVER_INT8;
    case CUDA_R_32F:
        return type_c == CUDA_R_32F ? AMP_COVER_UNCONVERTED : AMP_COVER_OTHER;
    default:
        return AMP_COVER_OTHER;
    }
}

static enum amp_cover
amp_cover_of_types(const struct amp_types *t)
{
    return amp_cover_of_data(t->a, t->c);
}

/* 1 for the algorithms cublas_api.h lists. cuBLAS refuses any other value
 * (NOT_SUPPORTED): such a call is the vendor's to refuse, so the shim must
 * not convert it with its own CUBLAS_GEMM_DEFAULT and report success. */
static int
amp_algo_known(cublasGemmAlgo_t algo)
{
    int v = (int)algo;

    return (v >= CUBLAS_GEMM_DEFAULT && v <= CUBLAS_GEMM_ALGO23) ||
           (v >= CUBLAS_GEMM_DEFAULT_TENSOR_OP &&
            v <= CUBLAS_GEMM_ALGO15_TENSOR_OP) ||
           v == CUBLAS_GEMM_AUTOTUNE;
}

static int
amp_op_parse(cublasOperation_t op, enum amp_op *out)
{
    *out = op == CUBLAS_OP_N ? AMP_OP_N : AMP_OP_T;
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

/* The handle's settings into d, read and never changed; 0 when cuBLAS
 * refuses the handle (the arguments are then invalid). */
static int
amp_handle_settings(cublasHandle_t handle, struct amp_gemm_desc *d)
{
    cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    cudaStream_t stream = NULL;
    int sm_count_target = 0;
    int ok = handle &&
             amp_cublas_fn.cublasGetPointerMode_v2(handle, &pointer_mode) ==
                 CUBLAS_STATUS_SUCCESS &&
             amp_cublas_fn.cublasGetStream_v2(handle, &stream) ==
                 CUBLAS_STATUS_SUCCESS &&
             amp_cublas_fn.cublasGetMathMode(handle, &math) ==
                 CUBLAS_STATUS_SUCCESS;

    /* The program's SM carve-out, for the converted steps (a library
     * without the call has none). */
    if (ok && amp_cublas_fn.cublasGetSmCountTarget &&
        amp_cublas_fn.cublasGetSmCountTarget(handle, &sm_count_target) !=
            CUBLAS_STATUS_SUCCESS)
        sm_count_target = 0;
    d->sm_count_target = sm_count_target;
    d->scalars_on_device = pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    d->pedantic |= (math & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) ==
                   CUBLAS_PEDANTIC_MATH;
    d->stream = (amp_stream)stream;
    return ok;
}

/* One problem set's shape into d (the rest is the caller's). */
static void
amp_desc_shape(struct amp_gemm_desc *d, enum amp_cublas_api api,
               cublasOperation_t transa, cublasOperation_t transb,
               int handle_ok)
{
    int ops_a = amp_op_parse(transa, &d->transa);
    int ops_b = amp_op_parse(transb, &d->transb);

    d->api = amp_cublas_stats[api].name;
    d->stats = &amp_cublas_stats[api];
    d->ops_valid = ops_a && ops_b && handle_ok;
}

static void
amp_call_describe(const struct amp_call *c, int pedantic,
                  struct amp_gemm_desc *d)
{
    memset(d, 0, sizeof(*d));
    d->pedantic = pedantic;
    amp_desc_shape(d, c->api, c->transa, c->transb,
                   amp_handle_settings(c->handle, d) && !c->algo_unknown);
    d->m = c->m;
    d->n = c->n;
    d->k = c->k;
    d->lda = c->lda;
    d->ldb = c->ldb;
    d->ldc = c->ldc;
    d->batch_kind = c->batch_kind;
    d->batch = c->batch;
    d->stride_a = c->stride_a;
    d->stride_b = c->stride_b;
    d->stride_c = c->stride_c;
    d->a = (amp_devptr)(uintptr_t)c->a;
    d->b = (amp_devptr)(uintptr_t)c->b;
    d->c = (amp_devptr)(uintptr_t)c->c;
    d->alpha = c->alpha;
    d->beta = c->beta;
    d->caller = c->caller;
    d->from_library = c->route->library;
}

/* What the guard of a hook lets through. */
enum amp_guard_next {
    AMP_GUARD_RETURN,      /* the real function is missing: return *status */
    AMP_GUARD_ORIGINAL,    /* pass through: disabled, re-entered, another
                              release's call, or not an FP32 GEMM (the last
                              two counted as passthrough) */
    AMP_GUARD_FP32_GEMM,   /* describe and decide (*pedantic is set) */
};

/* The guard of a call served by `route`, whose real function is missing
 * when `missing`. */
static enum amp_guard_next
amp_guard(struct amp_hook *h, enum amp_cublas_api api,
          const struct amp_types *types, const struct amp_route *route,
          int missing, int *pedantic, cublasStatus_t *status)
{
    h->entered = 0;
    *status = CUBLAS_STATUS_NOT_INITIALIZED;
    if (missing)
        return AMP_GUARD_RETURN;
    *status = CUBLAS_STATUS_SUCCESS;
    if (!amp_hook_enter(h, &amp_cublas_stats[api]))
        return AMP_GUARD_ORIGINAL;
    /* Another release's call is its own: its handle and descriptors are
     * that release's, never read here. */
    if (route->other || !amp_call_fp32(types, pedantic)) {
        h->outcome = AMP_OUTCOME_PASSTHROUGH;
        return AMP_GUARD_ORIGINAL;
    }
    return AMP_GUARD_FP32_GEMM;
}

/* Guard, descriptor, decision and converted path of a non-grouped call.
 * AMP_HOOK_DONE: the hook returns *status (success once converted;
 * CUBLAS_STATUS_NOT_INITIALIZED when the real function is missing).
 * AMP_HOOK_ORIGINAL: the hook runs the original call, then amp_call_end. */
static enum amp_hook_next
amp_call_begin(struct amp_hook *h, const struct amp_call *c,
               cublasStatus_t *status)
{
    struct amp_gemm_desc d;
    enum amp_guard_next next;
    int pedantic;

    next = amp_guard(h, c->api, &c->types, c->route, c->missing, &pedantic,
                     status);
    if (next == AMP_GUARD_ORIGINAL && h->entered && !c->route->other) {
        /* Not an FP32 GEMM: counted by its precision. */
        h->cover = amp_cover_of_types(&c->types);
        h->flops = amp_cover_gemm_flops(c->m, c->n, c->k, c->batch,
                                        amp_type_complex(c->types.a));
    }
    if (next != AMP_GUARD_FP32_GEMM)
        return next == AMP_GUARD_RETURN ? AMP_HOOK_DONE : AMP_HOOK_ORIGINAL;
    amp_call_describe(c, pedantic, &d);
    return amp_hook_gemm(h, &d);
}

/* After the original call: records it and returns its status. */
static cublasStatus_t
amp_call_end(struct amp_hook *h, cublasStatus_t status)
{
    amp_hook_end(h, status == CUBLAS_STATUS_SUCCESS);
    return status;
}

/* ---- Grouped calls: one descriptor per group -------------------------------- */

/* A host array of int or int64_t, as the two grouped ABIs pass them. */
struct amp_ints {
    const int *i32;
    const int64_t *i64;
};

static int64_t
amp_ints_at(struct amp_ints v, int64_t i)
{
    return v.i64 ? v.i64[i] : (int64_t)v.i32[i];
}

static int
amp_ints_null(struct amp_ints v)
{
    return !v.i64 && !v.i32;
}

struct amp_grouped_call {
    enum amp_cublas_api api;
    const void *caller;       /* the exported hook's return address */
    const struct amp_route *route; /* how it is served */
    int missing;              /* no real function to run */
    int ex;                   /* GemmGroupedBatchedEx: falls back to
                                 cublasGemmBatchedEx_64, else to
                                 cublasSgemmBatched_64 */
    cublasHandle_t handle;
    const cublasOperation_t *transa, *transb;
    struct amp_ints m, n, k, lda, ldb, ldc, group_size;
    const float *alpha, *beta;
    const void *const *a, *const *b;
    void *const *c;
    int64_t group_count;
    struct amp_types types;
};

/* Group g, whose problems start at `first` in the pointer arrays, as a
 * batched descriptor over its slice. */
static void
amp_grouped_desc(const struct amp_grouped_call *g,
                 const struct amp_gemm_desc *base, int64_t group,
                 int64_t first, struct amp_gemm_desc *d)
{
    *d = *base;
    amp_desc_shape(d, g->api, g->transa[group], g->transb[group],
                   base->ops_valid);
    d->m = amp_ints_at(g->m, group);
    d->n = amp_ints_at(g->n, group);
    d->k = amp_ints_at(g->k, group);
    d->lda = amp_ints_at(g->lda, group);
    d->ldb = amp_ints_at(g->ldb, group);
    d->ldc = amp_ints_at(g->ldc, group);
    d->batch_kind = AMP_BATCH_ARRAY;
    d->batch = amp_ints_at(g->group_size, group);
    d->a = (amp_devptr)(uintptr_t)(g->a + first);
    d->b = (amp_devptr)(uintptr_t)(g->b + first);
    d->c = (amp_devptr)(uintptr_t)(g->c + first);
    d->alpha = g->alpha + group;
    d->beta = g->beta + group;
}

/* 1 when every group is valid and at least one is to be converted; 0 when
 * the whole call stays the original one (invalid arguments get cuBLAS's
 * own status from it), and *why says why for the coverage meter. */
static int
amp_grouped_converts(const struct amp_grouped_call *g,
                     const struct amp_gemm_desc *base, enum amp_mode mode,
                     enum amp_cover *why)
{
    enum amp_gemm_skip first_skip = AMP_GEMM_SKIP_EMPTY;
    struct amp_gemm_desc d;
    int64_t group, first = 0;
    int converts = 0;

    *why = AMP_COVER_INVALID;
    /* cuBLAS takes a grouped call's alpha and beta arrays from the host
     * only: in CUBLAS_POINTER_MODE_DEVICE it refuses the call, and the
     * refusal is its to give. */
    if (g->group_count < 0 || base->scalars_on_device)
        return 0;
    if (g->group_count > 0 &&
        (!g->transa || !g->transb || amp_ints_null(g->m) ||
         amp_ints_null(g->n) || amp_ints_null(g->k) ||
         amp_ints_null(g->lda) || amp_ints_null(g->ldb) ||
         amp_ints_null(g->ldc) || amp_ints_null(g->group_size) ||
         !g->alpha || !g->beta))
        return 0;
    for (group = 0; group < g->group_count; group++) {
        enum amp_gemm_skip skip;

        amp_grouped_desc(g, base, group, first, &d);
        if (d.batch < 0 || !amp_gemm_args_valid(&d))
            return 0;
        first += d.batch;
        skip = amp_gemm_decide(&d, mode);
        if (group == 0 || first_skip == AMP_GEMM_SKIP_EMPTY)
            first_skip = skip;
        converts |= skip == AMP_GEMM_CONVERT && amp_desc_fits_int(&d);
    }
    *why = amp_cover_of_skip(first_skip);
    return converts;
}

/* The FLOPs of every group of g (complex ones at 8 m n k); 0 when an
 * array the sizes need is missing. */
static double
amp_grouped_flops(const struct amp_grouped_call *g, int complex_data)
{
    double flops = 0.0;
    int64_t group;

    if (amp_ints_null(g->m) || amp_ints_null(g->n) || amp_ints_null(g->k) ||
        amp_ints_null(g->group_size))
        return 0.0;
    for (group = 0; group < g->group_count; group++)
        flops += amp_cover_gemm_flops(
            amp_ints_at(g->m, group), amp_ints_at(g->n, group),
            amp_ints_at(g->k, group), amp_ints_at(g->group_size, group),
            complex_data);
    return flops;
}

/* The original FP32 GEMMs of one group: the batched call over its slice. */
static cublasStatus_t
amp_grouped_fp32(const struct amp_grouped_call *g,
                 const struct amp_gemm_desc *d, int64_t group)
{
    const void *const *a = (const void *const *)(uintptr_t)d->a;
    const void *const *b = (const void *const *)(uintptr_t)d->b;
    void *const *c = (void *const *)(uintptr_t)d->c;

    if (g->ex)
        return amp_cublas_fn.cublasGemmBatchedEx_64(
            g->handle, g->transa[group], g->transb[group], d->m, d->n, d->k,
            d->alpha, a, g->types.a, d->lda, b, g->types.b, d->ldb, d->beta,
            c, g->types.c, d->ldc, d->batch, g->types.compute,
            CUBLAS_GEMM_DEFAULT);
    return amp_cublas_fn.cublasSgemmBatched_64(
        g->handle, g->transa[group], g->transb[group], d->m, d->n, d->k,
        d->alpha, (const float *const *)a, d->lda, (const float *const *)b,
        d->ldb, d->beta, (float *const *)c, d->ldc, d->batch);
}

/* Which outcome a call with several groups reports: any fallback, else
 * any conversion, else FP32. */
static enum amp_outcome
amp_outcome_merge(enum amp_outcome a, enum amp_outcome b)
{
    if (a == AMP_OUTCOME_FALLBACK || b == AMP_OUTCOME_FALLBACK)
        return AMP_OUTCOME_FALLBACK;
    if (a == AMP_OUTCOME_CONVERTED || b == AMP_OUTCOME_CONVERTED)
        return AMP_OUTCOME_CONVERTED;
    return AMP_OUTCOME_FP32;
}

/* Runs each group converted, or as its own FP32 batched call when its
 * conversion is not decided or fails: groups already written stay
 * correct. Returns the first failing status, as FP32 would. */
static cublasStatus_t
amp_grouped_run(struct amp_hook *h, const struct amp_grouped_call *g,
                const struct amp_gemm_desc *base)
{
    enum amp_outcome outcome = AMP_OUTCOME_FP32;
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS, s;
    struct amp_gemm_desc d;
    int64_t group, first = 0;

    for (group = 0; group < g->group_count; group++) {
        amp_grouped_desc(g, base, group, first, &d);
        first += d.batch;
        if (d.batch == 0)
            continue;
        s = CUBLAS_STATUS_SUCCESS;
        if (amp_gemm_try(h, &d, &amp_cublas_vendor, NULL) ==
            AMP_HOOK_ORIGINAL) {
            s = amp_grouped_fp32(g, &d, group);
            amp_shadow_complete(h, s == CUBLAS_STATUS_SUCCESS);
            if (status == CUBLAS_STATUS_SUCCESS)
                status = s;
        }
        amp_cover_add(amp_hook_cover(h),
                      s == CUBLAS_STATUS_SUCCESS ? h->flops : 0.0);
        outcome = amp_outcome_merge(outcome, h->outcome);
    }
    h->outcome = outcome;
    return status;
}

/* As amp_call_begin, for a grouped call. */
static enum amp_hook_next
amp_grouped_begin(struct amp_hook *h, const struct amp_grouped_call *g,
                  cublasStatus_t *status)
{
    struct amp_gemm_desc base;
    enum amp_guard_next next;
    int pedantic;

    next = amp_guard(h, g->api, &g->types, g->route, g->missing, &pedantic,
                     status);
    if (next == AMP_GUARD_ORIGINAL && h->entered && !g->route->other) {
        /* Not an FP32 GEMM: counted by its precision. */
        h->cover = amp_cover_of_types(&g->types);
        h->flops = amp_grouped_flops(g, amp_type_complex(g->types.a));
    }
    if (next != AMP_GUARD_FP32_GEMM)
        return next == AMP_GUARD_RETURN ? AMP_HOOK_DONE : AMP_HOOK_ORIGINAL;
    memset(&base, 0, sizeof(base));
    base.pedantic = pedantic;
    base.ops_valid = amp_handle_settings(g->handle, &base);
    base.caller = g->caller;
    base.from_library = g->route->library;
    h->flops = amp_grouped_flops(g, 0); /* when it stays the original */
    if (!amp_grouped_converts(g, &base, amp_policy_may_convert(),
                              &h->cover) ||
        (g->ex ? !amp_cublas_fn.cublasGemmBatchedEx_64
               : !amp_cublas_fn.cublasSgemmBatched_64))
        return AMP_HOOK_ORIGINAL;
    *status = amp_grouped_run(h, g, &base);
    amp_stats_count(h->stats, h->outcome);
    amp_shim_leave();
    return AMP_HOOK_DONE;
}

/* ---- The exported hooks ------------------------------------------------------ */

/* The arguments that every non-grouped entry point names alike. */
#define AMP_CALL_COMMON(name)                                                \
    .api = AMP_API_##name, .caller = __builtin_return_address(0),            \
    .route = &route, .missing = !real,                                       \
    .handle = handle, .transa = transa, .transb = transb, .m = m,            \
    .n = n, .k = k, .alpha = alpha, .lda = lda, .ldb = ldb, .beta = beta,   \
    .ldc = ldc
#define AMP_CALL_ONE .batch_kind = AMP_BATCH_NONE, .batch = 1
#define AMP_CALL_STRIDED(count)                                              \
    .batch_kind = AMP_BATCH_STRIDED, .batch = (count),                       \
    .stride_a = strideA, .stride_b = strideB, .stride_c = strideC
#define AMP_CALL_ARRAY(count)                                                \
    .batch_kind = AMP_BATCH_ARRAY, .batch = (count), .a = Aarray,            \
    .b = Barray, .c = (void *)(uintptr_t)Carray
#define AMP_CALL_TYPES(compute_type)                                         \
    .types = {Atype, Btype, Ctype, (compute_type)}

/* Every entry point has an int and an int64_t (_64) ABI with one body:
 * each definition below makes both. The prototypes are checked against
 * cublas_api.h's declarations. */

#define AMP_DEFINE_SGEMM(name, int_t)                                        \
AMP_EXPORT cublasStatus_t                                                    \
name(cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, int_t m, int_t n, int_t k,                    \
     const float *alpha, const float *A, int_t lda, const float *B,          \
     int_t ldb, const float *beta, float *C, int_t ldc)                      \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real)) {                                                 \
        const struct amp_call c = {                                          \
            AMP_CALL_COMMON(name), AMP_CALL_ONE, .a = A, .b = B, .c = C,     \
            AMP_FP32_TYPES                                                   \
        };                                                                   \
                                                                             \
        if (amp_call_begin(&h, &c, &status) == AMP_HOOK_DONE)                \
            return status;                                                   \
    }                                                                        \
    return amp_call_end(&h, real(                                            \
        handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C,     \
        ldc));                                                               \
}
AMP_DEFINE_SGEMM(cublasSgemm_v2, int)
AMP_DEFINE_SGEMM(cublasSgemm_v2_64, int64_t)

#define AMP_DEFINE_SGEMM_BATCHED(name, int_t)                                \
AMP_EXPORT cublasStatus_t                                                    \
name(cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, int_t m, int_t n, int_t k,                    \
     const float *alpha, const float *const Aarray[], int_t lda,             \
     const float *const Barray[], int_t ldb, const float *beta,              \
     float *const Carray[], int_t ldc, int_t batchCount)                     \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real)) {                                                 \
        const struct amp_call c = {                                          \
            AMP_CALL_COMMON(name), AMP_CALL_ARRAY(batchCount), AMP_FP32_TYPES\
        };                                                                   \
                                                                             \
        if (amp_call_begin(&h, &c, &status) == AMP_HOOK_DONE)                \
            return status;                                                   \
    }                                                                        \
    return amp_call_end(&h, real(                                            \
        handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb,    \
        beta, Carray, ldc, batchCount));                                     \
}
AMP_DEFINE_SGEMM_BATCHED(cublasSgemmBatched, int)
AMP_DEFINE_SGEMM_BATCHED(cublasSgemmBatched_64, int64_t)

#define AMP_DEFINE_SGEMM_STRIDED(name, int_t)                                \
AMP_EXPORT cublasStatus_t                                                    \
name(cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, int_t m, int_t n, int_t k,                    \
     const float *alpha, const float *A, int_t lda,                          \
     long long int strideA, const float *B, int_t ldb,                       \
     long long int strideB, const float *beta, float *C, int_t ldc,          \
     long long int strideC, int_t batchCount)                                \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real)) {                                                 \
        const struct amp_call c = {                                          \
            AMP_CALL_COMMON(name), AMP_CALL_STRIDED(batchCount), .a = A,     \
            .b = B, .c = C, AMP_FP32_TYPES                                   \
        };                                                                   \
                                                                             \
        if (amp_call_begin(&h, &c, &status) == AMP_HOOK_DONE)                \
            return status;                                                   \
    }                                                                        \
    return amp_call_end(&h, real(                                            \
        handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb,     \
        strideB, beta, C, ldc, strideC, batchCount));                        \
}
AMP_DEFINE_SGEMM_STRIDED(cublasSgemmStridedBatched, int)
AMP_DEFINE_SGEMM_STRIDED(cublasSgemmStridedBatched_64, int64_t)

#define AMP_DEFINE_SGEMM_EX(name, int_t)                                     \
AMP_EXPORT cublasStatus_t                                                    \
name(cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, int_t m, int_t n, int_t k,                    \
     const float *alpha, const void *A, cudaDataType Atype, int_t lda,       \
     const void *B, cudaDataType Btype, int_t ldb, const float *beta,        \
     void *C, cudaDataType Ctype, int_t ldc)                                 \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real)) {                                                 \
        const struct amp_call c = {                                          \
            AMP_CALL_COMMON(name), AMP_CALL_ONE, .a = A, .b = B, .c = C,     \
            AMP_CALL_TYPES(CUBLAS_COMPUTE_32F)                               \
        };                                                                   \
                                                                             \
        if (amp_call_begin(&h, &c, &status) == AMP_HOOK_DONE)                \
            return status;                                                   \
    }                                                                        \
    return amp_call_end(&h, real(                                            \
        handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,     \
        ldb, beta, C, Ctype, ldc));                                          \
}
AMP_DEFINE_SGEMM_EX(cublasSgemmEx, int)
AMP_DEFINE_SGEMM_EX(cublasSgemmEx_64, int64_t)

#define AMP_DEFINE_GEMM_EX(name, int_t)                                      \
AMP_EXPORT cublasStatus_t                                                    \
name(cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, int_t m, int_t n, int_t k,                    \
     const void *alpha, const void *A, cudaDataType Atype, int_t lda,        \
     const void *B, cudaDataType Btype, int_t ldb, const void *beta,         \
     void *C, cudaDataType Ctype, int_t ldc,                                 \
     cublasComputeType_t computeType, cublasGemmAlgo_t algo)                 \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real)) {                                                 \
        const struct amp_call c = {                                          \
            AMP_CALL_COMMON(name), AMP_CALL_ONE, .a = A, .b = B, .c = C,     \
            AMP_CALL_TYPES(computeType),                                     \
            .algo_unknown = !amp_algo_known(algo)                            \
        };                                                                   \
                                                                             \
        if (amp_call_begin(&h, &c, &status) == AMP_HOOK_DONE)                \
            return status;                                                   \
    }                                                                        \
    return amp_call_end(&h, real(                                            \
        handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,     \
        ldb, beta, C, Ctype, ldc, computeType, algo));                       \
}
AMP_DEFINE_GEMM_EX(cublasGemmEx, int)
AMP_DEFINE_GEMM_EX(cublasGemmEx_64, int64_t)

#define AMP_DEFINE_GEMM_BATCHED_EX(name, int_t)                              \
AMP_EXPORT cublasStatus_t                                                    \
name(cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, int_t m, int_t n, int_t k,                    \
     const void *alpha, const void *const Aarray[], cudaDataType Atype,      \
     int_t lda, const void *const Barray[], cudaDataType Btype,              \
     int_t ldb, const void *beta, void *const Carray[],                      \
     cudaDataType Ctype, int_t ldc, int_t batchCount,                        \
     cublasComputeType_t computeType, cublasGemmAlgo_t algo)                 \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real)) {                                                 \
        const struct amp_call c = {                                          \
            AMP_CALL_COMMON(name), AMP_CALL_ARRAY(batchCount),               \
            AMP_CALL_TYPES(computeType),                                     \
            .algo_unknown = !amp_algo_known(algo)                            \
        };                                                                   \
                                                                             \
        if (amp_call_begin(&h, &c, &status) == AMP_HOOK_DONE)                \
            return status;                                                   \
    }                                                                        \
    return amp_call_end(&h, real(                                            \
        handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda,          \
        Barray, Btype, ldb, beta, Carray, Ctype, ldc, batchCount,            \
        computeType, algo));                                                 \
}
AMP_DEFINE_GEMM_BATCHED_EX(cublasGemmBatchedEx, int)
AMP_DEFINE_GEMM_BATCHED_EX(cublasGemmBatchedEx_64, int64_t)

#define AMP_DEFINE_GEMM_STRIDED_EX(name, int_t)                              \
AMP_EXPORT cublasStatus_t                                                    \
name(cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, int_t m, int_t n, int_t k,                    \
     const void *alpha, const void *A, cudaDataType Atype, int_t lda,        \
     long long int strideA, const void *B, cudaDataType Btype,               \
     int_t ldb, long long int strideB, const void *beta, void *C,            \
     cudaDataType Ctype, int_t ldc, long long int strideC,                   \
     int_t batchCount, cublasComputeType_t computeType,                      \
     cublasGemmAlgo_t algo)                                                  \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real)) {                                                 \
        const struct amp_call c = {                                          \
            AMP_CALL_COMMON(name), AMP_CALL_STRIDED(batchCount), .a = A,     \
            .b = B, .c = C, AMP_CALL_TYPES(computeType),                     \
            .algo_unknown = !amp_algo_known(algo)                            \
        };                                                                   \
                                                                             \
        if (amp_call_begin(&h, &c, &status) == AMP_HOOK_DONE)                \
            return status;                                                   \
    }                                                                        \
    return amp_call_end(&h, real(                                            \
        handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,   \
        Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount,       \
        computeType, algo));                                                 \
}
AMP_DEFINE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx, int)
AMP_DEFINE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx_64, int64_t)

/* The grouped arguments that all four grouped entry points name alike. */
#define AMP_GROUPED_COMMON(name)                                             \
    .api = AMP_API_##name, .caller = __builtin_return_address(0),            \
    .route = &route, .missing = !real,                                       \
    .handle = handle, .transa = transa_array, .transb = transb_array,        \
    .a = (const void *const *)Aarray,                                        \
    .b = (const void *const *)Barray, .c = (void *const *)Carray,            \
    .group_count = group_count, .alpha = alpha_array, .beta = beta_array
#define AMP_GROUPED_INTS(field)                                              \
    .m = {.field = m_array}, .n = {.field = n_array},                        \
    .k = {.field = k_array}, .lda = {.field = lda_array},                    \
    .ldb = {.field = ldb_array}, .ldc = {.field = ldc_array},                \
    .group_size = {.field = group_size}

#define AMP_DEFINE_SGEMM_GROUPED(name, int_t, field)                         \
AMP_EXPORT cublasStatus_t                                                    \
name(cublasHandle_t handle, const cublasOperation_t transa_array[],          \
     const cublasOperation_t transb_array[], const int_t m_array[],          \
     const int_t n_array[], const int_t k_array[],                           \
     const float alpha_array[], const float *const Aarray[],                 \
     const int_t lda_array[], const float *const Barray[],                   \
     const int_t ldb_array[], const float beta_array[],                      \
     float *const Carray[], const int_t ldc_array[], int_t group_count,      \
     const int_t group_size[])                                               \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real)) {                                                 \
        const struct amp_grouped_call g = {                                  \
            AMP_GROUPED_COMMON(name), AMP_GROUPED_INTS(field),              \
            AMP_FP32_TYPES                                                   \
        };                                                                   \
                                                                             \
        if (amp_grouped_begin(&h, &g, &status) == AMP_HOOK_DONE)             \
            return status;                                                   \
    }                                                                        \
    return amp_call_end(&h, real(                                            \
        handle, transa_array, transb_array, m_array, n_array, k_array,       \
        alpha_array, Aarray, lda_array, Barray, ldb_array, beta_array,       \
        Carray, ldc_array, group_count, group_size));                        \
}
AMP_DEFINE_SGEMM_GROUPED(cublasSgemmGroupedBatched, int, i32)
AMP_DEFINE_SGEMM_GROUPED(cublasSgemmGroupedBatched_64, int64_t, i64)

#define AMP_DEFINE_GEMM_GROUPED_EX(name, int_t, field)                       \
AMP_EXPORT cublasStatus_t                                                    \
name(cublasHandle_t handle, const cublasOperation_t transa_array[],          \
     const cublasOperation_t transb_array[], const int_t m_array[],          \
     const int_t n_array[], const int_t k_array[],                           \
     const void *alpha_array, const void *const Aarray[],                    \
     cudaDataType_t Atype, const int_t lda_array[],                          \
     const void *const Barray[], cudaDataType_t Btype,                       \
     const int_t ldb_array[], const void *beta_array,                        \
     void *const Carray[], cudaDataType_t Ctype,                             \
     const int_t ldc_array[], int_t group_count,                             \
     const int_t group_size[], cublasComputeType_t computeType)              \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real)) {                                                 \
        const struct amp_grouped_call g = {                                  \
            AMP_GROUPED_COMMON(name), AMP_GROUPED_INTS(field), .ex = 1,      \
            AMP_CALL_TYPES(computeType)                                      \
        };                                                                   \
                                                                             \
        if (amp_grouped_begin(&h, &g, &status) == AMP_HOOK_DONE)             \
            return status;                                                   \
    }                                                                        \
    return amp_call_end(&h, real(                                            \
        handle, transa_array, transb_array, m_array, n_array, k_array,       \
        alpha_array, Aarray, Atype, lda_array, Barray, Btype, ldb_array,     \
        beta_array, Carray, Ctype, ldc_array, group_count, group_size,       \
        computeType));                                                       \
}
AMP_DEFINE_GEMM_GROUPED_EX(cublasGemmGroupedBatchedEx, int, i32)
AMP_DEFINE_GEMM_GROUPED_EX(cublasGemmGroupedBatchedEx_64, int64_t, i64)

/* ---- Counted only: GEMMs in other precisions --------------------------------- */

/* The guard of a counted call: 1 when the hook returns *status now (the
 * real function is missing); 0 when it runs the original call, counted by
 * amp_counted_end when h->entered. No descriptor, policy or device work. */
static int
amp_counted_begin(struct amp_hook *h, enum amp_cublas_api api, int missing,
                  cublasStatus_t *status)
{
    h->entered = 0;
    if (missing) {
        *status = CUBLAS_STATUS_NOT_INITIALIZED;
        return 1;
    }
    amp_hook_enter(h, &amp_cublas_stats[api]);
    return 0;
}

/* After the original call of a counted hook that was entered: one
 * passthrough call of kind `cover` whose FLOPs count when cuBLAS took
 * it. */
static void
amp_counted_end(struct amp_hook *h, enum amp_cover cover, double flops,
                cublasStatus_t status)
{
    amp_stats_count(h->stats, AMP_OUTCOME_PASSTHROUGH);
    amp_cover_add(cover, status == CUBLAS_STATUS_SUCCESS ? flops : 0.0);
    amp_shim_leave();
}

/* One counted hook: `params` is the symbol list's parameter list, `args`
 * the call of the real function with them, `flops` the work of the call
 * (evaluated only when it is counted). */
#define AMP_DEFINE_COUNTED(name, params, args, cover, flops)                 \
AMP_EXPORT cublasStatus_t                                                    \
name params                                                                  \
{                                                                            \
    struct amp_hook h;                                                       \
    cublasStatus_t status;                                                   \
                                                                             \
    AMP_HOOK_REAL(name);                                                     \
    h.entered = 0;                                                           \
    if (!AMP_BYPASS(real) &&                                                 \
        amp_counted_begin(&h, AMP_API_##name, !real, &status))               \
        return status;                                                       \
    status = real args;                                                      \
    if (h.entered)                                                           \
        amp_counted_end(&h, route.other ? AMP_COVER_COUNT : (cover),         \
                        flops, status);                                      \
    return status;                                                           \
}

#define AMP_GEMM_ARGS                                                        \
    (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
#define AMP_GEMM_BATCHED_ARGS                                                \
    (handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb,       \
     beta, Carray, ldc, batchCount)
#define AMP_GEMM_STRIDED_ARGS                                                \
    (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb,        \
     strideB, beta, C, ldc, strideC, batchCount)
#define AMP_CGEMM_EX_ARGS                                                    \
    (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,   \
     beta, C, Ctype, ldc)

/* Each form in both ABIs (int and int64_t sizes), for elements T whose
 * coverage kind is `cover` (complex: 8 FLOPs per multiply-add). */
#define AMP_DEFINE_COUNTED_GEMM(name, T, cover, cplx)                        \
    AMP_DEFINE_COUNTED(name, AMP_GEMM_PARAMS(int, T), AMP_GEMM_ARGS, cover,  \
        amp_cover_gemm_flops(m, n, k, 1, cplx))                              \
    AMP_DEFINE_COUNTED(name##_64, AMP_GEMM_PARAMS(int64_t, T),               \
        AMP_GEMM_ARGS, cover, amp_cover_gemm_flops(m, n, k, 1, cplx))
#define AMP_DEFINE_COUNTED_BATCHED(name, T, cover, cplx)                     \
    AMP_DEFINE_COUNTED(name, AMP_GEMM_BATCHED_PARAMS(int, T),                \
        AMP_GEMM_BATCHED_ARGS, cover,                                        \
        amp_cover_gemm_flops(m, n, k, batchCount, cplx))                     \
    AMP_DEFINE_COUNTED(name##_64, AMP_GEMM_BATCHED_PARAMS(int64_t, T),       \
        AMP_GEMM_BATCHED_ARGS, cover,                                        \
        amp_cover_gemm_flops(m, n, k, batchCount, cplx))
#define AMP_DEFINE_COUNTED_STRIDED(name, T, cover, cplx)                     \
    AMP_DEFINE_COUNTED(name, AMP_GEMM_STRIDED_PARAMS(int, T),                \
        AMP_GEMM_STRIDED_ARGS, cover,                                        \
        amp_cover_gemm_flops(m, n, k, batchCount, cplx))                     \
    AMP_DEFINE_COUNTED(name##_64, AMP_GEMM_STRIDED_PARAMS(int64_t, T),       \
        AMP_GEMM_STRIDED_ARGS, cover,                                        \
        amp_cover_gemm_flops(m, n, k, batchCount, cplx))
#define AMP_DEFINE_COUNTED_CGEMM_EX(name)                                    \
    AMP_DEFINE_COUNTED(name, AMP_CGEMM_EX_PARAMS(int), AMP_CGEMM_EX_ARGS,    \
        AMP_COVER_COMPLEX, amp_cover_gemm_flops(m, n, k, 1, 1))              \
    AMP_DEFINE_COUNTED(name##_64, AMP_CGEMM_EX_PARAMS(int64_t),              \
        AMP_CGEMM_EX_ARGS, AMP_COVER_COMPLEX,                                \
        amp_cover_gemm_flops(m, n, k, 1, 1))

AMP_DEFINE_COUNTED_GEMM(cublasDgemm_v2, double, AMP_COVER_FP64, 0)
AMP_DEFINE_COUNTED_BATCHED(cublasDgemmBatched, double, AMP_COVER_FP64, 0)
AMP_DEFINE_COUNTED_STRIDED(cublasDgemmStridedBatched, double, AMP_COVER_FP64,
                           0)
AMP_DEFINE_COUNTED_GEMM(cublasCgemm_v2, cuComplex, AMP_COVER_COMPLEX, 1)
AMP_DEFINE_COUNTED_GEMM(cublasCgemm3m, cuComplex, AMP_COVER_COMPLEX, 1)
AMP_DEFINE_COUNTED_BATCHED(cublasCgemmBatched, cuComplex, AMP_COVER_COMPLEX,
                           1)
AMP_DEFINE_COUNTED_BATCHED(cublasCgemm3mBatched, cuComplex,
                           AMP_COVER_COMPLEX, 1)
AMP_DEFINE_COUNTED_STRIDED(cublasCgemmStridedBatched, cuComplex,
                           AMP_COVER_COMPLEX, 1)
AMP_DEFINE_COUNTED_STRIDED(cublasCgemm3mStridedBatched, cuComplex,
                           AMP_COVER_COMPLEX, 1)
AMP_DEFINE_COUNTED_CGEMM_EX(cublasCgemmEx)
AMP_DEFINE_COUNTED_CGEMM_EX(cublasCgemm3mEx)
AMP_DEFINE_COUNTED_GEMM(cublasZgemm_v2, cuDoubleComplex, AMP_COVER_COMPLEX, 1)
AMP_DEFINE_COUNTED_GEMM(cublasZgemm3m, cuDoubleComplex, AMP_COVER_COMPLEX, 1)
AMP_DEFINE_COUNTED_BATCHED(cublasZgemmBatched, cuDoubleComplex,
                           AMP_COVER_COMPLEX, 1)
AMP_DEFINE_COUNTED_STRIDED(cublasZgemmStridedBatched, cuDoubleComplex,
                           AMP_COVER_COMPLEX, 1)
AMP_DEFINE_COUNTED_GEMM(cublasHgemm, void, AMP_COVER_HALF, 0)
AMP_DEFINE_COUNTED_BATCHED(cublasHgemmBatched, void, AMP_COVER_HALF, 0)
AMP_DEFINE_COUNTED_STRIDED(cublasHgemmStridedBatched, void, AMP_COVER_HALF, 0)

/* The grouped FP64 GEMM: its FLOPs are each group's. */
#define AMP_DGEMM_GROUPED_ARGS                                               \
    (handle, transa_array, transb_array, m_array, n_array, k_array,          \
     alpha_array, Aarray, lda_array, Barray, ldb_array, beta_array, Carray,  \
     ldc_array, group_count, group_size)
#define AMP_GROUPED_FLOPS(field)                                             \
    amp_grouped_flops(&(const struct amp_grouped_call){                      \
        .m = {.field = m_array}, .n = {.field = n_array},                    \
        .k = {.field = k_array}, .group_size = {.field = group_size},        \
        .group_count = group_count}, 0)
AMP_DEFINE_COUNTED(cublasDgemmGroupedBatched,
                   AMP_GEMM_GROUPED_PARAMS(int, double),
                   AMP_DGEMM_GROUPED_ARGS, AMP_COVER_FP64,
                   AMP_GROUPED_FLOPS(i32))
AMP_DEFINE_COUNTED(cublasDgemmGroupedBatched_64,
                   AMP_GEMM_GROUPED_PARAMS(int64_t, double),
                   AMP_DGEMM_GROUPED_ARGS, AMP_COVER_FP64,
                   AMP_GROUPED_FLOPS(i64))
