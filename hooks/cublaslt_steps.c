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
#include "base/shim.h"
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
    int32_t zero;               /* 0: the key has no padding */
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

/* Everything a step's descriptors are made from (amp_lt_step_make reads
 * nothing else): what the heuristics see (the key) and what they do not,
 * the epilogue's pointers and strides and the layouts' sizes. It has no
 * padding and every field is written, so that it compares as bytes. */
struct amp_lt_step_in {
    struct amp_lt_key key;
    int64_t alpha_stride;
    const void *bias;          /* these four: 0 without a bias epilogue */
    int64_t bias_stride;
    int32_t bias_type;
    int32_t aux_type;          /* these four: 0 without an aux output */
    void *aux;
    int64_t aux_ld, aux_stride;
    uint64_t a_rows, a_cols, b_rows, b_cols, d_rows, d_cols;
};

_Static_assert(sizeof(struct amp_lt_key) == 12 * 4 + 12 * 8 + 6 * 4 + 8 &&
                   sizeof(struct amp_lt_step_in) ==
                       sizeof(struct amp_lt_key) + 6 * 8 + 2 * 4 + 6 * 8,
               "a step's inputs have no padding");

/* The descriptors of one step, in the shim's memory. */
struct amp_lt_step_descs {
    cublasLtMatmulDescOpaque_t op;
    cublasLtMatrixLayoutOpaque_t a, b, c, d;
};

/* A step made earlier on this own: its descriptors and algorithm, kept
 * for the next step made from the same inputs (a layer's next call). The
 * descriptors are plain memory that cuBLASLt reads when it is called, so
 * one set serves every such call. */
struct amp_lt_made {
    int valid;
    struct amp_lt_step_in in;
    struct amp_lt_step_descs x;
    struct amp_lt_algo algo;
};

/* Steps kept per own, by a hash of their inputs: a model's converted
 * products and their layers' bias pointers; a step whose place another
 * holds is made again (and takes the place). */
#define AMP_LT_MADE 64
_Static_assert(AMP_LT_MADE <= 64, "a call's places fit a 64-bit mask");

struct amp_lt_own {
    cublasLtHandle_t handle;
    struct amp_lru algos;      /* struct amp_lt_key -> struct amp_lt_algo */
    struct amp_lt_made made[AMP_LT_MADE];
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

static AMP_THREAD_HOT struct amp_own_table amp_lt_owns;

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
    return p % 256 == 0 ? 256 : (uint32_t)1 << __builtin_ctzll(p);
}

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

/* The epilogue the step carries: the call's, without its auxiliary
 * output for AMP_EPILOGUE_NO_AUX. */
static uint32_t
amp_lt_step_epilogue(const struct amp_lt_call *c, enum amp_epilogue which)
{
    if (which == AMP_EPILOGUE_NONE)
        return CUBLASLT_EPILOGUE_DEFAULT;
    return which == AMP_EPILOGUE_NO_AUX ? c->epilogue & ~128u : c->epilogue;
}

/* The step's epilogue and its settings on op, from in. */
static int
amp_lt_epilogue(cublasLtMatmulDesc_t op, const struct amp_lt_step_in *in)
{
    uint32_t epilogue = in->key.epilogue;

    if (epilogue == CUBLASLT_EPILOGUE_DEFAULT)
        return 1;
    if (!amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                    sizeof epilogue))
        return 0;
    if ((epilogue & CUBLASLT_EPILOGUE_BIAS) &&
        (!amp_lt_set(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &in->bias,
                     sizeof in->bias) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                     &in->bias_stride, sizeof in->bias_stride) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &in->bias_type,
                     sizeof in->bias_type)))
        return 0;
    if ((epilogue & 128u) &&
        (!amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &in->aux,
                     sizeof in->aux) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &in->aux_ld,
                     sizeof in->aux_ld) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
                     &in->aux_stride, sizeof in->aux_stride) ||
         !amp_lt_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
                     &in->aux_type, sizeof in->aux_type)))
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

/* What the step's descriptors are made from, for algorithms within
 * `workspace` bytes. */
static void
amp_lt_step_in(const struct amp_lt_call *c, const struct amp_gemm_desc *d,
               const struct amp_gemm_step *s, uint64_t workspace,
               struct amp_lt_step_in *in)
{
    struct amp_lt_key *k = &in->key;
    /* tf32x3: op(A) m x 3k, op(B) 3k x n (k_parts); the layouts'
     * dimension along K triples, the copies' ld holds it. */
    uint64_t parts = s->k_parts ? (uint64_t)s->k_parts : 1;

    k->compute = amp_compute_vendor(s->compute);
    k->type_ab = amp_lt_type(s->type_ab);
    k->transa = c->transa;
    k->transb = c->transb;
    k->pointer_mode = amp_lt_pointer_mode(s);
    k->sm_count_target = c->sm_count_target;
    k->epilogue = amp_lt_step_epilogue(c, s->epilogue);
    k->order_a = c->a.order;
    k->order_b = c->b.order;
    k->order_cd = c->d.order;
    k->in_place = s->c == s->d && s->ldc == s->ldd &&
                  s->stride_c == s->stride_d;
    k->zero = 0;
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
    k->workspace = workspace;
    in->alpha_stride = s->alpha_stride;
    /* The epilogue's pointers count in the key by what the heuristics
     * may assume of them, not by address: a layer's bias is not a shape
     * of its own. */
    if (k->epilogue & CUBLASLT_EPILOGUE_BIAS) {
        k->align_bias = amp_lt_align((amp_devptr)(uintptr_t)c->bias);
        in->bias = c->bias;
        in->bias_stride = c->bias_stride;
        in->bias_type = c->bias_type;
    } else {
        k->align_bias = 0;
        in->bias = NULL;
        in->bias_stride = 0;
        in->bias_type = 0;
    }
    if (k->epilogue & 128u) {
        k->align_aux = amp_lt_align((amp_devptr)(uintptr_t)c->aux);
        in->aux = c->aux;
        in->aux_ld = c->aux_ld;
        in->aux_stride = c->aux_stride;
        in->aux_type = c->aux_type;
    } else {
        k->align_aux = 0;
        in->aux = NULL;
        in->aux_ld = 0;
        in->aux_stride = 0;
        in->aux_type = 0;
    }
    in->a_rows = c->a.rows * (c->transa == CUBLAS_OP_N ? 1 : parts);
    in->a_cols = c->a.cols * (c->transa == CUBLAS_OP_N ? parts : 1);
    in->b_rows = c->b.rows * (c->transb == CUBLAS_OP_N ? parts : 1);
    in->b_cols = c->b.cols * (c->transb == CUBLAS_OP_N ? 1 : parts);
    in->d_rows = c->d.rows;
    in->d_cols = c->d.cols;
}

/* Initialises the step's descriptors from in alone. */
static int
amp_lt_step_make(const struct amp_lt_step_in *in, struct amp_lt_step_descs *x)
{
    const struct amp_lt_key *k = &in->key;
    cudaDataType tab = (cudaDataType)k->type_ab;
    cublasComputeType_t compute = (cublasComputeType_t)k->compute;
    cublasLtEmulationDesc_t eager = NULL;

    if (amp_lt_fn.cublasLtMatmulDescInit_internal(
            &x->op, sizeof x->op, compute, CUDA_R_32F) !=
            CUBLAS_STATUS_SUCCESS ||
        !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_POINTER_MODE,
                    &k->pointer_mode, sizeof k->pointer_mode) ||
        (in->alpha_stride &&
         !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE,
                     &in->alpha_stride, sizeof in->alpha_stride)) ||
        !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_TRANSA, &k->transa,
                    sizeof k->transa) ||
        !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_TRANSB, &k->transb,
                    sizeof k->transb) ||
        /* The SMs the program leaves its products: the heuristics and
         * the kernels keep to them. */
        (k->sm_count_target &&
         !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                     &k->sm_count_target, sizeof k->sm_count_target)) ||
        !amp_lt_epilogue(&x->op, in))
        return 0;
    /* bf16x9 is emulated whatever the sizes (PERFORMANT, the default,
     * might run FP32 under its name). */
    if (compute == CUBLAS_COMPUTE_32F_EMULATED_16BFX9 &&
        ((eager = amp_lt_eager()) == NULL ||
         !amp_lt_set(&x->op, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR,
                     &eager, sizeof eager)))
        return 0;
    return amp_lt_layout(&x->a, tab, in->a_rows, in->a_cols, k->lda,
                         k->order_a, k->batch, k->stride_a) &&
           amp_lt_layout(&x->b, tab, in->b_rows, in->b_cols, k->ldb,
                         k->order_b, k->batch, k->stride_b) &&
           amp_lt_layout(&x->d, CUDA_R_32F, in->d_rows, in->d_cols, k->ldd,
                         k->order_cd, k->batch, k->stride_d) &&
           (k->in_place ||
            amp_lt_layout(&x->c, CUDA_R_32F, in->d_rows, in->d_cols, k->ldc,
                          k->order_cd, k->batch, k->stride_c));
}

/* The algorithm the heuristics give the step's descriptors, asked once per
 * key and thread (the answer, none included, is kept); NULL when there is
 * none. */
static const struct amp_lt_algo *
amp_lt_algo(struct amp_lt_own *own, const struct amp_lt_key *key,
            const struct amp_lt_step_descs *x)
{
    struct amp_lt_algo *slot = amp_lru_find(&own->algos, key);
    cublasLtMatmulPreferenceOpaque_t pref;
    cublasLtMatmulHeuristicResult_t result;
    const uint32_t *align = &key->align_a;
    int count = 0, i;

    if (slot)
        return slot->found ? slot : NULL;
    slot = amp_lru_add(&own->algos, key, NULL, NULL);
    if (!slot)
        return NULL; /* the map could not be set up */
    if (amp_lt_fn.cublasLtMatmulPreferenceInit_internal(&pref, sizeof pref) !=
            CUBLAS_STATUS_SUCCESS ||
        amp_lt_fn.cublasLtMatmulPreferenceSetAttribute(
            &pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &key->workspace,
            sizeof key->workspace) != CUBLAS_STATUS_SUCCESS)
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
            own->handle, (cublasLtMatmulDesc_t)&x->op,
            (cublasLtMatrixLayout_t)&x->a, (cublasLtMatrixLayout_t)&x->b,
            (cublasLtMatrixLayout_t)(key->in_place ? &x->d : &x->c),
            (cublasLtMatrixLayout_t)&x->d, &pref, 1, &result, &count) !=
            CUBLAS_STATUS_SUCCESS ||
        count < 1 || result.state != CUBLAS_STATUS_SUCCESS)
        return NULL;
    slot->algo = result.algo;
    slot->workspace = result.workspaceSize;
    slot->found = 1;
    return slot;
}

/* A hash of a step's inputs for its place among the made steps: the
 * fields that tell a model's products and layers apart, and one call's
 * steps (the whole of the inputs is compared). */
static unsigned
amp_lt_made_place(const struct amp_lt_step_in *in)
{
    const struct amp_lt_key *k = &in->key;
    uint64_t h = (uint64_t)k->m * 0x9e3779b97f4a7c15ull;

    h = (h ^ (uint64_t)k->n) * 0xc2b2ae3d27d4eb4full;
    h = (h ^ (uint64_t)k->k) * 0x165667b19e3779f9ull;
    h = (h ^ (uint64_t)(uintptr_t)in->bias ^
         ((uint64_t)k->compute << 32) ^ (uint64_t)k->lda) *
        0x27d4eb2f165667c5ull;
    h = (h ^ k->epilogue ^ ((uint64_t)k->pointer_mode << 16) ^
         ((uint64_t)k->in_place << 24)) *
        0x9e3779b97f4a7c15ull;
    return (unsigned)(h >> 58) % AMP_LT_MADE;
}

/* The step's descriptors and algorithm: the ones made for the same
 * inputs before, else made now into their place (unless `taken`, a place
 * an earlier step of this call uses, then into x). NULL when either
 * cannot be made. */
static const struct amp_lt_made *
amp_lt_step_get(struct amp_lt_own *own, const struct amp_lt_step_in *in,
                uint64_t taken, struct amp_lt_made *local)
{
    unsigned place = amp_lt_made_place(in);
    struct amp_lt_made *m = &own->made[place];
    const struct amp_lt_algo *algo;

    if (m->valid && memcmp(&m->in, in, sizeof *in) == 0)
        return m;
    if (taken & ((uint64_t)1 << place))
        m = local;
    m->valid = 0;
    m->in = *in;
    if (!amp_lt_step_make(in, &m->x) ||
        !(algo = amp_lt_algo(own, &in->key, &m->x)))
        return NULL;
    m->algo = *algo;
    m->valid = 1;
    return m;
}

static cublasStatus_t
amp_lt_step_issue(struct amp_lt_own *own, const struct amp_gemm_run *run,
                  const struct amp_gemm_step *s, const struct amp_lt_made *m,
                  amp_devptr workspace, size_t workspace_bytes)
{
    const struct amp_lt_step_descs *x = &m->x;

    return amp_lt_fn.cublasLtMatmul(
        own->handle, (cublasLtMatmulDesc_t)&x->op, s->alpha,
        (const void *)(uintptr_t)s->a, (cublasLtMatrixLayout_t)&x->a,
        (const void *)(uintptr_t)s->b, (cublasLtMatrixLayout_t)&x->b,
        s->beta, (const void *)(uintptr_t)s->c,
        (cublasLtMatrixLayout_t)(m->in.key.in_place ? &x->d : &x->c),
        (void *)(uintptr_t)s->d, (cublasLtMatrixLayout_t)&x->d,
        &m->algo.algo, (void *)(uintptr_t)workspace, workspace_bytes,
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
    struct amp_lt_own *lt = own;
    struct amp_lt_made local[AMP_GEMM_MAX_STEPS];
    const struct amp_lt_made *m[AMP_GEMM_MAX_STEPS];
    struct amp_lt_step_in in;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    int given = hooked->workspace && hooked->call->workspace_size > 0;
    uint64_t limit = given ? hooked->call->workspace_size
                     : amp_dev_cc_major(run->dev) >= 9
                         ? AMP_LT_WORKSPACE_HOPPER
                         : AMP_LT_WORKSPACE_BEFORE;
    amp_devptr workspace = given ? (amp_devptr)(uintptr_t)hooked->workspace
                                 : 0;
    size_t need = 0;
    uint64_t taken = 0;
    int i, in_graph = 0;

    for (i = 0; i < run->nsteps; i++) {
        amp_lt_step_in(hooked->call, &run->desc, &run->steps[i], limit, &in);
        if (!(m[i] = amp_lt_step_get(lt, &in, taken, &local[i]))) {
            amp_log(AMP_LOG_INFO, "cublasLtMatmul: no %s algorithm",
                    amp_mode_name(run->mode));
            return AMP_ERR_DRIVER;
        }
        if (m[i] != &local[i])
            taken |= (uint64_t)1 << (m[i] - lt->made);
        if (m[i]->algo.workspace > need)
            need = m[i]->algo.workspace;
    }
    if (given)
        need = (size_t)limit;
    else if (need > 0 &&
             amp_dev_alloc_async(run->dev, need, run->stream,
                                 run->desc.capture, &workspace,
                                 &in_graph) != AMP_OK)
        return AMP_ERR_DRIVER;
    for (i = 0; i < run->nsteps && s == CUBLAS_STATUS_SUCCESS; i++) {
        if (run->steps[i].fold_before && amp_gemm_before_step(run) != AMP_OK) {
            s = CUBLAS_STATUS_EXECUTION_FAILED;
            break;
        }
        s = amp_lt_step_issue(lt, run, &run->steps[i], m[i], workspace,
                              need);
    }
    if (workspace && !given)
        amp_dev_free_async(workspace, run->stream, in_graph);
    if (s == CUBLAS_STATUS_SUCCESS)
        return AMP_OK;
    amp_log(AMP_LOG_INFO, "cublasLtMatmul: a %s step returned cuBLAS status "
            "%d", amp_mode_name(run->mode), (int)s);
    return AMP_ERR_DRIVER;
}
