/* The steps of a converted cublasLtMatmul: cublasLtMatmul calls on the
 * shim's own cuBLASLt handle (one per thread and context), with
 * descriptors initialised in the shim's memory (the program's SM count
 * target kept), the algorithm the heuristics chose for them (cached per
 * shape, per thread and context, the least recently used forgotten
 * first: the program's was chosen for FP32 operands) and the program's
 * workspace, or one of the size they need in the call's scratch when it
 * gave none. */
#include "cublaslt_real.h"
#include "cublaslt_steps.h"

#include "base/log.h"
#include "base/lru.h"
#include "cublas_hook.h"
#include "device/device.h"
#include "measure/stats.h"
#include "own.h"
#include "run/gemm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The workspace a converted call gives cuBLASLt when the program gave
 * none: the cuBLAS API Reference's recommendation for cublasSetWorkspace
 * (32 MiB on Hopper and later, compute capability 9.0 up; 4 MiB before),
 * which PyTorch follows for its cuBLASLt workspace on Hopper and
 * Blackwell (getChosenWorkspaceSize). The heuristics keep within it, and
 * the call allocates what its algorithms need, stream-ordered beside its
 * scratch. A program's own workspace is the converted call's: split-K
 * and stream-K algorithms need room. */
#define AMP_LT_WORKSPACE_HOPPER ((uint64_t)32 << 20)
#define AMP_LT_WORKSPACE_BEFORE ((uint64_t)4 << 20)

/* Heuristic answers each thread keeps per context: a model's products,
 * hundreds of shapes. */
#define AMP_LT_ALGOS 512

/* ---- The shim's own handle and heuristic answers ------------------------- */


/* A key of the shim's steps: everything of a step's descriptors that can
 * change the algorithm the heuristics choose. Zeroed before it is filled,
 * so that it compares as bytes. */
struct amp_lt_key {
    int32_t compute, type_ab, transa, transb, pointer_mode;
    int32_t sm_count_target;
    uint32_t epilogue;
    int32_t order_a, order_b, order_cd, in_place;
    int64_t m, n, k, lda, ldb, ldc, ldd, batch;
    int64_t stride_a, stride_b, stride_c, stride_d;
    uint32_t align_a, align_b, align_c, align_d;
    uint32_t align_bias, align_aux; /* 0: the epilogue has none */
    uint64_t workspace;
};

/* The heuristics' answer for a key (its value in the own's map). */
struct amp_lt_algo {
    int found;                 /* 0: the heuristics had none */
    cublasLtMatmulAlgo_t algo;
    size_t workspace;          /* what it needs */
};

struct amp_lt_own {
    cublasLtHandle_t handle;
    struct amp_lru algos;      /* struct amp_lt_key -> struct amp_lt_algo */
};

static int
amp_lt_own_make(void *obj)
{
    struct amp_lt_own *own = obj;

    if (amp_lru_init(&own->algos, AMP_LT_ALGOS, sizeof(struct amp_lt_key),
                     sizeof(struct amp_lt_algo)) != AMP_OK)
        return 1;
    if (amp_lt_fn.cublasLtCreate(&own->handle) == CUBLAS_STATUS_SUCCESS)
        return 0;
    amp_lru_fini(&own->algos, NULL, NULL);
    return 1;
}

static void
amp_lt_own_drop(void *obj, int live)
{
    struct amp_lt_own *own = obj;

    amp_lru_fini(&own->algos, NULL, NULL);
    if (live)
        amp_lt_fn.cublasLtDestroy(own->handle);
}

static _Thread_local struct amp_own_table amp_lt_owns;

static void amp_lt_own_exit(void);

static const struct amp_own_kind amp_lt_own_kind = {
    .what = "cuBLASLt handle",
    .size = sizeof(struct amp_lt_own),
    .make = amp_lt_own_make,
    .drop = amp_lt_own_drop,
    .at_exit = amp_lt_own_exit,
};

static void
amp_lt_own_exit(void)
{
    amp_own_release(&amp_lt_owns, &amp_lt_own_kind);
}

void *
amp_lt_own_get(struct amp_dev *dev, int make)
{
    amp_once(&amp_lt_once, amp_lt_resolve);
    if (!amp_lt_complete)
        return NULL;
    return amp_own_get(&amp_lt_owns, &amp_lt_own_kind, dev, make);
}

/* ---- The steps of a converted call ----------------------------------------- */

static cudaDataType
amp_lt_type(enum amp_dtype t)
{
    if (t == AMP_DTYPE_F16)
        return CUDA_R_16F;
    if (t == AMP_DTYPE_BF16)
        return CUDA_R_16BF;
    return CUDA_R_32F;
}

/* The largest power of two up to 256 that divides the address: what the
 * heuristics may assume of a pointer. */
uint32_t
amp_lt_align(amp_devptr p)
{
    uint32_t a = 256;

    while (a > 1 && p % a != 0)
        a /= 2;
    return a;
}

/* The descriptors of one step, in the shim's memory. */
struct amp_lt_step_descs {
    cublasLtMatmulDescOpaque_t op;
    cublasLtMatrixLayoutOpaque_t a, b, c, d;
    int in_place;              /* C is D, with D's layout */
    struct amp_lt_key key;
};

static int
amp_lt_set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
           const void *buf, size_t size)
{
    return amp_lt_fn.cublasLtMatmulDescSetAttribute(desc, attr, buf, size) ==
           CUBLAS_STATUS_SUCCESS;
}

/* A layout of rows x cols in `order`, with a strided batch when batch > 1. */
static int
amp_lt_layout(cublasLtMatrixLayout_t l, cudaDataType type, uint64_t rows,
              uint64_t cols, int64_t ld, int32_t order, int64_t batch,
              int64_t stride)
{
    int32_t count = (int32_t)batch;

    return amp_lt_fn.cublasLtMatrixLayoutInit_internal(
               l, sizeof(cublasLtMatrixLayoutOpaque_t), type, rows, cols,
               ld) == CUBLAS_STATUS_SUCCESS &&
           amp_lt_fn.cublasLtMatrixLayoutSetAttribute(
               l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order) ==
               CUBLAS_STATUS_SUCCESS &&
           (batch <= 1 ||
            (amp_lt_fn.cublasLtMatrixLayoutSetAttribute(
                 l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                 sizeof count) == CUBLAS_STATUS_SUCCESS &&
             amp_lt_fn.cublasLtMatrixLayoutSetAttribute(
                 l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                 sizeof stride) == CUBLAS_STATUS_SUCCESS));
}

/* The epilogue settings the step carries: the call's, without its
 * auxiliary output for AMP_EPILOGUE_NO_AUX. */
static int
amp_lt_epilogue(cublasLtMatmulDesc_t op, const struct amp_lt_call *c,
                enum amp_epilogue which, uint32_t *epilogue)
{
    *epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    if (which == AMP_EPILOGUE_NONE)
        return 1;
    *epilogue = which == AMP_EPILOGUE_NO_AUX ? c->epilogue & ~128u
                                             : c->epilogue;
    if (!amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue,
                    sizeof *epilogue))
        return 0;
    if ((*epilogue & CUBLASLT_EPILOGUE_BIAS) &&
        (!amp_lt_set(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c->bias,
                     sizeof c->bias) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                     &c->bias_stride, sizeof c->bias_stride) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &c->bias_type,
                     sizeof c->bias_type)))
        return 0;
    if ((*epilogue & 128u) &&
        (!amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &c->aux,
                     sizeof c->aux) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &c->aux_ld,
                     sizeof c->aux_ld) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
                     &c->aux_stride, sizeof c->aux_stride) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
                     &c->aux_type, sizeof c->aux_type)))
        return 0;
    return 1;
}

/* The pointer mode of a step's alpha and beta. */
static int32_t
amp_lt_pointer_mode(const struct amp_gemm_step *s)
{
    if (!s->alpha_vector)
        return s->scalars_on_device ? CUBLASLT_POINTER_MODE_DEVICE
                                    : CUBLASLT_POINTER_MODE_HOST;
    switch (s->beta_kind) {
    case AMP_BETA_ZERO:
        return CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
    case AMP_BETA_HOST:
        return CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;
    default:
        return CUBLASLT_POINTER_MODE_DEVICE_VECTOR;
    }
}

/* The emulation descriptor of bf16x9 steps: the EAGER strategy. Made
 * once, in the shim's memory for the process's life; NULL when the
 * library has no emulation (before cuBLAS 12.9). */
static cublasLtEmulationDescOpaque_t amp_lt_eager_desc;
static int amp_lt_eager_made;
static pthread_once_t amp_lt_eager_once = PTHREAD_ONCE_INIT;

static void
amp_lt_eager_make(void)
{
    int32_t strategy = CUBLAS_EMULATION_STRATEGY_EAGER;

    amp_lt_eager_made =
        amp_lt_fn.cublasLtEmulationDescInit_internal &&
        amp_lt_fn.cublasLtEmulationDescSetAttribute &&
        amp_lt_fn.cublasLtEmulationDescInit_internal(
            &amp_lt_eager_desc, sizeof amp_lt_eager_desc) ==
            CUBLAS_STATUS_SUCCESS &&
        amp_lt_fn.cublasLtEmulationDescSetAttribute(
            &amp_lt_eager_desc, CUBLASLT_EMULATION_DESC_STRATEGY, &strategy,
            sizeof strategy) == CUBLAS_STATUS_SUCCESS;
}

static cublasLtEmulationDesc_t
amp_lt_eager(void)
{
    pthread_once(&amp_lt_eager_once, amp_lt_eager_make);
    return amp_lt_eager_made ? &amp_lt_eager_desc : NULL;
}

/* Initialises the step's descriptors and its heuristic key, for
 * algorithms within `workspace` bytes. */
static int
amp_lt_step_descs(const struct amp_lt_call *c, const struct amp_gemm_desc *d,
                  const struct amp_gemm_step *s, uint64_t workspace,
                  struct amp_lt_step_descs *x)
{
    cudaDataType tab = amp_lt_type(s->type_ab);
    cublasComputeType_t compute =
        (cublasComputeType_t)amp_compute_vendor(s->compute);
    cublasLtEmulationDesc_t eager = NULL;
    int32_t mode = amp_lt_pointer_mode(s);
    int32_t order_cd = c->d.order;
    struct amp_lt_key *k = &x->key;
    uint32_t epilogue;
    /* tf32x3: op(A) m x 3k, op(B) 3k x n (k_parts); the layouts'
     * dimension along K triples, the copies' ld holds it. */
    uint64_t parts = s->k_parts ? (uint64_t)s->k_parts : 1;
    uint64_t a_rows = c->a.rows * (c->transa == CUBLAS_OP_N ? 1 : parts);
    uint64_t a_cols = c->a.cols * (c->transa == CUBLAS_OP_N ? parts : 1);
    uint64_t b_rows = c->b.rows * (c->transb == CUBLAS_OP_N ? parts : 1);
    uint64_t b_cols = c->b.cols * (c->transb == CUBLAS_OP_N ? 1 : parts);

    x->in_place = s->c == s->d && s->ldc == s->ldd &&
                  s->stride_c == s->stride_d;
    if (amp_lt_fn.cublasLtMatmulDescInit_internal(
            &x->op, sizeof x->op, compute, CUDA_R_32F) !=
            CUBLAS_STATUS_SUCCESS ||
        !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode,
                    sizeof mode) ||
        (s->alpha_stride &&
         !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE,
                     &s->alpha_stride, sizeof s->alpha_stride)) ||
        !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_TRANSA, &c->transa,
                    sizeof c->transa) ||
        !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_TRANSB, &c->transb,
                    sizeof c->transb) ||
        /* The SMs the program leaves its products: the heuristics and
         * the kernels keep to them. */
        (c->sm_count_target &&
         !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                     &c->sm_count_target, sizeof c->sm_count_target)) ||
        !amp_lt_epilogue(&x->op, c, s->epilogue, &epilogue))
        return 0;
    /* bf16x9 is emulated whatever the sizes (PERFORMANT, the default,
     * might run FP32 under its name). */
    if (compute == CUBLAS_COMPUTE_32F_EMULATED_16BFX9 &&
        ((eager = amp_lt_eager()) == NULL ||
         !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR,
                     &eager, sizeof eager)))
        return 0;
    if (!amp_lt_layout(&x->a, tab, a_rows, a_cols, s->lda, c->a.order,
                       s->batch, s->stride_a) ||
        !amp_lt_layout(&x->b, tab, b_rows, b_cols, s->ldb, c->b.order,
                       s->batch, s->stride_b) ||
        !amp_lt_layout(&x->d, CUDA_R_32F, c->d.rows, c->d.cols, s->ldd,
                       order_cd, s->batch, s->stride_d) ||
        (!x->in_place &&
         !amp_lt_layout(&x->c, CUDA_R_32F, c->d.rows, c->d.cols, s->ldc,
                        order_cd, s->batch, s->stride_c)))
        return 0;
    memset(k, 0, sizeof *k);
    k->compute = compute;
    k->type_ab = tab;
    k->transa = c->transa;
    k->transb = c->transb;
    k->pointer_mode = mode;
    k->sm_count_target = c->sm_count_target;
    k->epilogue = epilogue;
    k->order_a = c->a.order;
    k->order_b = c->b.order;
    k->order_cd = order_cd;
    k->in_place = x->in_place;
    k->m = d->m;
    k->n = d->n;
    k->k = d->k * (int64_t)parts;
    k->lda = s->lda;
    k->ldb = s->ldb;
    k->ldc = s->ldc;
    k->ldd = s->ldd;
    k->batch = s->batch;
    k->stride_a = s->stride_a;
    k->stride_b = s->stride_b;
    k->stride_c = s->stride_c;
    k->stride_d = s->stride_d;
    k->align_a = amp_lt_align(s->a);
    k->align_b = amp_lt_align(s->b);
    k->align_c = amp_lt_align(s->c);
    k->align_d = amp_lt_align(s->d);
    /* The epilogue's pointers count by what the heuristics may assume of
     * them, not by address: a layer's bias is not a shape of its own. */
    if (epilogue & CUBLASLT_EPILOGUE_BIAS)
        k->align_bias = amp_lt_align((amp_devptr)(uintptr_t)c->bias);
    if (epilogue & 128u)
        k->align_aux = amp_lt_align((amp_devptr)(uintptr_t)c->aux);
    k->workspace = workspace;
    return 1;
}


/* The algorithm the heuristics give the step's descriptors, asked once per
 * key and thread (the answer, none included, is kept); NULL when there is
 * none. */
static const struct amp_lt_algo *
amp_lt_algo(struct amp_lt_own *own, struct amp_lt_step_descs *x)
{
    struct amp_lt_algo *slot = amp_lru_find(&own->algos, &x->key);
    cublasLtMatmulPreferenceOpaque_t pref;
    cublasLtMatmulHeuristicResult_t result;
    const uint32_t *align = &x->key.align_a;
    int count = 0, i;

    if (slot)
        return slot->found ? slot : NULL;
    slot = amp_lru_add(&own->algos, &x->key, NULL, NULL);
    if (!slot)
        return NULL; /* the map could not be set up */
    if (amp_lt_fn.cublasLtMatmulPreferenceInit_internal(&pref, sizeof pref) !=
            CUBLAS_STATUS_SUCCESS ||
        amp_lt_fn.cublasLtMatmulPreferenceSetAttribute(
            &pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            &x->key.workspace, sizeof x->key.workspace) !=
            CUBLAS_STATUS_SUCCESS)
        return NULL;
    for (i = 0; i < 4; i++)
        if (amp_lt_fn.cublasLtMatmulPreferenceSetAttribute(
                &pref,
                (cublasLtMatmulPreferenceAttributes_t)(
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i),
                &align[i], sizeof align[i]) != CUBLAS_STATUS_SUCCESS)
            return NULL;
    atomic_fetch_add(&amp_lt_stats.heuristic_queries, 1);
    if (amp_lt_fn.cublasLtMatmulAlgoGetHeuristic(
            own->handle, &x->op, &x->a, &x->b, x->in_place ? &x->d : &x->c,
            &x->d, &pref, 1, &result, &count) != CUBLAS_STATUS_SUCCESS ||
        count < 1 || result.state != CUBLAS_STATUS_SUCCESS)
        return NULL;
    slot->algo = result.algo;
    slot->workspace = result.workspaceSize;
    slot->found = 1;
    return slot;
}

static cublasStatus_t
amp_lt_step_issue(struct amp_lt_own *own, const struct amp_gemm_run *run,
                  const struct amp_gemm_step *s, struct amp_lt_step_descs *x,
                  const struct amp_lt_algo *algo, amp_devptr workspace,
                  size_t workspace_bytes)
{
    return amp_lt_fn.cublasLtMatmul(
        own->handle, &x->op, s->alpha, (const void *)(uintptr_t)s->a, &x->a,
        (const void *)(uintptr_t)s->b, &x->b, s->beta,
        (const void *)(uintptr_t)s->c, x->in_place ? &x->d : &x->c,
        (void *)(uintptr_t)s->d, &x->d, &algo->algo,
        (void *)(uintptr_t)workspace, workspace_bytes,
        (cudaStream_t)run->stream);
}

/* Every step's descriptors and algorithm first, within the program's
 * workspace when it gave one (the steps then run in it, one after the
 * other on its stream, in place of its call), else within the default
 * for the device and in one workspace of the most they need
 * (stream-ordered, freed after the last); then the steps. */
enum amp_status
amp_lt_issue(void *own, const void *call, struct amp_gemm_run *run)
{
    const struct amp_lt_hooked *hooked = call;
    struct amp_lt_step_descs x[AMP_GEMM_MAX_STEPS];
    const struct amp_lt_algo *algo[AMP_GEMM_MAX_STEPS];
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    int given = hooked->workspace && hooked->call.workspace_size > 0;
    uint64_t limit = given ? hooked->call.workspace_size
                     : amp_dev_cc_major(run->dev) >= 9
                         ? AMP_LT_WORKSPACE_HOPPER
                         : AMP_LT_WORKSPACE_BEFORE;
    amp_devptr workspace = given ? (amp_devptr)(uintptr_t)hooked->workspace
                                 : 0;
    size_t need = 0;
    int i, in_graph = 0;

    for (i = 0; i < run->nsteps; i++) {
        if (!amp_lt_step_descs(&hooked->call, &run->desc, &run->steps[i],
                               limit, &x[i]) ||
            !(algo[i] = amp_lt_algo(own, &x[i]))) {
            amp_log(AMP_LOG_INFO, "cublasLtMatmul: no %s algorithm",
                    amp_mode_name(run->mode));
            return AMP_ERR_DRIVER;
        }
        if (algo[i]->workspace > need)
            need = algo[i]->workspace;
    }
    if (given)
        need = (size_t)limit;
    else if (need > 0 && amp_dev_alloc_async(run->dev, need, run->stream,
                                             &workspace, &in_graph) != AMP_OK)
        return AMP_ERR_DRIVER;
    for (i = 0; i < run->nsteps && s == CUBLAS_STATUS_SUCCESS; i++) {
        if (run->steps[i].fold_before && amp_gemm_before_step(run) != AMP_OK) {
            s = CUBLAS_STATUS_EXECUTION_FAILED;
            break;
        }
        s = amp_lt_step_issue(own, run, &run->steps[i], &x[i], algo[i],
                              workspace, need);
    }
    if (workspace && !given)
        amp_dev_free_async(workspace, run->stream, in_graph);
    if (s == CUBLAS_STATUS_SUCCESS)
        return AMP_OK;
    amp_log(AMP_LOG_INFO, "cublasLtMatmul: a %s step returned cuBLAS status "
            "%d", amp_mode_name(run->mode), (int)s);
    return AMP_ERR_DRIVER;
}
