/* gemm_suite: an ordinary FP32 cuBLAS program that asks for its GEMMs
 * through every entry point of cublas_v2.h (plain, _64, batched, strided,
 * grouped, SgemmEx and the Ex family) and checks every element against a
 * double-precision CPU reference with a tolerance given on the command
 * line. */
#include <cublas_v2.h>

#define EXAMPLE_PROG "gemm_suite"
#include "example_util.h"

#include <inttypes.h>

#define MAX_GROUPS 3

struct options {
    struct tolerance tol;
    uint64_t seed;
    int capture;    /* add the cases that run inside a CUDA graph */
};

/* The entry points, in the order of their names below. */
enum api {
    SGEMM, SGEMM_64, SGEMM_BATCHED, SGEMM_BATCHED_64, SGEMM_STRIDED,
    SGEMM_STRIDED_64, SGEMM_GROUPED, SGEMM_GROUPED_64, SGEMM_EX,
    SGEMM_EX_64, GEMM_EX, GEMM_EX_64, GEMM_BATCHED_EX, GEMM_BATCHED_EX_64,
    GEMM_STRIDED_EX, GEMM_STRIDED_EX_64, GEMM_GROUPED_EX, GEMM_GROUPED_EX_64,
    API_COUNT
};

static const char *const api_names[API_COUNT] = {
    "cublasSgemm_v2", "cublasSgemm_v2_64", "cublasSgemmBatched",
    "cublasSgemmBatched_64", "cublasSgemmStridedBatched",
    "cublasSgemmStridedBatched_64", "cublasSgemmGroupedBatched",
    "cublasSgemmGroupedBatched_64", "cublasSgemmEx", "cublasSgemmEx_64",
    "cublasGemmEx", "cublasGemmEx_64", "cublasGemmBatchedEx",
    "cublasGemmBatchedEx_64", "cublasGemmStridedBatchedEx",
    "cublasGemmStridedBatchedEx_64", "cublasGemmGroupedBatchedEx",
    "cublasGemmGroupedBatchedEx_64",
};

enum shape { ONE, STRIDED, ARRAY, GROUPED };

static enum shape
api_shape(enum api api)
{
    switch (api) {
    case SGEMM_BATCHED: case SGEMM_BATCHED_64: case GEMM_BATCHED_EX:
    case GEMM_BATCHED_EX_64:
        return ARRAY;
    case SGEMM_STRIDED: case SGEMM_STRIDED_64: case GEMM_STRIDED_EX:
    case GEMM_STRIDED_EX_64:
        return STRIDED;
    case SGEMM_GROUPED: case SGEMM_GROUPED_64: case GEMM_GROUPED_EX:
    case GEMM_GROUPED_EX_64:
        return GROUPED;
    default:
        return ONE;
    }
}

enum data {
    DATA_RANDOM,  /* uniform in [-1, 1) */
    DATA_NAN_A,   /* one NaN in A */
    DATA_INF_B,   /* one +Inf in B */
    DATA_WIDE,    /* A below 2^-24, B beyond 65504: each fits FP16 scaled */
};

enum stride { STRIDE_PACKED, STRIDE_GAP, STRIDE_A0, STRIDE_B0 };

/* Arguments cuBLAS refuses; BAD_POINTER_MODE: a grouped call (host alpha
 * and beta arrays) on a handle in CUBLAS_POINTER_MODE_DEVICE. */
enum invalid { VALID, BAD_LDA, BAD_M, BAD_BATCH, BAD_OP, BAD_GROUPS,
               BAD_POINTER_MODE };

/* One call. Groups of a grouped call differ from group 0 in shape,
 * transposes and alpha (see problem_params). */
struct gcase {
    const char *name;
    enum api api;
    int m, n, k;
    cublasOperation_t ta, tb;
    int pad;                   /* extra rows in every leading dimension */
    float alpha, beta;
    int batch;                 /* problems (per group when grouped) */
    int groups;
    enum stride stride;
    enum data data;
    int c_nan;                 /* C0 all NaN: beta is 0, C is not read */
    int device_scalars;        /* CUBLAS_POINTER_MODE_DEVICE */
    int own_stream;
    int pedantic_math;         /* the handle in CUBLAS_PEDANTIC_MATH */
    cublasComputeType_t compute; /* Ex; 0: CUBLAS_COMPUTE_32F */
    int half_ab;               /* GemmEx with CUDA_R_16F A and B */
    enum invalid invalid;
    int capture;               /* inside a CUDA graph (--capture) */
};

#define OPN CUBLAS_OP_N
#define OPT CUBLAS_OP_T
#define OPC CUBLAS_OP_C

static const struct gcase cases[] = {
    /* name, api, m n k, ops, pad, alpha beta, batch groups, stride, data,
     * c_nan, device_scalars, own_stream, pedantic, compute, half, invalid */
    { "sgemm_nn_nan_c", SGEMM, 64, 48, 32, OPN, OPN, 0, 1.0f, 0.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 1, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_tc_ld", SGEMM, 37, 29, 75, OPT, OPC, 3, 0.75f, 0.5f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_ct_dev", SGEMM, 40, 33, 100, OPC, OPT, 1, 1.5f, -0.5f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 1, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_cc_stream", SGEMM, 33, 35, 257, OPC, OPC, 2, 1.0f, 0.25f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 1, 0, 0, 0, VALID, 0 },
    { "sgemm_nan_a", SGEMM, 20, 18, 40, OPN, OPT, 0, 1.0f, 0.5f, 1, 1,
      STRIDE_PACKED, DATA_NAN_A, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_inf_b", SGEMM, 21, 17, 40, OPT, OPN, 0, 1.0f, 0.0f, 1, 1,
      STRIDE_PACKED, DATA_INF_B, 1, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_wide", SGEMM, 24, 17, 200, OPT, OPN, 2, 1.0f, 0.0f, 1, 1,
      STRIDE_PACKED, DATA_WIDE, 1, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_alpha0", SGEMM, 16, 12, 30, OPN, OPN, 0, 0.0f, 2.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_k0", SGEMM, 9, 7, 0, OPT, OPT, 0, 1.0f, 2.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_m0", SGEMM, 0, 7, 5, OPN, OPN, 0, 1.0f, 2.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_n0", SGEMM, 6, 0, 5, OPN, OPN, 0, 1.0f, 2.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm_pedantic", SGEMM, 30, 20, 50, OPN, OPT, 0, 1.0f, 0.5f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 1, 0, 0, VALID, 0 },
    { "sgemm_bad_lda", SGEMM, 12, 10, 8, OPN, OPN, 0, 1.0f, 0.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, BAD_LDA, 0 },
    { "sgemm_bad_op", SGEMM, 12, 10, 8, OPN, OPN, 0, 1.0f, 0.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, BAD_OP, 0 },
    { "sgemm64_nt", SGEMM_64, 50, 30, 70, OPN, OPT, 1, -1.25f, 0.5f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemm64_bad_m", SGEMM_64, 12, 10, 8, OPN, OPN, 0, 1.0f, 0.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, BAD_M, 0 },
    { "batched_nt_dev", SGEMM_BATCHED, 24, 20, 36, OPN, OPT, 2, 1.0f, 0.5f,
      3, 1, STRIDE_PACKED, DATA_RANDOM, 0, 1, 0, 0, 0, 0, VALID, 0 },
    { "batched_cn_nan_c", SGEMM_BATCHED, 17, 23, 45, OPC, OPN, 0, 2.0f,
      0.0f, 4, 1, STRIDE_PACKED, DATA_NAN_A, 1, 0, 0, 0, 0, 0, VALID, 0 },
    { "batched_batch0", SGEMM_BATCHED, 8, 8, 8, OPN, OPN, 0, 1.0f, 0.0f, 0,
      1, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "batched64_tt", SGEMM_BATCHED_64, 19, 21, 33, OPT, OPT, 1, 1.0f, 1.0f,
      2, 1, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "batched64_bad_batch", SGEMM_BATCHED_64, 8, 8, 8, OPN, OPN, 0, 1.0f,
      0.0f, 2, 1, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, BAD_BATCH,
      0 },
    { "strided_nn_gap", SGEMM_STRIDED, 32, 16, 64, OPN, OPN, 3, 1.0f, -1.0f,
      3, 1, STRIDE_GAP, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "strided_a0", SGEMM_STRIDED, 20, 12, 40, OPT, OPN, 0, 1.0f, 0.0f, 4,
      1, STRIDE_A0, DATA_RANDOM, 1, 0, 0, 0, 0, 0, VALID, 0 },
    { "strided_b0_dev", SGEMM_STRIDED, 18, 14, 30, OPN, OPC, 1, 0.5f, 0.5f,
      3, 1, STRIDE_B0, DATA_RANDOM, 0, 1, 0, 0, 0, 0, VALID, 0 },
    { "strided_batch0", SGEMM_STRIDED, 8, 8, 8, OPN, OPN, 0, 1.0f, 0.0f, 0,
      1, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "strided64_inf_b", SGEMM_STRIDED_64, 16, 16, 24, OPN, OPN, 0, 1.0f,
      0.0f, 2, 1, STRIDE_PACKED, DATA_INF_B, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "grouped_two", SGEMM_GROUPED, 20, 12, 28, OPN, OPT, 1, 1.0f, 0.5f, 2,
      2, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "grouped_three_nan_c", SGEMM_GROUPED, 14, 10, 20, OPT, OPN, 0, 1.5f,
      0.0f, 1, 3, STRIDE_PACKED, DATA_RANDOM, 1, 0, 0, 0, 0, 0, VALID, 0 },
    { "grouped_bad_groups", SGEMM_GROUPED, 8, 8, 8, OPN, OPN, 0, 1.0f, 0.0f,
      1, 2, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, BAD_GROUPS, 0 },
    { "grouped_dev", SGEMM_GROUPED, 24, 16, 32, OPN, OPN, 0, 1.0f, 0.5f,
      2, 2, STRIDE_PACKED, DATA_RANDOM, 0, 1, 0, 0, 0, 0, BAD_POINTER_MODE,
      0 },
    { "grouped64_two", SGEMM_GROUPED_64, 15, 13, 22, OPC, OPN, 2, -1.0f,
      0.25f, 2, 2, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemmex_tn", SGEMM_EX, 27, 25, 60, OPT, OPN, 1, 1.0f, 0.5f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "sgemmex_half", SGEMM_EX, 16, 16, 32, OPN, OPN, 0, 1.0f, 0.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 1, VALID, 0 },
    { "sgemmex64_nn_dev", SGEMM_EX_64, 22, 26, 48, OPN, OPN, 0, 1.0f, 1.0f,
      1, 1, STRIDE_PACKED, DATA_RANDOM, 0, 1, 0, 0, 0, 0, VALID, 0 },
    { "gemmex_nn", GEMM_EX, 48, 40, 96, OPN, OPN, 0, 1.0f, 0.0f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 1, 0, 0, 0, 0, 0, VALID, 0 },
    { "gemmex_fast_tf32", GEMM_EX, 30, 28, 64, OPT, OPT, 1, 1.0f, 0.5f, 1,
      1, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0,
      CUBLAS_COMPUTE_32F_FAST_TF32, 0, VALID, 0 },
    { "gemmex_fast_16f", GEMM_EX, 26, 24, 40, OPN, OPT, 0, 1.0f, 0.0f, 1,
      1, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0,
      CUBLAS_COMPUTE_32F_FAST_16F, 0, VALID, 0 },
    { "gemmex_pedantic", GEMM_EX, 25, 23, 41, OPN, OPN, 0, 1.0f, 0.5f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, CUBLAS_COMPUTE_32F_PEDANTIC, 0,
      VALID, 0 },
    { "gemmex_half", GEMM_EX, 32, 24, 48, OPN, OPT, 0, 1.0f, 0.5f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 1, VALID, 0 },
    { "gemmex64_ct_dev", GEMM_EX_64, 28, 22, 52, OPC, OPT, 1, 2.0f, -1.0f,
      1, 1, STRIDE_PACKED, DATA_RANDOM, 0, 1, 0, 0, 0, 0, VALID, 0 },
    { "gemmex64_bad_lda", GEMM_EX_64, 12, 10, 8, OPT, OPN, 0, 1.0f, 0.0f, 1,
      1, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, BAD_LDA, 0 },
    { "batchedex_nn", GEMM_BATCHED_EX, 20, 18, 44, OPN, OPN, 1, 1.0f, 0.0f,
      3, 1, STRIDE_PACKED, DATA_RANDOM, 1, 0, 0, 0, 0, 0, VALID, 0 },
    { "batchedex64_tc_dev", GEMM_BATCHED_EX_64, 16, 18, 30, OPT, OPC, 0,
      1.0f, 0.5f, 2, 1, STRIDE_PACKED, DATA_RANDOM, 0, 1, 0, 0, 0, 0, VALID,
      0 },
    { "stridedex_gap", GEMM_STRIDED_EX, 24, 20, 36, OPN, OPT, 2, 1.0f, 0.5f,
      3, 1, STRIDE_GAP, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "stridedex64_a0", GEMM_STRIDED_EX_64, 18, 16, 28, OPT, OPN, 0, 1.0f,
      0.0f, 3, 1, STRIDE_A0, DATA_RANDOM, 1, 0, 0, 0, 0, 0, VALID, 0 },
    { "groupedex_two", GEMM_GROUPED_EX, 18, 14, 26, OPN, OPN, 1, 1.0f, 0.5f,
      2, 2, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0, VALID, 0 },
    { "groupedex64_dev", GEMM_GROUPED_EX_64, 20, 24, 16, OPT, OPN, 1, 1.0f,
      0.0f, 1, 2, STRIDE_PACKED, DATA_RANDOM, 0, 1, 0, 0, 0, 0,
      BAD_POINTER_MODE, 0 },
    { "groupedex64_three", GEMM_GROUPED_EX_64, 12, 16, 20, OPT, OPT, 0,
      1.0f, 0.0f, 1, 3, STRIDE_PACKED, DATA_RANDOM, 1, 0, 0, 0, 0, 0, VALID,
      0 },
    /* Inside a CUDA graph: captured, then launched (--capture). */
    { "capture_sgemm", SGEMM, 36, 28, 60, OPN, OPT, 0, 1.0f, 0.5f, 1, 1,
      STRIDE_PACKED, DATA_RANDOM, 0, 0, 1, 0, 0, 0, VALID, 1 },
    { "capture_strided", SGEMM_STRIDED, 20, 16, 40, OPT, OPN, 0, 1.0f, 0.0f,
      2, 1, STRIDE_PACKED, DATA_RANDOM, 1, 0, 1, 0, 0, 0, VALID, 1 },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* ---- helpers ----------------------------------------------------------- */

/* IEEE binary16 of a float, round to nearest even (no cuda_fp16.h in a
 * plain C program). */
static uint16_t
half_from_float(float f)
{
    uint32_t x;
    uint16_t sign;
    int32_t exp;
    uint32_t mant, half, rest, shift;

    memcpy(&x, &f, 4);
    sign = (uint16_t)((x >> 16) & 0x8000u);
    exp = (int32_t)((x >> 23) & 0xff);
    mant = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    exp -= 127 - 15;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return sign;
        mant |= 0x800000u;
        shift = (uint32_t)(14 - exp);
        half = mant >> shift;
        rest = mant & ((1u << shift) - 1u);
        if (rest > (1u << (shift - 1)) ||
            (rest == (1u << (shift - 1)) && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    half = ((uint32_t)exp << 10) | (mant >> 13);
    rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        half++; /* may carry into the exponent, up to infinity */
    return (uint16_t)(sign | half);
}

static float
half_to_float(uint16_t h)
{
    int exp = (h >> 10) & 0x1f;
    int mant = h & 0x3ff;
    float v;

    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), exp - 25);
    return (h & 0x8000) ? -v : v;
}

/* ---- problems of one case ---------------------------------------------- */

/* One C_i = alpha op(A_i) op(B_i) + beta C_i of a call. */
struct problem {
    int group;
    int m, n, k;
    cublasOperation_t ta, tb;
    int rows_a, cols_a, rows_b, cols_b;
    int lda, ldb, ldc;
    float alpha, beta;
    size_t off_a, off_b, off_c;   /* elements into the A, B, C buffers */
};

struct layout {
    int count;                    /* problems */
    int groups;
    struct problem *p;
    size_t na, nb, nc;            /* buffer elements */
    long long stride_a, stride_b, stride_c;
};

static cublasOperation_t
flip(cublasOperation_t op)
{
    return op == CUBLAS_OP_N ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/* Group g's parameters: group 0 is the case's, later groups grow and
 * flip A's transpose. */
static void
problem_params(const struct gcase *tc, int g, struct problem *p)
{
    p->group = g;
    p->m = tc->m + (tc->m ? 4 * g : 0);
    p->n = tc->n + (tc->n ? 2 * g : 0);
    p->k = tc->k + (tc->k ? 3 * g : 0);
    p->ta = g % 2 ? flip(tc->ta) : tc->ta;
    p->tb = tc->tb;
    p->alpha = tc->alpha * (1.0f - 0.25f * (float)g);
    p->beta = tc->beta;
    p->rows_a = p->ta == CUBLAS_OP_N ? p->m : p->k;
    p->cols_a = p->ta == CUBLAS_OP_N ? p->k : p->m;
    p->rows_b = p->tb == CUBLAS_OP_N ? p->k : p->n;
    p->cols_b = p->tb == CUBLAS_OP_N ? p->n : p->k;
    p->lda = (p->rows_a > 0 ? p->rows_a : 1) + tc->pad;
    p->ldb = (p->rows_b > 0 ? p->rows_b : 1) + tc->pad;
    p->ldc = (p->m > 0 ? p->m : 1) + tc->pad;
}

static size_t
max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* Lays out the case's problems in three buffers; -1 out of memory. */
static int
layout_make(const struct gcase *tc, struct layout *l)
{
    enum shape shape = api_shape(tc->api);
    int per_group = shape == ONE ? 1 : tc->batch;
    size_t a = 0, b = 0, c = 0;

    memset(l, 0, sizeof(*l));
    l->groups = shape == GROUPED ? tc->groups : 1;
    l->count = per_group * l->groups;
    l->p = calloc((size_t)(l->count > 0 ? l->count : 1), sizeof(*l->p));
    if (!l->p)
        return -1;
    for (int i = 0; i < l->count; i++) {
        struct problem *p = &l->p[i];
        size_t sa, sb, sc;

        problem_params(tc, i / per_group, p);
        sa = (size_t)p->lda * (size_t)(p->cols_a > 0 ? p->cols_a : 1);
        sb = (size_t)p->ldb * (size_t)(p->cols_b > 0 ? p->cols_b : 1);
        sc = (size_t)p->ldc * (size_t)(p->n > 0 ? p->n : 1);
        if (shape == STRIDED) {
            size_t gap = tc->stride == STRIDE_GAP ? 5 : 0;

            l->stride_a = tc->stride == STRIDE_A0 ? 0 : (long long)(sa + gap);
            l->stride_b = tc->stride == STRIDE_B0 ? 0 : (long long)(sb + gap);
            l->stride_c = (long long)(sc + gap);
            p->off_a = (size_t)i * (size_t)l->stride_a;
            p->off_b = (size_t)i * (size_t)l->stride_b;
            p->off_c = (size_t)i * (size_t)l->stride_c;
        } else {
            /* Pointer arrays: each matrix on its own, with a gap. */
            p->off_a = a;
            p->off_b = b;
            p->off_c = c;
            a += sa + 3;
            b += sb + 3;
            c += sc + 3;
        }
        l->na = max_size(l->na, p->off_a + sa);
        l->nb = max_size(l->nb, p->off_b + sb);
        l->nc = max_size(l->nc, p->off_c + sc);
    }
    if (l->count == 0) {
        /* batch 0: one (unused) problem's worth of memory for the call. */
        problem_params(tc, 0, &l->p[0]);
        l->na = l->nb = l->nc = 64;
    }
    return 0;
}

/* Host copies of the operands. */
struct operands {
    float *a, *b, *c0, *c;
};

static void
operands_free(struct operands *o)
{
    free(o->a);
    free(o->b);
    free(o->c0);
    free(o->c);
}

static void
fill(float *x, size_t off, int rows, int cols, int ld, uint64_t *rng,
     float scale, int nan_fill)
{
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++)
            x[off + (size_t)j * ld + i] =
                nan_fill ? NAN : rng_float(rng, scale);
}

/* Fills the operands; half_ab rounds A and B to FP16 values first. */
static int
operands_make(const struct gcase *tc, const struct layout *l, uint64_t seed,
              struct operands *o)
{
    float scale_a = tc->data == DATA_WIDE ? 0x1p-30f : 1.0f;
    float scale_b = tc->data == DATA_WIDE ? 0x1p20f : 1.0f;
    uint64_t rng = seed;

    o->a = malloc(l->na * sizeof(float));
    o->b = malloc(l->nb * sizeof(float));
    o->c0 = malloc(l->nc * sizeof(float));
    o->c = malloc(l->nc * sizeof(float));
    if (!o->a || !o->b || !o->c0 || !o->c)
        return -1;
    for (size_t i = 0; i < l->na; i++)
        o->a[i] = PAD_INPUT;
    for (size_t i = 0; i < l->nb; i++)
        o->b[i] = PAD_INPUT;
    for (size_t i = 0; i < l->nc; i++)
        o->c0[i] = PAD_OUTPUT;
    for (int i = 0; i < l->count; i++) {
        const struct problem *p = &l->p[i];

        fill(o->a, p->off_a, p->rows_a, p->cols_a, p->lda, &rng, scale_a, 0);
        fill(o->b, p->off_b, p->rows_b, p->cols_b, p->ldb, &rng, scale_b, 0);
        fill(o->c0, p->off_c, p->m, p->n, p->ldc, &rng, 1.0f, tc->c_nan);
    }
    if (l->count > 0 && tc->data == DATA_NAN_A && l->p[0].rows_a > 0)
        o->a[l->p[0].off_a] = NAN;
    if (l->count > 0 && tc->data == DATA_INF_B && l->p[0].rows_b > 0)
        o->b[l->p[0].off_b] = INFINITY;
    if (tc->half_ab) {
        for (size_t i = 0; i < l->na; i++)
            o->a[i] = half_to_float(half_from_float(o->a[i]));
        for (size_t i = 0; i < l->nb; i++)
            o->b[i] = half_to_float(half_from_float(o->b[i]));
    }
    memcpy(o->c, o->c0, l->nc * sizeof(float));
    return 0;
}

/* ---- the reference ------------------------------------------------------ */

/* Max error / bound over one problem. */
static double
check_problem(const struct problem *p, const struct operands *o, double tol)
{
    const struct operand_view a = { o->a + p->off_a, p->lda,
                                    p->ta != CUBLAS_OP_N };
    const struct operand_view b = { o->b + p->off_b, p->ldb,
                                    p->tb != CUBLAS_OP_N };
    double worst = 0.0;

    for (int j = 0; j < p->n; j++) {
        for (int i = 0; i < p->m; i++) {
            size_t at = p->off_c + (size_t)j * p->ldc + i;
            double r = gemm_element_ratio(&a, &b, i, j, p->k, p->alpha,
                                          p->beta, o->c0[at], o->c[at], tol);

            if (r > worst)
                worst = r;
        }
    }
    return worst;
}

/* 1 when every element of C outside the problems' m x n blocks is as it
 * was (padding, gaps, and everything after a failed call). */
static int
outside_unchanged(const struct layout *l, const struct operands *o,
                  int all)
{
    unsigned char *inside = calloc(l->nc, 1);
    int same = 1;

    if (!inside)
        return 0;
    for (int q = 0; q < l->count && !all; q++) {
        const struct problem *p = &l->p[q];

        for (int j = 0; j < p->n; j++)
            for (int i = 0; i < p->m; i++)
                inside[p->off_c + (size_t)j * p->ldc + i] = 1;
    }
    for (size_t i = 0; i < l->nc; i++)
        if (!inside[i] && memcmp(&o->c[i], &o->c0[i], sizeof(float)) != 0)
            same = 0;
    free(inside);
    return same;
}

/* ---- the call ------------------------------------------------------------ */

struct device {
    float *a, *b, *c, *scalars;
    uint16_t *a16, *b16;
    void **ptrs;                  /* A, B, C pointer arrays, count each */
    cudaStream_t stream;
};

/* The cuBLAS call of tc, with arguments made invalid as tc asks. */
static cublasStatus_t
call_gemm(cublasHandle_t h, const struct gcase *tc, const struct layout *l,
          const struct device *d, const float *alpha, const float *beta)
{
    const struct problem *p = &l->p[0];
    cublasOperation_t ta = tc->invalid == BAD_OP ? (cublasOperation_t)7
                                                 : p->ta;
    int m = tc->invalid == BAD_M ? -1 : p->m;
    int lda = tc->invalid == BAD_LDA ? p->rows_a - 1 : p->lda;
    int batch = tc->invalid == BAD_BATCH ? -1 : tc->batch;
    const void *a = tc->half_ab ? (const void *)d->a16 : (const void *)d->a;
    const void *b = tc->half_ab ? (const void *)d->b16 : (const void *)d->b;
    cudaDataType tab = tc->half_ab ? CUDA_R_16F : CUDA_R_32F;
    cublasComputeType_t ct = tc->compute ? tc->compute : CUBLAS_COMPUTE_32F;
    int count = l->count;
    const float *const *pa = (const float *const *)d->ptrs;
    const float *const *pb = (const float *const *)(d->ptrs + count);
    float *const *pc = (float *const *)(d->ptrs + 2 * count);
    cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT;

    switch (tc->api) {
    case SGEMM:
        return cublasSgemm_v2(h, ta, p->tb, m, p->n, p->k, alpha, d->a, lda,
                              d->b, p->ldb, beta, d->c, p->ldc);
    case SGEMM_64:
        return cublasSgemm_v2_64(h, ta, p->tb, m, p->n, p->k, alpha, d->a,
                                 lda, d->b, p->ldb, beta, d->c, p->ldc);
    case SGEMM_BATCHED:
        return cublasSgemmBatched(h, ta, p->tb, m, p->n, p->k, alpha, pa, lda,
                                  pb, p->ldb, beta, pc, p->ldc, batch);
    case SGEMM_BATCHED_64:
        return cublasSgemmBatched_64(h, ta, p->tb, m, p->n, p->k, alpha, pa,
                                     lda, pb, p->ldb, beta, pc, p->ldc,
                                     batch);
    case SGEMM_STRIDED:
        return cublasSgemmStridedBatched(
            h, ta, p->tb, m, p->n, p->k, alpha, d->a, lda, l->stride_a, d->b,
            p->ldb, l->stride_b, beta, d->c, p->ldc, l->stride_c, batch);
    case SGEMM_STRIDED_64:
        return cublasSgemmStridedBatched_64(
            h, ta, p->tb, m, p->n, p->k, alpha, d->a, lda, l->stride_a, d->b,
            p->ldb, l->stride_b, beta, d->c, p->ldc, l->stride_c, batch);
    case SGEMM_EX:
        return cublasSgemmEx(h, ta, p->tb, m, p->n, p->k, alpha, a, tab, lda,
                             b, tab, p->ldb, beta, d->c, CUDA_R_32F, p->ldc);
    case SGEMM_EX_64:
        return cublasSgemmEx_64(h, ta, p->tb, m, p->n, p->k, alpha, a, tab,
                                lda, b, tab, p->ldb, beta, d->c, CUDA_R_32F,
                                p->ldc);
    case GEMM_EX:
        return cublasGemmEx(h, ta, p->tb, m, p->n, p->k, alpha, a, tab, lda,
                            b, tab, p->ldb, beta, d->c, CUDA_R_32F, p->ldc,
                            ct, algo);
    case GEMM_EX_64:
        return cublasGemmEx_64(h, ta, p->tb, m, p->n, p->k, alpha, a, tab,
                               lda, b, tab, p->ldb, beta, d->c, CUDA_R_32F,
                               p->ldc, ct, algo);
    case GEMM_BATCHED_EX:
        return cublasGemmBatchedEx(
            h, ta, p->tb, m, p->n, p->k, alpha, (const void *const *)pa, tab,
            lda, (const void *const *)pb, tab, p->ldb, beta,
            (void *const *)pc, CUDA_R_32F, p->ldc, batch, ct, algo);
    case GEMM_BATCHED_EX_64:
        return cublasGemmBatchedEx_64(
            h, ta, p->tb, m, p->n, p->k, alpha, (const void *const *)pa, tab,
            lda, (const void *const *)pb, tab, p->ldb, beta,
            (void *const *)pc, CUDA_R_32F, p->ldc, batch, ct, algo);
    case GEMM_STRIDED_EX:
        return cublasGemmStridedBatchedEx(
            h, ta, p->tb, m, p->n, p->k, alpha, a, tab, lda, l->stride_a, b,
            tab, p->ldb, l->stride_b, beta, d->c, CUDA_R_32F, p->ldc,
            l->stride_c, batch, ct, algo);
    case GEMM_STRIDED_EX_64:
        return cublasGemmStridedBatchedEx_64(
            h, ta, p->tb, m, p->n, p->k, alpha, a, tab, lda, l->stride_a, b,
            tab, p->ldb, l->stride_b, beta, d->c, CUDA_R_32F, p->ldc,
            l->stride_c, batch, ct, algo);
    default:
        break;
    }
    return CUBLAS_STATUS_NOT_SUPPORTED; /* grouped: call_grouped */
}

/* The grouped calls: per-group host arrays. */
static cublasStatus_t
call_grouped(cublasHandle_t h, const struct gcase *tc,
             const struct layout *l, const struct device *d)
{
    cublasOperation_t ta[MAX_GROUPS], tb[MAX_GROUPS];
    int m[MAX_GROUPS], n[MAX_GROUPS], k[MAX_GROUPS], size[MAX_GROUPS];
    int lda[MAX_GROUPS], ldb[MAX_GROUPS], ldc[MAX_GROUPS];
    int64_t m64[MAX_GROUPS], n64[MAX_GROUPS], k64[MAX_GROUPS];
    int64_t lda64[MAX_GROUPS], ldb64[MAX_GROUPS], ldc64[MAX_GROUPS];
    int64_t size64[MAX_GROUPS];
    float alpha[MAX_GROUPS], beta[MAX_GROUPS];
    int groups = tc->invalid == BAD_GROUPS ? -1 : l->groups;
    int count = l->count;
    const float *const *pa = (const float *const *)d->ptrs;
    const float *const *pb = (const float *const *)(d->ptrs + count);
    float *const *pc = (float *const *)(d->ptrs + 2 * count);

    for (int g = 0; g < l->groups; g++) {
        const struct problem *p = &l->p[g * tc->batch];

        ta[g] = p->ta;
        tb[g] = p->tb;
        m64[g] = m[g] = p->m;
        n64[g] = n[g] = p->n;
        k64[g] = k[g] = p->k;
        lda64[g] = lda[g] = p->lda;
        ldb64[g] = ldb[g] = p->ldb;
        ldc64[g] = ldc[g] = p->ldc;
        size64[g] = size[g] = tc->batch;
        alpha[g] = p->alpha;
        beta[g] = p->beta;
    }
    switch (tc->api) {
    case SGEMM_GROUPED:
        return cublasSgemmGroupedBatched(h, ta, tb, m, n, k, alpha, pa, lda,
                                         pb, ldb, beta, pc, ldc, groups,
                                         size);
    case SGEMM_GROUPED_64:
        return cublasSgemmGroupedBatched_64(h, ta, tb, m64, n64, k64, alpha,
                                            pa, lda64, pb, ldb64, beta, pc,
                                            ldc64, groups, size64);
    case GEMM_GROUPED_EX:
        return cublasGemmGroupedBatchedEx(
            h, ta, tb, m, n, k, alpha, (const void *const *)pa, CUDA_R_32F,
            lda, (const void *const *)pb, CUDA_R_32F, ldb, beta,
            (void *const *)pc, CUDA_R_32F, ldc, groups, size,
            CUBLAS_COMPUTE_32F);
    case GEMM_GROUPED_EX_64:
        return cublasGemmGroupedBatchedEx_64(
            h, ta, tb, m64, n64, k64, alpha, (const void *const *)pa,
            CUDA_R_32F, lda64, (const void *const *)pb, CUDA_R_32F, ldb64,
            beta, (void *const *)pc, CUDA_R_32F, ldc64, groups, size64,
            CUBLAS_COMPUTE_32F);
    default:
        break;
    }
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

/* Uploads n floats, or their FP16 values into *half when half is given. */
static int
upload(float **dst, uint16_t **half, const float *src, size_t n)
{
    if (cuda_failed("cudaMalloc", cudaMalloc((void **)dst, n * 4)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(*dst, src, n * 4,
                                             cudaMemcpyHostToDevice)))
        return -1;
    if (half) {
        uint16_t *h = malloc(n * sizeof(uint16_t));
        int rc;

        if (!h)
            return -1;
        for (size_t i = 0; i < n; i++)
            h[i] = half_from_float(src[i]);
        rc = cuda_failed("cudaMalloc", cudaMalloc((void **)half, n * 2)) ||
             cuda_failed("cudaMemcpy", cudaMemcpy(*half, h, n * 2,
                                                  cudaMemcpyHostToDevice));
        free(h);
        return rc ? -1 : 0;
    }
    return 0;
}

/* Device operands, scalars, pointer arrays and the case's stream. */
static int
device_make(const struct gcase *tc, const struct layout *l,
            const struct operands *o, struct device *d)
{
    float scalars[2] = { tc->alpha, tc->beta };
    size_t nptr = (size_t)(l->count > 0 ? l->count : 1) * 3;
    void **ptrs;

    if (upload(&d->a, tc->half_ab ? &d->a16 : NULL, o->a, l->na) ||
        upload(&d->b, tc->half_ab ? &d->b16 : NULL, o->b, l->nb) ||
        upload(&d->c, NULL, o->c0, l->nc) ||
        upload(&d->scalars, NULL, scalars, 2))
        return -1;
    ptrs = calloc(nptr, sizeof(void *));
    if (!ptrs)
        return -1;
    for (int i = 0; i < l->count; i++) {
        ptrs[i] = d->a + l->p[i].off_a;
        ptrs[l->count + i] = d->b + l->p[i].off_b;
        ptrs[2 * l->count + i] = d->c + l->p[i].off_c;
    }
    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&d->ptrs,
                                             nptr * sizeof(void *))) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(d->ptrs, ptrs,
                                             nptr * sizeof(void *),
                                             cudaMemcpyHostToDevice))) {
        free(ptrs);
        return -1;
    }
    free(ptrs);
    if (tc->own_stream &&
        cuda_failed("cudaStreamCreateWithFlags",
                    cudaStreamCreateWithFlags(&d->stream,
                                              cudaStreamNonBlocking)))
        return -1;
    return 0;
}

static void
device_free(struct device *d)
{
    if (d->stream)
        cudaStreamDestroy(d->stream);
    cudaFree(d->a);
    cudaFree(d->b);
    cudaFree(d->c);
    cudaFree(d->a16);
    cudaFree(d->b16);
    cudaFree(d->scalars);
    cudaFree(d->ptrs);
}

/* The GEMM itself, inside a CUDA graph when the case asks for one. */
static cublasStatus_t
issue(cublasHandle_t h, const struct gcase *tc, const struct layout *l,
      const struct device *d, const float *alpha, const float *beta,
      int *cuda_error)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cublasStatus_t s;

    if (tc->capture &&
        cuda_failed("cudaStreamBeginCapture",
                    cudaStreamBeginCapture(d->stream,
                                           cudaStreamCaptureModeGlobal))) {
        *cuda_error = 1;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (api_shape(tc->api) == GROUPED)
        s = call_grouped(h, tc, l, d);
    else
        s = call_gemm(h, tc, l, d, alpha, beta);
    if (!tc->capture)
        return s;
    if (cuda_failed("cudaStreamEndCapture",
                    cudaStreamEndCapture(d->stream, &graph)) ||
        cuda_failed("cudaGraphInstantiate",
                    cudaGraphInstantiate(&exec, graph, 0)) ||
        cuda_failed("cudaGraphLaunch", cudaGraphLaunch(exec, d->stream)))
        *cuda_error = 1;
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    return s;
}

/* Runs the call with the case's handle settings, restores them, and
 * downloads C. */
static cublasStatus_t
device_gemm(cublasHandle_t h, const struct gcase *tc, const struct layout *l,
            const struct device *d, struct operands *o, int *cuda_error)
{
    const float *alpha = &tc->alpha, *beta = &tc->beta;
    cublasStatus_t s;

    if (cublas_failed("cublasSetStream_v2", cublasSetStream_v2(h, d->stream)))
        *cuda_error = 1;
    if (tc->device_scalars) {
        if (cublas_failed("cublasSetPointerMode_v2",
                          cublasSetPointerMode_v2(
                              h, CUBLAS_POINTER_MODE_DEVICE)))
            *cuda_error = 1;
        alpha = d->scalars;
        beta = d->scalars + 1;
    }
    if (tc->pedantic_math &&
        cublas_failed("cublasSetMathMode",
                      cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH)))
        *cuda_error = 1;
    s = issue(h, tc, l, d, alpha, beta, cuda_error);
    if (cublas_failed("cublasSetPointerMode_v2",
                      cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST)) ||
        cublas_failed("cublasSetMathMode",
                      cublasSetMathMode(h, CUBLAS_DEFAULT_MATH)))
        *cuda_error = 1;
    if (cuda_failed("cudaMemcpyAsync",
                    cudaMemcpyAsync(o->c, d->c, l->nc * 4,
                                    cudaMemcpyDeviceToHost, d->stream)) ||
        cuda_failed("cudaStreamSynchronize",
                    cudaStreamSynchronize(d->stream)) ||
        cublas_failed("cublasSetStream_v2", cublasSetStream_v2(h, NULL)))
        *cuda_error = 1;
    return s;
}

/* ---- one case ---------------------------------------------------------- */

/* What kind of call a case is: an FP32 GEMM with work to do, one with
 * nothing to multiply, invalid arguments, a strictly-FP32 request, or
 * not FP32 at all. */
static const char *
case_class(const struct gcase *tc)
{
    if (tc->invalid != VALID)
        return "invalid";
    if (tc->half_ab)
        return "typed";
    if (tc->pedantic_math || tc->compute == CUBLAS_COMPUTE_32F_PEDANTIC)
        return "pedantic";
    if (tc->m == 0 || tc->n == 0 || tc->k == 0 || tc->alpha == 0.0f ||
        (api_shape(tc->api) != ONE && tc->batch == 0))
        return "trivial";
    return "gemm";
}

/* The tolerance factor: the one asked for, or what the call itself
 * allows when it asked for a faster compute type. */
static double
case_tol(const struct options *opt, const struct gcase *tc, int k)
{
    static const struct tolerance fp16 = { TOL_FP16, 0.0 };
    double tol = tol_factor(&opt->tol, k), own = tol_factor(&fp16, k);

    if (tc->compute != CUBLAS_COMPUTE_32F_FAST_16F &&
        tc->compute != CUBLAS_COMPUTE_32F_FAST_TF32)
        return tol;
    return tol > own ? tol : own;
}

static char
op_letter(cublasOperation_t op)
{
    return op == CUBLAS_OP_N ? 'N' : op == CUBLAS_OP_T ? 'T' : 'C';
}

static int
run_case(cublasHandle_t h, const struct options *opt, size_t index)
{
    const struct gcase *tc = &cases[index];
    struct layout l;
    struct operands o = { 0 };
    struct device d;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    int cuda_error = 0, pass, rc = EXIT_CUDA_ERROR;
    double worst = 0.0;
    uint64_t hash;

    memset(&d, 0, sizeof(d));
    if (layout_make(tc, &l) != 0 ||
        operands_make(tc, &l, opt->seed + 0x1000 * index, &o) != 0) {
        fprintf(stderr, "gemm_suite: out of host memory\n");
        goto out;
    }
    if (device_make(tc, &l, &o, &d) != 0)
        cuda_error = 1;
    else
        s = device_gemm(h, tc, &l, &d, &o, &cuda_error);
    printf("case %s m=%d n=%d k=%d op=%c%c status=%s(%d)", tc->name, tc->m,
           tc->n, tc->k, op_letter(tc->ta), op_letter(tc->tb),
           cublas_status_name(s), (int)s);
    if (cuda_error || (s != CUBLAS_STATUS_SUCCESS && tc->invalid == VALID)) {
        printf(" err/bound=- hash=- ERROR api=%s class=%s\n",
               api_names[tc->api], case_class(tc));
        goto out;
    }
    hash = fnv1a64(o.c, l.nc * sizeof(float), 0xcbf29ce484222325ULL);
    if (s != CUBLAS_STATUS_SUCCESS) {
        /* Refused: C untouched, every element. */
        pass = outside_unchanged(&l, &o, 1);
        printf(" err/bound=- hash=%016" PRIx64 " %s api=%s class=%s\n", hash,
               pass ? "ok" : "FAIL", api_names[tc->api], case_class(tc));
        rc = pass ? EXIT_ALL_PASS : EXIT_CHECK_FAILED;
        goto out;
    }
    for (int i = 0; i < l.count; i++) {
        double r = check_problem(&l.p[i], &o, case_tol(opt, tc, l.p[i].k));

        if (r > worst)
            worst = r;
    }
    pass = worst <= 1.0 && outside_unchanged(&l, &o, 0);
    printf(" err/bound=%.3e hash=%016" PRIx64 " %s api=%s class=%s\n", worst,
           hash, pass ? "ok" : "FAIL", api_names[tc->api], case_class(tc));
    rc = pass ? EXIT_ALL_PASS : EXIT_CHECK_FAILED;
out:
    device_free(&d);
    operands_free(&o);
    free(l.p);
    return rc;
}

/* With no handle (no GPU): every entry point on the NULL handle, to show
 * its status. */
static void
null_handle_calls(void)
{
    static const struct gcase one = { "null", SGEMM, 8, 8, 8, OPN, OPN, 0,
        1.0f, 0.0f, 1, 1, STRIDE_PACKED, DATA_RANDOM, 0, 0, 0, 0, 0, 0,
        VALID, 0 };
    struct layout l;
    struct device d;
    void *ptrs[3] = { NULL, NULL, NULL };

    memset(&d, 0, sizeof(d));
    d.ptrs = ptrs;
    if (layout_make(&one, &l) != 0)
        return;
    for (int api = 0; api < API_COUNT; api++) {
        struct gcase tc = one;
        cublasStatus_t s;

        tc.api = (enum api)api;
        if (api_shape(tc.api) == GROUPED)
            s = call_grouped(NULL, &tc, &l, &d);
        else
            s = call_gemm(NULL, &tc, &l, &d, &tc.alpha, &tc.beta);
        printf("%s handle=NULL status=%s(%d)\n", api_names[api],
               cublas_status_name(s), (int)s);
    }
    free(l.p);
}

/* ---- command line ------------------------------------------------------ */

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: gemm_suite [--tol TOL] [--seed N] [--capture] [--help]\n"
        "\n"
        "Calls every cuBLAS FP32 GEMM entry point on a set of cases and\n"
        "checks each element of C against a double-precision reference:\n"
        "  |C - Cref| <= tol * (|alpha| |op(A)| |op(B)| + |beta| |C0|)\n"
        "\n"
        "  --tol TOL   a positive number, or fp16 or tf32 (2^-10 + k 2^-23),\n"
        "              bf16 (2^-7 + k 2^-23), fp32 (k 2^-23, the default)\n"
        "  --seed N    seed of the pseudo-random inputs (default 1)\n"
        "  --capture   also run the cases that record a CUDA graph\n"
        "\n"
        "Prints one line per case: name, cuBLAS status, max error/bound,\n"
        "FNV-1a 64 hash of C, verdict, entry point and kind of call.\n"
        "Exit status: 0 all pass, 1 a check failed, 2 bad usage, 3 a CUDA\n"
        "or cuBLAS call failed.\n");
}

/* Returns -1 to exit 2, 1 to exit 0 (help), 0 to run. */
static int
parse_args(int argc, char **argv, struct options *opt)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char *end;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(arg, "--capture") == 0) {
            opt->capture = 1;
            continue;
        }
        if ((strcmp(arg, "--tol") != 0 && strcmp(arg, "--seed") != 0) ||
            i + 1 == argc) {
            fprintf(stderr, "gemm_suite: bad argument '%s'\n", arg);
            usage(stderr);
            return -1;
        }
        if (strcmp(arg, "--tol") == 0 && tol_parse(argv[++i], &opt->tol) != 0) {
            fprintf(stderr, "gemm_suite: bad --tol '%s'\n", argv[i]);
            return -1;
        }
        if (strcmp(arg, "--seed") == 0) {
            errno = 0;
            opt->seed = strtoull(argv[++i], &end, 0);
            if (errno || *end || *argv[i] == '-' || !*argv[i]) {
                fprintf(stderr, "gemm_suite: bad --seed '%s'\n", argv[i]);
                return -1;
            }
        }
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct options opt = { { TOL_FP32, 0.0 }, 1, 0 };
    cublasHandle_t handle = NULL;
    unsigned failed = 0, errors = 0, ran = 0;
    int args;

    args = parse_args(argc, argv, &opt);
    if (args != 0)
        return args > 0 ? EXIT_ALL_PASS : EXIT_USAGE;
    printf("gemm_suite: seed=%" PRIu64 "%s\n", opt.seed,
           opt.capture ? " capture" : "");
    if (cublas_failed("cublasCreate_v2", cublasCreate_v2(&handle))) {
        null_handle_calls();
        fflush(stdout);
        return EXIT_CUDA_ERROR;
    }
    for (size_t i = 0; i < N_CASES; i++) {
        int rc;

        if (cases[i].capture && !opt.capture)
            continue;
        rc = run_case(handle, &opt, i);
        failed += rc == EXIT_CHECK_FAILED;
        errors += rc == EXIT_CUDA_ERROR;
        ran++;
        fflush(stdout);
    }
    cublas_failed("cublasDestroy_v2", cublasDestroy_v2(handle));
    printf("result: %u cases, %u passed, %u failed, %u errors\n", ran,
           ran - failed - errors, failed, errors);
    fflush(stdout);
    if (errors)
        return EXIT_CUDA_ERROR;
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
