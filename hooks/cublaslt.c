/* cuBLASLt hook: an FP32 cublasLtMatmul (A, B, C and D FP32, a 32F compute
 * type, an FP32 scale) becomes a GEMM descriptor with its output D, its
 * orders and an epilogue, runs on the converted path the mode asks for
 * when the decision allows, and as the original call otherwise. The
 * program's descriptors are read at every call: it may initialise one
 * again in place. The steps, cublasLtMatmul calls on the shim's own
 * handle, are cublaslt_steps.c's; cuBLASLt's verdict on the program's
 * call is asked here, on the program's handle and descriptors. */
#include "cublaslt_real.h"
#include "cublaslt_steps.h"

#include "base/caller.h"
#include "base/log.h"
#include "base/lru.h"
#include "base/resolve.h"
#include "base/shim.h"
#include "cublas_hook.h"
#include "device/device.h"
#include "measure/settled.h"
#include "measure/stats.h"
#include "process/process.h"
#include "run/gemm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AMP_EXPORT __attribute__((visibility("default")))
#define AMP_CUBLASLT_SONAME "libcublasLt.so.13"

/* cuBLASLt's verdicts on programs' calls each thread keeps. */
#define AMP_LT_VERDICTS 512

/* Readings of the program's descriptors each thread keeps: a descriptor
 * per layer, a layout per shape. */
#define AMP_LT_READINGS 256
/* The last readings by the descriptors' addresses, a few per thread: a
 * program that calls with the same descriptor objects again (most do)
 * finds its reading by comparing their bytes, without hashing them. */
#define AMP_LT_RECENT 8

/* ---- The real functions --------------------------------------------------- */

struct amp_lt_fns amp_lt_fn;

#define AMP_NAME_STRING(ret, name, params) #name,
static const char *const amp_lt_names[] = {
    AMP_CUBLASLT_SYMBOLS(AMP_NAME_STRING)};
#undef AMP_NAME_STRING

#define AMP_REAL_SLOT(ret, name, params) (void **)&amp_lt_fn.name,
static void **const amp_lt_slots[] = {AMP_CUBLASLT_SYMBOLS(AMP_REAL_SLOT)};
#undef AMP_REAL_SLOT

#define AMP_LT_NSYMBOLS ((int)(sizeof amp_lt_names / sizeof *amp_lt_names))

struct amp_once amp_lt_once = AMP_ONCE_INIT;

/* 1 once the real functions are resolved and the shim is disabled (see
 * hooks/cublas.c). */
static atomic_int amp_lt_bypass;

int amp_lt_complete;

void
amp_lt_resolve(void)
{
    amp_lt_complete = amp_resolve_all(AMP_CUBLASLT_SONAME, amp_lt_names,
                                      amp_lt_slots, AMP_LT_NSYMBOLS) == 0;
    atomic_store_explicit(&amp_lt_bypass, amp_process_start()->disabled,
                          memory_order_release);
}

struct amp_api_stats amp_lt_stats =
    AMP_API_STATS_INIT("cublasLtMatmul");

/* The cublasLtMatmul that a call returning to ret runs as the program made
 * it, and in *route how it is served (base/caller.h): another release's
 * (its descriptors are laid out as that release lays them out: passed
 * through untouched), else the one the shim resolved; NULL when there is
 * none. */
static void *
amp_lt_real(const void *ret, struct amp_route *route)
{
    amp_process_start(); /* the log is open before resolution reports */
    amp_once(&amp_lt_once, amp_lt_resolve);
    *route = amp_route(AMP_LIB_CUBLASLT, amp_lt_names[0], ret);
    return route->other ? route->fn : (void *)*amp_lt_slots[0];
}

/* ---- A call as the application made it ----------------------------------- */

/* The call's types, which the steps read too: cublaslt_steps.h. */

static int
amp_lt_desc_get(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                void *buf, size_t size)
{
    size_t written = 0;

    return amp_lt_fn.cublasLtMatmulDescGetAttribute(desc, attr, buf, size,
                                                    &written) ==
               CUBLAS_STATUS_SUCCESS &&
           written == size;
}

static int
amp_lt_layout_get(cublasLtMatrixLayout_t layout,
                  cublasLtMatrixLayoutAttribute_t attr, void *buf,
                  size_t size)
{
    size_t written = 0;

    return amp_lt_fn.cublasLtMatrixLayoutGetAttribute(layout, attr, buf, size,
                                                      &written) ==
               CUBLAS_STATUS_SUCCESS &&
           written == size;
}

/* A field of a struct read from an attribute of the same size. */
struct amp_lt_field {
    int attr;
    size_t offset, size;
};

#define AMP_LT_FIELD(attr, type, member)                                     \
    {(attr), offsetof(type, member), sizeof(((type *)0)->member)}

static const struct amp_lt_field amp_lt_layout_fields[] = {
    AMP_LT_FIELD(CUBLASLT_MATRIX_LAYOUT_TYPE, struct amp_lt_matrix, type),
    AMP_LT_FIELD(CUBLASLT_MATRIX_LAYOUT_ORDER, struct amp_lt_matrix, order),
    AMP_LT_FIELD(CUBLASLT_MATRIX_LAYOUT_ROWS, struct amp_lt_matrix, rows),
    AMP_LT_FIELD(CUBLASLT_MATRIX_LAYOUT_COLS, struct amp_lt_matrix, cols),
    AMP_LT_FIELD(CUBLASLT_MATRIX_LAYOUT_LD, struct amp_lt_matrix, ld),
    AMP_LT_FIELD(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, struct amp_lt_matrix,
                 batch),
    AMP_LT_FIELD(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                 struct amp_lt_matrix, stride),
    AMP_LT_FIELD(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, struct amp_lt_matrix,
                 plane),
    AMP_LT_FIELD(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, struct amp_lt_matrix,
                 batch_mode),
};

static int
amp_lt_matrix_read(cublasLtMatrixLayout_t l, struct amp_lt_matrix *m)
{
    size_t i;

    if (!l)
        return 0;
    for (i = 0; i < sizeof amp_lt_layout_fields / sizeof *amp_lt_layout_fields;
         i++) {
        const struct amp_lt_field *f = &amp_lt_layout_fields[i];

        if (!amp_lt_layout_get(l, (cublasLtMatrixLayoutAttribute_t)f->attr,
                               (char *)m + f->offset, f->size))
            return 0;
    }
    return 1;
}

/* Whether any setting of the narrow-precision (FP8, FP4) products, or an
 * emulation descriptor, is present: such a call is not a plain FP32 one. */
static int
amp_lt_narrow(cublasLtMatmulDesc_t desc)
{
    static const cublasLtMatmulDescAttributes_t pointers[] = {
        CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_C_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,
        CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER,
        CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR,
    };
    static const cublasLtMatmulDescAttributes_t modes[] = {
        CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
        CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
        CUBLASLT_MATMUL_DESC_C_SCALE_MODE,
        CUBLASLT_MATMUL_DESC_D_SCALE_MODE,
        CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE,
        CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE,
    };
    size_t i;

    for (i = 0; i < sizeof pointers / sizeof *pointers; i++) {
        const void *p = NULL;

        if (!amp_lt_desc_get(desc, pointers[i], &p, sizeof p) || p)
            return 1;
    }
    for (i = 0; i < sizeof modes / sizeof *modes; i++) {
        int32_t mode = 0;

        if (!amp_lt_desc_get(desc, modes[i], &mode, sizeof mode) || mode)
            return 1;
    }
    return 0;
}

/* cuBLAS 12.x's atomic synchronisation of a product with other kernels
 * (its cublasLt.h: the chunks of D's rows and columns, int32_t, 0 for
 * none; the device arrays of input and output counters, int32_t *). The
 * counters' meaning is the program's, so such a call runs as made. cuBLAS
 * 13.1 has no such attributes and refuses to get them: then none is
 * set. */
enum {
    AMP_LT_ATOMIC_SYNC_NUM_CHUNKS_D_ROWS = 27,
    AMP_LT_ATOMIC_SYNC_NUM_CHUNKS_D_COLS = 28,
    AMP_LT_ATOMIC_SYNC_IN_COUNTERS_POINTER = 29,
    AMP_LT_ATOMIC_SYNC_OUT_COUNTERS_POINTER = 30,
};

static int
amp_lt_atomic_sync(cublasLtMatmulDesc_t desc)
{
    static const int chunks[] = {AMP_LT_ATOMIC_SYNC_NUM_CHUNKS_D_ROWS,
                                 AMP_LT_ATOMIC_SYNC_NUM_CHUNKS_D_COLS};
    static const int counters[] = {AMP_LT_ATOMIC_SYNC_IN_COUNTERS_POINTER,
                                   AMP_LT_ATOMIC_SYNC_OUT_COUNTERS_POINTER};
    size_t i;

    for (i = 0; i < 2; i++) {
        int32_t n = 0;
        const void *p = NULL;

        if ((amp_lt_desc_get(desc, (cublasLtMatmulDescAttributes_t)chunks[i],
                             &n, sizeof n) &&
             n != 0) ||
            (amp_lt_desc_get(desc,
                             (cublasLtMatmulDescAttributes_t)counters[i], &p,
                             sizeof p) &&
             p))
            return 1;
    }
    return 0;
}

static const struct amp_lt_field amp_lt_desc_fields[] = {
#define AMP_LT_DESC(attr, member)                                            \
    AMP_LT_FIELD(CUBLASLT_MATMUL_DESC_##attr, struct amp_lt_call, member)
    AMP_LT_DESC(COMPUTE_TYPE, compute),
    AMP_LT_DESC(SCALE_TYPE, scale),
    AMP_LT_DESC(POINTER_MODE, pointer_mode),
    AMP_LT_DESC(ALPHA_VECTOR_BATCH_STRIDE, alpha_stride),
    AMP_LT_DESC(TRANSA, transa),
    AMP_LT_DESC(TRANSB, transb),
    AMP_LT_DESC(TRANSC, transc),
    AMP_LT_DESC(FILL_MODE, fill),
    AMP_LT_DESC(EPILOGUE, epilogue),
    AMP_LT_DESC(BIAS_POINTER, bias),
    AMP_LT_DESC(BIAS_BATCH_STRIDE, bias_stride),
    AMP_LT_DESC(BIAS_DATA_TYPE, bias_type),
    AMP_LT_DESC(EPILOGUE_AUX_POINTER, aux),
    AMP_LT_DESC(EPILOGUE_AUX_LD, aux_ld),
    AMP_LT_DESC(EPILOGUE_AUX_BATCH_STRIDE, aux_stride),
    AMP_LT_DESC(EPILOGUE_AUX_DATA_TYPE, aux_type),
    AMP_LT_DESC(SM_COUNT_TARGET, sm_count_target),
#undef AMP_LT_DESC
};

/* Reads the call's descriptors into c; 0 when one cannot be read (cuBLASLt
 * refuses such a call itself). */
static int
amp_lt_read_all(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
                cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                cublasLtMatrixLayout_t ld, struct amp_lt_call *c)
{
    size_t i;

    memset(c, 0, sizeof *c);
    if (!desc)
        return 0;
    for (i = 0; i < sizeof amp_lt_desc_fields / sizeof *amp_lt_desc_fields;
         i++) {
        const struct amp_lt_field *f = &amp_lt_desc_fields[i];

        if (!amp_lt_desc_get(desc, (cublasLtMatmulDescAttributes_t)f->attr,
                             (char *)c + f->offset, f->size))
            return 0;
    }
    if (!amp_lt_matrix_read(la, &c->a) || !amp_lt_matrix_read(lb, &c->b) ||
        !amp_lt_matrix_read(lc ? lc : ld, &c->c) ||
        !amp_lt_matrix_read(ld, &c->d))
        return 0;
    c->narrow = amp_lt_narrow(desc);
    c->atomic_sync = amp_lt_atomic_sync(desc);
    return 1;
}

/* The program's descriptors as bytes. They live whole in the header's
 * fixed-size structs (Init puts them in the program's own memory, with no
 * Destroy to free anything beside), so equal bytes are equal settings:
 * a call whose descriptors hold the bytes of an earlier one's (the usual
 * case: frameworks cache their descriptors) takes that call's reading
 * instead of some 45 GetAttribute calls, and one initialised again in
 * place differs in its bytes. */
struct amp_lt_bytes {
    cublasLtMatmulDescOpaque_t op;
    cublasLtMatrixLayoutOpaque_t a, b, c, d;
    int c_is_d;                /* Cdesc NULL: D's layout */
};

/* cuBLASLt's verdict on the last call made with one reading's
 * descriptors: the handle, algorithm and workspace it was asked about
 * (the rest of the call is the reading's), and its answer. A call that
 * repeats them takes the answer without a look-up in the verdicts. */
struct amp_lt_verdict {
    int known;
    int has_algo;
    cublasLtHandle_t handle;
    cublasLtMatmulAlgo_t algo;
    uint64_t workspace_size;
    int workspace_null, workspace_misaligned;
    int accepted;
};

/* A reading of the program's descriptors. */
struct amp_lt_reading {
    struct amp_lt_call call;
    struct amp_lt_verdict verdict;
};

/* The program's arguments to cublasLtMatmul beside its descriptors. */
struct amp_lt_args {
    cublasLtHandle_t handle;
    const void *alpha, *a, *b, *beta, *c;
    void *d;
    const cublasLtMatmulAlgo_t *algo;
    void *workspace;
    size_t workspace_size;
};

/* What a call's decision rests on beside its descriptors and call stack:
 * the handle, algorithm and workspace cuBLASLt judges, which pointers the
 * call gave and whether its host alpha is 0. */
struct amp_lt_given {
    cublasLtHandle_t handle;
    cublasLtMatmulAlgo_t algo; /* AMP_LT_GIVEN_ALGO only */
    uint64_t workspace_size;
    unsigned bits;             /* AMP_LT_GIVEN_* */
};

enum {
    AMP_LT_GIVEN_ALGO = 1u << 0,
    AMP_LT_GIVEN_WORKSPACE = 1u << 1,
    AMP_LT_GIVEN_WORKSPACE_MISALIGNED = 1u << 2,
    AMP_LT_GIVEN_ALPHA = 1u << 3,
    AMP_LT_GIVEN_ALPHA_ZERO = 1u << 4, /* a host alpha of 0 */
    AMP_LT_GIVEN_BETA = 1u << 5,
    AMP_LT_GIVEN_A = 1u << 6,
    AMP_LT_GIVEN_B = 1u << 7,
    AMP_LT_GIVEN_C = 1u << 8,
    AMP_LT_GIVEN_D = 1u << 9,
    AMP_LT_GIVEN_C_IS_D = 1u << 10,
};

/* A reading by the addresses of the descriptors it was read from, with
 * its part of the call's descriptor once described, and the last call
 * made with them that the whole path kept FP32 for good (held known):
 * what it was given, its FLOPs and where it was counted. A call with the
 * same descriptors and arguments from the same call stack is counted
 * there without reading or deciding anything (amp_lt_again). */
struct amp_lt_recent {
    const void *at[5];         /* computeDesc, Adesc, Bdesc, Cdesc, Ddesc */
    struct amp_lt_bytes bytes;
    struct amp_lt_reading reading;
    int described;             /* desc holds amp_lt_describe_reading's */
    struct amp_gemm_desc desc;
    struct amp_lt_given given;
    double flops;
    struct amp_settled_held held;
};

/* What each thread keeps of the program's calls: the readings of their
 * descriptors, and cuBLASLt's verdicts on them (below). */
static AMP_THREAD_HOT struct {
    unsigned generation;
    int tried;                 /* set up once; a failure stays failed */
    struct amp_lru readings;   /* struct amp_lt_bytes -> struct amp_lt_reading */
    struct amp_lru verdicts;   /* struct amp_lt_call -> int, accepted */
    struct amp_lt_recent *recent; /* AMP_LT_RECENT, or NULL */
} amp_lt_thread;

static void
amp_lt_thread_exit(void)
{
    amp_lru_fini(&amp_lt_thread.readings, NULL, NULL);
    amp_lru_fini(&amp_lt_thread.verdicts, NULL, NULL);
    free(amp_lt_thread.recent);
    amp_lt_thread.recent = NULL;
}

/* The calling thread's maps, set up on first use (a map that cannot be
 * had stays empty: every call is read and asked about in full). */
static void
amp_lt_thread_get(void)
{
    if (amp_shim_thread_stale(&amp_lt_thread.generation)) {
        /* A forked child's copies of its parent's: freed, not used. */
        amp_lt_thread_exit();
        amp_lt_thread.tried = 0;
    }
    if (amp_lt_thread.tried)
        return;
    amp_lt_thread.tried = 1;
    amp_lru_init(&amp_lt_thread.readings, AMP_LT_READINGS,
                 sizeof(struct amp_lt_bytes), sizeof(struct amp_lt_reading));
    amp_lru_init(&amp_lt_thread.verdicts, AMP_LT_VERDICTS,
                 sizeof(struct amp_lt_call), sizeof(int));
    amp_lt_thread.recent =
        calloc(AMP_LT_RECENT, sizeof *amp_lt_thread.recent);
    amp_shim_at_thread_exit(amp_lt_thread_exit);
}

/* The recent reading whose place is that of these descriptors'
 * addresses, or NULL (none kept). */
static struct amp_lt_recent *
amp_lt_recent_at(const void *const at[5])
{
    uint64_t h;

    if (!amp_lt_thread.recent)
        return NULL;
    /* The addresses apart by their low bits mixed, then spread once. */
    h = (uintptr_t)at[0] ^ ((uintptr_t)at[1] << 7) ^
        ((uintptr_t)at[2] << 14) ^ ((uintptr_t)at[3] << 21) ^
        ((uintptr_t)at[4] << 28);
    h *= 0x9e3779b97f4a7c15ull;
    return &amp_lt_thread.recent[(h >> 40) % AMP_LT_RECENT];
}

/* 1 when r was read from these descriptors and they hold its bytes. */
static int
amp_lt_recent_holds(const struct amp_lt_recent *r, const void *const at[5])
{
    const struct amp_lt_bytes *b = &r->bytes;

    return memcmp(r->at, at, sizeof r->at) == 0 &&
           memcmp(&b->op, at[0], sizeof b->op) == 0 &&
           memcmp(&b->a, at[1], sizeof b->a) == 0 &&
           memcmp(&b->b, at[2], sizeof b->b) == 0 &&
           (at[3] ? !b->c_is_d && memcmp(&b->c, at[3], sizeof b->c) == 0
                  : b->c_is_d) &&
           memcmp(&b->d, at[4], sizeof b->d) == 0;
}

/* The recent reading of these descriptors (computeDesc, Adesc, Bdesc,
 * Cdesc, Ddesc), or NULL. */
static struct amp_lt_recent *
amp_lt_recent_of(const void *const at[5])
{
    struct amp_lt_recent *r;

    if (!at[0] || !at[1] || !at[2] || !at[4])
        return NULL;
    amp_lt_thread_get();
    r = amp_lt_recent_at(at);
    return r && amp_lt_recent_holds(r, at) ? r : NULL;
}

/* Reads the call's descriptors at `at` into **cp, or where *recent is
 * their recent reading (amp_lt_recent_of) points *cp at its call (which
 * the hook then completes in place). *recent becomes the recent reading
 * that keeps them (or NULL); *verdict the reading's memo of cuBLASLt's
 * verdict (NULL where the reading is not kept). */
static int
amp_lt_read(const void *const at[5], struct amp_lt_recent **recent,
            struct amp_lt_call **cp, struct amp_lt_verdict **verdict)
{
    struct amp_lt_call *c = *cp;
    cublasLtMatmulDesc_t desc = (cublasLtMatmulDesc_t)at[0];
    cublasLtMatrixLayout_t la = (cublasLtMatrixLayout_t)at[1],
                           lb = (cublasLtMatrixLayout_t)at[2],
                           lc = (cublasLtMatrixLayout_t)at[3],
                           ld = (cublasLtMatrixLayout_t)at[4];
    struct amp_lt_recent *r = *recent;
    struct amp_lt_bytes key;
    struct amp_lt_reading *kept;

    *verdict = NULL;
    if (r) {
        *cp = &r->reading.call;
        *verdict = &r->reading.verdict;
        return 1;
    }
    if (!desc || !la || !lb || !ld)
        return amp_lt_read_all(desc, la, lb, lc, ld, c);
    amp_lt_thread_get();
    r = amp_lt_recent_at(at);
    memset(&key, 0, sizeof key);
    key.op = *desc;
    key.a = *la;
    key.b = *lb;
    key.c = lc ? *lc : *ld;
    key.d = *ld;
    key.c_is_d = lc == NULL;
    kept = amp_lru_find(&amp_lt_thread.readings, &key);
    if (kept) {
        memcpy(c, &kept->call, sizeof *c);
    } else {
        if (!amp_lt_read_all(desc, la, lb, lc, ld, c))
            return 0;
        kept = amp_lru_add(&amp_lt_thread.readings, &key, NULL, NULL);
        if (kept)
            memcpy(&kept->call, c, sizeof *c);
    }
    if (kept)
        *verdict = &kept->verdict;
    if (r) {
        /* Kept by address too, with the verdict so far. */
        memcpy(r->at, at, sizeof r->at);
        r->bytes = key;
        r->reading.call = *c;
        if (kept)
            r->reading.verdict = kept->verdict;
        else
            memset(&r->reading.verdict, 0, sizeof r->reading.verdict);
        *verdict = &r->reading.verdict;
        r->described = 0;
        r->held.known = 0;
        *recent = r;
    }
    return 1;
}

/* 1 when the call is an FP32 GEMM (*pedantic: one whose compute type asks
 * for strict or emulated FP32); 0 for half, FP8, integer, complex or
 * double ones, which pass. */
static int
amp_lt_fp32(const struct amp_lt_call *c, int *pedantic)
{
    *pedantic = 0;
    if (c->a.type != CUDA_R_32F || c->b.type != CUDA_R_32F ||
        c->c.type != CUDA_R_32F || c->d.type != CUDA_R_32F ||
        c->scale != CUDA_R_32F || c->narrow)
        return 0;
    return amp_compute_fp32(c->compute, pedantic);
}

/* The epilogues the converted path carries: the forward ones, whose
 * auxiliary output (if any) the last step writes. The gradient epilogues
 * read or reduce what the program gives them and stay FP32. */
static int
amp_lt_epilogue_supported(uint32_t e)
{
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_RELU_AUX:
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_AUX:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
        return 1;
    default:
        return 0;
    }
}

/* The epilogue as policies and reports name it. */
static enum amp_epi
amp_lt_epi(uint32_t e)
{
    switch (e) {
    case CUBLASLT_EPILOGUE_RELU: return AMP_EPI_RELU;
    case CUBLASLT_EPILOGUE_RELU_AUX: return AMP_EPI_RELU_AUX;
    case CUBLASLT_EPILOGUE_BIAS: return AMP_EPI_BIAS;
    case CUBLASLT_EPILOGUE_RELU_BIAS: return AMP_EPI_RELU_BIAS;
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS: return AMP_EPI_RELU_AUX_BIAS;
    case CUBLASLT_EPILOGUE_GELU: return AMP_EPI_GELU;
    case CUBLASLT_EPILOGUE_GELU_AUX: return AMP_EPI_GELU_AUX;
    case CUBLASLT_EPILOGUE_GELU_BIAS: return AMP_EPI_GELU_BIAS;
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: return AMP_EPI_GELU_AUX_BIAS;
    default: return AMP_EPI_DEFAULT;
    }
}

static int
amp_lt_op(int32_t op, enum amp_op *out)
{
    *out = op == CUBLAS_OP_N ? AMP_OP_N : AMP_OP_T;
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static int
amp_lt_order_ok(int32_t order)
{
    return order == CUBLASLT_ORDER_COL || order == CUBLASLT_ORDER_ROW;
}

/* Whether the layouts agree as cuBLASLt requires: one batch mode and
 * count, C as D but for its leading dimension, op(A) m x k and op(B) k x n
 * for D's m x n (an in-place C also has D's layout: amp_lt_describe_call). */
static int
amp_lt_shapes_agree(const struct amp_lt_call *c,
                    const struct amp_gemm_desc *d)
{
    const struct amp_lt_matrix *a = &c->a, *b = &c->b;
    uint64_t arows = d->transa == AMP_OP_N ? a->rows : a->cols;
    uint64_t bcols = d->transb == AMP_OP_N ? b->cols : b->rows;
    uint64_t brows = d->transb == AMP_OP_N ? b->rows : b->cols;

    if (a->batch_mode != c->d.batch_mode || b->batch_mode != c->d.batch_mode ||
        c->c.batch_mode != c->d.batch_mode)
        return 0;
    if (a->batch < 1 || a->batch != b->batch || a->batch != c->c.batch ||
        a->batch != c->d.batch)
        return 0;
    if (c->c.order != c->d.order || c->c.rows != c->d.rows ||
        c->c.cols != c->d.cols || arows != c->d.rows ||
        bcols != c->d.cols || brows != (uint64_t)d->k)
        return 0;
    return 1;
}

/* What the converted path takes of valid calls: column or row order,
 * strided batches, no planar offsets, sizes of int, the forward
 * epilogues. */
static int
amp_lt_supported(const struct amp_lt_call *c)
{
    const struct amp_lt_matrix *m[] = {&c->a, &c->b, &c->c, &c->d};
    size_t i;

    for (i = 0; i < sizeof m / sizeof *m; i++)
        if (!amp_lt_order_ok(m[i]->order) ||
            m[i]->batch_mode != CUBLASLT_BATCH_MODE_STRIDED || m[i]->plane ||
            m[i]->rows > INT32_MAX || m[i]->cols > INT32_MAX)
            return 0;
    return amp_lt_epilogue_supported(c->epilogue) &&
           c->transc == CUBLAS_OP_N && c->fill == CUBLAS_FILL_MODE_FULL;
}

static const float amp_lt_zero = 0.0f;

/* The part of an FP32 call's descriptor that its reading decides (no
 * pointer, scalar, stream or caller yet): ops_valid is 0 for what
 * cuBLASLt refuses of it, unsupported 1 for what the converted path does
 * not take; both run as called. A reading kept by its descriptors'
 * addresses keeps this part too (struct amp_lt_recent). */
static void
amp_lt_describe_reading(const struct amp_lt_call *c, int pedantic,
                        struct amp_gemm_desc *d)
{
    int ops_a, ops_b;

    memset(d, 0, sizeof *d);
    d->api = amp_lt_stats.name;
    d->stats = &amp_lt_stats;
    d->lt = 1;
    d->pedantic = pedantic;
    ops_a = amp_lt_op(c->transa, &d->transa);
    ops_b = amp_lt_op(c->transb, &d->transb);
    d->m = (int64_t)c->d.rows;
    d->n = (int64_t)c->d.cols;
    d->k = (int64_t)(d->transa == AMP_OP_N ? c->a.cols : c->a.rows);
    d->lda = c->a.ld;
    d->ldb = c->b.ld;
    d->ldc = c->c.ld;
    d->ldd = c->d.ld;
    d->batch = c->d.batch;
    d->batch_kind = d->batch > 1 ? AMP_BATCH_STRIDED : AMP_BATCH_NONE;
    d->stride_a = c->a.stride;
    d->stride_b = c->b.stride;
    d->stride_c = c->c.stride;
    d->stride_d = c->d.stride;
    d->row_a = c->a.order == CUBLASLT_ORDER_ROW;
    d->row_b = c->b.order == CUBLASLT_ORDER_ROW;
    d->row_cd = c->d.order == CUBLASLT_ORDER_ROW;
    d->epilogue = amp_lt_epi(c->epilogue);
    d->scalars_on_device = c->pointer_mode != CUBLASLT_POINTER_MODE_HOST;
    switch (c->pointer_mode) {
    case CUBLASLT_POINTER_MODE_DEVICE_VECTOR:
        d->alpha_vector = 1;
        d->beta_kind = AMP_BETA_VECTOR;
        break;
    case CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO:
        /* beta is not read: the call may give none (amp_lt_describe_call). */
        d->alpha_vector = 1;
        d->beta_kind = AMP_BETA_ZERO;
        break;
    case CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST:
        d->alpha_vector = 1;
        d->beta_kind = AMP_BETA_HOST;
        d->alpha_stride = c->alpha_stride;
        break;
    default:
        break;
    }
    d->sm_count_target = c->sm_count_target;
    d->atomic_sync = c->atomic_sync;
    d->ops_valid = ops_a && ops_b &&
                   (!(c->epilogue & CUBLASLT_EPILOGUE_BIAS) || c->bias) &&
                   (!(c->epilogue & 128u) || c->aux) &&
                   amp_lt_shapes_agree(c, d);
    d->unsupported = !amp_lt_supported(c);
}

/* The call's own part of its descriptor d: pointers, scalars, stream and
 * caller; C and D may be one buffer only where their layouts agree. */
static void
amp_lt_describe_call(struct amp_gemm_desc *d, const void *alpha,
                     const void *A, const void *B, const void *beta,
                     const void *C, void *D, cudaStream_t stream,
                     const void *caller)
{
    d->a = (amp_devptr)(uintptr_t)A;
    d->b = (amp_devptr)(uintptr_t)B;
    d->c = (amp_devptr)(uintptr_t)C;
    d->d = (amp_devptr)(uintptr_t)D;
    d->alpha = alpha;
    d->beta = d->beta_kind == AMP_BETA_ZERO ? &amp_lt_zero : beta;
    d->stream = (amp_stream)stream;
    d->caller = caller;
    d->ops_valid = d->ops_valid && A && B && C && D &&
                   (d->c != d->d ||
                    (d->ldc == d->ldd && d->stride_c == d->stride_d));
}

/* ---- cuBLASLt's verdict on the program's call ---------------------------- */

/* The descriptors may be valid and the call still refused, for what only
 * cuBLASLt can judge: the program's algorithm (its own, or none: then the
 * heuristics' first with the default preference) must suit the
 * descriptors and its workspace fit the one given, 256-byte aligned. The
 * shim never runs the program's algorithm, so it asks cuBLASLt the same
 * questions on the program's handle and descriptors, once per call as
 * read (the answer is kept per thread, amp_lt_thread.verdicts). */

static int
amp_lt_ask(const struct amp_lt_hooked *k)
{
    const struct amp_lt_call *c = k->call;
    const struct amp_lt_descs *x = &k->descs;
    cublasLtMatmulHeuristicResult_t result;
    cublasLtMatmulPreferenceOpaque_t pref;
    int count = 0;

    if (c->workspace_size > 0 && c->workspace_misaligned)
        return 0;
    atomic_fetch_add(&amp_lt_stats.heuristic_queries, 1);
    if (c->has_algo) {
        if (amp_lt_fn.cublasLtMatmulAlgoCheck(c->handle, x->op, x->a, x->b,
                                              x->c, x->d, &c->algo,
                                              &result) !=
            CUBLAS_STATUS_SUCCESS)
            return 0;
    } else if (amp_lt_fn.cublasLtMatmulPreferenceInit_internal(
                   &pref, sizeof pref) != CUBLAS_STATUS_SUCCESS ||
               amp_lt_fn.cublasLtMatmulAlgoGetHeuristic(
                   c->handle, x->op, x->a, x->b, x->c, x->d, &pref, 1,
                   &result, &count) != CUBLAS_STATUS_SUCCESS ||
               count < 1) {
        return 0;
    }
    return result.workspaceSize <= c->workspace_size &&
           (result.workspaceSize == 0 || !c->workspace_null);
}

/* Whether memo v holds the verdict on call c: the same handle,
 * algorithm and workspace (the descriptors are its reading's). */
static int
amp_lt_verdict_is(const struct amp_lt_verdict *v, const struct amp_lt_call *c)
{
    return v->known && v->handle == c->handle &&
           v->has_algo == c->has_algo &&
           (!c->has_algo || memcmp(&v->algo, &c->algo, sizeof c->algo) == 0) &&
           v->workspace_size == c->workspace_size &&
           v->workspace_null == c->workspace_null &&
           v->workspace_misaligned == c->workspace_misaligned;
}

static void
amp_lt_verdict_keep(struct amp_lt_verdict *v, const struct amp_lt_call *c,
                    int accepted)
{
    v->known = 1;
    v->handle = c->handle;
    v->has_algo = c->has_algo;
    v->algo = c->algo;
    v->workspace_size = c->workspace_size;
    v->workspace_null = c->workspace_null;
    v->workspace_misaligned = c->workspace_misaligned;
    v->accepted = accepted;
}

/* cuBLASLt's verdict on the call as read, its epilogue's pointers by
 * their alignment (what cuBLASLt may judge of them): a layer's bias is no
 * call of its own. */
static int
amp_lt_verdict_of(const struct amp_lt_hooked *k)
{
    struct amp_lt_call key;
    int *accepted;

    memcpy(&key, k->call, sizeof key);
    key.bias = (const void *)(uintptr_t)(
        key.bias ? amp_lt_align((amp_devptr)(uintptr_t)key.bias) : 0);
    key.aux = (void *)(uintptr_t)(
        key.aux ? amp_lt_align((amp_devptr)(uintptr_t)key.aux) : 0);
    amp_lt_thread_get();
    accepted = amp_lru_find(&amp_lt_thread.verdicts, &key);
    if (accepted)
        return *accepted;
    accepted = amp_lru_add(&amp_lt_thread.verdicts, &key, NULL, NULL);
    if (!accepted)
        return amp_lt_ask(k);
    *accepted = amp_lt_ask(k);
    return *accepted;
}

static int
amp_lt_accepts(const void *call)
{
    const struct amp_lt_hooked *k = call;
    int accepted;

    if (k->verdict && amp_lt_verdict_is(k->verdict, k->call))
        return k->verdict->accepted;
    accepted = amp_lt_verdict_of(k);
    if (k->verdict)
        amp_lt_verdict_keep(k->verdict, k->call, accepted);
    return accepted;
}

static const struct amp_gemm_vendor amp_lt_vendor = {
    .own = amp_lt_own_get,
    .issue = amp_lt_issue,
    .accepts = amp_lt_accepts,
};

/* ---- Calls kept FP32 for good ------------------------------------------- */

/* The bits of struct amp_lt_given that the call with arguments x gives,
 * its descriptors read as r's. */
static inline unsigned
amp_lt_given_bits(const struct amp_lt_recent *r, const struct amp_lt_args *x)
{
    enum {
        all = AMP_LT_GIVEN_ALPHA | AMP_LT_GIVEN_BETA | AMP_LT_GIVEN_A |
              AMP_LT_GIVEN_B | AMP_LT_GIVEN_C | AMP_LT_GIVEN_D
    };
    unsigned bits;

    if (x->alpha && x->beta && x->a && x->b && x->c && x->d)
        bits = all; /* the usual call: the rest is looked at one by one */
    else
        bits = (x->alpha != NULL) * AMP_LT_GIVEN_ALPHA |
               (x->beta != NULL) * AMP_LT_GIVEN_BETA |
               (x->a != NULL) * AMP_LT_GIVEN_A |
               (x->b != NULL) * AMP_LT_GIVEN_B |
               (x->c != NULL) * AMP_LT_GIVEN_C |
               (x->d != NULL) * AMP_LT_GIVEN_D;
    if (x->c == x->d)
        bits |= AMP_LT_GIVEN_C_IS_D;
    if (x->algo)
        bits |= AMP_LT_GIVEN_ALGO;
    if (x->workspace)
        bits |= AMP_LT_GIVEN_WORKSPACE;
    if ((uintptr_t)x->workspace & 255u)
        bits |= AMP_LT_GIVEN_WORKSPACE_MISALIGNED;
    if (x->alpha && !r->desc.scalars_on_device &&
        *(const float *)x->alpha == 0.0f)
        bits |= AMP_LT_GIVEN_ALPHA_ZERO;
    return bits;
}

/* What the call with arguments x gives, into r->given. */
static void
amp_lt_given_keep(struct amp_lt_recent *r, const struct amp_lt_args *x)
{
    struct amp_lt_given *g = &r->given;

    g->handle = x->handle;
    if (x->algo)
        g->algo = *x->algo;
    g->workspace_size = x->workspace_size;
    g->bits = amp_lt_given_bits(r, x);
}

/* 1 when the call with arguments x gives what r->given holds. */
static int
amp_lt_given_same(const struct amp_lt_recent *r, const struct amp_lt_args *x)
{
    const struct amp_lt_given *g = &r->given;

    return g->handle == x->handle && g->workspace_size == x->workspace_size &&
           g->bits == amp_lt_given_bits(r, x) &&
           (!x->algo || memcmp(&g->algo, x->algo, sizeof g->algo) == 0);
}

/* A call with r's descriptors, given what r's held call was given, from
 * the same call stack: counted as that call was (1), or 0, nothing
 * counted. */
static int
amp_lt_again(struct amp_lt_recent *r, const struct amp_lt_args *x,
             struct amp_hook *h, const void *caller, cudaStream_t stream)
{
    int cover;

    if (!r->held.known || !amp_lt_given_same(r, x) ||
        !amp_settled_again(&r->held, caller, (amp_stream)stream, &h->prof,
                           &cover))
        return 0;
    h->cover = (enum amp_cover)cover;
    h->flops = r->flops;
    return 1;
}

/* ---- The hook ------------------------------------------------------------- */

/* The coverage meter's view of a call passed through: its precision (an
 * FP32 product with FP8 scaling, an emulation descriptor or another scale
 * type is FP32 the shim does not convert) and its FLOPs. */
static void
amp_lt_cover(const struct amp_lt_call *c, struct amp_hook *h)
{
    uint64_t k = c->transa == CUBLAS_OP_N ? c->a.cols : c->a.rows;
    int cplx;

    h->cover = amp_cover_of_data((int)c->a.type, (int)c->d.type);
    cplx = h->cover == AMP_COVER_COMPLEX;
    h->flops = amp_cover_gemm_flops((int64_t)c->d.rows, (int64_t)c->d.cols,
                                    (int64_t)k, c->d.batch, cplx);
}

AMP_EXPORT cublasStatus_t
cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
               const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
               const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
               const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
               cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceSizeInBytes,
               cudaStream_t stream)
{
    const void *caller = __builtin_return_address(0);
    struct amp_hook h;
    struct amp_lt_hooked k;
    /* The call as read: here, or its recent reading's (amp_lt_read). */
    struct amp_lt_call read, *c = &read;
    /* Described where the path keeps it (amp_gemm_try). */
    struct amp_gemm_desc *d = &h.run.desc;
    struct amp_route route;
    struct amp_lt_recent *recent = NULL;
    amp_pfn_cublasLtMatmul real;
    cublasStatus_t status;
    int pedantic;

    h.entered = 0;
    *(void **)&real = amp_lt_real(caller, &route);
    if (!real)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!atomic_load_explicit(&amp_lt_bypass, memory_order_acquire)) {
        if (amp_hook_enter(&h, &amp_lt_stats)) {
            const void *const at[5] = {computeDesc, Adesc, Bdesc, Cdesc,
                                       Ddesc};
            const struct amp_lt_args args = {
                lightHandle, alpha, A,         B,
                beta,        C,     D,         algo,
                workspace,   workspaceSizeInBytes};

            if (amp_lt_complete && !route.other)
                recent = amp_lt_recent_of(at);
            if (route.other) {
                /* Another release's descriptors: never read here. */
                h.outcome = AMP_OUTCOME_PASSTHROUGH;
            } else if (recent &&
                       amp_lt_again(recent, &args, &h, caller, stream)) {
                /* Kept FP32 for good, like the last call made with these
                 * descriptors: counted as it was, run as made. */
            } else if (!amp_lt_complete ||
                       !amp_lt_read(at, &recent, &c, &k.verdict)) {
                /* Descriptors cuBLASLt cannot read: its to refuse. */
                h.outcome = AMP_OUTCOME_PASSTHROUGH;
                h.cover = AMP_COVER_INVALID;
            } else if (!amp_lt_fp32(c, &pedantic)) {
                h.outcome = AMP_OUTCOME_PASSTHROUGH;
                amp_lt_cover(c, &h);
            } else {
                c->handle = lightHandle;
                c->has_algo = algo != NULL;
                if (algo)
                    c->algo = *algo;
                else
                    memset(&c->algo, 0, sizeof c->algo);
                c->workspace_size = workspaceSizeInBytes;
                c->workspace_null = workspace == NULL;
                c->workspace_misaligned = ((uintptr_t)workspace & 255u) != 0;
                k.call = c;
                k.descs = (struct amp_lt_descs){computeDesc, Adesc, Bdesc,
                                                Cdesc, Ddesc};
                k.workspace = workspace;
                if (recent && recent->described) {
                    *d = recent->desc;
                } else {
                    amp_lt_describe_reading(c, pedantic, d);
                    if (recent) {
                        recent->desc = *d;
                        recent->described = 1;
                    }
                }
                amp_lt_describe_call(d, alpha, A, B, beta, C, D, stream,
                                     caller);
                d->from_library = route.library;
                if (recent) {
                    recent->held.known = 0;
                    h.held = &recent->held;
                }
                if (amp_hook_gemm_on(&h, d, &amp_lt_vendor, &k) ==
                    AMP_HOOK_DONE)
                    return CUBLAS_STATUS_SUCCESS;
                if (recent && recent->held.known) {
                    amp_lt_given_keep(recent, &args);
                    recent->flops = h.flops;
                }
            }
        }
    }
    status = real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C,
                  Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes,
                  stream);
    amp_hook_end(&h, status == CUBLAS_STATUS_SUCCESS);
    return status;
}
