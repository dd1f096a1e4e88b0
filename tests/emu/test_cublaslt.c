/* Tests for the emulated libcublasLt.so.13: descriptors and their
 * attributes, heuristics, and cublasLtMatmul in every epilogue, order,
 * pointer mode and compute type against an FP64 reference written here;
 * the documented statuses; stream order and modelled time; the stubs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fault_test.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture_test.h"
#include "emu.h"

#define OK CUBLAS_STATUS_SUCCESS
#define INVALID CUBLAS_STATUS_INVALID_VALUE
#define UNSUPPORTED CUBLAS_STATUS_NOT_SUPPORTED

/* ---- Host data ----------------------------------------------------------- */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

/* Uniform in [-1, 1) with 24 significant bits, so operand rounding shows. */
static float
rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 40) / 8388608.0 - 1.0);
}

/* x rounded to `mant` explicit bits, smallest normal exponent emin, nearest
 * even, overflow to infinity: from the definition, not the emulator's. */
static double
ref_round(double x, int mant, int emin, double maxv)
{
    double q, r;
    int e;

    if (isnan(x) || isinf(x) || x == 0.0)
        return x;
    (void)frexp(x, &e);
    e = e - 1 < emin ? emin : e - 1;
    q = ldexp(1.0, e - mant);
    r = nearbyint(x / q) * q;
    return fabs(r) > maxv ? copysign(INFINITY, x) : r;
}

static float
as_f16(double v)
{
    return (float)ref_round(v, 10, -14, 65504.0);
}

static float
as_bf16(double v)
{
    return (float)ref_round(v, 7, -126, 0x1.fep127);
}

static float
as_tf32(double v)
{
    return (float)ref_round(v, 10, -126, 0x1.ffcp127);
}

/* A value stored as type t (already representable) and back. */
static float
round_to(cudaDataType t, double v)
{
    return t == CUDA_R_16F ? as_f16(v) : t == CUDA_R_16BF ? as_bf16(v)
                                                          : (float)v;
}

static size_t
type_bytes(cudaDataType t)
{
    return t == CUDA_R_32F ? 4 : 2;
}

/* Bits of a float exactly representable in t. */
static void
put(cudaDataType t, void *base, size_t idx, float v)
{
    char *p = base;
    uint32_t u;
    uint16_t h;
    double a = fabs((double)v);
    int e;

    if (t == CUDA_R_32F) {
        memcpy(p + 4 * idx, &v, 4);
        return;
    }
    if (t == CUDA_R_16BF) {
        memcpy(&u, &v, 4);
        h = (uint16_t)(u >> 16);
    } else if (isnan(v)) {
        h = 0x7e00u;
    } else if (a < 0x1p-14) {
        h = (uint16_t)((signbit(v) ? 0x8000u : 0u) | (uint16_t)(a * 0x1p24));
    } else {
        (void)frexp(a, &e);
        e -= 1;
        h = (uint16_t)((signbit(v) ? 0x8000u : 0u) | (unsigned)(e + 15) << 10 |
                       (unsigned)((a / ldexp(1.0, e) - 1.0) * 1024.0));
    }
    memcpy(p + 2 * idx, &h, 2);
}

static float
get(cudaDataType t, const void *base, size_t idx)
{
    const char *p = base;
    uint32_t u;
    uint16_t h;
    float v;
    int e, m;

    if (t == CUDA_R_32F) {
        memcpy(&v, p + 4 * idx, 4);
        return v;
    }
    memcpy(&h, p + 2 * idx, 2);
    if (t == CUDA_R_16BF) {
        u = (uint32_t)h << 16;
        memcpy(&v, &u, 4);
        return v;
    }
    e = (h >> 10) & 31, m = h & 1023;
    v = (float)(e == 31 ? (m ? NAN : INFINITY)
                : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25));
    return (h & 0x8000u) ? -v : v;
}

/* ---- Device helpers ------------------------------------------------------ */

static void *
dev_upload(const void *host, size_t bytes)
{
    void *d = NULL;

    assert_int_equal(cudaMalloc(&d, bytes ? bytes : 1), cudaSuccess);
    if (bytes)
        assert_int_equal(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice),
                         cudaSuccess);
    return d;
}

static void
dev_download(void *host, const void *dev, size_t bytes)
{
    assert_int_equal(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost),
                     cudaSuccess);
}

static void
dev_free(void *d)
{
    if (d != NULL)
        assert_int_equal(cudaFree(d), cudaSuccess);
}

static cublasLtHandle_t
lt_new(void)
{
    cublasLtHandle_t h = NULL;

    assert_int_equal(cublasLtCreate(&h), OK);
    assert_non_null(h);
    return h;
}

static void
desc_set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
         const void *v, size_t size)
{
    assert_int_equal(cublasLtMatmulDescSetAttribute(d, attr, v, size), OK);
}

static void
layout_set(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
           const void *v, size_t size)
{
    assert_int_equal(cublasLtMatrixLayoutSetAttribute(l, attr, v, size), OK);
}

/* ---- One product, described ------------------------------------------------ */

enum place { OUT_OF_PLACE, IN_PLACE, C_BROADCAST };

struct lt_case {
    cublasComputeType_t compute;
    cudaDataType ab, cd;            /* A and B; C and D */
    cublasOperation_t ta, tb;
    int row_a, row_b, row_d;        /* CUBLASLT_ORDER_ROW, else COL */
    int m, n, k, batch;
    cublasLtEpilogue_t epilogue;    /* 0: DEFAULT */
    cublasLtPointerMode_t mode;
    float alpha, beta;
    enum place place;
};

#define FP32 .compute = CUBLAS_COMPUTE_32F, .ab = CUDA_R_32F, .cd = CUDA_R_32F

/* A stored matrix: its layout and where element (r, c) of member b is. */
struct mat {
    cudaDataType type;
    int row;
    int64_t rows, cols, ld, stride;
    int batch;
    void *host, *dev;
};

static size_t
at(const struct mat *x, int b, int64_t r, int64_t c)
{
    return (size_t)(b * x->stride + (x->row ? r * x->ld + c : r + c * x->ld));
}

/* A matrix with padding in each column (row) and between members, holding
 * `fill` (NAN for a C that must not be read) or random values of t. */
static void
mat_make(struct mat *x, cudaDataType t, int row, int64_t rows, int64_t cols,
         int64_t ld, int batch, float fill)
{
    size_t total;

    x->type = t, x->row = row, x->rows = rows, x->cols = cols;
    x->ld = ld, x->batch = batch;
    /* Between members: what one spans (rows or columns apart by ld, or
     * one of them for a broadcast C, ld 0), and a gap. */
    x->stride = ld * ((row ? rows : cols) - 1) + (row ? cols : rows) + 7;
    total = (size_t)(x->stride * batch);
    x->host = malloc(total * type_bytes(t) + 1);
    assert_non_null(x->host);
    for (size_t i = 0; i < total; i++)
        put(t, x->host, i, fill == 0.0f ? round_to(t, rnd()) : fill);
    x->dev = dev_upload(x->host, total * type_bytes(t));
}

static cublasLtMatrixLayout_t
mat_layout(const struct mat *x)
{
    cublasLtMatrixLayout_t l;
    int32_t order = x->row ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL;

    assert_int_equal(cublasLtMatrixLayoutCreate(&l, x->type, (uint64_t)x->rows,
                                                (uint64_t)x->cols, x->ld), OK);
    layout_set(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order));
    layout_set(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &x->batch,
               sizeof(x->batch));
    layout_set(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &x->stride,
               sizeof(x->stride));
    return l;
}

static void
mat_free(struct mat *x)
{
    dev_free(x->dev);
    free(x->host);
}

/* Inner dimension (rows in column order) with `pad` elements to spare. */
static int64_t
ld_for(int row, int64_t rows, int64_t cols, int64_t pad)
{
    return (row ? cols : rows) + pad;
}

static int
is_relu(cublasLtEpilogue_t e)
{
    return e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_AUX ||
           e == CUBLASLT_EPILOGUE_RELU_BIAS ||
           e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
}

static int
is_gelu(cublasLtEpilogue_t e)
{
    return e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_AUX ||
           e == CUBLASLT_EPILOGUE_GELU_BIAS ||
           e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

static int
has_bias(cublasLtEpilogue_t e)
{
    return e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_DRELU &&
           e != CUBLASLT_EPILOGUE_DGELU && (e & CUBLASLT_EPILOGUE_BIAS);
}

/* The ReLU bit mask (RELU_AUX, DRELU), else the GELU input (GELU_AUX,
 * DGELU), else none. */
static int
aux_kind(cublasLtEpilogue_t e)
{
    if (e == CUBLASLT_EPILOGUE_RELU_AUX || e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS
        || e == CUBLASLT_EPILOGUE_DRELU)
        return 1;
    if (e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS
        || e == CUBLASLT_EPILOGUE_DGELU)
        return 2;
    return 0;
}

static double
ref_gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* d/dx of ref_gelu, from the product rule on its formula. */
static double
ref_gelu_grad(double x)
{
    double u = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    double du = sqrt(2.0 / M_PI) * (1.0 + 3.0 * 0.044715 * x * x);

    return 0.5 * (1.0 + tanh(u)) + 0.5 * x * (1.0 - tanh(u) * tanh(u)) * du;
}

/* What the compute type does to an FP32 operand. */
static float
operand(cublasComputeType_t compute, float v)
{
    switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_16F:
        return as_f16(v);
    case CUBLAS_COMPUTE_32F_FAST_16BF:
        return as_bf16(v);
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        return as_tf32(v);
    default:
        return v;
    }
}

/* Everything one run of a case needs and produces. */
struct run {
    const struct lt_case *c;
    struct mat a, b, cm, d;
    void *bias, *aux, *dbias, *daux;
    float *alpha, *beta;            /* per member and row */
    void *dalpha, *dbeta;
    int64_t aux_ld, aux_stride;     /* elements (bits for the mask) */
    size_t aux_size;
};

static float
alpha_of(const struct run *r, int b, int64_t i)
{
    return r->alpha[(size_t)b * (size_t)r->c->m + (size_t)i];
}

static float
beta_of(const struct run *r, int64_t i)
{
    return r->beta[i];
}

/* alpha and beta per row and member as the pointer mode has them: the
 * case's scalars, or vectors that vary by row (and by member where the
 * mode has a batch stride); beta 0 in BETA_ZERO. */
static void
run_scalars(struct run *r)
{
    const struct lt_case *c = r->c;
    int vec = c->mode >= CUBLASLT_POINTER_MODE_DEVICE_VECTOR;
    int per_member =
        c->mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;

    r->alpha = malloc((size_t)c->m * (size_t)c->batch * sizeof(float));
    r->beta = malloc((size_t)c->m * sizeof(float));
    assert_true(r->alpha && r->beta);
    for (int b = 0; b < c->batch; b++)
        for (int i = 0; i < c->m; i++)
            r->alpha[b * c->m + i] =
                vec ? c->alpha * (1.0f + 0.25f * (float)((i + (per_member ? b
                                                                   : 0)) % 3))
                    : c->alpha;
    for (int i = 0; i < c->m; i++)
        r->beta[i] = c->mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO
                         ? 0.0f
                     : c->mode == CUBLASLT_POINTER_MODE_DEVICE_VECTOR
                         ? c->beta * (float)(1 + i % 2)
                         : c->beta;
    if (c->mode == CUBLASLT_POINTER_MODE_DEVICE) {
        r->dalpha = dev_upload(&c->alpha, 4);
        r->dbeta = dev_upload(&c->beta, 4);
    } else if (vec) {
        r->dalpha = dev_upload(r->alpha, (size_t)c->m * (per_member ? c->batch
                                                                      : 1) * 4);
        if (c->mode == CUBLASLT_POINTER_MODE_DEVICE_VECTOR)
            r->dbeta = dev_upload(r->beta, (size_t)c->m * 4);
    }
}

/* The bias (one vector per member) and the auxiliary matrix: the ReLU mask
 * with ld a multiple of 128 bits, or the GELU input with ld a multiple of
 * 8; random for the backward epilogues, which read it. */
static void
run_epilogue_data(struct run *r)
{
    const struct lt_case *c = r->c;
    int kind = aux_kind(c->epilogue);
    size_t nb = (size_t)c->m * (size_t)c->batch, elems;

    r->bias = malloc(nb * type_bytes(c->cd));
    assert_non_null(r->bias);
    for (size_t i = 0; i < nb; i++)
        put(c->cd, r->bias, i, round_to(c->cd, rnd()));
    r->dbias = dev_upload(r->bias, nb * type_bytes(c->cd));
    if (kind == 0)
        return;
    r->aux_ld = kind == 1 ? (c->m + 127) / 128 * 128 + 128
                          : (c->m + 7) / 8 * 8 + 8;
    r->aux_stride = r->aux_ld * c->n + (kind == 1 ? 128 : 8);
    elems = (size_t)(r->aux_stride * c->batch);
    r->aux_size = kind == 1 ? elems / 8 : elems * type_bytes(c->cd);
    r->aux = malloc(r->aux_size);
    assert_non_null(r->aux);
    for (size_t i = 0; i < elems; i++) {
        if (kind == 1 && i % 8 == 0)
            ((uint8_t *)r->aux)[i / 8] = (uint8_t)(rnd() * 256.0f);
        else if (kind == 2)
            put(c->cd, r->aux, i, round_to(c->cd, 3.0 * rnd()));
    }
    r->daux = dev_upload(r->aux, r->aux_size);
}

static cublasLtMatmulDesc_t
run_desc(const struct run *r)
{
    const struct lt_case *c = r->c;
    cublasLtMatmulDesc_t desc;
    cublasLtEpilogue_t epi = c->epilogue ? c->epilogue
                                         : CUBLASLT_EPILOGUE_DEFAULT;
    int32_t mode = c->mode;
    int64_t bias_stride = c->m, alpha_stride = c->m;

    assert_int_equal(cublasLtMatmulDescCreate(&desc, c->compute, CUDA_R_32F),
                     OK);
    desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &c->ta, sizeof(int32_t));
    desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &c->tb, sizeof(int32_t));
    desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
    desc_set(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof(mode));
    if (c->mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST)
        desc_set(desc, CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE,
                 &alpha_stride, sizeof(alpha_stride));
    if (has_bias(epi)) {
        desc_set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &r->dbias,
                 sizeof(void *));
        desc_set(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride,
                 sizeof(bias_stride));
    }
    if (aux_kind(epi)) {
        desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &r->daux,
                 sizeof(void *));
        desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &r->aux_ld,
                 sizeof(r->aux_ld));
        desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
                 &r->aux_stride, sizeof(r->aux_stride));
    }
    return desc;
}

/* The reference of element (i, j) of member b before the activation, and
 * the magnitude of its terms for the error bound. */
static double
ref_pre(const struct run *r, int b, int64_t i, int64_t j, double *mag)
{
    const struct lt_case *c = r->c;
    double s = 0.0, abs_sum = 0.0, cv = 0.0, bias = 0.0;
    float alpha = alpha_of(r, b, i), beta = beta_of(r, i);

    for (int64_t p = 0; p < c->k; p++) {
        double x = operand(c->compute, get(c->ab, r->a.host,
                                           c->ta ? at(&r->a, b, p, i)
                                                 : at(&r->a, b, i, p)));
        double y = operand(c->compute, get(c->ab, r->b.host,
                                           c->tb ? at(&r->b, b, j, p)
                                                 : at(&r->b, b, p, j)));
        s += x * y;
        abs_sum += fabs(x * y);
    }
    if (beta != 0.0f)
        cv = (double)beta * get(c->cd, r->cm.host, at(&r->cm, b, i, j));
    if (has_bias(c->epilogue))
        bias = get(c->cd, r->bias, (size_t)(b * c->m + i));
    *mag = fabs((double)alpha) * abs_sum + fabs(cv) + fabs(bias);
    return (double)alpha * s + cv + bias;
}

static int
mask_bit(const void *mask, size_t idx)
{
    return (((const uint8_t *)mask)[idx / 8] >> (idx % 8)) & 1;
}

/* Relative rounding of a stored result in type t. */
static double
unit(cudaDataType t)
{
    return t == CUDA_R_16F ? 0x1p-11 : t == CUDA_R_16BF ? 0x1p-8 : 0x1p-24;
}

/* D (and the auxiliary output) against the reference, member by member. */
static void
run_check(const struct run *r, const void *got_d, const void *got_aux)
{
    const struct lt_case *c = r->c;
    cublasLtEpilogue_t e = c->epilogue;
    double u = (c->k + 8) * 0x1p-24 * 1.5, out = unit(c->cd);

    for (int b = 0; b < c->batch; b++)
        for (int64_t j = 0; j < c->n; j++)
            for (int64_t i = 0; i < c->m; i++) {
                size_t ai = (size_t)(b * r->aux_stride + i + j * r->aux_ld);
                double mag, pre = ref_pre(r, b, i, j, &mag), want = pre;
                double got = get(c->cd, got_d, at(&r->d, b, i, j)), tol;

                if (is_relu(e))
                    want = pre > 0.0 ? pre : 0.0;
                else if (is_gelu(e))
                    want = ref_gelu(pre);
                else if (e == CUBLASLT_EPILOGUE_DRELU)
                    want = mask_bit(r->aux, ai) ? pre : 0.0;
                else if (e == CUBLASLT_EPILOGUE_DGELU)
                    want = pre * ref_gelu_grad(get(c->cd, r->aux, ai));
                tol = 1.2 * (u * mag + out * fabs(pre)) + out * fabs(want) +
                      0x1p-30;
                if (!(fabs(got - want) <= tol))
                    fail_msg("D(%d: %ld, %ld) = %.9g, reference %.9g",
                             b, (long)i, (long)j, got, want);
                if (e == CUBLASLT_EPILOGUE_RELU_AUX ||
                    e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS)
                    assert_int_equal(mask_bit(got_aux, ai), got > 0.0);
                if (e == CUBLASLT_EPILOGUE_GELU_AUX ||
                    e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
                    double g = get(c->cd, got_aux, ai);
                    if (!(fabs(g - pre) <= u * mag + out * fabs(pre) + 0x1p-30))
                        fail_msg("aux(%d: %ld, %ld) = %.9g, reference %.9g",
                                 b, (long)i, (long)j, g, pre);
                }
            }
}

/* Makes the case's data, runs it on `stream`, checks D and aux. */
static void
run_case_on(cublasLtHandle_t h, const struct lt_case *c, cudaStream_t stream)
{
    struct run r = { .c = c };
    int64_t arows = c->ta ? c->k : c->m, acols = c->ta ? c->m : c->k;
    int64_t brows = c->tb ? c->n : c->k, bcols = c->tb ? c->k : c->n;
    int c_unread = c->beta == 0.0f ||
                   c->mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulDesc_t desc;
    const void *pa, *pb;
    size_t dbytes;
    void *got_d, *got_aux = NULL;

    run_scalars(&r);
    run_epilogue_data(&r);
    mat_make(&r.a, c->ab, c->row_a, arows, acols,
             ld_for(c->row_a, arows, acols, 3), c->batch, 0.0f);
    mat_make(&r.b, c->ab, c->row_b, brows, bcols,
             ld_for(c->row_b, brows, bcols, 1), c->batch, 0.0f);
    mat_make(&r.d, c->cd, c->row_d, c->m, c->n,
             ld_for(c->row_d, c->m, c->n, 2), c->batch,
             c->place == IN_PLACE && c_unread ? NAN : 0.0f);
    if (c->place == IN_PLACE) {
        r.cm = r.d;
    } else {
        mat_make(&r.cm, c->cd, c->row_d, c->m, c->n,
                 c->place == C_BROADCAST ? 0
                                         : ld_for(c->row_d, c->m, c->n, 5),
                 c->batch, c_unread ? NAN : 0.0f);
    }
    desc = run_desc(&r);
    la = mat_layout(&r.a), lb = mat_layout(&r.b), ld = mat_layout(&r.d);
    lc = c->place == IN_PLACE ? ld : mat_layout(&r.cm);
    pa = c->mode == CUBLASLT_POINTER_MODE_HOST ? (const void *)&c->alpha
                                               : r.dalpha;
    pb = c->mode == CUBLASLT_POINTER_MODE_HOST ||
                 c->mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST
             ? (const void *)&c->beta
             : r.dbeta;
    assert_int_equal(cublasLtMatmul(h, desc, pa, r.a.dev, la, r.b.dev, lb, pb,
                                    r.cm.dev, lc, r.d.dev, ld, NULL, NULL, 0,
                                    stream), OK);
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    dbytes = (size_t)(r.d.stride * c->batch) * type_bytes(c->cd);
    got_d = malloc(dbytes);
    assert_non_null(got_d);
    dev_download(got_d, r.d.dev, dbytes);
    if (r.daux != NULL) {
        got_aux = malloc(r.aux_size);
        assert_non_null(got_aux);
        dev_download(got_aux, r.daux, r.aux_size);
    }
    run_check(&r, got_d, got_aux);

    assert_int_equal(cublasLtMatmulDescDestroy(desc), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(la), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(lb), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(ld), OK);
    if (c->place != IN_PLACE) {
        assert_int_equal(cublasLtMatrixLayoutDestroy(lc), OK);
        mat_free(&r.cm);
    }
    mat_free(&r.a), mat_free(&r.b), mat_free(&r.d);
    dev_free(r.dbias), dev_free(r.daux), dev_free(r.dalpha), dev_free(r.dbeta);
    free(r.bias), free(r.aux), free(r.alpha), free(r.beta);
    free(got_d), free(got_aux);
}

static void
run_cases(const struct lt_case *cases, size_t n)
{
    cublasLtHandle_t h = lt_new();
    cudaStream_t s;

    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    for (size_t i = 0; i < n; i++) {
        print_message("case %zu\n", i);
        run_case_on(h, &cases[i], s);
    }
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cublasLtDestroy(h), OK);
}

#define RUN_CASES(cases) run_cases(cases, sizeof(cases) / sizeof(cases[0]))

/* ---- Products ------------------------------------------------------------- */

/* Every epilogue the emulator computes, in FP32 and in FP16 output, on a
 * batch of two with per-member bias and auxiliary matrices. */
static void
test_epilogues(void **state)
{
    static const cublasLtEpilogue_t epis[] = {
        CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_RELU,
        CUBLASLT_EPILOGUE_RELU_AUX, CUBLASLT_EPILOGUE_BIAS,
        CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_RELU_AUX_BIAS,
        CUBLASLT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU_AUX,
        CUBLASLT_EPILOGUE_GELU_BIAS, CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
        CUBLASLT_EPILOGUE_DRELU, CUBLASLT_EPILOGUE_DGELU,
    };
    struct lt_case cases[2 * sizeof(epis) / sizeof(epis[0])];

    (void)state;
    for (size_t i = 0; i < sizeof(epis) / sizeof(epis[0]); i++) {
        struct lt_case f32 = { FP32, .ta = CUBLAS_OP_T, .m = 37, .n = 9,
                               .k = 21, .batch = 2, .epilogue = epis[i],
                               .alpha = 1.5f, .beta = 0.5f };
        struct lt_case f16 = { .compute = CUBLAS_COMPUTE_32F,
                               .ab = CUDA_R_16F, .cd = CUDA_R_16F,
                               .tb = CUBLAS_OP_T, .m = 130, .n = 3, .k = 16,
                               .batch = 2, .epilogue = epis[i],
                               .alpha = 0.75f, .beta = -1.0f };
        cases[2 * i] = f32;
        cases[2 * i + 1] = f16;
    }
    RUN_CASES(cases);
}

/* Column and row order for A, B and C/D, each transpose; D row-major
 * with the epilogues the library allows it (none combining a bias with an
 * activation). */
static void
test_orders_and_transposes(void **state)
{
    struct lt_case cases[32];
    size_t n = 0;

    (void)state;
    for (int bits = 0; bits < 32; bits++) {
        struct lt_case c = { FP32, .m = 11, .n = 7, .k = 13, .batch = 1,
                             .alpha = -0.5f, .beta = 2.0f };
        c.row_a = bits & 1, c.row_b = (bits >> 1) & 1;
        c.row_d = (bits >> 2) & 1;
        c.ta = (bits >> 3) & 1 ? CUBLAS_OP_T : CUBLAS_OP_N;
        c.tb = (bits >> 4) & 1 ? CUBLAS_OP_T : CUBLAS_OP_N;
        c.epilogue = bits % 3 == 0 ? CUBLASLT_EPILOGUE_BIAS
                     : bits % 3 == 1 ? CUBLASLT_EPILOGUE_GELU
                                     : CUBLASLT_EPILOGUE_DEFAULT;
        cases[n++] = c;
    }
    run_cases(cases, n);
}

/* Each pointer mode: host and device scalars, alpha and beta vectors,
 * alpha vectors with beta zero (C holds NaN and is not read) or a host
 * beta, the latter with a batch stride on alpha. */
static void
test_pointer_modes(void **state)
{
    static const struct lt_case cases[] = {
        { FP32, .m = 9, .n = 5, .k = 7, .batch = 3, .alpha = 1.25f,
          .beta = -0.75f, .mode = CUBLASLT_POINTER_MODE_HOST },
        { FP32, .m = 9, .n = 5, .k = 7, .batch = 3, .alpha = 1.25f,
          .beta = -0.75f, .mode = CUBLASLT_POINTER_MODE_DEVICE },
        { FP32, .m = 9, .n = 5, .k = 7, .batch = 3, .alpha = 1.25f,
          .beta = 0.0f, .mode = CUBLASLT_POINTER_MODE_DEVICE },
        { FP32, .m = 9, .n = 5, .k = 7, .batch = 3, .alpha = 1.25f,
          .beta = -0.75f, .mode = CUBLASLT_POINTER_MODE_DEVICE_VECTOR,
          .epilogue = CUBLASLT_EPILOGUE_RELU_BIAS },
        { FP32, .m = 9, .n = 5, .k = 7, .batch = 3, .alpha = 1.25f,
          .beta = 3.0f,
          .mode = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO },
        { FP32, .m = 9, .n = 5, .k = 7, .batch = 3, .alpha = 1.25f,
          .beta = 0.5f,
          .mode = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST,
          .epilogue = CUBLASLT_EPILOGUE_GELU_BIAS },
    };

    (void)state;
    RUN_CASES(cases);
}

/* C and D: in place (C == D, one layout), out of place with another
 * leading dimension, C broadcast with ld 0; beta 0 never reads C (NaN
 * there), in place or not. */
static void
test_c_and_d(void **state)
{
    static const struct lt_case cases[] = {
        { FP32, .m = 12, .n = 6, .k = 5, .batch = 2, .alpha = 1.0f,
          .beta = 1.0f, .place = IN_PLACE },
        { FP32, .m = 12, .n = 6, .k = 5, .batch = 2, .alpha = 1.0f,
          .beta = 0.0f, .place = IN_PLACE,
          .epilogue = CUBLASLT_EPILOGUE_RELU_BIAS },
        { FP32, .m = 12, .n = 6, .k = 5, .batch = 2, .alpha = 2.0f,
          .beta = 0.0f, .place = OUT_OF_PLACE },
        { FP32, .m = 12, .n = 6, .k = 5, .batch = 2, .alpha = 2.0f,
          .beta = -1.0f, .place = C_BROADCAST },
        { FP32, .m = 12, .n = 6, .k = 5, .batch = 2, .alpha = 2.0f,
          .beta = -1.0f, .place = C_BROADCAST, .row_d = 1 },
        { .compute = CUBLAS_COMPUTE_32F, .ab = CUDA_R_16BF, .cd = CUDA_R_16BF,
          .m = 12, .n = 6, .k = 5, .batch = 2, .alpha = 1.0f, .beta = 0.5f,
          .place = IN_PLACE },
    };

    (void)state;
    RUN_CASES(cases);
}

/* The compute types and operand types of the table: FP32 with each
 * compute type (operands rounded as it says), FP16 and BF16 operands with
 * an output of their type or FP32, pedantic. */
static void
test_compute_types(void **state)
{
    static const struct lt_case cases[] = {
        { FP32, .m = 33, .n = 17, .k = 40, .batch = 1, .alpha = 1.0f,
          .beta = 0.25f },
        { .compute = CUBLAS_COMPUTE_32F_PEDANTIC, .ab = CUDA_R_32F,
          .cd = CUDA_R_32F, .m = 33, .n = 17, .k = 40, .batch = 1,
          .alpha = 1.0f, .beta = 0.25f },
        { .compute = CUBLAS_COMPUTE_32F_FAST_TF32, .ab = CUDA_R_32F,
          .cd = CUDA_R_32F, .m = 33, .n = 17, .k = 40, .batch = 1,
          .alpha = 1.0f, .beta = 0.25f },
        { .compute = CUBLAS_COMPUTE_32F_FAST_16F, .ab = CUDA_R_32F,
          .cd = CUDA_R_32F, .m = 33, .n = 17, .k = 40, .batch = 1,
          .alpha = 1.0f, .beta = 0.25f },
        { .compute = CUBLAS_COMPUTE_32F_FAST_16BF, .ab = CUDA_R_32F,
          .cd = CUDA_R_32F, .m = 33, .n = 17, .k = 40, .batch = 1,
          .alpha = 1.0f, .beta = 0.25f },
        { .compute = CUBLAS_COMPUTE_32F_EMULATED_16BFX9, .ab = CUDA_R_32F,
          .cd = CUDA_R_32F, .m = 33, .n = 17, .k = 40, .batch = 1,
          .alpha = 1.0f, .beta = 0.25f },
        { .compute = CUBLAS_COMPUTE_32F, .ab = CUDA_R_16F, .cd = CUDA_R_32F,
          .m = 33, .n = 17, .k = 40, .batch = 1, .alpha = 1.0f,
          .beta = 0.25f, .epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS },
        { .compute = CUBLAS_COMPUTE_32F, .ab = CUDA_R_16BF, .cd = CUDA_R_32F,
          .m = 33, .n = 17, .k = 40, .batch = 1, .alpha = 1.0f,
          .beta = 0.25f },
        { .compute = CUBLAS_COMPUTE_32F_PEDANTIC, .ab = CUDA_R_16F,
          .cd = CUDA_R_16F, .m = 33, .n = 17, .k = 40, .batch = 1,
          .alpha = 1.0f, .beta = 0.25f },
        { .compute = CUBLAS_COMPUTE_32F, .ab = CUDA_R_16BF, .cd = CUDA_R_16BF,
          .m = 33, .n = 17, .k = 40, .batch = 1, .alpha = 1.0f,
          .beta = 0.25f, .epilogue = CUBLASLT_EPILOGUE_RELU_AUX_BIAS },
    };

    (void)state;
    RUN_CASES(cases);
}

/* Pointer arrays: each member's A, B, C and D at addresses read from
 * device arrays of device pointers, with host and with device scalars. */
static void
test_pointer_arrays(void **state)
{
    enum { M = 5, N = 4, K = 3, BATCH = 3 };
    cublasLtHandle_t h = lt_new();
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    uint32_t mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
    int32_t batch = BATCH, dev_mode = CUBLASLT_POINTER_MODE_DEVICE;
    float a[BATCH][M * K], b[BATCH][K * N], c[BATCH][M * N];
    float got[M * N], scalars[2] = { 1.5f, 0.5f };
    void *pa[BATCH], *pb[BATCH], *pc[BATCH], *pd[BATCH];
    void *arr_a, *arr_b, *arr_c, *arr_d, *dscalars;

    (void)state;
    for (int m = 0; m < BATCH; m++) {
        for (int i = 0; i < M * K; i++)
            a[m][i] = rnd();
        for (int i = 0; i < K * N; i++)
            b[m][i] = rnd();
        for (int i = 0; i < M * N; i++)
            c[m][i] = rnd();
        pa[m] = dev_upload(a[m], sizeof a[m]);
        pb[m] = dev_upload(b[m], sizeof b[m]);
        pc[m] = dev_upload(c[m], sizeof c[m]);
        pd[m] = dev_upload(c[m], sizeof c[m]);
    }
    arr_a = dev_upload(pa, sizeof pa), arr_b = dev_upload(pb, sizeof pb);
    arr_c = dev_upload(pc, sizeof pc), arr_d = dev_upload(pd, sizeof pd);
    dscalars = dev_upload(scalars, sizeof scalars);
    assert_int_equal(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, M, K, M), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, N, K), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, M, N, M), OK);
    {
        cublasLtMatrixLayout_t ls[] = { la, lb, lc };
        for (int i = 0; i < 3; i++) {
            layout_set(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, 4);
            layout_set(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4);
        }
    }
    for (int run = 0; run < 2; run++) {
        const void *alpha = run ? dscalars : (const void *)&scalars[0];
        const void *beta = run ? (const float *)dscalars + 1
                               : (const void *)&scalars[1];
        if (run)
            desc_set(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &dev_mode, 4);
        assert_int_equal(cublasLtMatmul(h, desc, alpha, arr_a, la, arr_b, lb,
                                        beta, arr_c, lc, arr_d, lc, NULL,
                                        NULL, 0, 0), OK);
        for (int m = 0; m < BATCH; m++) {
            dev_download(got, pd[m], sizeof got);
            for (int j = 0; j < N; j++)
                for (int i = 0; i < M; i++) {
                    double s = 0.0, mag = 0.0;
                    for (int p = 0; p < K; p++) {
                        s += (double)a[m][i + p * M] * b[m][p + j * K];
                        mag += fabs((double)a[m][i + p * M] * b[m][p + j * K]);
                    }
                    s = 1.5 * s + 0.5 * c[m][i + j * M];
                    mag = 1.5 * mag + 0.5 * fabs(c[m][i + j * M]);
                    assert_true(fabs(got[i + j * M] - s) <=
                                (K + 8) * 0x1p-24 * mag);
                }
        }
    }
    for (int m = 0; m < BATCH; m++)
        dev_free(pa[m]), dev_free(pb[m]), dev_free(pc[m]), dev_free(pd[m]);
    dev_free(arr_a), dev_free(arr_b), dev_free(arr_c), dev_free(arr_d);
    dev_free(dscalars);
    assert_int_equal(cublasLtMatrixLayoutDestroy(la), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(lb), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(lc), OK);
    assert_int_equal(cublasLtMatmulDescDestroy(desc), OK);
    assert_int_equal(cublasLtDestroy(h), OK);
}

/* One element, 1 x 1 x 1: A = 1 + 2^-20 times B = 1. */
static float
tiny_product(cublasLtHandle_t h, cublasComputeType_t compute)
{
    float one_plus = 1.0f + 0x1p-20f, one = 1.0f, alpha = 1.0f, beta = 0.0f;
    float got = 0.0f;
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t l;
    float *da = dev_upload(&one_plus, 4), *db = dev_upload(&one, 4);
    float *dd = dev_upload(&got, 4);

    assert_int_equal(cublasLtMatmulDescInit(&desc, compute, CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatrixLayoutInit(&l, CUDA_R_32F, 1, 1, 1), OK);
    assert_int_equal(cublasLtMatmul(h, &desc, &alpha, da, &l, db, &l, &beta,
                                    NULL, &l, dd, &l, NULL, NULL, 0, 0), OK);
    dev_download(&got, dd, 4);
    dev_free(da), dev_free(db), dev_free(dd);
    return got;
}

/* The rounding shows: 1 + 2^-20 is exact in FP32 and rounds to 1 in TF32,
 * FP16 and BF16; 32F and PEDANTIC keep it. */
static void
test_operand_rounding_visible(void **state)
{
    cublasLtHandle_t h = lt_new();

    (void)state;
    assert_true(tiny_product(h, CUBLAS_COMPUTE_32F) == 1.0f + 0x1p-20f);
    assert_true(tiny_product(h, CUBLAS_COMPUTE_32F_PEDANTIC) ==
                1.0f + 0x1p-20f);
    assert_true(tiny_product(h, CUBLAS_COMPUTE_32F_FAST_TF32) == 1.0f);
    assert_true(tiny_product(h, CUBLAS_COMPUTE_32F_FAST_16F) == 1.0f);
    assert_true(tiny_product(h, CUBLAS_COMPUTE_32F_FAST_16BF) == 1.0f);
    assert_int_equal(cublasLtDestroy(h), OK);
}

/* ---- Handles, versions, status names ---------------------------------------- */

static void
test_handles_and_versions(void **state)
{
    cublasLtHandle_t h = lt_new();
    cublasHandle_t blas = NULL;
    cudaStream_t s;
    int v = -1;

    (void)state;
    assert_int_equal(cublasLtCreate(NULL), INVALID);
    assert_int_equal(cublasLtDestroy(NULL), INVALID);
    assert_int_equal(cublasLtGetVersion(), CUBLAS_VERSION);
    assert_int_equal(cublasLtGetCudartVersion(), CUDART_VERSION);
    assert_int_equal(cublasLtGetProperty(MAJOR_VERSION, &v), OK);
    assert_int_equal(v, CUBLAS_VER_MAJOR);
    assert_int_equal(cublasLtGetProperty(MINOR_VERSION, &v), OK);
    assert_int_equal(v, CUBLAS_VER_MINOR);
    assert_int_equal(cublasLtGetProperty(PATCH_LEVEL, &v), OK);
    assert_int_equal(v, CUBLAS_VER_PATCH);
    assert_int_equal(cublasLtGetProperty(MAJOR_VERSION, NULL), INVALID);
    assert_int_equal(cublasLtGetProperty((libraryPropertyType)7, &v), INVALID);
    assert_string_equal(cublasLtGetStatusName(UNSUPPORTED),
                        "CUBLAS_STATUS_NOT_SUPPORTED");
    assert_string_equal(cublasLtGetStatusString(INVALID),
                        "an unsupported value or parameter was passed to the "
                        "function");
    assert_string_equal(cublasLtGetStatusName((cublasStatus_t)99),
                        "unrecognized status");
    assert_int_equal(cublasLtDestroy(h), OK);

    /* A cuBLAS handle may stand in for a cuBLASLt one (cast). */
    assert_int_equal(cublasCreate_v2(&blas), CUBLAS_STATUS_SUCCESS);
    assert_true(tiny_product((cublasLtHandle_t)blas, CUBLAS_COMPUTE_32F) ==
                1.0f + 0x1p-20f);
    assert_int_equal(cublasDestroy_v2(blas), CUBLAS_STATUS_SUCCESS);

    /* Creation allocates device memory: refused under a global capture,
     * which it invalidates. */
    h = NULL;
    s = capture_begin();
    assert_int_equal(cublasLtCreate(&h), CUBLAS_STATUS_ALLOC_FAILED);
    assert_null(h);
    capture_expect_invalidated(s);
}

/* ---- Attributes ------------------------------------------------------------- */

/* One attribute: its size and its default, as the header gives them. */
struct attr_case {
    int attr;
    size_t size;
    int64_t dflt;
};

/* Set and Get of the three kinds of descriptor, on void pointers. */
struct attr_kind {
    void *obj;
    cublasStatus_t (*set)(void *, int, const void *, size_t);
    cublasStatus_t (*get)(void *, int, void *, size_t, size_t *);
    int unknown;                /* an attribute that does not exist */
};

static cublasStatus_t
desc_set_v(void *o, int a, const void *b, size_t n)
{
    return cublasLtMatmulDescSetAttribute(o, a, b, n);
}

static cublasStatus_t
desc_get_v(void *o, int a, void *b, size_t n, size_t *w)
{
    return cublasLtMatmulDescGetAttribute(o, a, b, n, w);
}

static cublasStatus_t
layout_set_v(void *o, int a, const void *b, size_t n)
{
    return cublasLtMatrixLayoutSetAttribute(o, a, b, n);
}

static cublasStatus_t
layout_get_v(void *o, int a, void *b, size_t n, size_t *w)
{
    return cublasLtMatrixLayoutGetAttribute(o, a, b, n, w);
}

static cublasStatus_t
pref_set_v(void *o, int a, const void *b, size_t n)
{
    return cublasLtMatmulPreferenceSetAttribute(o, a, b, n);
}

static cublasStatus_t
pref_get_v(void *o, int a, void *b, size_t n, size_t *w)
{
    return cublasLtMatmulPreferenceGetAttribute(o, a, b, n, w);
}

static int64_t
as_int(const void *buf, size_t size)
{
    int8_t i8;
    int32_t i32;
    int64_t i64;

    if (size == 1)
        return memcpy(&i8, buf, 1), i8;
    if (size == 4)
        return memcpy(&i32, buf, 4), i32;
    return memcpy(&i64, buf, 8), i64;
}

/* The documented contract of Get and Set for each attribute: the size
 * query, exact sizes only, NULL buffers refused; the default; a value set
 * reads back. */
static void
check_attributes(const struct attr_kind *k, const struct attr_case *cases,
                 size_t n)
{
    uint8_t buf[16], val[16];
    size_t written;

    for (size_t i = 0; i < n; i++) {
        const struct attr_case *c = &cases[i];

        written = 0;
        assert_int_equal(k->get(k->obj, c->attr, NULL, 0, &written), OK);
        assert_int_equal(written, c->size);
        assert_int_equal(k->get(k->obj, c->attr, buf, 0, NULL), INVALID);
        assert_int_equal(k->get(k->obj, c->attr, NULL, c->size, &written),
                         INVALID);
        if (c->size > 1)    /* sizeInBytes 0 is the size query */
            assert_int_equal(k->get(k->obj, c->attr, buf, c->size - 1,
                                    &written), INVALID);
        assert_int_equal(k->get(k->obj, c->attr, buf, c->size + 1, &written),
                         INVALID);
        assert_int_equal(k->get(k->obj, c->attr, buf, c->size, NULL), OK);
        assert_int_equal(as_int(buf, c->size), c->dflt);
        memset(val, 0, sizeof(val));
        val[0] = 3;
        assert_int_equal(k->set(k->obj, c->attr, val, c->size + 1), INVALID);
        assert_int_equal(k->set(k->obj, c->attr, val, c->size - 1), INVALID);
        assert_int_equal(k->set(k->obj, c->attr, NULL, c->size), INVALID);
        assert_int_equal(k->set(k->obj, c->attr, val, c->size), OK);
        assert_int_equal(k->get(k->obj, c->attr, buf, c->size, &written), OK);
        assert_int_equal(written, c->size);
        assert_memory_equal(buf, val, c->size);
    }
    assert_int_equal(k->get(k->obj, k->unknown, buf, 4, &written), INVALID);
    assert_int_equal(k->set(k->obj, k->unknown, val, 4), INVALID);
}

static void
test_attributes(void **state)
{
    static const struct attr_case desc_cases[] = {
        { CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 4, CUBLAS_COMPUTE_32F_FAST_TF32 },
        { CUBLASLT_MATMUL_DESC_SCALE_TYPE, 4, CUDA_R_32F },
        { CUBLASLT_MATMUL_DESC_POINTER_MODE, 4, CUBLASLT_POINTER_MODE_HOST },
        { CUBLASLT_MATMUL_DESC_TRANSA, 4, CUBLAS_OP_N },
        { CUBLASLT_MATMUL_DESC_TRANSB, 4, CUBLAS_OP_N },
        { CUBLASLT_MATMUL_DESC_TRANSC, 4, CUBLAS_OP_N },
        { CUBLASLT_MATMUL_DESC_FILL_MODE, 4, CUBLAS_FILL_MODE_FULL },
        { CUBLASLT_MATMUL_DESC_EPILOGUE, 4, CUBLASLT_EPILOGUE_DEFAULT },
        { CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8, 0 },
        { CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 8, 0 },
        { CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, 8, 0 },
        { CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8, 0 },
        { CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 8, 0 },
        { CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, 8, 0 },
        { CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, 4, 0 },
        { CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, 8, 0 },
        { CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, 8, 0 },
        { CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, 4, -1 },
        { CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1, 0 },
        { CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, 4, -1 },
        { CUBLASLT_MATMUL_DESC_D_SCALE_MODE, 4, 0 },
        { CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, 8, 0 },
    };
    static const struct attr_case layout_cases[] = {
        { CUBLASLT_MATRIX_LAYOUT_TYPE, 4, CUDA_R_16BF },
        { CUBLASLT_MATRIX_LAYOUT_ORDER, 4, CUBLASLT_ORDER_COL },
        { CUBLASLT_MATRIX_LAYOUT_ROWS, 8, 5 },
        { CUBLASLT_MATRIX_LAYOUT_COLS, 8, 6 },
        { CUBLASLT_MATRIX_LAYOUT_LD, 8, 7 },
        { CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4, 1 },
        { CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 8, 0 },
        { CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, 8, 0 },
        { CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, 4, CUBLASLT_BATCH_MODE_STRIDED },
    };
    static const struct attr_case pref_cases[] = {
        { CUBLASLT_MATMUL_PREF_SEARCH_MODE, 4, CUBLASLT_SEARCH_BEST_FIT },
        { CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 8, 0 },
        { CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, 4,
          CUBLASLT_REDUCTION_SCHEME_MASK },
        { CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 4, 256 },
        { CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 4, 256 },
        { CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, 4, 0 },
        { CUBLASLT_MATMUL_PREF_IMPL_MASK, 8, -1 },
    };
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t layout;
    cublasLtMatmulPreference_t pref;

    (void)state;
    assert_int_equal(cublasLtMatmulDescCreate(&desc,
                                              CUBLAS_COMPUTE_32F_FAST_TF32,
                                              CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, 5, 6, 7),
                     OK);
    assert_int_equal(cublasLtMatmulPreferenceCreate(&pref), OK);
    {
        const struct attr_kind kinds[] = {
            { desc, desc_set_v, desc_get_v, 9 },
            { layout, layout_set_v, layout_get_v, 99 },
            { pref, pref_set_v, pref_get_v, 2 },
        };
        check_attributes(&kinds[0], desc_cases,
                         sizeof(desc_cases) / sizeof(desc_cases[0]));
        check_attributes(&kinds[1], layout_cases,
                         sizeof(layout_cases) / sizeof(layout_cases[0]));
        check_attributes(&kinds[2], pref_cases,
                         sizeof(pref_cases) / sizeof(pref_cases[0]));
    }
    assert_int_equal(cublasLtMatmulDescCreate(NULL, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F), INVALID);
    assert_int_equal(cublasLtMatmulDescDestroy(desc), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(layout), OK);
    assert_int_equal(cublasLtMatmulPreferenceDestroy(pref), OK);
}

/* cuBLAS 12.x's atomic synchronisation attributes (27 and 28, the chunks
 * of D's rows and columns, int32_t; 29 and 30, the input and output
 * counters, device pointers) are gone from cuBLAS 13.1: its cublasLt.h
 * has no CUBLASLT_MATMUL_DESC_ATOMIC_SYNC_*, and its libcublasLt.so.13
 * answers INVALID_VALUE to Set and Get of 27 to 30 (the toolkit's library,
 * asked on a machine without a GPU), as the emulator does. */
static void
test_atomic_sync_attributes_refused(void **state)
{
    cublasLtMatmulDesc_t desc;
    int32_t chunks = 4, got = 0;
    void *counters = (void *)(uintptr_t)0x1000;
    size_t written = 99;

    (void)state;
    assert_int_equal(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F), OK);
    for (int attr = 27; attr <= 30; attr++) {
        cublasLtMatmulDescAttributes_t a = (cublasLtMatmulDescAttributes_t)attr;

        assert_int_equal(cublasLtMatmulDescSetAttribute(desc, a, &chunks,
                                                        sizeof(chunks)),
                         INVALID);
        assert_int_equal(cublasLtMatmulDescSetAttribute(desc, a, &counters,
                                                        sizeof(counters)),
                         INVALID);
        assert_int_equal(cublasLtMatmulDescGetAttribute(desc, a, &got,
                                                        sizeof(got),
                                                        &written),
                         INVALID);
        assert_int_equal(cublasLtMatmulDescGetAttribute(desc, a, NULL, 0,
                                                        &written),
                         INVALID);
    }
    assert_int_equal(cublasLtMatmulDescDestroy(desc), OK);
}

/* The Init forms work in the caller's memory of the header's sizes (less
 * is ALLOC_FAILED), start from the defaults Create gives, and serve a
 * product; nothing is destroyed. */
/* The emulation descriptor (cublasLt.h, cublasLtEmulationDescAttributes_t):
 * the header's defaults (strategy 0, every special value 0xFFFF, the
 * fixed-point settings 0), the Get/Set contract of the other descriptors,
 * Init in the caller's memory (too small: ALLOC_FAILED; its Destroy
 * refused), Create and Destroy. A product of EMULATED_16BFX9 on this GPU
 * model (no BF16x9 here) is the FP32 product. */
static void
test_emulation_descriptor(void **state)
{
    cublasLtEmulationDescOpaque_t stack;
    cublasLtEmulationDesc_t made = NULL;
    int32_t v = -1, eager = CUBLAS_EMULATION_STRATEGY_EAGER;
    size_t written = 0;

    (void)state;
    assert_int_equal(cublasLtEmulationDescInit_internal(&stack, 16),
                     CUBLAS_STATUS_ALLOC_FAILED);
    assert_int_equal(cublasLtEmulationDescInit(&stack), OK);
    assert_int_equal(cublasLtEmulationDescGetAttribute(
                         &stack, CUBLASLT_EMULATION_DESC_STRATEGY, &v,
                         sizeof(v), &written), OK);
    assert_int_equal(v, 0);
    assert_int_equal(written, sizeof(int32_t));
    assert_int_equal(cublasLtEmulationDescGetAttribute(
                         &stack, CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT,
                         &v, sizeof(v), NULL), OK);
    assert_int_equal(v, 0xFFFF);
    assert_int_equal(cublasLtEmulationDescGetAttribute(
                         &stack, CUBLASLT_EMULATION_DESC_STRATEGY, NULL, 0,
                         &written), OK);
    assert_int_equal(written, sizeof(int32_t));
    assert_int_equal(cublasLtEmulationDescSetAttribute(
                         &stack, CUBLASLT_EMULATION_DESC_STRATEGY, &eager,
                         sizeof(eager) - 1), INVALID);
    assert_int_equal(cublasLtEmulationDescSetAttribute(
                         &stack, CUBLASLT_EMULATION_DESC_STRATEGY, &eager,
                         sizeof(eager)), OK);
    assert_int_equal(cublasLtEmulationDescGetAttribute(
                         &stack, CUBLASLT_EMULATION_DESC_STRATEGY, &v,
                         sizeof(v), NULL), OK);
    assert_int_equal(v, CUBLAS_EMULATION_STRATEGY_EAGER);
    assert_int_equal(cublasLtEmulationDescDestroy(&stack), INVALID);
    assert_int_equal(cublasLtEmulationDescCreate(&made), OK);
    assert_non_null(made);
    assert_int_equal(cublasLtEmulationDescDestroy(made), OK);
    assert_int_equal(cublasLtEmulationDescDestroy(NULL), OK);
    {
        cublasLtHandle_t h = lt_new();

        assert_true(tiny_product(h, CUBLAS_COMPUTE_32F_EMULATED_16BFX9) ==
                    tiny_product(h, CUBLAS_COMPUTE_32F));
        assert_int_equal(cublasLtDestroy(h), OK);
    }
}

static void
test_stack_descriptors(void **state)
{
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t layout;
    cublasLtMatmulPreferenceOpaque_t pref;
    uint64_t ws = 1;
    int32_t epi = 0, type = 0;
    size_t written;

    (void)state;
    assert_int_equal(cublasLtMatmulDescInit_internal(&desc, sizeof(desc) - 8,
                                                     CUBLAS_COMPUTE_32F,
                                                     CUDA_R_32F),
                     CUBLAS_STATUS_ALLOC_FAILED);
    assert_int_equal(cublasLtMatrixLayoutInit_internal(&layout, 32,
                                                       CUDA_R_32F, 2, 2, 2),
                     CUBLAS_STATUS_ALLOC_FAILED);
    assert_int_equal(cublasLtMatmulPreferenceInit_internal(&pref, 8),
                     CUBLAS_STATUS_ALLOC_FAILED);
    assert_int_equal(cublasLtMatmulDescInit(&desc, CUBLAS_COMPUTE_32F,
                                            CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatrixLayoutInit(&layout, CUDA_R_16F, 2, 3, 4),
                     OK);
    assert_int_equal(cublasLtMatmulPreferenceInit(&pref), OK);
    assert_int_equal(cublasLtMatmulDescGetAttribute(
                         &desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                         sizeof(epi), &written), OK);
    assert_int_equal(epi, CUBLASLT_EPILOGUE_DEFAULT);
    assert_int_equal(cublasLtMatrixLayoutGetAttribute(
                         &layout, CUBLASLT_MATRIX_LAYOUT_TYPE, &type,
                         sizeof(type), &written), OK);
    assert_int_equal(type, CUDA_R_16F);
    assert_int_equal(cublasLtMatmulPreferenceGetAttribute(
                         &pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                         sizeof(ws), &written), OK);
    assert_int_equal(ws, 0);
    {
        cublasLtHandle_t h = lt_new();
        assert_true(tiny_product(h, CUBLAS_COMPUTE_32F_FAST_TF32) == 1.0f);
        assert_int_equal(cublasLtDestroy(h), OK);
    }
}

/* ---- Argument checks ----------------------------------------------------------- */

/* One cublasLtMatmul's arguments: a valid 4 x 4 x 4 FP32 product with its
 * own C, ready to be spoiled one way. */
struct call {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    float alpha, beta;
    const void *pa, *pb, *a, *b, *c;
    void *d, *bias, *aux, *ws;
    size_t ws_size;
    void *mem[7];               /* what the pointers started as, to free */
};

static void
call_new(struct call *c, cublasLtHandle_t h)
{
    float zeros[64] = { 0 };

    memset(c, 0, sizeof(*c));
    c->h = h;
    c->alpha = 1.0f, c->beta = 1.0f;
    c->pa = &c->alpha, c->pb = &c->beta;
    assert_int_equal(cublasLtMatmulDescCreate(&c->desc, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&c->la, CUDA_R_32F, 4, 4, 4),
                     OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&c->lb, CUDA_R_32F, 4, 4, 4),
                     OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&c->lc, CUDA_R_32F, 4, 4, 4),
                     OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&c->ld, CUDA_R_32F, 4, 4, 4),
                     OK);
    for (int i = 0; i < 7; i++)
        c->mem[i] = dev_upload(zeros, sizeof(zeros));
    c->a = c->mem[0], c->b = c->mem[1], c->c = c->mem[2], c->d = c->mem[3];
    c->bias = c->mem[4], c->aux = c->mem[5], c->ws = c->mem[6];
}

static cublasStatus_t
call_run(const struct call *c)
{
    return cublasLtMatmul(c->h, c->desc, c->pa, c->a, c->la, c->b, c->lb,
                          c->pb, c->c, c->lc, c->d, c->ld, NULL, c->ws,
                          c->ws_size, 0);
}

static void
call_free(struct call *c)
{
    cublasLtMatrixLayout_t ls[] = { c->la, c->lb, c->lc, c->ld };

    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    if (c->desc != NULL)
        assert_int_equal(cublasLtMatmulDescDestroy(c->desc), OK);
    for (int i = 0; i < 4; i++)
        if (ls[i] != NULL)
            assert_int_equal(cublasLtMatrixLayoutDestroy(ls[i]), OK);
    for (int i = 0; i < 7; i++)
        dev_free(c->mem[i]);
}

/* A layout remade with another type or shape. */
static void
relayout(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows,
         uint64_t cols, int64_t ld)
{
    assert_int_equal(cublasLtMatrixLayoutDestroy(*l), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(l, t, rows, cols, ld), OK);
}

static void
set_i32(struct call *c, cublasLtMatmulDescAttributes_t attr, int32_t v)
{
    desc_set(c->desc, attr, &v, sizeof(v));
}

static void
set_ptr(struct call *c, cublasLtMatmulDescAttributes_t attr, const void *v)
{
    desc_set(c->desc, attr, &v, sizeof(v));
}

static void
set_i64(struct call *c, cublasLtMatmulDescAttributes_t attr, int64_t v)
{
    desc_set(c->desc, attr, &v, sizeof(v));
}

static void
set_order(cublasLtMatrixLayout_t l, int32_t order)
{
    layout_set(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order));
}

enum spoil {
    S_NONE, S_NULL_HANDLE, S_NULL_DESC, S_NULL_ADESC, S_K_MISMATCH,
    S_M_MISMATCH, S_LDA_SMALL, S_LD_NEGATIVE, S_CD_TYPES, S_C_ROWS,
    S_BATCH_COUNTS, S_AB_TYPES, S_COMPUTE_16F, S_TF32_HALF, S_SCALE_16F,
    S_ORDER_COL32, S_TRANSA_BAD, S_TRANSC, S_FILL, S_EPI_BAD, S_EPI_BGRAD,
    S_ROW_RELU_BIAS, S_ROW_BIAS, S_ROW_GELU_AUX, S_BIAS_NULL, S_AUX_LD,
    S_AUX_NULL, S_BIAS_TYPE, S_AUX_TYPE, S_SCALE_PTR, S_PMODE_BAD,
    S_ZERO_STRIDE, S_ALPHA_NULL, S_BETA_NULL, S_A_NULL, S_D_NULL,
    S_C_NULL_BETA1, S_C_NULL_BETA0, S_WS_ALIGN, S_IN_PLACE_LD, S_INT8_EPI,
    S_INT8, S_ARRAY_BIAS,
};

static void
spoil(struct call *c, enum spoil s)
{
    switch (s) {
    case S_NULL_HANDLE: c->h = NULL; break;
    case S_NULL_DESC:
        assert_int_equal(cublasLtMatmulDescDestroy(c->desc), OK);
        c->desc = NULL;
        break;
    case S_NULL_ADESC:
        assert_int_equal(cublasLtMatrixLayoutDestroy(c->la), OK);
        c->la = NULL;
        break;
    case S_K_MISMATCH: relayout(&c->lb, CUDA_R_32F, 3, 4, 4); break;
    case S_M_MISMATCH:
        relayout(&c->lc, CUDA_R_32F, 3, 4, 4);
        relayout(&c->ld, CUDA_R_32F, 3, 4, 4);
        break;
    case S_LDA_SMALL: relayout(&c->la, CUDA_R_32F, 4, 4, 3); break;
    case S_LD_NEGATIVE: relayout(&c->ld, CUDA_R_32F, 4, 4, -4); break;
    case S_CD_TYPES: relayout(&c->lc, CUDA_R_16F, 4, 4, 4); break;
    case S_C_ROWS: relayout(&c->lc, CUDA_R_32F, 4, 3, 4); break;
    case S_BATCH_COUNTS: {
        int32_t two = 2;
        layout_set(c->la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &two, 4);
        break;
    }
    case S_AB_TYPES: relayout(&c->la, CUDA_R_16F, 4, 4, 4); break;
    case S_COMPUTE_16F:
        set_i32(c, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, CUBLAS_COMPUTE_16F);
        break;
    case S_TF32_HALF:
        set_i32(c, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE,
                CUBLAS_COMPUTE_32F_FAST_TF32);
        relayout(&c->la, CUDA_R_16F, 4, 4, 4);
        relayout(&c->lb, CUDA_R_16F, 4, 4, 4);
        break;
    case S_SCALE_16F:
        set_i32(c, CUBLASLT_MATMUL_DESC_SCALE_TYPE, CUDA_R_16F);
        break;
    case S_ORDER_COL32: set_order(c->la, CUBLASLT_ORDER_COL32); break;
    case S_TRANSA_BAD: set_i32(c, CUBLASLT_MATMUL_DESC_TRANSA, 7); break;
    case S_TRANSC:
        set_i32(c, CUBLASLT_MATMUL_DESC_TRANSC, CUBLAS_OP_T);
        break;
    case S_FILL:
        set_i32(c, CUBLASLT_MATMUL_DESC_FILL_MODE, CUBLAS_FILL_MODE_LOWER);
        break;
    case S_EPI_BAD: set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE, 3); break;
    case S_EPI_BGRAD:
        set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE,
                CUBLASLT_EPILOGUE_DRELU_BGRAD);
        set_ptr(c, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c->bias);
        set_ptr(c, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, c->aux);
        set_i64(c, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 128);
        break;
    case S_ROW_RELU_BIAS:
    case S_ROW_BIAS:
        set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE,
                s == S_ROW_BIAS ? CUBLASLT_EPILOGUE_BIAS
                                : CUBLASLT_EPILOGUE_RELU_BIAS);
        set_ptr(c, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c->bias);
        set_order(c->lc, CUBLASLT_ORDER_ROW);
        set_order(c->ld, CUBLASLT_ORDER_ROW);
        break;
    case S_ROW_GELU_AUX:
        set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX);
        set_ptr(c, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, c->aux);
        set_i64(c, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8);
        set_order(c->lc, CUBLASLT_ORDER_ROW);
        set_order(c->ld, CUBLASLT_ORDER_ROW);
        break;
    case S_BIAS_NULL:
        set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
        break;
    case S_AUX_LD:
    case S_AUX_NULL:
        set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_RELU_AUX);
        set_ptr(c, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                s == S_AUX_NULL ? NULL : c->aux);
        set_i64(c, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                s == S_AUX_LD ? 8 : 128);
        break;
    case S_BIAS_TYPE:
        set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
        set_ptr(c, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c->bias);
        set_i32(c, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUDA_R_16F);
        break;
    case S_AUX_TYPE:
        set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX);
        set_ptr(c, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, c->aux);
        set_i64(c, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8);
        set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, CUDA_R_16F);
        break;
    case S_SCALE_PTR:
        set_ptr(c, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, c->bias);
        break;
    case S_PMODE_BAD: set_i32(c, CUBLASLT_MATMUL_DESC_POINTER_MODE, 9); break;
    case S_ZERO_STRIDE:
        set_i32(c, CUBLASLT_MATMUL_DESC_POINTER_MODE,
                CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO);
        set_i64(c, CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, 4);
        c->pa = c->bias;
        break;
    case S_ALPHA_NULL: c->pa = NULL; break;
    case S_BETA_NULL: c->pb = NULL; break;
    case S_A_NULL: c->a = NULL; break;
    case S_D_NULL: c->d = NULL; break;
    case S_C_NULL_BETA1: c->c = NULL; break;
    case S_C_NULL_BETA0: c->c = NULL, c->beta = 0.0f; break;
    case S_WS_ALIGN: c->ws = (char *)c->ws + 16, c->ws_size = 64; break;
    case S_IN_PLACE_LD:
        relayout(&c->lc, CUDA_R_32F, 4, 4, 5);
        c->c = c->d;
        break;
    case S_INT8_EPI:
    case S_INT8:
        relayout(&c->la, CUDA_R_8I, 4, 4, 4);
        relayout(&c->lb, CUDA_R_8I, 4, 4, 4);
        if (s == S_INT8_EPI) {
            set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
            set_ptr(c, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c->bias);
        }
        break;
    case S_ARRAY_BIAS: {
        uint32_t mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
        cublasLtMatrixLayout_t ls[] = { c->la, c->lb, c->lc, c->ld };
        for (int i = 0; i < 4; i++)
            layout_set(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, 4);
        set_i32(c, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
        set_ptr(c, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c->bias);
        break;
    }
    default:
        break;
    }
}

/* Each way of spoiling a valid call, and the status cublasLtMatmul gives:
 * NOT_INITIALIZED without a handle, INVALID_VALUE for what is NULL, in
 * conflict or impossible, NOT_SUPPORTED for what is not done. */
static void
test_argument_checks(void **state)
{
    static const struct {
        enum spoil s;
        cublasStatus_t want;
    } cases[] = {
        { S_NONE, OK },
        { S_NULL_HANDLE, CUBLAS_STATUS_NOT_INITIALIZED },
        { S_NULL_DESC, INVALID }, { S_NULL_ADESC, INVALID },
        { S_K_MISMATCH, INVALID }, { S_M_MISMATCH, INVALID },
        { S_LDA_SMALL, INVALID }, { S_LD_NEGATIVE, INVALID },
        { S_CD_TYPES, INVALID }, { S_C_ROWS, INVALID },
        { S_BATCH_COUNTS, INVALID }, { S_AB_TYPES, UNSUPPORTED },
        { S_COMPUTE_16F, UNSUPPORTED }, { S_TF32_HALF, UNSUPPORTED },
        { S_SCALE_16F, UNSUPPORTED }, { S_ORDER_COL32, UNSUPPORTED },
        { S_TRANSA_BAD, INVALID }, { S_TRANSC, UNSUPPORTED },
        { S_FILL, UNSUPPORTED }, { S_EPI_BAD, INVALID },
        { S_EPI_BGRAD, UNSUPPORTED }, { S_ROW_RELU_BIAS, UNSUPPORTED },
        { S_ROW_BIAS, OK }, { S_ROW_GELU_AUX, UNSUPPORTED },
        { S_BIAS_NULL, INVALID }, { S_AUX_LD, INVALID },
        { S_AUX_NULL, INVALID }, { S_BIAS_TYPE, UNSUPPORTED },
        { S_AUX_TYPE, INVALID }, { S_SCALE_PTR, INVALID },
        { S_PMODE_BAD, INVALID }, { S_ZERO_STRIDE, INVALID },
        { S_ALPHA_NULL, INVALID }, { S_BETA_NULL, INVALID },
        { S_A_NULL, INVALID }, { S_D_NULL, INVALID },
        { S_C_NULL_BETA1, INVALID }, { S_C_NULL_BETA0, OK },
        { S_WS_ALIGN, INVALID }, { S_IN_PLACE_LD, INVALID },
        { S_INT8_EPI, UNSUPPORTED }, { S_INT8, OK },
        { S_ARRAY_BIAS, UNSUPPORTED },
    };
    cublasLtHandle_t h = lt_new();

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct call c;

        call_new(&c, h);
        spoil(&c, cases[i].s);
        if (call_run(&c) != cases[i].want)
            fail_msg("case %zu: status %d, want %d", i, (int)call_run(&c),
                     (int)cases[i].want);
        call_free(&c);
    }
    assert_int_equal(cublasLtDestroy(h), OK);
}

/* ---- Heuristics ------------------------------------------------------------- */

static void
pref_u64(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a,
         uint64_t v)
{
    assert_int_equal(cublasLtMatmulPreferenceSetAttribute(p, a, &v, 8), OK);
}

static void
pref_u32(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a,
         uint32_t v)
{
    assert_int_equal(cublasLtMatmulPreferenceSetAttribute(p, a, &v, 4), OK);
}

/* got (M x N) is op(A) op(B) of the column-major a (M x K) and b (K x
 * N) within FP32's bound of a sum of K products. */
static void
expect_fp32_product(const float *a, const float *b, const float *got, int m,
                    int n, int k)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0.0, mag = 0.0;

            for (int p = 0; p < k; p++) {
                s += (double)a[i + p * m] * b[p + j * k];
                mag += fabs((double)a[i + p * m] * b[p + j * k]);
            }
            assert_true(fabs(got[i + j * m] - s) <= (k + 8) * 0x1p-24 * mag);
        }
}

/* The algorithms offered for a deep product (8 x 8, k 512): without
 * workspace, and split-K in 1024 bytes of it, second; what the preference
 * caps or excludes is left out, NOT_SUPPORTED when nothing is left. Both
 * compute the product; the split-K one needs its workspace. */
static void
test_heuristics(void **state)
{
    enum { M = 8, N = 8, K = 512 };
    cublasLtHandle_t h = lt_new();
    cublasLtMatmulDesc_t desc, tf32;
    cublasLtMatrixLayout_t la, lb, lc, short_a;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t res[4], res_tf32[1];
    float *a = malloc(M * K * 4), *b = malloc(K * N * 4), got[2][M * N];
    float alpha = 1.0f, beta = 0.0f;
    void *da, *db, *dd, *ws;
    int n = -1;

    (void)state;
    assert_true(a && b);
    for (int i = 0; i < M * K; i++)
        a[i] = rnd(), b[i] = rnd();
    assert_int_equal(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatmulDescCreate(&tf32,
                                              CUBLAS_COMPUTE_32F_FAST_TF32,
                                              CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, M, K, M), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&short_a, CUDA_R_32F, M, K - 1,
                                                M), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, N, K), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, M, N, M), OK);
    assert_int_equal(cublasLtMatmulPreferenceCreate(&pref), OK);

#define HEUR(d, l, count) \
    cublasLtMatmulAlgoGetHeuristic(h, d, l, lb, lc, lc, pref, count, res, &n)
    /* The default preference allows no workspace. */
    assert_int_equal(HEUR(desc, la, 4), OK);
    assert_int_equal(n, 1);
    assert_int_equal(res[0].workspaceSize, 0);
    assert_int_equal(res[0].state, OK);
    assert_true(res[0].wavesCount > 0.0f);
    pref_u64(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 1 << 20);
    assert_int_equal(HEUR(desc, la, 4), OK);
    assert_int_equal(n, 2);
    assert_int_equal(res[0].workspaceSize, 0);
    assert_int_equal(res[1].workspaceSize, 4 * M * N * sizeof(float));
    assert_int_equal(HEUR(desc, la, 1), OK);
    assert_int_equal(n, 1);
    pref_u64(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 1023);
    assert_int_equal(HEUR(desc, la, 4), OK);
    assert_int_equal(n, 1);
    pref_u64(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 1 << 20);
    pref_u32(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
             CUBLASLT_REDUCTION_SCHEME_INPLACE);
    assert_int_equal(HEUR(desc, la, 4), OK);
    assert_int_equal(n, 1);
    pref_u32(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
             CUBLASLT_REDUCTION_SCHEME_MASK);
    /* Nothing fits: FP32 elements only 2-byte aligned, or FMA excluded. */
    pref_u32(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 2);
    assert_int_equal(HEUR(desc, la, 4), UNSUPPORTED);
    assert_int_equal(n, 0);
    pref_u32(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 16);
    pref_u64(pref, CUBLASLT_MATMUL_PREF_IMPL_MASK,
             ~(uint64_t)CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA);
    assert_int_equal(HEUR(desc, la, 4), UNSUPPORTED);
    assert_int_equal(HEUR(tf32, la, 4), OK);    /* TF32 is HMMA */
    pref_u64(pref, CUBLASLT_MATMUL_PREF_IMPL_MASK, UINT64_MAX);
    /* A search by algorithm id: the first result must hold an algorithm
     * cublasLtMatmulAlgoInit made for these types (a zeroed one, or one
     * for TF32, is refused); its configurations are BEST_FIT's. */
    pref_u32(pref, CUBLASLT_MATMUL_PREF_SEARCH_MODE,
             CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID);
    memset(res, 0, sizeof(res));
    assert_int_equal(HEUR(desc, la, 4), INVALID);
    assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F_FAST_TF32,
                                            CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                            CUDA_R_32F, CUDA_R_32F, 0,
                                            &res[0].algo), OK);
    assert_int_equal(HEUR(desc, la, 4), INVALID);
    assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F,
                                            CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                            CUDA_R_32F, 0, &res[0].algo), OK);
    assert_int_equal(HEUR(desc, la, 4), OK);
    assert_int_equal(n, 2);
    pref_u32(pref, CUBLASLT_MATMUL_PREF_SEARCH_MODE, CUBLASLT_SEARCH_BEST_FIT);
    assert_int_equal(HEUR(desc, la, 0), INVALID);
    assert_int_equal(HEUR(desc, short_a, 4), INVALID);
    assert_int_equal(cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc,
                                                    NULL, 4, res, &n),
                     INVALID);
    assert_int_equal(cublasLtMatmulAlgoGetHeuristic(NULL, desc, la, lb, lc, lc,
                                                    pref, 4, res, &n),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasLtMatmulAlgoGetHeuristic(h, tf32, la, lb, lc, lc,
                                                    pref, 1, res_tf32, &n),
                     OK);
    assert_int_equal(HEUR(desc, la, 4), OK);
    assert_int_equal(n, 2);
#undef HEUR

    da = dev_upload(a, M * K * 4), db = dev_upload(b, K * N * 4);
    dd = dev_upload(got, sizeof(got[0]));
    assert_int_equal(cudaMalloc(&ws, 1024), cudaSuccess);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(cublasLtMatmul(h, desc, &alpha, da, la, db, lb, &beta,
                                        dd, lc, dd, lc, &res[i].algo, ws,
                                        res[i].workspaceSize, 0), OK);
        dev_download(got[i], dd, sizeof(got[i]));
    }
    for (int v = 0; v < 2; v++)
        expect_fp32_product(a, b, got[v], M, N, K);
    /* The split-K algorithm without its workspace; an algorithm found for
     * other types. */
    assert_int_equal(cublasLtMatmul(h, desc, &alpha, da, la, db, lb, &beta,
                                    dd, lc, dd, lc, &res[1].algo, ws, 1000, 0),
                     INVALID);
    assert_int_equal(cublasLtMatmul(h, desc, &alpha, da, la, db, lb, &beta,
                                    dd, lc, dd, lc, &res[1].algo, NULL, 1024,
                                    0), INVALID);
    assert_int_equal(cublasLtMatmul(h, desc, &alpha, da, la, db, lb, &beta,
                                    dd, lc, dd, lc, &res_tf32[0].algo, ws,
                                    1024, 0), INVALID);
    /* AlgoCheck: the heuristics' own answers pass with their workspace;
     * another compute type's, a zeroed algorithm and a bad handle do
     * not. */
    {
        cublasLtMatmulHeuristicResult_t chk;
        cublasLtMatmulAlgo_t zero;

        memset(&zero, 0, sizeof(zero));
        for (int i = 0; i < 2; i++) {
            memset(&chk, 0xff, sizeof(chk));
            assert_int_equal(cublasLtMatmulAlgoCheck(h, desc, la, lb, lc, lc,
                                                     &res[i].algo, &chk), OK);
            assert_int_equal(chk.workspaceSize, res[i].workspaceSize);
            assert_int_equal(chk.state, OK);
        }
        assert_int_equal(cublasLtMatmulAlgoCheck(h, desc, la, lb, lc, lc,
                                                 &res_tf32[0].algo, &chk),
                         INVALID);
        assert_int_equal(cublasLtMatmulAlgoCheck(h, desc, la, lb, lc, lc,
                                                 &zero, &chk), INVALID);
        assert_int_equal(cublasLtMatmulAlgoCheck(h, desc, short_a, lb, lc,
                                                 lc, &res[0].algo, &chk),
                         INVALID);
        assert_int_equal(cublasLtMatmulAlgoCheck(NULL, desc, la, lb, lc, lc,
                                                 &res[0].algo, &chk),
                         CUBLAS_STATUS_NOT_INITIALIZED);
        assert_int_equal(cublasLtMatmulAlgoCheck(h, desc, la, lb, lc, lc,
                                                 NULL, &chk), INVALID);
    }

    dev_free(da), dev_free(db), dev_free(dd), dev_free(ws);
    free(a), free(b);
    assert_int_equal(cublasLtMatmulPreferenceDestroy(pref), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(la), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(short_a), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(lb), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(lc), OK);
    assert_int_equal(cublasLtMatmulDescDestroy(desc), OK);
    assert_int_equal(cublasLtMatmulDescDestroy(tf32), OK);
    assert_int_equal(cublasLtDestroy(h), OK);
}

/* ---- The algorithm API: a program's own search -------------------------------- */

static cublasLtMatmulAlgo_t
algo_init_fp32(cublasLtHandle_t h)
{
    cublasLtMatmulAlgo_t algo;

    assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F,
                                            CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                            CUDA_R_32F, 0, &algo), OK);
    return algo;
}

static void
algo_config(cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t a,
            const void *v, size_t size)
{
    assert_int_equal(cublasLtMatmulAlgoConfigSetAttribute(algo, a, v, size),
                     OK);
}

/* What cublasLt.h documents of GetIds, Init, CapGetAttribute and
 * ConfigSet/GetAttribute, and a search as a tuning program runs one:
 * every id, each capability it reads, split-K of 2, 3 and 8 parts
 * configured by hand, checked, run, and within FP32's bound of the
 * product; a configuration the algorithm lacks refused by AlgoCheck and
 * cublasLtMatmul. */
static void
test_algo_api(void **state)
{
    enum { M = 8, N = 8, K = 96 };
    cublasLtHandle_t h = lt_new();
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulHeuristicResult_t chk;
    cublasLtMatmulAlgo_t algo;
    float *a = malloc(M * K * 4), *b = malloc(K * N * 4), got[M * N];
    float alpha = 1.0f, beta = 0.0f;
    int ids[4] = { -1, -1, -1, -1 }, n = -1;
    int32_t i32 = -1, parts[3] = { 2, 3, 8 };
    uint32_t u32 = 0, tiles[8];
    uint64_t u64 = 0;
    size_t written = 0;
    void *da, *db, *dd, *ws;

    (void)state;
    assert_true(a && b);
    for (int i = 0; i < M * K; i++)
        a[i] = rnd(), b[i] = rnd();

    /* The ids: one for FP32, none for types the emulator has no kernel
     * for; a count of 0 or less is refused. */
    assert_int_equal(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F, CUDA_R_32F,
                                              CUDA_R_32F, CUDA_R_32F,
                                              CUDA_R_32F, 4, ids, &n), OK);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 0);
    assert_int_equal(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F, CUDA_R_64F,
                                              CUDA_R_64F, CUDA_R_64F,
                                              CUDA_R_64F, 4, ids, &n), OK);
    assert_int_equal(n, 0);
    assert_int_equal(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F, CUDA_R_32F,
                                              CUDA_R_32F, CUDA_R_32F,
                                              CUDA_R_32F, 0, ids, &n),
                     INVALID);
    assert_int_equal(cublasLtMatmulAlgoGetIds(NULL, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F, CUDA_R_32F,
                                              CUDA_R_32F, CUDA_R_32F,
                                              CUDA_R_32F, 4, ids, &n),
                     CUBLAS_STATUS_NOT_INITIALIZED);

    /* Init: an id outside the range or no algo is a bad value; types
     * without it are not supported. */
    assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F,
                                            CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                            CUDA_R_32F, 1, &algo), INVALID);
    assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F,
                                            CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                            CUDA_R_32F, 0, NULL), INVALID);
    assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F,
                                            CUDA_R_64F, CUDA_R_64F, CUDA_R_64F,
                                            CUDA_R_64F, 0, &algo),
                     UNSUPPORTED);
    algo = algo_init_fp32(h);

    /* Capabilities: scalars of their documented size only; arrays by a
     * size query (sizeInBytes 0) and into a larger buffer. */
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                         &algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &i32,
                         sizeof(i32), &written), OK);
    assert_int_equal(i32, 1);
    assert_int_equal(written, sizeof(i32));
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                         &algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &u32,
                         sizeof(u32), NULL), OK);
    assert_int_equal(u32, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                         &algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &u64,
                         sizeof(u64), &written), INVALID);
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                         &algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, NULL, 0,
                         NULL), INVALID);
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                         &algo, CUBLASLT_ALGO_CAP_TILE_IDS, NULL, 0, &written),
                     OK);
    assert_int_equal(written, sizeof(uint32_t));
    memset(tiles, 0xff, sizeof(tiles));
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                         &algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles,
                         sizeof(tiles), &written), OK);
    assert_int_equal(written, sizeof(uint32_t));
    assert_int_equal(tiles[0], CUBLASLT_MATMUL_TILE_UNDEFINED);
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                         &algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &u64,
                         sizeof(u64), NULL), OK);
    assert_true((u64 & CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA) != 0);
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                         &algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, &u32,
                         sizeof(u32), NULL), OK);
    assert_int_equal(u32, 4);
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                         &algo, (cublasLtMatmulAlgoCapAttributes_t)9, &u32,
                         sizeof(u32), NULL), INVALID);

    /* Configuration: the id is read-only, sizes must match, values read
     * back as set. */
    i32 = 0;
    assert_int_equal(cublasLtMatmulAlgoConfigSetAttribute(
                         &algo, CUBLASLT_ALGO_CONFIG_ID, &i32, sizeof(i32)),
                     INVALID);
    assert_int_equal(cublasLtMatmulAlgoConfigSetAttribute(
                         &algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &u64,
                         sizeof(u64)), INVALID);
    assert_int_equal(cublasLtMatmulAlgoConfigSetAttribute(
                         &algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, NULL, 4),
                     INVALID);
    assert_int_equal(cublasLtMatmulAlgoConfigGetAttribute(
                         &algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &i32,
                         sizeof(i32), &written), OK);
    assert_int_equal(i32, 1);

    assert_int_equal(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, M, K, M), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, N, K), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, M, N, M), OK);
    da = dev_upload(a, M * K * 4), db = dev_upload(b, K * N * 4);
    dd = dev_upload(got, sizeof(got));
    assert_int_equal(cudaMalloc(&ws, 8 * M * N * sizeof(float)), cudaSuccess);

    /* Split-K needs a reduction scheme; with one, any count of parts up to
     * k runs, with its workspace, within FP32's bound. */
    algo_config(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &parts[0], 4);
    assert_int_equal(cublasLtMatmulAlgoCheck(h, desc, la, lb, lc, lc, &algo,
                                             &chk), INVALID);
    u32 = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    algo_config(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &u32, 4);
    for (int t = 0; t < 3; t++) {
        algo_config(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &parts[t], 4);
        assert_int_equal(cublasLtMatmulAlgoCheck(h, desc, la, lb, lc, lc,
                                                 &algo, &chk), OK);
        assert_int_equal(chk.workspaceSize,
                         (size_t)parts[t] * M * N * sizeof(float));
        assert_int_equal(cublasLtMatmul(h, desc, &alpha, da, la, db, lb, &beta,
                                        dd, lc, dd, lc, &algo, ws,
                                        chk.workspaceSize, 0), OK);
        dev_download(got, dd, sizeof(got));
        expect_fp32_product(a, b, got, M, N, K);
    }
    /* More parts than k is deep; a tile or stages the algorithm has no
     * configuration of: refused by the check and by cublasLtMatmul. */
    i32 = K + 1;
    algo_config(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &i32, 4);
    assert_int_equal(cublasLtMatmulAlgoCheck(h, desc, la, lb, lc, lc, &algo,
                                             &chk), INVALID);
    algo = algo_init_fp32(h);
    u32 = CUBLASLT_MATMUL_TILE_128x128;
    algo_config(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &u32, 4);
    assert_int_equal(cublasLtMatmulAlgoCheck(h, desc, la, lb, lc, lc, &algo,
                                             &chk), INVALID);
    assert_int_equal(cublasLtMatmul(h, desc, &alpha, da, la, db, lb, &beta,
                                    dd, lc, dd, lc, &algo, NULL, 0, 0),
                     INVALID);

    dev_free(da), dev_free(db), dev_free(dd), dev_free(ws);
    free(a), free(b);
    assert_int_equal(cublasLtMatrixLayoutDestroy(la), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(lb), OK);
    assert_int_equal(cublasLtMatrixLayoutDestroy(lc), OK);
    assert_int_equal(cublasLtMatmulDescDestroy(desc), OK);
    assert_int_equal(cublasLtDestroy(h), OK);
}

/* ---- The logger ---------------------------------------------------------------- */

static int logged_api, logged_errors;
static char logged_function[64];

static void
log_callback(int level, const char *function, const char *message)
{
    (void)message;
    if (level == 5)
        logged_api++;
    else if (level == 1)
        logged_errors++;
    snprintf(logged_function, sizeof(logged_function), "%s", function);
}

/* Levels 0 to 5 are taken, others refused; at level 5 the callback hears
 * every cublasLtMatmul, at level 1 only the failed ones; a mask picks the
 * kinds; after ForceDisable nothing more. */
static void
test_logger(void **state)
{
    cublasLtHandle_t h = lt_new();
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t l;
    float alpha = 1.0f, beta = 0.0f, x[4] = { 1, 2, 3, 4 }, y[4];
    void *dx, *dy;

    (void)state;
    assert_int_equal(cublasLtLoggerSetLevel(6), INVALID);
    assert_int_equal(cublasLtLoggerSetLevel(-1), INVALID);
    assert_int_equal(cublasLtLoggerSetCallback(log_callback), OK);
    assert_int_equal(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F,
                                              CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 2, 2, 2), OK);
    dx = dev_upload(x, sizeof(x)), dy = dev_upload(x, sizeof(x));

#define MATMUL(handle) \
    cublasLtMatmul(handle, desc, &alpha, dx, l, dx, l, &beta, dy, l, dy, l, \
                   NULL, NULL, 0, 0)
    assert_int_equal(cublasLtLoggerSetLevel(5), OK);
    assert_int_equal(MATMUL(h), OK);
    assert_int_equal(logged_api, 1);
    assert_string_equal(logged_function, "cublasLtMatmul");
    assert_int_equal(logged_errors, 0);
    assert_int_equal(MATMUL(NULL), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(logged_api, 2);
    assert_int_equal(logged_errors, 1);
    assert_int_equal(cublasLtLoggerSetLevel(1), OK);
    assert_int_equal(MATMUL(h), OK);
    assert_int_equal(MATMUL(NULL), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(logged_api, 2);
    assert_int_equal(logged_errors, 2);
    assert_int_equal(cublasLtLoggerSetMask(16), OK);
    assert_int_equal(MATMUL(NULL), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(logged_api, 3);
    assert_int_equal(logged_errors, 2);
    assert_int_equal(cublasLtLoggerForceDisable(), OK);
    assert_int_equal(cublasLtLoggerSetLevel(5), OK);
    assert_int_equal(MATMUL(h), OK);
    assert_int_equal(MATMUL(NULL), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(logged_api, 3);
    assert_int_equal(logged_errors, 2);
#undef MATMUL
    dev_download(y, dy, sizeof(y));
    assert_true(y[0] == 1 * 1 + 3 * 2);   /* the product ran: x x */

    dev_free(dx), dev_free(dy);
    assert_int_equal(cublasLtMatrixLayoutDestroy(l), OK);
    assert_int_equal(cublasLtMatmulDescDestroy(desc), OK);
    assert_int_equal(cublasLtDestroy(h), OK);
}

/* ---- Streams and modelled time ------------------------------------------------ */

/* The roofline, from the modelled GPU's published rates and the shares
 * of them it delivers (tflops: peak times share). */
static double
roofline_ms(double flops, double tflops, double bytes)
{
    const struct emu_gpu *g = emu_gpu();
    double math = flops / (tflops * 1e9);
    double mem = bytes / (g->bandwidth_tbs * 1e9 * g->mem_efficiency);

    return (math > mem ? math : mem) + g->launch_latency_us * 1e-3;
}

/* Three n^3 products queued on one stream between events: FP32, TF32 and
 * FP16 (Tensor Core) take the time the roofline gives each, and a copy
 * queued after them on the stream sees the last one's result. */
static void
test_stream_order_and_time(void **state)
{
    enum { NN = 1024 };
    static const cublasComputeType_t computes[] = {
        CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32,
        CUBLAS_COMPUTE_32F_FAST_16F,
    };
    const struct emu_gpu *g = emu_gpu();
    double rates[] = { g->fp32_tflops * g->fp32_efficiency,
                       g->tf32_tflops * g->tf32_efficiency,
                       g->fp16_tflops * g->fp16_efficiency };
    size_t nn = (size_t)NN * NN;
    float *ones = malloc(nn * 4), *got = malloc(nn * 4);
    float alpha = 1.0f, beta = 0.0f, ms[3];
    cublasLtHandle_t h = lt_new();
    cublasLtMatrixLayout_t l;
    cudaEvent_t ev[4];
    cudaStream_t s;
    void *da, *dd;

    (void)state;
    assert_true(ones && got);
    for (size_t i = 0; i < nn; i++)
        ones[i] = 1.0f + 0x1p-12f;      /* 1 in TF32 and FP16 */
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    for (int i = 0; i < 4; i++)
        assert_int_equal(cudaEventCreate(&ev[i]), cudaSuccess);
    da = dev_upload(ones, nn * 4);
    assert_int_equal(cudaMalloc(&dd, nn * 4), cudaSuccess);
    assert_int_equal(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, NN, NN, NN),
                     OK);
    assert_int_equal(cudaEventRecord(ev[0], s), cudaSuccess);
    for (int i = 0; i < 3; i++) {
        cublasLtMatmulDesc_t desc;
        assert_int_equal(cublasLtMatmulDescCreate(&desc, computes[i],
                                                  CUDA_R_32F), OK);
        assert_int_equal(cublasLtMatmul(h, desc, &alpha, da, l, da, l, &beta,
                                        NULL, l, dd, l, NULL, NULL, 0, s),
                         OK);
        assert_int_equal(cublasLtMatmulDescDestroy(desc), OK);
        assert_int_equal(cudaEventRecord(ev[i + 1], s), cudaSuccess);
    }
    assert_int_equal(cudaMemcpyAsync(got, dd, nn * 4, cudaMemcpyDeviceToHost,
                                     s), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_true(got[0] == 1024.0f && got[nn - 1] == 1024.0f);
    for (int i = 0; i < 3; i++) {
        /* and the event after it */
        double want = roofline_ms(2.0 * nn * NN, rates[i], 3.0 * nn * 4) +
                      emu_event_record_ns() * 1e-6;
        assert_int_equal(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]),
                         cudaSuccess);
        print_message("compute type %d: %.4f ms (model %.4f)\n", computes[i],
                      ms[i], want);
        assert_true(fabs(ms[i] - want) <= 0.02 * want);
    }
    assert_true(ms[2] < ms[1] && ms[1] < ms[0]);
    for (int i = 0; i < 4; i++)
        assert_int_equal(cudaEventDestroy(ev[i]), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cublasLtMatrixLayoutDestroy(l), OK);
    dev_free(da), dev_free(dd);
    free(ones), free(got);
    assert_int_equal(cublasLtDestroy(h), OK);
}

/* ---- Stubs ------------------------------------------------------------------- */

/* Runs f with stderr going to a file; returns what it wrote (to free). */
static char *
stderr_of(void (*f)(void))
{
    FILE *tmp = tmpfile();
    int saved = dup(2);
    char *text = calloc(1, 4096);

    assert_true(tmp && saved >= 0 && text);
    fflush(stderr);
    assert_true(dup2(fileno(tmp), 2) >= 0);
    f();
    fflush(stderr);
    assert_true(dup2(saved, 2) >= 0);
    close(saved);
    rewind(tmp);
    (void)fread(text, 1, 4095, tmp);
    fclose(tmp);
    return text;
}

static void
call_stub_twice(void)
{
    cublasLtMatrixTransformDesc_t t = NULL;

    assert_int_equal(cublasLtMatrixTransformDescCreate(&t, CUDA_R_32F),
                     UNSUPPORTED);
    assert_int_equal(cublasLtMatrixTransformDescCreate(&t, CUDA_R_32F),
                     UNSUPPORTED);
    assert_null(t);
    assert_int_equal(cublasLtHeuristicsCacheGetCapacity(NULL), UNSUPPORTED);
}

/* An export the emulator does not implement says so once, by name. */
static void
test_stub_message(void **state)
{
    char *text = stderr_of(call_stub_twice);

    (void)state;
    assert_string_equal(text,
                        "ampshim-emu: cublasLtMatrixTransformDescCreate is not "
                        "implemented by the emulator (returns "
                        "CUBLAS_STATUS_NOT_SUPPORTED)\n"
                        "ampshim-emu: cublasLtHeuristicsCacheGetCapacity is not "
                        "implemented by the emulator (returns "
                        "CUBLAS_STATUS_NOT_SUPPORTED)\n");
    free(text);
}

/* ---- Fault injection (in a child with AMPSHIM_EMU_FAIL set) --------------------- */

#define FAULT_ARG "--fault-child"
#define FAULT_SPEC "cublasLtCreate:1,cublasLtMatmul:1,cublasLtMatmul:2:partial"

/* The first create fails; the first product fails and writes nothing; the
 * second writes the whole result in the first half of D's columns and
 * fails; the third works. */
static void
test_fault_child(void **state)
{
    cublasLtHandle_t h = (cublasLtHandle_t)0x1;
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t l;
    float a[16], d[16], full[16], got[16], alpha = 1.0f, beta = 0.0f;
    void *da, *dd;

    (void)state;
    for (int i = 0; i < 16; i++)
        a[i] = rnd(), d[i] = 7.0f;
    assert_int_equal(cublasLtCreate(&h), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_ptr_equal(h, (cublasLtHandle_t)0x1);
    h = lt_new();
    assert_int_equal(cublasLtMatmulDescInit(&desc, CUBLAS_COMPUTE_32F,
                                            CUDA_R_32F), OK);
    assert_int_equal(cublasLtMatrixLayoutInit(&l, CUDA_R_32F, 4, 4, 4), OK);
    da = dev_upload(a, sizeof a), dd = dev_upload(d, sizeof d);
    for (int call = 0; call < 3; call++) {
        assert_int_equal(cublasLtMatmul(h, &desc, &alpha, da, &l, da, &l,
                                        &beta, dd, &l, dd, &l, NULL, NULL, 0,
                                        0),
                         call < 2 ? CUBLAS_STATUS_EXECUTION_FAILED : OK);
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        dev_download(call < 2 ? got : full, dd, sizeof got);
        if (call == 0)
            assert_memory_equal(got, d, sizeof d);
    }
    assert_memory_equal(got, full, 8 * sizeof(float));
    assert_memory_equal(got + 8, d + 8, 8 * sizeof(float));
    dev_free(da), dev_free(dd);
    assert_int_equal(cublasLtDestroy(h), OK);
}

/* The variable is read once per process: run the checks in a fresh one. */
static void
test_fault_injection(void **state)
{
    (void)state;
    emu_test_rerun_with_faults("test_emu_cublaslt", FAULT_SPEC, FAULT_ARG);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest fault_tests[] = {
        cmocka_unit_test(test_fault_child),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handles_and_versions),
        cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_atomic_sync_attributes_refused),
        cmocka_unit_test(test_stack_descriptors),
        cmocka_unit_test(test_emulation_descriptor),
        cmocka_unit_test(test_epilogues),
        cmocka_unit_test(test_orders_and_transposes),
        cmocka_unit_test(test_pointer_modes),
        cmocka_unit_test(test_c_and_d),
        cmocka_unit_test(test_compute_types),
        cmocka_unit_test(test_pointer_arrays),
        cmocka_unit_test(test_operand_rounding_visible),
        cmocka_unit_test(test_argument_checks),
        cmocka_unit_test(test_heuristics),
        cmocka_unit_test(test_algo_api),
        cmocka_unit_test(test_stream_order_and_time),
        cmocka_unit_test(test_stub_message),
        cmocka_unit_test(test_logger),
        cmocka_unit_test(test_fault_injection),
    };

    if (argc > 1 && strcmp(argv[1], FAULT_ARG) == 0)
        return cmocka_run_group_tests_name("emu_cublaslt_faults", fault_tests,
                                           NULL, NULL);
    /* Faults only where a test asks for them, in its own process; TF32
     * where the modelled GPU has it. */
    unsetenv("AMPSHIM_EMU_FAIL");
    unsetenv("NVIDIA_TF32_OVERRIDE");
    return cmocka_run_group_tests_name("emu_cublaslt", tests, NULL, NULL);
}
