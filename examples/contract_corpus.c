/* contract_corpus: an ordinary CUDA program that makes thousands of small
 * cuBLAS GEMM and cuDNN convolution calls, generated from a fixed seed over
 * every hooked entry point (int and _64, the legacy cublasSgemm, the three
 * convolutions and the fused bias-activation forward): every transpose,
 * both pointer modes, zero and negative sizes, short leading dimensions,
 * NULL scalars and arrays, batch 0, groups with zero sizes, type and
 * compute-type mixes, algorithms, math modes, descriptors that do not
 * fit, workspaces too small; and
 * cublasLtMatmul over types, orders, leading dimensions, pointer modes,
 * epilogues and their auxiliary settings, batches, in-place and NULL
 * arguments, algorithms and workspaces (one 16 bytes past a 256-byte
 * boundary, which cuBLASLt refuses); and one convolution through cuDNN's
 * backend API, executed with whole variant packs and ones cuDNN refuses
 * (a unique id missing, no workspace for a plan that needs one, a
 * pointer off its tensor's byte alignment). It prints one line per
 * call:
 *
 * case ID api=API status=N sync=N last=N peek=N hash=H trivial=0|1
 *      reset=0|1 args=DESCRIPTION
 *
 * status: the call's own; sync, last, peek: cudaDeviceSynchronize,
 * cudaGetLastError and cudaPeekAtLastError after it (the context's sticky
 * state); hash: FNV-1a of every byte of the device arena that holds the
 * call's operands, outputs, padding, scalars and pointer arrays; trivial:
 * the call reads no product (a zero size, batch 0, a host alpha of 0), so
 * its bytes are exact in any precision; reset: a sticky error was found
 * and the device was reset before the next case.
 *
 * usage: contract_corpus [--gemm N] [--conv N] [--lt N] [--every S]
 *   --gemm N: cases per cuBLAS entry point (default 400)
 *   --conv N: cases per convolution (default 1200)
 *   --lt N: cublasLtMatmul cases (default 1200)
 *   --every S: only the cases whose id is a multiple of S (ids stay). */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "contract_corpus"
#include "example_util.h"

#include "contract_corpus.h"

#include <inttypes.h>

#define SEED 0x5eed2c0ffee5ULL

/* The device arena: A (or x), B (or w), C (or y), the device scalars and
 * the pointer arrays of the batched calls, hashed whole after each call. */
#define REGION 16384
#define OFF_A 0
#define OFF_B REGION
#define OFF_C (2 * REGION)
#define OFF_SCALARS (3 * REGION)
#define OFF_PTRS (OFF_SCALARS + 64)
#define MAX_PTRS 8
/* cuBLASLt: the bias (at 0), the alpha and beta vectors (256, 384) and
 * the auxiliary output (512). */
#define OFF_LT (OFF_PTRS + 3 * MAX_PTRS * 8)
#define ARENA (OFF_LT + 2048)
#define WORKSPACE (32u << 20)

static unsigned char *arena;         /* device */
static unsigned char *workspace;     /* device, not hashed: scratch */
static unsigned char base_image[ARENA];
static unsigned char image[ARENA];
static cublasHandle_t blas;
static cudnnHandle_t dnn;
static cublasLtHandle_t lt;
static int legacy_ready;

static int opt_gemm = 400, opt_conv = 1200, opt_lt = 1200, opt_every = 1;
static int case_id, cases_run;

/* ---- Set-up, and recovery from a sticky error ---------------------------- */

static int
setup(void)
{
    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&arena, ARENA)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&workspace, WORKSPACE)))
        return -1;
    if (cublas_failed("cublasCreate", cublasCreate(&blas)))
        return -1;
    if (cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, EXAMPLE_PROG ": cudnnCreate failed\n");
        return -1;
    }
    if (cublas_failed("cublasLtCreate", cublasLtCreate(&lt)))
        return -1;
    legacy_ready = cc_legacy_init() == 0;
    return 0;
}

/* A sticky error makes the context unusable: reset the device and start
 * over, so that the next case does not inherit it. */
static int
recover(void)
{
    if (legacy_ready)
        cc_legacy_shutdown();
    cudnnDestroy(dnn);
    cublasDestroy(blas);
    cublasLtDestroy(lt);
    cudaDeviceReset();
    return setup();
}

/* ---- One case: upload, call, observe ------------------------------------- */

struct observed {
    int sync, last, peek;
    uint64_t hash;
    int hashed;
};

static int
upload(void)
{
    return cuda_failed("upload",
                       cudaMemcpy(arena, image, ARENA, cudaMemcpyHostToDevice))
               ? -1
               : 0;
}

static void
observe(struct observed *o)
{
    static unsigned char back[ARENA];

    o->sync = (int)cudaDeviceSynchronize();
    o->last = (int)cudaGetLastError();
    o->peek = (int)cudaPeekAtLastError();
    o->hashed = cudaMemcpy(back, arena, ARENA, cudaMemcpyDeviceToHost) ==
                cudaSuccess;
    /* The pointer arrays hold device addresses, which differ from run to
     * run (the shim allocates too): they are hashed as arena offsets. */
    for (size_t i = OFF_PTRS; i + 8 <= OFF_LT; i += 8) {
        uint64_t p;

        memcpy(&p, back + i, sizeof(p));
        if (p != 0)
            p -= (uint64_t)(uintptr_t)arena;
        memcpy(back + i, &p, sizeof(p));
    }
    o->hash = o->hashed ? fnv1a64(back, ARENA, 0xcbf29ce484222325ULL) : 0;
    cudaGetLastError(); /* a failed read-back is this case's, not the next */
}

/* Prints the case; resets the device when its error stayed. */
static int
report(const char *api, int status, int trivial, const char *args)
{
    struct observed o;
    int reset;

    observe(&o);
    reset = o.sync != cudaSuccess || o.peek != cudaSuccess;
    printf("case %d api=%s status=%d sync=%d last=%d peek=%d hash=",
           case_id, api, status, o.sync, o.last, o.peek);
    if (o.hashed)
        printf("%016" PRIx64, o.hash);
    else
        printf("-");
    printf(" trivial=%d reset=%d args=%s\n", trivial, reset, args);
    cases_run++;
    if (reset && recover() != 0)
        return -1;
    return 0;
}

/* ---- Deterministic choices ------------------------------------------------ */

static uint64_t rng;

/* Index into an axis of n values: the first (the usual one) more often
 * than not, any other uniformly; case i < 32 walks every value. */
static int
pick(int i, int n)
{
    if (i < 32)
        return i % n;
    if (rng_next(&rng) % 100 < 70)
        return 0;
    return (int)(rng_next(&rng) % (uint64_t)n);
}

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- cuBLAS ---------------------------------------------------------------- */

enum api {
    SGEMM, SGEMM_64, SGEMM_BATCHED, SGEMM_BATCHED_64, SGEMM_STRIDED,
    SGEMM_STRIDED_64, SGEMM_GROUPED, SGEMM_GROUPED_64, SGEMM_EX,
    SGEMM_EX_64, GEMM_EX, GEMM_EX_64, GEMM_BATCHED_EX, GEMM_BATCHED_EX_64,
    GEMM_STRIDED_EX, GEMM_STRIDED_EX_64, GEMM_GROUPED_EX, GEMM_GROUPED_EX_64,
    LEGACY_SGEMM, API_COUNT
};

static const char *const api_names[API_COUNT] = {
    "cublasSgemm_v2", "cublasSgemm_v2_64", "cublasSgemmBatched",
    "cublasSgemmBatched_64", "cublasSgemmStridedBatched",
    "cublasSgemmStridedBatched_64", "cublasSgemmGroupedBatched",
    "cublasSgemmGroupedBatched_64", "cublasSgemmEx", "cublasSgemmEx_64",
    "cublasGemmEx", "cublasGemmEx_64", "cublasGemmBatchedEx",
    "cublasGemmBatchedEx_64", "cublasGemmStridedBatchedEx",
    "cublasGemmStridedBatchedEx_64", "cublasGemmGroupedBatchedEx",
    "cublasGemmGroupedBatchedEx_64", "cublasSgemm",
};

static const struct { int m, n, k; } shapes[] = {
    {3, 4, 5}, {8, 8, 8}, {5, 2, 7}, {0, 4, 5}, {3, 0, 5}, {3, 4, 0},
    {-1, 4, 5}, {3, -2, 5}, {3, 4, -3},
};
#define BAD_OP 7
static const int ops[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C, BAD_OP};
enum ld { LD_TIGHT, LD_PAD, LD_SHORT_A, LD_SHORT_B, LD_SHORT_C, LD_COUNT };
static const char *const ld_names[] = {"tight", "pad", "shortA", "shortB",
                                       "shortC"};
static const struct { float alpha, beta; } scalars[] = {
    {1.0f, 0.0f}, {0.5f, -1.0f}, {0.0f, 1.0f}, {0.0f, 0.5f}, {2.0f, 1.0f},
};
/* NULL_WILD: alpha is a host address whatever the pointer mode (in
 * CUBLAS_POINTER_MODE_DEVICE the GEMM faults: a sticky error). */
enum null_arg { NULL_NONE, NULL_ALPHA, NULL_BETA, NULL_HANDLE, NULL_WILD,
                NULL_M_ARRAY, NULL_TRANSA, NULL_SIZES, NULL_COUNT };
static const char *const null_names[] = {"none", "alpha", "beta", "handle",
                                         "wild", "m_array", "transa",
                                         "sizes"};
static const int batches[] = {2, 0, -1, 1, 3};
enum stride { STRIDE_PACKED, STRIDE_GAP, STRIDE_A0, STRIDE_COUNT };
static const int maths[] = {
    CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_PEDANTIC_MATH,
    CUBLAS_TENSOR_OP_MATH,
    CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION,
};
static const struct {
    cudaDataType a, b, c;
    cublasComputeType_t compute;
} types[] = {
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_EMULATED_16BFX9},
    {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_16F, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_16F},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_64F},
    {CUDA_R_8I, CUDA_R_8I, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F},
    {CUDA_C_32F, CUDA_C_32F, CUDA_C_32F, CUBLAS_COMPUTE_32F},
};
static const int algos[] = {
    CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_ALGO5, CUBLAS_GEMM_DEFAULT_TENSOR_OP,
    CUBLAS_GEMM_AUTOTUNE, 1000, -7,
};
/* The second group of a grouped call: like the first, or with a size of
 * zero, m of zero, a short ldc or a bad transpose. */
enum group2 { G2_SAME, G2_EMPTY, G2_M0, G2_SHORT_LDC, G2_BAD_OP,
              G2_COUNT };
static const char *const g2_names[] = {"same", "empty", "m0", "shortC",
                                       "badop"};
static const int group_counts[] = {2, 1, 0, -1};

struct gcase {
    enum api api;
    int m, n, k;
    int ta, tb;
    enum ld ld;
    int device_scalars;
    float alpha, beta;
    enum null_arg nul;
    int batch;
    enum stride stride;
    int math;
    int types;
    int algo;
    int groups;
    enum group2 g2;
};

static int
api_batched(enum api a)
{
    return a == SGEMM_BATCHED || a == SGEMM_BATCHED_64 ||
           a == GEMM_BATCHED_EX || a == GEMM_BATCHED_EX_64;
}

static int
api_strided(enum api a)
{
    return a == SGEMM_STRIDED || a == SGEMM_STRIDED_64 ||
           a == GEMM_STRIDED_EX || a == GEMM_STRIDED_EX_64;
}

static int
api_grouped(enum api a)
{
    return a == SGEMM_GROUPED || a == SGEMM_GROUPED_64 ||
           a == GEMM_GROUPED_EX || a == GEMM_GROUPED_EX_64;
}

static int
api_typed(enum api a)
{
    return a == SGEMM_EX || a == SGEMM_EX_64 || a == GEMM_EX ||
           a == GEMM_EX_64 || a == GEMM_BATCHED_EX ||
           a == GEMM_BATCHED_EX_64 || a == GEMM_STRIDED_EX ||
           a == GEMM_STRIDED_EX_64 || a == GEMM_GROUPED_EX ||
           a == GEMM_GROUPED_EX_64;
}

static int
api_algo(enum api a)
{
    return a == GEMM_EX || a == GEMM_EX_64 || a == GEMM_BATCHED_EX ||
           a == GEMM_BATCHED_EX_64 || a == GEMM_STRIDED_EX ||
           a == GEMM_STRIDED_EX_64;
}

static void
gcase_make(enum api api, int i, struct gcase *g)
{
    int s = pick(i, N_OF(shapes)), sc;

    memset(g, 0, sizeof(*g));
    g->api = api;
    g->m = shapes[s].m;
    g->n = shapes[s].n;
    g->k = shapes[s].k;
    g->ta = ops[pick(i + 1, N_OF(ops))];
    g->tb = ops[pick(i + 2, N_OF(ops))];
    g->ld = (enum ld)pick(i, LD_COUNT);
    sc = pick(i, N_OF(scalars));
    g->alpha = scalars[sc].alpha;
    g->beta = scalars[sc].beta;
    g->batch = 1;
    g->algo = CUBLAS_GEMM_DEFAULT;
    g->groups = 1;
    if (api == LEGACY_SGEMM)
        return;
    g->device_scalars = pick(i + 3, 2);
    g->nul = (enum null_arg)pick(i, api_grouped(api) ? NULL_COUNT
                                                     : NULL_M_ARRAY);
    g->math = maths[pick(i + 4, N_OF(maths))];
    if (api_batched(api) || api_strided(api) || api_grouped(api))
        g->batch = batches[pick(i + 5, N_OF(batches))];
    if (api_strided(api))
        g->stride = (enum stride)pick(i + 6, STRIDE_COUNT);
    if (api_typed(api))
        g->types = pick(i + 7, N_OF(types));
    if (api_algo(api))
        g->algo = algos[pick(i + 8, N_OF(algos))];
    if (api_grouped(api)) {
        g->groups = group_counts[pick(i + 9, N_OF(group_counts))];
        g->g2 = (enum group2)pick(i + 10, G2_COUNT);
        if (g->batch > 3 || g->batch < 0)
            g->batch = 2; /* group sizes below are per group */
    }
}

static size_t
type_bytes(cudaDataType t)
{
    switch (t) {
    case CUDA_R_16F: case CUDA_R_16BF: return 2;
    case CUDA_R_8I: return 1;
    case CUDA_R_64F: case CUDA_C_32F: return 8;
    default: return 4;
    }
}

static int64_t
rows_of(int op, int64_t m, int64_t k)
{
    return op == CUBLAS_OP_N ? m : k;
}

static int64_t
max1(int64_t v)
{
    return v > 1 ? v : 1;
}

/* Leading dimensions of the case (for group 0; the second group of a
 * grouped call may shorten ldc). */
static void
gcase_lds(const struct gcase *g, int64_t *lda, int64_t *ldb, int64_t *ldc)
{
    int pad = g->ld == LD_PAD ? 2 : 0;

    *lda = max1(rows_of(g->ta, g->m, g->k)) + pad;
    *ldb = max1(rows_of(g->tb, g->k, g->n)) + pad;
    *ldc = max1(g->m) + pad;
    if (g->ld == LD_SHORT_A)
        *lda -= 1;
    if (g->ld == LD_SHORT_B)
        *ldb -= 1;
    if (g->ld == LD_SHORT_C)
        *ldc -= 1;
}

/* Bytes of one matrix with ld rows and cols columns, at least one. */
static int64_t
matrix_elems(int64_t ld, int64_t cols)
{
    return ld > 0 && cols > 0 ? ld * cols : 1;
}

static void
gcase_describe(const struct gcase *g, char *buf, size_t len)
{
    int64_t lda, ldb, ldc;

    gcase_lds(g, &lda, &ldb, &ldc);
    snprintf(buf, len,
             "m=%d,n=%d,k=%d,ops=%d/%d,ld=%s(%" PRId64 ",%" PRId64 ",%" PRId64
             "),ptr=%s,alpha=%g,beta=%g,null=%s,batch=%d,stride=%d,"
             "math=%d,types=%d/%d/%d/%d,algo=%d,groups=%d,group2=%s",
             g->m, g->n, g->k, g->ta, g->tb, ld_names[g->ld], lda, ldb, ldc,
             g->device_scalars ? "device" : "host", (double)g->alpha,
             (double)g->beta, null_names[g->nul], g->batch, (int)g->stride,
             g->math, (int)types[g->types].a, (int)types[g->types].b,
             (int)types[g->types].c, (int)types[g->types].compute, g->algo,
             g->groups, g2_names[g->g2]);
}

/* Host scalars, wide enough for any compute type's alpha and beta. */
static double host_scalars[2][2];

/* The grouped arguments (per group, int and int64_t). */
struct grouped {
    cublasOperation_t ta[2], tb[2];
    int m[2], n[2], k[2], lda[2], ldb[2], ldc[2], size[2];
    int64_t m64[2], n64[2], k64[2], lda64[2], ldb64[2], ldc64[2], size64[2];
    float alpha[2], beta[2];
};

static void
grouped_fill(const struct gcase *g, int64_t lda, int64_t ldb, int64_t ldc,
             struct grouped *gr)
{
    for (int j = 0; j < 2; j++) {
        gr->ta[j] = (cublasOperation_t)g->ta;
        gr->tb[j] = (cublasOperation_t)g->tb;
        gr->m64[j] = g->m;
        gr->n64[j] = g->n;
        gr->k64[j] = g->k;
        gr->lda64[j] = lda;
        gr->ldb64[j] = ldb;
        gr->ldc64[j] = ldc;
        gr->size64[j] = g->batch;
        gr->alpha[j] = g->alpha * (float)(j + 1);
        gr->beta[j] = g->beta;
    }
    switch (g->g2) {
    case G2_EMPTY: gr->size64[1] = 0; break;
    case G2_M0: gr->m64[1] = 0; break;
    case G2_SHORT_LDC: gr->ldc64[1] = max1(g->m) - 1; break;
    case G2_BAD_OP: gr->ta[1] = (cublasOperation_t)BAD_OP; break;
    default: break;
    }
    for (int j = 0; j < 2; j++) {
        gr->m[j] = (int)gr->m64[j];
        gr->n[j] = (int)gr->n64[j];
        gr->k[j] = (int)gr->k64[j];
        gr->lda[j] = (int)gr->lda64[j];
        gr->ldb[j] = (int)gr->ldb64[j];
        gr->ldc[j] = (int)gr->ldc64[j];
        gr->size[j] = (int)gr->size64[j];
    }
}

/* 1 when the call multiplies nothing: its result is exact anywhere. */
static int
gcase_trivial(const struct gcase *g, const struct grouped *gr)
{
    int host_zero = !g->device_scalars && g->nul != NULL_ALPHA &&
                    g->alpha == 0.0f;

    if (api_grouped(g->api)) {
        int groups = g->groups > 2 ? 2 : g->groups;

        for (int j = 0; j < groups; j++)
            if (gr->m64[j] > 0 && gr->n64[j] > 0 && gr->k64[j] > 0 &&
                gr->size64[j] > 0 && gr->alpha[j] != 0.0f)
                return 0;
        return 1;
    }
    return g->m == 0 || g->n == 0 || g->k == 0 || g->batch == 0 || host_zero;
}

static int
run_gemm(const struct gcase *g)
{
    unsigned char *a = arena + OFF_A, *b = arena + OFF_B, *c = arena + OFF_C;
    const void *alpha, *beta;
    void **ptrs = (void **)(image + OFF_PTRS);
    int64_t lda, ldb, ldc, sa, sb, sc;
    cudaDataType ta = types[g->types].a, tb = types[g->types].b;
    cudaDataType tc = types[g->types].c;
    cublasComputeType_t ct = types[g->types].compute;
    cublasHandle_t h = g->nul == NULL_HANDLE ? NULL : blas;
    cublasOperation_t opa = (cublasOperation_t)g->ta;
    cublasOperation_t opb = (cublasOperation_t)g->tb;
    cublasGemmAlgo_t algo = (cublasGemmAlgo_t)g->algo;
    struct grouped gr;
    char args[512];
    int st = 0, m = g->m, n = g->n, k = g->k, count = g->batch;
    int64_t m64 = g->m, n64 = g->n, k64 = g->k, count64 = g->batch;
    int64_t problems = 0;

    gcase_lds(g, &lda, &ldb, &ldc);
    grouped_fill(g, lda, ldb, ldc, &gr);
    gcase_describe(g, args, sizeof(args));

    /* Strides: packed, with a gap, or A shared by every problem. */
    sa = matrix_elems(lda, rows_of(g->ta, g->k, g->m)) +
         (g->stride == STRIDE_GAP ? 3 : 0);
    sb = matrix_elems(ldb, rows_of(g->tb, g->n, g->k)) +
         (g->stride == STRIDE_GAP ? 3 : 0);
    sc = matrix_elems(ldc, g->n) + (g->stride == STRIDE_GAP ? 3 : 0);
    if (g->stride == STRIDE_A0)
        sa = 0;

    /* The arrays of the batched calls: problem i at stride i, in bytes of
     * the case's types; grouped calls have up to 2 groups of 3. */
    memcpy(image, base_image, ARENA);
    problems = api_grouped(g->api) ? 6 : (count > 0 ? count : 0);
    for (int64_t i = 0; i < problems && i < MAX_PTRS; i++) {
        ptrs[i] = a + i * sa * (int64_t)type_bytes(ta);
        ptrs[MAX_PTRS + i] = b + i * sb * (int64_t)type_bytes(tb);
        ptrs[2 * MAX_PTRS + i] = c + i * sc * (int64_t)type_bytes(tc);
    }
    memset(host_scalars, 0, sizeof(host_scalars));
    memcpy(&host_scalars[0], &g->alpha, sizeof(float));
    memcpy(&host_scalars[1], &g->beta, sizeof(float));
    memcpy(image + OFF_SCALARS, &g->alpha, sizeof(float));
    memcpy(image + OFF_SCALARS + 16, &g->beta, sizeof(float));
    if (upload() != 0)
        return -1;
    if (g->device_scalars) {
        alpha = arena + OFF_SCALARS;
        beta = arena + OFF_SCALARS + 16;
    } else {
        alpha = host_scalars[0];
        beta = host_scalars[1];
    }
    if (g->nul == NULL_ALPHA)
        alpha = NULL;
    if (g->nul == NULL_WILD)
        alpha = host_scalars[0];
    if (g->nul == NULL_BETA)
        beta = NULL;
    if (g->api != LEGACY_SGEMM) {
        cublasSetPointerMode(blas, g->device_scalars
                                       ? CUBLAS_POINTER_MODE_DEVICE
                                       : CUBLAS_POINTER_MODE_HOST);
        cublasSetMathMode(blas, (cublasMath_t)g->math);
    }

#define PA ((const void *const *)(arena + OFF_PTRS))
#define PB ((const void *const *)(arena + OFF_PTRS + MAX_PTRS * 8))
#define PC ((void *const *)(arena + OFF_PTRS + 2 * MAX_PTRS * 8))
#define FA ((const float *)a)
#define FB ((const float *)b)
#define FC ((float *)c)
#define FALPHA ((const float *)alpha)
#define FBETA ((const float *)beta)
    switch (g->api) {
    case SGEMM:
        st = cublasSgemm(h, opa, opb, m, n, k, FALPHA, FA, (int)lda, FB,
                         (int)ldb, FBETA, FC, (int)ldc);
        break;
    case SGEMM_64:
        st = cublasSgemm_64(h, opa, opb, m64, n64, k64, FALPHA, FA, lda, FB,
                            ldb, FBETA, FC, ldc);
        break;
    case SGEMM_BATCHED:
        st = cublasSgemmBatched(h, opa, opb, m, n, k, FALPHA,
                                (const float *const *)PA, (int)lda,
                                (const float *const *)PB, (int)ldb, FBETA,
                                (float *const *)PC, (int)ldc, count);
        break;
    case SGEMM_BATCHED_64:
        st = cublasSgemmBatched_64(h, opa, opb, m64, n64, k64, FALPHA,
                                   (const float *const *)PA, lda,
                                   (const float *const *)PB, ldb, FBETA,
                                   (float *const *)PC, ldc, count64);
        break;
    case SGEMM_STRIDED:
        st = cublasSgemmStridedBatched(h, opa, opb, m, n, k, FALPHA, FA,
                                       (int)lda, sa, FB, (int)ldb, sb, FBETA,
                                       FC, (int)ldc, sc, count);
        break;
    case SGEMM_STRIDED_64:
        st = cublasSgemmStridedBatched_64(h, opa, opb, m64, n64, k64, FALPHA,
                                          FA, lda, sa, FB, ldb, sb, FBETA, FC,
                                          ldc, sc, count64);
        break;
    case SGEMM_GROUPED:
        st = cublasSgemmGroupedBatched(
            h, g->nul == NULL_TRANSA ? NULL : gr.ta, gr.tb,
            g->nul == NULL_M_ARRAY ? NULL : gr.m, gr.n, gr.k,
            g->nul == NULL_ALPHA ? NULL : gr.alpha,
            (const float *const *)PA, gr.lda, (const float *const *)PB,
            gr.ldb, g->nul == NULL_BETA ? NULL : gr.beta,
            (float *const *)PC, gr.ldc, g->groups,
            g->nul == NULL_SIZES ? NULL : gr.size);
        break;
    case SGEMM_GROUPED_64:
        st = cublasSgemmGroupedBatched_64(
            h, g->nul == NULL_TRANSA ? NULL : gr.ta, gr.tb,
            g->nul == NULL_M_ARRAY ? NULL : gr.m64, gr.n64, gr.k64,
            g->nul == NULL_ALPHA ? NULL : gr.alpha,
            (const float *const *)PA, gr.lda64, (const float *const *)PB,
            gr.ldb64, g->nul == NULL_BETA ? NULL : gr.beta,
            (float *const *)PC, gr.ldc64, g->groups,
            g->nul == NULL_SIZES ? NULL : gr.size64);
        break;
    case SGEMM_EX:
        st = cublasSgemmEx(h, opa, opb, m, n, k, FALPHA, a, ta, (int)lda, b,
                           tb, (int)ldb, FBETA, c, tc, (int)ldc);
        break;
    case SGEMM_EX_64:
        st = cublasSgemmEx_64(h, opa, opb, m64, n64, k64, FALPHA, a, ta, lda,
                              b, tb, ldb, FBETA, c, tc, ldc);
        break;
    case GEMM_EX:
        st = cublasGemmEx(h, opa, opb, m, n, k, alpha, a, ta, (int)lda, b, tb,
                          (int)ldb, beta, c, tc, (int)ldc, ct, algo);
        break;
    case GEMM_EX_64:
        st = cublasGemmEx_64(h, opa, opb, m64, n64, k64, alpha, a, ta, lda, b,
                             tb, ldb, beta, c, tc, ldc, ct, algo);
        break;
    case GEMM_BATCHED_EX:
        st = cublasGemmBatchedEx(h, opa, opb, m, n, k, alpha, PA, ta,
                                 (int)lda, PB, tb, (int)ldb, beta, PC, tc,
                                 (int)ldc, count, ct, algo);
        break;
    case GEMM_BATCHED_EX_64:
        st = cublasGemmBatchedEx_64(h, opa, opb, m64, n64, k64, alpha, PA, ta,
                                    lda, PB, tb, ldb, beta, PC, tc, ldc,
                                    count64, ct, algo);
        break;
    case GEMM_STRIDED_EX:
        st = cublasGemmStridedBatchedEx(h, opa, opb, m, n, k, alpha, a, ta,
                                        (int)lda, sa, b, tb, (int)ldb, sb,
                                        beta, c, tc, (int)ldc, sc, count, ct,
                                        algo);
        break;
    case GEMM_STRIDED_EX_64:
        st = cublasGemmStridedBatchedEx_64(h, opa, opb, m64, n64, k64, alpha,
                                           a, ta, lda, sa, b, tb, ldb, sb,
                                           beta, c, tc, ldc, sc, count64, ct,
                                           algo);
        break;
    case GEMM_GROUPED_EX:
        st = cublasGemmGroupedBatchedEx(
            h, g->nul == NULL_TRANSA ? NULL : gr.ta, gr.tb,
            g->nul == NULL_M_ARRAY ? NULL : gr.m, gr.n, gr.k,
            g->nul == NULL_ALPHA ? NULL : gr.alpha, PA, ta, gr.lda, PB, tb,
            gr.ldb, g->nul == NULL_BETA ? NULL : gr.beta, PC, tc, gr.ldc,
            g->groups, g->nul == NULL_SIZES ? NULL : gr.size, ct);
        break;
    case GEMM_GROUPED_EX_64:
        st = cublasGemmGroupedBatchedEx_64(
            h, g->nul == NULL_TRANSA ? NULL : gr.ta, gr.tb,
            g->nul == NULL_M_ARRAY ? NULL : gr.m64, gr.n64, gr.k64,
            g->nul == NULL_ALPHA ? NULL : gr.alpha, PA, ta, gr.lda64, PB, tb,
            gr.ldb64, g->nul == NULL_BETA ? NULL : gr.beta, PC, tc,
            gr.ldc64, g->groups, g->nul == NULL_SIZES ? NULL : gr.size64,
            ct);
        break;
    case LEGACY_SGEMM: {
        static const char legacy_ops[] = {'N', 'T', 'C', 'x'};
        char la = legacy_ops[g->ta == BAD_OP ? 3 : g->ta];
        char lb = legacy_ops[g->tb == BAD_OP ? 3 : g->tb];

        st = cc_legacy_sgemm(la, lb, m, n, k, g->alpha, FA, (int)lda, FB,
                             (int)ldb, g->beta, FC, (int)ldc);
        break;
    }
    default:
        break;
    }
    return report(api_names[g->api], st, gcase_trivial(g, &gr), args);
}

static int
run_gemm_corpus(void)
{
    struct gcase g;

    for (int api = 0; api < API_COUNT; api++) {
        rng = SEED + (uint64_t)api;
        for (int i = 0; i < opt_gemm; i++, case_id++) {
            gcase_make((enum api)api, i, &g);
            if (case_id % opt_every != 0)
                continue;
            if (api == LEGACY_SGEMM && !legacy_ready)
                continue;
            if (run_gemm(&g) != 0)
                return -1;
        }
    }
    cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST);
    cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH);
    return 0;
}

/* ---- cuBLASLt ------------------------------------------------------------- */


#define LT_N CUBLAS_OP_N
/* Shapes without negative sizes: the layouts take unsigned ones. */
static const struct { int m, n, k; } lt_shapes[] = {
    {3, 4, 5}, {8, 8, 8}, {5, 2, 7}, {0, 4, 5}, {3, 0, 5}, {3, 4, 0},
};
enum lt_order { LO_COL, LO_ROW, LO_A_ROW, LO_CD_MIXED, LO_COL32,
                LO_COUNT };
static const char *const lt_order_names[] = {"col", "row", "arow", "cdmix",
                                             "col32"};
enum lt_ld { LL_TIGHT, LL_PAD, LL_SHORT_A, LL_SHORT_D, LL_C_ZERO,
             LL_COUNT };
static const char *const lt_ld_names[] = {"tight", "pad", "shortA",
                                          "shortD", "c0"};
#define LT_BAD_MODE 9
static const int lt_modes[] = {
    CUBLASLT_POINTER_MODE_HOST, CUBLASLT_POINTER_MODE_DEVICE,
    CUBLASLT_POINTER_MODE_DEVICE_VECTOR,
    CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO, LT_BAD_MODE,
};
static const uint32_t lt_epilogues[] = {
    CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS,
    CUBLASLT_EPILOGUE_RELU_AUX_BIAS, CUBLASLT_EPILOGUE_GELU_AUX,
    CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_DRELU,
    CUBLASLT_EPILOGUE_BGRADB, 3,
};
enum lt_aux { LA_GOOD, LA_SHORT, LA_ODD, LA_COUNT };
static const struct {
    cudaDataType ab, cd, scale;
    cublasComputeType_t compute;
} lt_types[] = {
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC},
    {CUDA_R_16F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_16F, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_64F},
};
static const int lt_batches[] = {1, 2, 0, -2}; /* -2: A's count only */
enum lt_place { LP_APART, LP_IN_PLACE, LP_SAME_PTR_OTHER_LD, LP_COUNT };
static const char *const lt_place_names[] = {"apart", "inplace",
                                             "sameptr"};
enum lt_null { LN_NONE, LN_ALPHA, LN_BETA, LN_A, LN_C, LN_D, LN_BIAS,
               LN_DESC, LN_HANDLE, LN_COUNT };
static const char *const lt_null_names[] = {"none", "alpha", "beta", "A",
                                            "C", "D", "bias", "desc",
                                            "handle"};
enum lt_algo { LG_NULL, LG_HEURISTIC, LG_ZEROED, LG_COUNT };
static const char *const lt_algo_names[] = {"none", "heuristic", "zeroed"};

struct lcase {
    int m, n, k, ta, tb;
    enum lt_order order;
    enum lt_ld ld;
    int mode, scalars;
    uint32_t epilogue;
    enum lt_aux aux;
    int types, batch;
    enum lt_place place;
    enum lt_null nul;
    enum lt_algo algo;
    int small_ws;
    int ws_shift; /* bytes past the workspace's (256-aligned) start */
    int ws_corpus; /* one of run_lt_workspace_corpus's */
};

static void
lcase_make(int i, struct lcase *c)
{
    int s = pick(i, N_OF(lt_shapes)), sc = pick(i + 1, N_OF(scalars));

    memset(c, 0, sizeof(*c));
    c->m = lt_shapes[s].m;
    c->n = lt_shapes[s].n;
    c->k = lt_shapes[s].k;
    c->ta = ops[pick(i + 2, N_OF(ops))];
    c->tb = ops[pick(i + 3, N_OF(ops))];
    c->order = (enum lt_order)pick(i + 4, LO_COUNT);
    c->ld = (enum lt_ld)pick(i + 5, LL_COUNT);
    c->mode = lt_modes[pick(i + 6, N_OF(lt_modes))];
    c->scalars = sc;
    c->epilogue = lt_epilogues[pick(i + 7, N_OF(lt_epilogues))];
    c->aux = (enum lt_aux)pick(i + 8, LA_COUNT);
    c->types = pick(i + 9, N_OF(lt_types));
    c->batch = lt_batches[pick(i + 10, N_OF(lt_batches))];
    c->place = (enum lt_place)pick(i + 11, LP_COUNT);
    c->nul = (enum lt_null)pick(i + 12, LN_COUNT);
    c->algo = (enum lt_algo)pick(i + 13, LG_COUNT);
    c->small_ws = pick(i + 14, 2);
}

/* Descriptors initialised in place in zeroed memory of the program's
 * own, as a program that keeps them does: the workspace corpus's calls
 * use these, so that each holds the bytes of the one before it. */
static struct {
    cublasLtMatmulDescOpaque_t op;
    cublasLtMatrixLayoutOpaque_t layout[4];
} lt_in_place;

/* A layout, made (in `in_place` when not NULL) or NULL after a refusal
 * (its status then is the case's status: cuBLASLt refuses the
 * description itself). */
static cublasStatus_t
lt_layout(cublasLtMatrixLayout_t *l, cudaDataType t, int rows, int cols,
          int64_t ld, int order, int batch, int64_t stride,
          cublasLtMatrixLayoutOpaque_t *in_place)
{
    int32_t count = batch;
    cublasStatus_t st;

    *l = NULL;
    if (in_place) {
        memset(in_place, 0, sizeof(*in_place));
        st = cublasLtMatrixLayoutInit(in_place, t, (uint64_t)rows,
                                      (uint64_t)cols, ld);
        if (st == CUBLAS_STATUS_SUCCESS)
            *l = in_place;
    } else {
        st = cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols,
                                        ld);
    }
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_ORDER,
                                     &order, sizeof(order));
    cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                     &count, sizeof(count));
    cublasLtMatrixLayoutSetAttribute(
        *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride));
    return CUBLAS_STATUS_SUCCESS;
}

/* The call is trivial when it reads no product: k or a size 0 (nothing
 * multiplies; an epilogue still applies, exactly in any precision), or a
 * host alpha of 0. */
static int
lcase_trivial(const struct lcase *c)
{
    return c->m == 0 || c->n == 0 || c->k == 0 ||
           (c->mode == CUBLASLT_POINTER_MODE_HOST &&
            scalars[c->scalars].alpha == 0.0f);
}

static int
run_lt(const struct lcase *c)
{
    int row_a = c->order == LO_ROW || c->order == LO_A_ROW;
    int row_b = c->order == LO_ROW;
    int row_d = c->order == LO_ROW;
    int row_c = c->order == LO_ROW || c->order == LO_CD_MIXED;
    int order_a = c->order == LO_COL32 ? CUBLASLT_ORDER_COL32
                                       : row_a ? CUBLASLT_ORDER_ROW
                                               : CUBLASLT_ORDER_COL;
    int ar = c->ta == LT_N ? c->m : c->k, ac = c->ta == LT_N ? c->k : c->m;
    int br = c->tb == LT_N ? c->k : c->n, bc = c->tb == LT_N ? c->n : c->k;
    int pad = c->ld == LL_PAD ? 3 : 0;
    cublasLtMatrixLayoutOpaque_t *in_place =
        c->ws_corpus ? lt_in_place.layout : NULL;
    int64_t lda = (row_a ? ac : ar) + pad, ldb = (row_b ? bc : br) + pad;
    int64_t ldd = (row_d ? c->n : c->m) + pad, ldc;
    int batch = c->batch == -2 ? 2 : c->batch, batch_a = batch;
    size_t ab = c->types == 3 ? 2 : 4;
    int64_t sa, sb, sd, aux_ld, aux_stride;
    int relu_mask = c->epilogue == CUBLASLT_EPILOGUE_RELU_AUX_BIAS ||
                    c->epilogue == CUBLASLT_EPILOGUE_DRELU;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    cublasLtMatmulAlgo_t zeroed;
    const cublasLtMatmulAlgo_t *algo = NULL;
    unsigned char *a = arena + OFF_A, *b = arena + OFF_B;
    unsigned char *cm = arena + OFF_C, *dm = arena + OFF_C + REGION / 2;
    unsigned char *bias = arena + OFF_LT, *aux = arena + OFF_LT + 512;
    const void *alpha, *beta;
    float alpha_v = scalars[c->scalars].alpha;
    float beta_v = scalars[c->scalars].beta;
    char args[512];
    cublasStatus_t st;
    int count = 0;
    int32_t ta = c->ta, tb = c->tb, mode = c->mode;
    /* One size at every shift (256 bytes fewer than the whole): calls
     * that differ only in where their workspace starts. */
    uint64_t ws = c->small_ws    ? 0
                  : c->ws_corpus ? WORKSPACE - 256
                                 : WORKSPACE;

    if (c->batch == -2)
        batch = 1;
    if (c->ld == LL_SHORT_A)
        lda = lda > 1 ? lda - 1 : 0;
    if (c->ld == LL_SHORT_D)
        ldd = ldd > 1 ? ldd - 1 : 0;
    ldc = c->ld == LL_C_ZERO ? 0 : (row_c ? c->n : c->m) + pad;
    if (c->place == LP_SAME_PTR_OTHER_LD)
        ldc = ldd + 1;
    sa = lda * (row_a ? ar : ac) + 3;
    sb = ldb * (row_b ? br : bc) + 3;
    sd = ldd * (row_d ? c->m : c->n) + 3;
    aux_ld = relu_mask ? 128 : 8;
    if (c->aux == LA_SHORT)
        aux_ld = relu_mask ? 0 : 1;
    if (c->aux == LA_ODD)
        aux_ld = relu_mask ? 130 : 9;
    aux_stride = aux_ld * (c->n > 0 ? c->n : 1);
    snprintf(args, sizeof(args),
             "m=%d n=%d k=%d op=%d,%d order=%s ld=%s mode=%d alpha=%g "
             "beta=%g epilogue=%u aux=%d types=%d batch=%d place=%s "
             "null=%s algo=%s ws=%llu ws_at=+%d",
             c->m, c->n, c->k, c->ta, c->tb, lt_order_names[c->order],
             lt_ld_names[c->ld], c->mode, alpha_v, beta_v,
             (unsigned)c->epilogue, (int)c->aux, c->types, c->batch,
             lt_place_names[c->place], lt_null_names[c->nul],
             lt_algo_names[c->algo], (unsigned long long)ws, c->ws_shift);

    memcpy(image, base_image, ARENA);
    /* Scalars and vectors: alpha and beta at the head of their vectors. */
    for (int i = 0; i < 16; i++) {
        memcpy(image + OFF_SCALARS + 4 * (i % 4), &alpha_v, 4);
        memcpy(image + OFF_LT + 256 + 4 * i, &alpha_v, 4);
        memcpy(image + OFF_LT + 384 + 4 * i, &beta_v, 4);
    }
    memcpy(image + OFF_SCALARS + 16, &beta_v, 4);
    memcpy(&host_scalars[0], &alpha_v, 4);
    memcpy(&host_scalars[1], &beta_v, 4);
    if (upload() != 0)
        return -1;
    if (mode == CUBLASLT_POINTER_MODE_HOST || mode == LT_BAD_MODE) {
        alpha = host_scalars[0];
        beta = host_scalars[1];
    } else if (mode == CUBLASLT_POINTER_MODE_DEVICE) {
        alpha = arena + OFF_SCALARS;
        beta = arena + OFF_SCALARS + 16;
    } else {
        alpha = arena + OFF_LT + 256;
        beta = mode == CUBLASLT_POINTER_MODE_DEVICE_VECTOR
                   ? (const void *)(arena + OFF_LT + 384)
                   : host_scalars[1];
    }
    if (c->nul == LN_ALPHA)
        alpha = NULL;
    if (c->nul == LN_BETA)
        beta = NULL;
    if (c->place != LP_APART)
        dm = cm;

    if (c->ws_corpus) {
        memset(&lt_in_place.op, 0, sizeof(lt_in_place.op));
        st = cublasLtMatmulDescInit(&lt_in_place.op,
                                    lt_types[c->types].compute,
                                    lt_types[c->types].scale);
        op = &lt_in_place.op;
    } else {
        st = cublasLtMatmulDescCreate(&op, lt_types[c->types].compute,
                                      lt_types[c->types].scale);
    }
    if (st == CUBLAS_STATUS_SUCCESS) {
        const void *bias_ptr = c->nul == LN_BIAS ? NULL : bias;

        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                       sizeof(ta));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                       sizeof(tb));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_POINTER_MODE,
                                       &mode, sizeof(mode));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                       &c->epilogue, sizeof(c->epilogue));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &bias_ptr, sizeof(bias_ptr));
        cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
        cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld,
            sizeof(aux_ld));
        cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &aux_stride,
            sizeof(aux_stride));
    }
    if (st == CUBLAS_STATUS_SUCCESS)
        st = lt_layout(&la, lt_types[c->types].ab, ar, ac, lda, order_a,
                       batch_a, sa, in_place ? &in_place[0] : NULL);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = lt_layout(&lb, lt_types[c->types].ab, br, bc, ldb,
                       row_b ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL,
                       batch, sb, in_place ? &in_place[1] : NULL);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = lt_layout(&ld, lt_types[c->types].cd, c->m, c->n, ldd,
                       row_d ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL,
                       batch, sd, in_place ? &in_place[2] : NULL);
    if (st == CUBLAS_STATUS_SUCCESS && c->place != LP_IN_PLACE)
        st = lt_layout(&lc, lt_types[c->types].cd, c->m, c->n, ldc,
                       row_c ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL,
                       batch, sd, in_place ? &in_place[3] : NULL);
    if (st == CUBLAS_STATUS_SUCCESS && c->place == LP_IN_PLACE)
        lc = ld;
    if (st == CUBLAS_STATUS_SUCCESS && c->algo == LG_HEURISTIC) {
        /* The program's own question; its answer (or refusal) decides
         * whether the call gets an algorithm. */
        cublasLtMatmulPreferenceCreate(&pref);
        cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
        if (cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ld, pref, 1,
                                           &heur, &count) ==
                CUBLAS_STATUS_SUCCESS &&
            count > 0)
            algo = &heur.algo;
    }
    if (c->algo == LG_ZEROED) {
        memset(&zeroed, 0, sizeof(zeroed));
        algo = &zeroed;
    }
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmul(c->nul == LN_HANDLE ? NULL : lt,
                            c->nul == LN_DESC ? NULL : op, alpha,
                            c->nul == LN_A ? NULL : a, la, b, lb, beta,
                            c->nul == LN_C ? NULL : cm, lc,
                            c->nul == LN_D ? NULL : dm, ld, algo,
                            ws || c->ws_shift ? workspace + c->ws_shift
                                               : NULL,
                            ws, NULL);
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (!in_place) { /* in place: nothing to destroy */
        if (lc && lc != ld)
            cublasLtMatrixLayoutDestroy(lc);
        cublasLtMatrixLayoutDestroy(ld);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatmulDescDestroy(op);
    }
    (void)ab;
    return report("cublasLtMatmul", st, lcase_trivial(c), args);
}

static int
run_lt_corpus(void)
{
    struct lcase c;

    rng = SEED + 200;
    for (int i = 0; i < opt_lt; i++, case_id++) {
        lcase_make(i, &c);
        if (case_id % opt_every != 0)
            continue;
        if (run_lt(&c) != 0)
            return -1;
    }
    return 0;
}

/* The program's workspace where cuBLASLt requires it 256-byte aligned: a
 * valid 8 x 8 x 8 FP32 call, without an algorithm and then with one, its
 * workspace at offsets 0, 16 (aligned for every element type, still
 * refused: INVALID_VALUE) and 256, and at offset 16 with size 0 (nothing
 * to align). The calls' descriptors are initialised in place in the same
 * zeroed memory, so that each call holds the bytes of the one before it
 * and an answer kept for one workspace is not taken for the next. */
static int
run_lt_workspace_corpus(void)
{
    static const int shifts[] = {0, 16, 256, 16};
    struct lcase c;

    for (int i = 0; i < 2 * N_OF(shifts); i++, case_id++) {
        memset(&c, 0, sizeof(c));
        c.m = c.n = c.k = 8;
        c.ta = c.tb = CUBLAS_OP_N;
        c.mode = CUBLASLT_POINTER_MODE_HOST;
        c.scalars = 1; /* alpha 0.5, beta -1: C is read */
        c.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        c.batch = 1;
        c.algo = i / N_OF(shifts) ? LG_HEURISTIC : LG_NULL;
        c.ws_shift = shifts[i % N_OF(shifts)];
        c.ws_corpus = 1;
        c.small_ws = i % N_OF(shifts) == N_OF(shifts) - 1;
        if (case_id % opt_every != 0)
            continue;
        if (run_lt(&c) != 0)
            return -1;
    }
    return 0;
}

/* ---- cuDNN ----------------------------------------------------------------- */

enum dir { FWD, BWD_DATA, BWD_FILTER, FUSED, DIR_COUNT };
static const char *const dir_api[DIR_COUNT] = {
    "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
    "cudnnConvolutionBackwardFilter", "cudnnConvolutionBiasActivationForward",
};
static const int dir_algos[DIR_COUNT] = {
    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
};
/* The fused forward's activations: the two cuDNN takes and one it
 * refuses. */
static const cudnnActivationMode_t fused_acts[] = {
    CUDNN_ACTIVATION_RELU, CUDNN_ACTIVATION_IDENTITY,
    CUDNN_ACTIVATION_SIGMOID,
};

static const struct { cudnnDataType_t x, w, y; } dtypes[] = {
    {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT},
    {CUDNN_DATA_HALF, CUDNN_DATA_HALF, CUDNN_DATA_HALF},
    {CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_FLOAT},
    {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DATA_HALF},
    {CUDNN_DATA_BFLOAT16, CUDNN_DATA_BFLOAT16, CUDNN_DATA_BFLOAT16},
    {CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE},
};
static const cudnnDataType_t computes[] = {
    CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_DOUBLE,
};
static const cudnnMathType_t dnn_maths[] = {
    CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH,
    CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH,
};
enum layout { LAYOUT_NCHW, LAYOUT_NHWC, LAYOUT_STRIDED, LAYOUT_COUNT };
static const int group_choices[] = {1, 2, 4, 3};
/* N C H W K R; the zero and negative ones are refused when described. */
static const struct { int n, c, h, w, k, r; } dnn_sizes[] = {
    {2, 4, 5, 5, 4, 3}, {1, 8, 4, 6, 8, 1}, {2, 4, 5, 5, 4, 2},
    {0, 4, 5, 5, 4, 3}, {2, 0, 5, 5, 4, 3}, {2, 4, 5, 5, 0, 3},
    {2, 4, 0, 5, 4, 3}, {2, 4, 5, 5, 4, 7},
};
enum ydesc { Y_RIGHT, Y_SHORT_H, Y_WRONG_K, Y_WRONG_N, Y_COUNT };
static const struct { int pad, stride, dil; } geoms[] = {
    {1, 1, 1}, {0, 2, 1}, {2, 1, 2}, {0, 1, 1}, {-1, 1, 1}, {1, 0, 1},
};
enum ws { WS_NEED, WS_SHORT, WS_NULL, WS_MORE, WS_COUNT };
enum dnn_null { DN_NONE, DN_ALPHA, DN_BETA, DN_X, DN_W, DN_Y, DN_HANDLE,
                DN_XDESC, DN_WDESC, DN_CONV, DN_COUNT };
static const char *const dn_names[] = {"none", "alpha", "beta", "x", "w",
                                       "y", "handle", "xdesc", "wdesc",
                                       "conv"};
static const struct { float alpha, beta; } dnn_scalars[] = {
    {1.0f, 0.0f}, {0.5f, 0.25f}, {0.0f, 1.0f}, {-1.0f, 1.0f},
};

struct ccase {
    enum dir dir;
    int dtypes, compute, math;
    enum layout layout;
    int groups, size;
    enum ydesc ydesc;
    int geom, mode, algo;
    enum ws ws;
    enum dnn_null nul;
    int scalars;
    int act, z_apart;   /* the fused forward's: activation, z not y */
};

static void
ccase_make(enum dir dir, int i, struct ccase *c)
{
    c->dir = dir;
    c->dtypes = pick(i, N_OF(dtypes));
    c->compute = pick(i + 1, N_OF(computes));
    c->math = pick(i + 2, N_OF(dnn_maths));
    c->layout = (enum layout)pick(i + 3, LAYOUT_COUNT);
    c->groups = group_choices[pick(i + 4, N_OF(group_choices))];
    c->size = pick(i + 5, N_OF(dnn_sizes));
    c->ydesc = (enum ydesc)pick(i + 6, Y_COUNT);
    c->geom = pick(i + 7, N_OF(geoms));
    c->mode = pick(i + 8, 2);
    /* Every algorithm of the direction, and one past the last. */
    c->algo = pick(i + 9, dir_algos[dir] + 1);
    c->ws = (enum ws)pick(i + 10, WS_COUNT);
    c->nul = (enum dnn_null)pick(i + 11, DN_COUNT);
    c->scalars = pick(i + 12, N_OF(dnn_scalars));
    /* Only the fused forward draws these: the other directions' cases
     * stay as they were. */
    c->act = dir == FUSED ? pick(i + 13, N_OF(fused_acts)) : 0;
    c->z_apart = dir == FUSED ? pick(i + 14, 2) : 0;
}

static int
tensor_set(cudnnTensorDescriptor_t t, cudnnDataType_t type,
           enum layout layout, int n, int c, int h, int w)
{
    int wpad = w + 2; /* LAYOUT_STRIDED: rows with a gap */

    if (layout == LAYOUT_NHWC)
        return (int)cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, type, n,
                                               c, h, w);
    if (layout == LAYOUT_STRIDED)
        return (int)cudnnSetTensor4dDescriptorEx(t, type, n, c, h, w,
                                                 c * h * wpad, h * wpad, wpad,
                                                 1);
    return (int)cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, type, n, c,
                                           h, w);
}

/* The fused forward with alpha2 for beta: z is y, or x's bytes read as
 * y's (z_apart); the bias is the first k elements of x's bytes, FLOAT
 * 1 x k x 1 x 1. Returns cuDNN's status. */
static int
run_fused(const struct ccase *cc, cudnnHandle_t h, const void *alpha1,
          cudnnTensorDescriptor_t xd, const void *x,
          cudnnFilterDescriptor_t wd, const void *w,
          cudnnConvolutionDescriptor_t cd, void *ws, size_t ws_bytes,
          const void *alpha2, cudnnTensorDescriptor_t yd, void *y, int k)
{
    cudnnTensorDescriptor_t bd;
    cudnnActivationDescriptor_t ad;
    int st;

    cudnnCreateTensorDescriptor(&bd);
    cudnnCreateActivationDescriptor(&ad);
    cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                               k > 0 ? k : 1, 1, 1);
    cudnnSetActivationDescriptor(ad, fused_acts[cc->act],
                                 CUDNN_NOT_PROPAGATE_NAN, 0.0);
    st = (int)cudnnConvolutionBiasActivationForward(
        h, alpha1, xd, x, wd, w, cd, (cudnnConvolutionFwdAlgo_t)cc->algo, ws,
        ws_bytes, alpha2, yd, cc->z_apart ? arena + OFF_A : y, bd,
        arena + OFF_A, ad, yd, y);
    cudnnDestroyTensorDescriptor(bd);
    cudnnDestroyActivationDescriptor(ad);
    return st;
}

static int
run_conv(const struct ccase *cc)
{
    const int nd = dnn_sizes[cc->size].n, nc = dnn_sizes[cc->size].c;
    const int nh = dnn_sizes[cc->size].h, nw = dnn_sizes[cc->size].w;
    const int nk = dnn_sizes[cc->size].k, nr = dnn_sizes[cc->size].r;
    const float alpha = dnn_scalars[cc->scalars].alpha;
    const float beta = dnn_scalars[cc->scalars].beta;
    double halpha = 0.0, hbeta = 0.0;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnTensorFormat_t wfmt = cc->layout == LAYOUT_NHWC ? CUDNN_TENSOR_NHWC
                                                         : CUDNN_TENSOR_NCHW;
    int on = nd, ok = nk, oh = 1, ow = 1, set[4], st;
    size_t need = 0, ws_bytes;
    void *ws_ptr = workspace;
    cudnnStatus_t q;
    char args[512];

    memcpy(&halpha, &alpha, sizeof(float));
    memcpy(&hbeta, &beta, sizeof(float));
    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd);
    cudnnCreateConvolutionDescriptor(&cd);
    set[0] = tensor_set(xd, dtypes[cc->dtypes].x, cc->layout, nd, nc, nh, nw);
    set[1] = (int)cudnnSetFilter4dDescriptor(
        wd, dtypes[cc->dtypes].w, wfmt, nk,
        cc->groups > 0 && nc % cc->groups == 0 ? nc / cc->groups : nc, nr,
        nr);
    set[2] = (int)cudnnSetConvolution2dDescriptor(
        cd, geoms[cc->geom].pad, geoms[cc->geom].pad, geoms[cc->geom].stride,
        geoms[cc->geom].stride, geoms[cc->geom].dil, geoms[cc->geom].dil,
        cc->mode ? CUDNN_CROSS_CORRELATION : CUDNN_CONVOLUTION,
        computes[cc->compute]);
    cudnnSetConvolutionGroupCount(cd, cc->groups);
    cudnnSetConvolutionMathType(cd, dnn_maths[cc->math]);
    /* y from the convolution's own answer when it has one, else 1x1. */
    if (cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &on, &ok, &oh,
                                              &ow) != CUDNN_STATUS_SUCCESS) {
        on = nd;
        ok = nk;
        oh = ow = 1;
    }
    if (cc->ydesc == Y_SHORT_H)
        oh -= 1;
    if (cc->ydesc == Y_WRONG_K)
        ok += 1;
    if (cc->ydesc == Y_WRONG_N)
        on += 1;
    set[3] = tensor_set(yd, dtypes[cc->dtypes].y, cc->layout, on, ok, oh, ow);

    switch (cc->dir) {
    case FWD:
    case FUSED:
        q = cudnnGetConvolutionForwardWorkspaceSize(
            dnn, xd, wd, cd, yd, (cudnnConvolutionFwdAlgo_t)cc->algo, &need);
        break;
    case BWD_DATA:
        q = cudnnGetConvolutionBackwardDataWorkspaceSize(
            dnn, wd, yd, cd, xd, (cudnnConvolutionBwdDataAlgo_t)cc->algo,
            &need);
        break;
    default:
        q = cudnnGetConvolutionBackwardFilterWorkspaceSize(
            dnn, xd, yd, cd, wd, (cudnnConvolutionBwdFilterAlgo_t)cc->algo,
            &need);
        break;
    }
    if (q != CUDNN_STATUS_SUCCESS || need > WORKSPACE - 4096)
        need = 0;
    ws_bytes = need;
    if (cc->ws == WS_SHORT && need > 0)
        ws_bytes = need - 1;
    if (cc->ws == WS_NULL)
        ws_ptr = NULL;
    if (cc->ws == WS_MORE)
        ws_bytes = need + 4096;

    snprintf(args, sizeof(args),
             "types=%d/%d/%d,compute=%d,math=%d,layout=%d,groups=%d,"
             "nchwkr=%d/%d/%d/%d/%d/%d,y=%d/%d/%d/%d(%d),pad=%d,stride=%d,"
             "dil=%d,mode=%d,algo=%d,ws=%d(need %zu),null=%s,alpha=%g,"
             "beta=%g,set=%d/%d/%d/%d,act=%d,z_apart=%d",
             (int)dtypes[cc->dtypes].x, (int)dtypes[cc->dtypes].w,
             (int)dtypes[cc->dtypes].y, (int)computes[cc->compute],
             (int)dnn_maths[cc->math], (int)cc->layout, cc->groups, nd, nc,
             nh, nw, nk, nr, on, ok, oh, ow, (int)cc->ydesc,
             geoms[cc->geom].pad, geoms[cc->geom].stride,
             geoms[cc->geom].dil, cc->mode, cc->algo, (int)cc->ws, need,
             dn_names[cc->nul], (double)alpha, (double)beta, set[0], set[1],
             set[2], set[3], (int)fused_acts[cc->act], cc->z_apart);

    /* Half and double tensors: the same bytes, read as their type. */
    memcpy(image, base_image, ARENA);
    st = upload();
    if (st == 0) {
        cudnnHandle_t h = cc->nul == DN_HANDLE ? NULL : dnn;
        const void *pa = cc->nul == DN_ALPHA ? NULL : &halpha;
        const void *pb = cc->nul == DN_BETA ? NULL : &hbeta;
        void *x = cc->nul == DN_X ? NULL : arena + OFF_A;
        void *w = cc->nul == DN_W ? NULL : arena + OFF_B;
        void *y = cc->nul == DN_Y ? NULL : arena + OFF_C;
        cudnnTensorDescriptor_t xdd = cc->nul == DN_XDESC ? NULL : xd;
        cudnnFilterDescriptor_t wdd = cc->nul == DN_WDESC ? NULL : wd;
        cudnnConvolutionDescriptor_t cdd = cc->nul == DN_CONV ? NULL : cd;

        switch (cc->dir) {
        case FWD:
            st = (int)cudnnConvolutionForward(
                h, pa, xdd, x, wdd, w, cdd,
                (cudnnConvolutionFwdAlgo_t)cc->algo, ws_ptr, ws_bytes, pb, yd,
                y);
            break;
        case FUSED:
            st = run_fused(cc, h, pa, xdd, x, wdd, w, cdd, ws_ptr, ws_bytes,
                           pb, yd, y, ok);
            break;
        case BWD_DATA:
            st = (int)cudnnConvolutionBackwardData(
                h, pa, wdd, w, yd, y, cdd,
                (cudnnConvolutionBwdDataAlgo_t)cc->algo, ws_ptr, ws_bytes, pb,
                xdd, x);
            break;
        default:
            st = (int)cudnnConvolutionBackwardFilter(
                h, pa, xdd, x, yd, y, cdd,
                (cudnnConvolutionBwdFilterAlgo_t)cc->algo, ws_ptr, ws_bytes,
                pb, wdd, w);
            break;
        }
        st = report(dir_api[cc->dir], st,
                    nd <= 0 || nc <= 0 || nk <= 0 || nh <= 0 || alpha == 0.0f,
                    args);
    }
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
    return st;
}

static int
run_conv_corpus(void)
{
    struct ccase cc;

    for (int dir = 0; dir < DIR_COUNT; dir++) {
        rng = SEED + 100 + (uint64_t)dir;
        for (int i = 0; i < opt_conv; i++, case_id++) {
            ccase_make((enum dir)dir, i, &cc);
            if (case_id % opt_every != 0)
                continue;
            if (run_conv(&cc) != 0)
                return -1;
        }
    }
    return 0;
}

/* ---- cuDNN's backend (graph) API ------------------------------------------ */

/* One FP32 forward convolution (1 x 4 x 6 x 6 input, 4 x 4 x 3 x 3
 * filter, padding 1, NCHW) as a graph, executed with variant packs cuDNN
 * runs and ones it refuses: a unique id missing (BAD_PARAM), a plan that
 * needs a workspace given none (BAD_PARAM_NULL_POINTER), a pointer that
 * breaks its tensor's byte alignment (BAD_PARAM_MISALIGNED_POINTER). The
 * x, w and y tensors are the arena's A, B and C. */
enum { G_UID_X = 11, G_UID_W = 12, G_UID_Y = 13 };

static cudnnBackendDescriptor_t
graph_tensor(int64_t uid, const int64_t dim[4])
{
    cudnnBackendDescriptor_t t = NULL;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int64_t stride[4], align = 16;

    stride[3] = 1;
    for (int i = 2; i >= 0; i--)
        stride[i] = stride[i + 1] * dim[i + 1];
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t) !=
        CUDNN_STATUS_SUCCESS)
        return NULL;
    if (cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE,
                                 CUDNN_TYPE_DATA_TYPE, 1, &type) ||
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                 CUDNN_TYPE_INT64, 4, dim) ||
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES,
                                 CUDNN_TYPE_INT64, 4, stride) ||
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                 CUDNN_TYPE_INT64, 1, &uid) ||
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                 CUDNN_TYPE_INT64, 1, &align) ||
        cudnnBackendFinalize(t)) {
        cudnnBackendDestroyDescriptor(t);
        return NULL;
    }
    return t;
}

/* The operation graph of the convolution on tensors t (x, w, y). */
static cudnnBackendDescriptor_t
graph_of(const cudnnBackendDescriptor_t t[3])
{
    static const int64_t pad[2] = {1, 1}, one[2] = {1, 1};
    cudnnBackendDescriptor_t conv = NULL, op = NULL, graph = NULL;
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t nsp = 2;
    float alpha = 0.5f, beta = -1.0f;
    int bad;

    bad = cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
                                       &conv) ||
          cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                                   CUDNN_TYPE_DATA_TYPE, 1, &comp) ||
          cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                   CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) ||
          cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                                   CUDNN_TYPE_INT64, 1, &nsp) ||
          cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                                   CUDNN_TYPE_INT64, 2, pad) ||
          cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                                   CUDNN_TYPE_INT64, 2, pad) ||
          cudnnBackendSetAttribute(conv,
                                   CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                   CUDNN_TYPE_INT64, 2, one) ||
          cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                                   CUDNN_TYPE_INT64, 2, one) ||
          cudnnBackendFinalize(conv) ||
          cudnnBackendCreateDescriptor(
              CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op) ||
          cudnnBackendSetAttribute(
              op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
              CUDNN_TYPE_FLOAT, 1, &alpha) ||
          cudnnBackendSetAttribute(
              op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
              CUDNN_TYPE_FLOAT, 1, &beta) ||
          cudnnBackendSetAttribute(
              op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv) ||
          cudnnBackendSetAttribute(
              op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[0]) ||
          cudnnBackendSetAttribute(
              op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[1]) ||
          cudnnBackendSetAttribute(
              op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[2]) ||
          cudnnBackendFinalize(op) ||
          cudnnBackendCreateDescriptor(
              CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph) ||
          cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                   CUDNN_TYPE_HANDLE, 1, &dnn) ||
          cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op) ||
          cudnnBackendFinalize(graph);
    cudnnBackendDestroyDescriptor(op);
    cudnnBackendDestroyDescriptor(conv);
    if (bad) {
        cudnnBackendDestroyDescriptor(graph);
        return NULL;
    }
    return graph;
}

/* Plans of the heuristics' configurations (mode A), in its order: into
 * plans[0] the first that needs no workspace, into plans[1] the first that
 * needs one (NULL when none does); their workspace sizes in ws. */
static void
graph_plans(cudnnBackendDescriptor_t graph, cudnnBackendDescriptor_t plans[2],
            int64_t ws[2])
{
    cudnnBackendDescriptor_t heur = NULL, cfgs[16] = {NULL};
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int64_t n = 0, got = 0;

    plans[0] = plans[1] = NULL;
    ws[0] = ws[1] = 0;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                                     &heur) ||
        cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph) ||
        cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE,
                                 CUDNN_TYPE_HEUR_MODE, 1, &mode) ||
        cudnnBackendFinalize(heur) ||
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                                 NULL))
        n = 0;
    if (n > N_OF(cfgs))
        n = N_OF(cfgs);
    for (int64_t i = 0; i < n; i++)
        cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                     &cfgs[i]);
    if (n > 0 &&
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got,
                                 cfgs) != CUDNN_STATUS_SUCCESS)
        got = 0;
    for (int64_t i = 0; i < got; i++) {
        cudnnBackendDescriptor_t plan = NULL;
        int64_t need = 0, one = 0;
        int k;

        if (cudnnBackendCreateDescriptor(
                CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) ||
            cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                     CUDNN_TYPE_HANDLE, 1, &dnn) ||
            cudnnBackendSetAttribute(
                plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]) ||
            cudnnBackendFinalize(plan) ||
            cudnnBackendGetAttribute(
                plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                CUDNN_TYPE_INT64, 1, &one, &need)) {
            cudnnBackendDestroyDescriptor(plan);
            continue;
        }
        k = need > 0;
        if (plans[k] == NULL && need <= (int64_t)WORKSPACE) {
            plans[k] = plan;
            ws[k] = need;
        } else {
            cudnnBackendDestroyDescriptor(plan);
        }
    }
    for (int64_t i = 0; i < n; i++)
        cudnnBackendDestroyDescriptor(cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
}

/* The packs: whole; each tensor's unique id missing; no workspace; the
 * input's and the output's pointer 4 bytes past the tensors' 16-byte
 * alignment (CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT). */
enum graph_pack { GP_WHOLE, GP_NO_X, GP_NO_W, GP_NO_Y, GP_NO_WORKSPACE,
                  GP_MISALIGNED_X, GP_MISALIGNED_Y, GP_COUNT };
static const char *const graph_pack_names[] = {
    "whole", "noX", "noW", "noY", "noWorkspace", "misalignedX",
    "misalignedY",
};

/* Executes `plan` with a variant pack of kind `kind`; the case's line. */
static int
run_graph(cudnnBackendDescriptor_t plan, int64_t ws, enum graph_pack kind,
          const char *plan_name)
{
    const int64_t all_uid[3] = {G_UID_X, G_UID_W, G_UID_Y};
    void *all_ptr[3] = {arena + OFF_A, arena + OFF_B, arena + OFF_C};
    int64_t uid[3];
    void *ptr[3], *wsp = ws > 0 && kind != GP_NO_WORKSPACE ? workspace
                                                             : NULL;
    cudnnBackendDescriptor_t pack = NULL;
    cudnnStatus_t st;
    int64_t n = 0;
    char args[128];

    if (kind == GP_MISALIGNED_X)
        all_ptr[0] = arena + OFF_A + 4;
    if (kind == GP_MISALIGNED_Y)
        all_ptr[2] = arena + OFF_C + 4;
    for (int i = 0; i < 3; i++) {
        if ((int)kind == GP_NO_X + i)
            continue;
        uid[n] = all_uid[i];
        ptr[n++] = all_ptr[i];
    }
    snprintf(args, sizeof(args), "plan=%s ws=%lld pack=%s", plan_name,
             (long long)ws, graph_pack_names[kind]);
    memcpy(image, base_image, ARENA);
    if (upload() != 0)
        return -1;
    st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                                      &pack);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(pack,
                                      CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                      CUDNN_TYPE_INT64, n, uid);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(pack,
                                      CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, n, ptr);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                      CUDNN_TYPE_VOID_PTR, 1, &wsp);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendFinalize(pack);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendExecute(dnn, plan, pack);
    cudnnBackendDestroyDescriptor(pack);
    return report("cudnnBackendExecute", (int)st, 0, args);
}

/* Every pack kind on the plan without a workspace, then on the plan with
 * one (its pack without a workspace only there). */
static int
run_graph_corpus(void)
{
    static const int64_t dims[3][4] = {
        {1, 4, 6, 6}, {4, 4, 3, 3}, {1, 4, 6, 6},
    };
    static const int64_t uids[3] = {G_UID_X, G_UID_W, G_UID_Y};
    cudnnBackendDescriptor_t t[3] = {NULL}, graph = NULL, plans[2];
    int64_t ws[2];
    int rc = -1;

    for (int i = 0; i < 3; i++)
        if ((t[i] = graph_tensor(uids[i], dims[i])) == NULL)
            goto out;
    if ((graph = graph_of(t)) == NULL)
        goto out;
    graph_plans(graph, plans, ws);
    if (plans[0] == NULL || plans[1] == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": no plan %s a workspace\n",
                plans[0] ? "that needs" : "without");
        goto done;
    }
    rc = 0;
    for (int p = 0; p < 2 && rc == 0; p++)
        for (int k = 0; k < GP_COUNT && rc == 0; k++, case_id++) {
            if ((k == GP_NO_WORKSPACE && p == 0) ||
                case_id % opt_every != 0)
                continue;
            rc = run_graph(plans[p], ws[p], (enum graph_pack)k,
                           p ? "workspace" : "plain");
        }
done:
    cudnnBackendDestroyDescriptor(plans[0]);
    cudnnBackendDestroyDescriptor(plans[1]);
out:
    if (rc != 0 && graph == NULL)
        fprintf(stderr, EXAMPLE_PROG ": cannot build the graph\n");
    cudnnBackendDestroyDescriptor(graph);
    for (int i = 0; i < 3; i++)
        cudnnBackendDestroyDescriptor(t[i]);
    return rc;
}

/* ---- main -------------------------------------------------------------------- */

static int
parse_int(const char *s, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > 1000000)
        return -1;
    *out = (int)v;
    return 0;
}

int
main(int argc, char **argv)
{
    uint64_t data = SEED;

    for (int i = 1; i < argc; i++) {
        int *to = NULL;

        if (strcmp(argv[i], "--gemm") == 0)
            to = &opt_gemm;
        else if (strcmp(argv[i], "--conv") == 0)
            to = &opt_conv;
        else if (strcmp(argv[i], "--lt") == 0)
            to = &opt_lt;
        else if (strcmp(argv[i], "--every") == 0)
            to = &opt_every;
        if (to == NULL || i + 1 == argc || parse_int(argv[++i], to) != 0 ||
            (to == &opt_every && *to == 0)) {
            fprintf(stderr, "usage: " EXAMPLE_PROG
                    " [--gemm N] [--conv N] [--lt N] [--every S]\n");
            return EXIT_USAGE;
        }
    }
    /* A, B and C: small random floats whose bytes also read as finite
     * halves (the low half of each float is masked to a small half), so
     * that the half-typed cases see finite data too. */
    for (size_t i = 0; i + 4 <= OFF_SCALARS; i += 4) {
        float v = rng_float(&data, 1.0f);
        uint32_t bits;

        memcpy(&bits, &v, sizeof(bits));
        bits = (bits & 0xffff0000u) | 0x3800u;
        memcpy(base_image + i, &bits, sizeof(bits));
    }
    if (setup() != 0)
        return EXIT_CUDA_ERROR;
    if (run_gemm_corpus() != 0 || run_conv_corpus() != 0 ||
        run_lt_corpus() != 0 || run_lt_workspace_corpus() != 0 ||
        run_graph_corpus() != 0)
        return EXIT_CUDA_ERROR;
    printf("result: %d cases of %d\n", cases_run, case_id);
    return EXIT_ALL_PASS;
}
