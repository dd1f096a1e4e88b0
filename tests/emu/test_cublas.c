/* Tests for the emulated libcublas.so.13: each routine against a
 * double-precision CPU reference, the documented statuses, deferred
 * execution on streams, fault injection and the modelled timing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fault_test.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture_test.h"
#include "emu.h"

#define GUARD 1234.5f   /* fills the padding rows that must stay untouched */

/* ---- Host data and references ------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* Uniform in [-1, 1) with up to 24 significant bits: exact in FP32, and
 * most values need their full mantissa, so any operand rounding shows. */
static float
rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 40) / 8388608.0 - 1.0);
}

static float *
host_floats(size_t n)
{
    float *p = malloc(n * sizeof(float));

    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = rnd();
    return p;
}

/* Rounds x to a binary format with `mant` explicit mantissa bits, minimum
 * normal exponent `emin` and largest finite value `maxv`: nearest even,
 * gradual underflow, overflow to infinity. Written from the definition,
 * independently of the emulator's bit manipulation. */
static double
ref_round(double x, int mant, int emin, double maxv)
{
    double q, r;
    int e;

    if (isnan(x) || isinf(x) || x == 0.0)
        return x;
    (void)frexp(x, &e);         /* |x| in [2^(e-1), 2^e) */
    e = e - 1 < emin ? emin : e - 1;
    q = ldexp(1.0, e - mant);
    r = nearbyint(x / q) * q;   /* default rounding: ties to even */
    return fabs(r) > maxv ? copysign(INFINITY, x) : r;
}

enum ref_rounding { RND_NONE, RND_F16, RND_BF16, RND_TF32 };

static float
round_as(float v, enum ref_rounding r)
{
    switch (r) {
    case RND_F16:
        return (float)ref_round(v, 10, -14, 65504.0);
    case RND_BF16:
        return (float)ref_round(v, 7, -126, 0x1.fep127);
    case RND_TF32:
        return (float)ref_round(v, 10, -126, 0x1.ffcp127);
    default:
        return v;
    }
}

/* Binary16 bits of a value already representable in binary16. */
static uint16_t
f16_bits(float v)
{
    uint16_t sign = signbit(v) ? 0x8000u : 0u;
    double a = fabs((double)v);
    int e;

    if (isnan(v))
        return 0x7e00u;
    if (isinf(v))
        return sign | 0x7c00u;
    if (a < 0x1p-14)
        return sign | (uint16_t)(a * 0x1p24);
    (void)frexp(a, &e);
    e -= 1;
    return sign | (uint16_t)((e + 15) << 10) |
           (uint16_t)((a / ldexp(1.0, e) - 1.0) * 1024.0);
}

static float
f16_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;

    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return (float)((h & 0x8000u) ? -v : v);
}

static uint16_t
bf16_bits(float v)
{
    uint32_t u;

    memcpy(&u, &v, 4);
    return (uint16_t)(u >> 16);
}

static float
bf16_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float v;

    memcpy(&v, &u, 4);
    return v;
}

static size_t
type_bytes(cudaDataType t)
{
    return t == CUDA_R_32F ? 4 : 2;
}

/* Elements of type t from float values representable in t. */
static void *
encode(cudaDataType t, const float *val, size_t n)
{
    char *out = malloc(n * type_bytes(t));

    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        uint16_t h = t == CUDA_R_16F ? f16_bits(val[i]) : bf16_bits(val[i]);
        if (t == CUDA_R_32F)
            memcpy(out + 4 * i, &val[i], 4);
        else
            memcpy(out + 2 * i, &h, 2);
    }
    return out;
}

static void
decode(cudaDataType t, const void *in, size_t n, float *val)
{
    const char *p = in;
    uint16_t h;

    for (size_t i = 0; i < n; i++) {
        if (t == CUDA_R_32F) {
            memcpy(&val[i], p + 4 * i, 4);
            continue;
        }
        memcpy(&h, p + 2 * i, 2);
        val[i] = t == CUDA_R_16F ? f16_value(h) : bf16_value(h);
    }
}

/* ---- Device helpers ---------------------------------------------------- */

static void *
dev_upload(const void *host, size_t bytes)
{
    void *d = NULL;

    assert_int_equal(cudaMalloc(&d, bytes), cudaSuccess);
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
    assert_int_equal(cudaFree(d), cudaSuccess);
}

/* After everything queued has run, dev still holds exactly `expect`. */
static void
assert_dev_equals(const void *dev, const void *expect, size_t bytes)
{
    void *now = malloc(bytes);

    assert_non_null(now);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(now, dev, bytes);
    assert_memory_equal(now, expect, bytes);
    free(now);
}

static cublasHandle_t
handle_new(void)
{
    cublasHandle_t h = NULL;

    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    assert_non_null(h);
    return h;
}

/* alpha and beta where the handle's pointer mode wants them: the host
 * values, or copies in device memory (*dev, to free after the work). */
static void
scalar_ptrs(cublasHandle_t h, const float *alpha, const float *beta,
            const float **pa, const float **pb, float **dev)
{
    cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
    float both[2] = { *alpha, *beta };

    assert_int_equal(cublasGetPointerMode_v2(h, &mode), CUBLAS_STATUS_SUCCESS);
    *dev = NULL;
    *pa = alpha;
    *pb = beta;
    if (mode == CUBLAS_POINTER_MODE_DEVICE) {
        *dev = dev_upload(both, sizeof(both));
        *pa = *dev;
        *pb = *dev + 1;
    }
}

/* ---- GEMM reference ---------------------------------------------------- */

struct gemm_case {
    cublasOperation_t ta, tb;
    int m, n, k;
    int lda, ldb, ldc;
    float alpha, beta;
};

/* if_n for CUBLAS_OP_N, else if_t: a row or column count of op(X). */
static int
by_op(cublasOperation_t t, int if_n, int if_t)
{
    return t == CUBLAS_OP_N ? if_n : if_t;
}

/* op(X)[i][p] of a column-major X with leading dimension ld. */
static double
op_at(const float *x, cublasOperation_t t, int ld, int i, int p)
{
    return t == CUBLAS_OP_N ? x[(size_t)i + (size_t)p * (size_t)ld]
                            : x[(size_t)p + (size_t)i * (size_t)ld];
}

/* ref = alpha op(A) op(B) + beta C in double, C not read when beta == 0;
 * mag = the same sum of magnitudes, for the error bound. m x n, ld m. */
static void
ref_gemm(const struct gemm_case *g, const float *a, const float *b,
         const float *c, double *ref, double *mag)
{
    for (int j = 0; j < g->n; j++) {
        for (int i = 0; i < g->m; i++) {
            double s = 0.0, abs_sum = 0.0, cv = 0.0;
            size_t at = (size_t)i + (size_t)j * (size_t)g->m;
            for (int p = 0; p < g->k; p++) {
                double prod = op_at(a, g->ta, g->lda, i, p) *
                              op_at(b, g->tb, g->ldb, p, j);
                s += prod;
                abs_sum += fabs(prod);
            }
            if (g->beta != 0.0f)
                cv = (double)g->beta * c[(size_t)i + (size_t)j * g->ldc];
            ref[at] = (double)g->alpha * s + cv;
            mag[at] = fabs((double)g->alpha) * abs_sum + fabs(cv);
        }
    }
}

/* got (ld ldc) against ref within (k + 4) u32 |terms| plus `rel_out` of
 * the result for a rounded output format. */
static void
check_gemm_result(const struct gemm_case *g, const float *got,
                  const double *ref, const double *mag, double rel_out)
{
    double u = (g->k + 4) * 0x1p-24;

    for (int j = 0; j < g->n; j++) {
        for (int i = 0; i < g->m; i++) {
            size_t at = (size_t)i + (size_t)j * (size_t)g->m;
            double v = got[(size_t)i + (size_t)j * (size_t)g->ldc];
            double tol = u * mag[at] + rel_out * fabs(ref[at]) + 0x1p-100;
            if (!(fabs(v - ref[at]) <= tol))
                fail_msg("C(%d,%d) = %.9g, reference %.9g, error %.3g > %.3g",
                         i, j, v, ref[at], fabs(v - ref[at]), tol);
        }
    }
}

/* Rows m..ldc-1 of every column keep their guard value. */
static void
check_padding(const struct gemm_case *g, const float *got)
{
    for (int j = 0; j < g->n; j++)
        for (int i = g->m; i < g->ldc; i++)
            assert_true(got[(size_t)i + (size_t)j * (size_t)g->ldc] == GUARD);
}

/* A C matrix: `fill` in rows 0..m-1 (NAN or random when fill is 0), GUARD
 * in the padding. */
static float *
host_c(const struct gemm_case *g, float fill)
{
    size_t n = (size_t)g->ldc * (size_t)g->n;
    float *c = malloc(n * sizeof(float));

    assert_non_null(c);
    for (size_t idx = 0; idx < n; idx++) {
        int row = (int)(idx % (size_t)g->ldc);
        c[idx] = row >= g->m ? GUARD : fill != 0.0f ? fill : rnd();
    }
    return c;
}

static size_t
a_count(const struct gemm_case *g)
{
    return (size_t)g->lda * (size_t)by_op(g->ta, g->k, g->m);
}

static size_t
b_count(const struct gemm_case *g)
{
    return (size_t)g->ldb * (size_t)by_op(g->tb, g->n, g->k);
}

/* Runs cublasSgemm_v2 on host scalars and checks it against ref_gemm of
 * operands rounded as `r` (what the handle's math mode allows). */
static void
run_sgemm_rounded(cublasHandle_t h, const struct gemm_case *g, float c_fill,
                  enum ref_rounding r)
{
    size_t na = a_count(g), nb = b_count(g), nc = (size_t)g->ldc * g->n;
    size_t mn = (size_t)g->m * (size_t)g->n;
    float *a = host_floats(na), *b = host_floats(nb), *c = host_c(g, c_fill);
    float *ar = malloc(na * sizeof(float)), *br = malloc(nb * sizeof(float));
    double *ref = calloc(mn + 1, sizeof(double));
    double *mag = calloc(mn + 1, sizeof(double));
    float *da, *db, *dc, *ds;
    const float *pa, *pb;

    assert_true(ar && br && ref && mag);
    scalar_ptrs(h, &g->alpha, &g->beta, &pa, &pb, &ds);
    for (size_t i = 0; i < na; i++)
        ar[i] = round_as(a[i], r);
    for (size_t i = 0; i < nb; i++)
        br[i] = round_as(b[i], r);
    ref_gemm(g, ar, br, c, ref, mag);
    da = dev_upload(a, na * sizeof(float));
    db = dev_upload(b, nb * sizeof(float));
    dc = dev_upload(c, nc * sizeof(float));
    assert_int_equal(cublasSgemm_v2(h, g->ta, g->tb, g->m, g->n, g->k, pa,
                                    da, g->lda, db, g->ldb, pb, dc, g->ldc),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(c, dc, nc * sizeof(float));
    check_gemm_result(g, c, ref, mag, 0.0);
    check_padding(g, c);
    dev_free(da);
    dev_free(db);
    dev_free(dc);
    if (ds != NULL)
        dev_free(ds);
    free(a), free(b), free(c), free(ar), free(br), free(ref), free(mag);
}

static void
run_sgemm(cublasHandle_t h, const struct gemm_case *g, float c_fill)
{
    run_sgemm_rounded(h, g, c_fill, RND_NONE);
}

/* ---- Handles and settings --------------------------------------------- */

/* Creating a handle allocates device memory: during a global capture
 * that fails and invalidates the capture. */
static void
handle_under_capture(void)
{
    cublasHandle_t h = NULL;
    cudaStream_t s = capture_begin();

    assert_int_equal(cublasCreate_v2(&h),
                     CUBLAS_STATUS_ALLOC_FAILED);
    assert_null(h);
    capture_expect_invalidated(s);
}

static void
test_handle_lifecycle(void **state)
{
    cublasHandle_t h;
    int version = 0, major = 0, minor = -1;

    (void)state;
    assert_int_equal(cublasCreate_v2(NULL), CUBLAS_STATUS_INVALID_VALUE);
    h = handle_new();
    assert_int_equal(cublasGetVersion_v2(h, &version), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(version, 130100);      /* cuBLAS 13.1.0 */
    assert_int_equal(cublasGetVersion_v2(h, NULL),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasGetProperty(MAJOR_VERSION, &major),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetProperty(MINOR_VERSION, &minor),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(major, 13);
    assert_int_equal(minor, 1);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasDestroy_v2(NULL), CUBLAS_STATUS_NOT_INITIALIZED);
    handle_under_capture();
}

static void
test_handle_stream(void **state)
{
    cublasHandle_t h = handle_new();
    cudaStream_t s, got = (cudaStream_t)1;

    (void)state;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cublasGetStream_v2(h, &got), CUBLAS_STATUS_SUCCESS);
    assert_null(got);                       /* the default stream */
    assert_int_equal(cublasSetStream_v2(h, s), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetStream_v2(h, &got), CUBLAS_STATUS_SUCCESS);
    assert_ptr_equal(got, s);
    assert_int_equal(cublasSetStream_v2(h, NULL), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetStream_v2(h, &got), CUBLAS_STATUS_SUCCESS);
    assert_null(got);
    assert_int_equal(cublasGetStream_v2(h, NULL), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSetStream_v2(NULL, s),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasGetStream_v2(NULL, &got),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static void
test_handle_pointer_mode(void **state)
{
    cublasHandle_t h = handle_new();
    cublasPointerMode_t mode = CUBLAS_POINTER_MODE_DEVICE;

    (void)state;
    assert_int_equal(cublasGetPointerMode_v2(h, &mode), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(mode, CUBLAS_POINTER_MODE_HOST);
    assert_int_equal(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetPointerMode_v2(h, &mode), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(mode, CUBLAS_POINTER_MODE_DEVICE);
    assert_int_equal(cublasSetPointerMode_v2(h, (cublasPointerMode_t)7),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasGetPointerMode_v2(h, &mode), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(mode, CUBLAS_POINTER_MODE_DEVICE);
    assert_int_equal(cublasGetPointerMode_v2(h, NULL),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSetPointerMode_v2(NULL, CUBLAS_POINTER_MODE_HOST),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasGetPointerMode_v2(NULL, &mode),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

static void
test_handle_math_mode(void **state)
{
    cublasHandle_t h = handle_new();
    cublasMath_t want = (cublasMath_t)(CUBLAS_TF32_TENSOR_OP_MATH |
        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    cublasMath_t mode = CUBLAS_PEDANTIC_MATH;

    (void)state;
    assert_int_equal(cublasGetMathMode(h, &mode), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(mode, CUBLAS_DEFAULT_MATH);
    assert_int_equal(cublasSetMathMode(h, want), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetMathMode(h, &mode), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(mode, want);
    assert_int_equal(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetMathMode(h, &mode), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(mode, CUBLAS_PEDANTIC_MATH);
    assert_int_equal(cublasSetMathMode(h, (cublasMath_t)0x40),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasGetMathMode(h, &mode), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(mode, CUBLAS_PEDANTIC_MATH);
    assert_int_equal(cublasGetMathMode(h, NULL), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSetMathMode(NULL, CUBLAS_DEFAULT_MATH),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasGetMathMode(NULL, &mode),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* cublasSetSmCountTarget takes 0 (the device's) up to the device's
 * multiprocessor count, refuses negative and larger values
 * (INVALID_VALUE), and cublasGetSmCountTarget gives it back; neither
 * changes the results. */
static void
test_handle_sm_count_target(void **state)
{
    cublasHandle_t h = handle_new();
    int sms = 0, target = -1;

    (void)state;
    assert_int_equal(cudaDeviceGetAttribute(&sms,
                                            cudaDevAttrMultiProcessorCount,
                                            0),
                     cudaSuccess);
    assert_true(sms > 8);
    assert_int_equal(cublasGetSmCountTarget(h, &target),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(target, 0);
    assert_int_equal(cublasSetSmCountTarget(h, sms - 8),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetSmCountTarget(h, &target),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(target, sms - 8);
    assert_int_equal(cublasSetSmCountTarget(h, sms + 1),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSetSmCountTarget(h, -1),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasGetSmCountTarget(h, &target),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(target, sms - 8);
    assert_int_equal(cublasSetSmCountTarget(h, sms), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSetSmCountTarget(h, 0), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetSmCountTarget(h, &target),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(target, 0);
    assert_int_equal(cublasGetSmCountTarget(h, NULL),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSetSmCountTarget(NULL, 1),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasGetSmCountTarget(NULL, &target),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

static void
test_status_names(void **state)
{
    static const struct {
        cublasStatus_t status;
        const char *name;
    } all[] = {
        { CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS" },
        { CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED" },
        { CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED" },
        { CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE" },
        { CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH" },
        { CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR" },
        { CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED" },
        { CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR" },
        { CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED" },
        { CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR" },
    };
    size_t n = sizeof(all) / sizeof(all[0]);

    (void)state;
    for (size_t i = 0; i < n; i++) {
        const char *text = cublasGetStatusString(all[i].status);
        assert_string_equal(cublasGetStatusName(all[i].status), all[i].name);
        assert_non_null(text);
        assert_true(strlen(text) > 4);
        assert_string_not_equal(text, all[i].name);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(text,
                                    cublasGetStatusString(all[j].status));
    }
    assert_non_null(cublasGetStatusName((cublasStatus_t)9999));
    assert_non_null(cublasGetStatusString((cublasStatus_t)9999));
}

/* ---- cublasSgemm_v2 ----------------------------------------------------- */

static const cublasOperation_t ops[] = { CUBLAS_OP_N, CUBLAS_OP_T,
                                         CUBLAS_OP_C };

static void
test_sgemm_transposes(void **state)
{
    cublasHandle_t h = handle_new();

    (void)state;
    for (int x = 0; x < 3; x++) {
        for (int y = 0; y < 3; y++) {
            struct gemm_case g = { ops[x], ops[y], 13, 11, 17, 0, 0, 16,
                                   0.75f, -1.25f };
            g.lda = by_op(g.ta, g.m, g.k) + 3;
            g.ldb = by_op(g.tb, g.k, g.n) + 5;
            run_sgemm(h, &g, 0.0f);
        }
    }
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* Sizes past the host kernel's blocks and not multiples of its tiles. */
static void
test_sgemm_blocked_sizes(void **state)
{
    cublasHandle_t h = handle_new();
    struct gemm_case g1 = { CUBLAS_OP_T, CUBLAS_OP_N, 70, 261, 33, 33, 33,
                            71, 1.0f, 0.5f };
    struct gemm_case g2 = { CUBLAS_OP_N, CUBLAS_OP_T, 131, 257, 5, 131, 260,
                            133, -2.0f, 0.0f };

    (void)state;
    run_sgemm(h, &g1, 0.0f);
    run_sgemm(h, &g2, NAN);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* beta == 0 (and -0): C is never read, so NaN there cannot leak. */
static void
test_sgemm_beta_zero_ignores_c(void **state)
{
    cublasHandle_t h = handle_new();
    struct gemm_case g = { CUBLAS_OP_N, CUBLAS_OP_N, 9, 7, 12, 9, 12, 10,
                           1.5f, 0.0f };

    (void)state;
    run_sgemm(h, &g, NAN);
    g.beta = -0.0f;
    g.ta = CUBLAS_OP_T;
    g.lda = 12;
    run_sgemm(h, &g, INFINITY);
    g.k = 0;                    /* C = alpha * 0 + 0 * C: zeros */
    run_sgemm(h, &g, NAN);
    /* The same with beta read from device memory when the work runs. */
    assert_int_equal(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE),
                     CUBLAS_STATUS_SUCCESS);
    run_sgemm(h, &g, NAN);
    g.k = 12;
    run_sgemm(h, &g, NAN);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* alpha == 0 or k == 0: C = beta C, exactly. */
static void
test_sgemm_alpha_zero_and_k_zero(void **state)
{
    cublasHandle_t h = handle_new();
    struct gemm_case g = { CUBLAS_OP_N, CUBLAS_OP_N, 6, 5, 4, 6, 4, 8,
                           0.0f, 2.0f };
    float *c = host_c(&g, 0.0f), *want = malloc(8 * 5 * sizeof(float));
    float *a = host_floats(6 * 4), *b = host_floats(4 * 5);
    float *da = dev_upload(a, 6 * 4 * sizeof(float));
    float *db = dev_upload(b, 4 * 5 * sizeof(float));
    float *dc = dev_upload(c, 8 * 5 * sizeof(float));

    (void)state;
    assert_non_null(want);
    for (int i = 0; i < 8 * 5; i++)
        want[i] = i % 8 < 6 ? 2.0f * c[i] : GUARD;
    assert_int_equal(cublasSgemm_v2(h, g.ta, g.tb, 6, 5, 4, &g.alpha, da, 6,
                                    db, 4, &g.beta, dc, 8),
                     CUBLAS_STATUS_SUCCESS);
    assert_dev_equals(dc, want, 8 * 5 * sizeof(float));
    g.alpha = 1.0f;
    g.beta = 0.5f;              /* k == 0: 0.5 * (2 c) */
    assert_int_equal(cublasSgemm_v2(h, g.ta, g.tb, 6, 5, 0, &g.alpha, da, 6,
                                    db, 1, &g.beta, dc, 8),
                     CUBLAS_STATUS_SUCCESS);
    assert_dev_equals(dc, c, 8 * 5 * sizeof(float));
    g.beta = 1.0f;              /* quick return: C untouched */
    assert_int_equal(cublasSgemm_v2(h, g.ta, g.tb, 6, 5, 0, &g.alpha, da, 6,
                                    db, 1, &g.beta, dc, 8),
                     CUBLAS_STATUS_SUCCESS);
    assert_dev_equals(dc, c, 8 * 5 * sizeof(float));
    dev_free(da), dev_free(db), dev_free(dc);
    free(a), free(b), free(c), free(want);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* m == 0 or n == 0: success and nothing written. */
static void
test_sgemm_empty(void **state)
{
    cublasHandle_t h = handle_new();
    float host[16], alpha = 1.0f, beta = 0.0f;
    float *d;

    (void)state;
    for (int i = 0; i < 16; i++)
        host[i] = (float)i;
    d = dev_upload(host, sizeof(host));
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 4, 4,
                                    &alpha, d, 1, d, 4, &beta, d, 1),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 0, 4,
                                    &alpha, d, 4, d, 4, &beta, d, 4),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_T, CUBLAS_OP_T, 0, 0, 0,
                                    &alpha, d, 1, d, 1, &beta, d, 1),
                     CUBLAS_STATUS_SUCCESS);
    assert_dev_equals(d, host, sizeof(host));
    dev_free(d);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* alpha and beta in device memory (CUBLAS_POINTER_MODE_DEVICE), read when
 * the work runs, in stream order. */
static void
test_sgemm_device_scalars(void **state)
{
    cublasHandle_t h = handle_new();
    struct gemm_case g = { CUBLAS_OP_T, CUBLAS_OP_N, 10, 12, 9, 9, 9, 11,
                           -0.5f, 3.0f };
    float scalars[2] = { g.alpha, g.beta }, later[2] = { 100.0f, 100.0f };
    size_t na = a_count(&g), nb = b_count(&g), nc = 11 * 12;
    float *a = host_floats(na), *b = host_floats(nb), *c = host_c(&g, 0.0f);
    double ref[120], mag[120];
    float *da, *db, *dc, *ds;
    cudaStream_t s;

    (void)state;
    ref_gemm(&g, a, b, c, ref, mag);
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                     cudaSuccess);
    da = dev_upload(a, na * sizeof(float));
    db = dev_upload(b, nb * sizeof(float));
    dc = dev_upload(c, nc * sizeof(float));
    ds = dev_upload(scalars, sizeof(scalars));
    assert_int_equal(cublasSetStream_v2(h, s), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemm_v2(h, g.ta, g.tb, g.m, g.n, g.k, &ds[0], da,
                                    g.lda, db, g.ldb, &ds[1], dc, g.ldc),
                     CUBLAS_STATUS_SUCCESS);
    /* Queued after the GEMM on its stream: must not change its scalars. */
    assert_int_equal(cudaMemcpyAsync(ds, later, sizeof(later),
                                     cudaMemcpyHostToDevice, s), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    dev_download(c, dc, nc * sizeof(float));
    check_gemm_result(&g, c, ref, mag, 0.0);
    check_padding(&g, c);
    dev_free(da), dev_free(db), dev_free(dc), dev_free(ds);
    free(a), free(b), free(c);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/* The documented argument checks: exact status, nothing written. */
static void
test_sgemm_argument_checks(void **state)
{
    cublasHandle_t h = handle_new();
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    const cublasOperation_t bad = (cublasOperation_t)7;
    const cublasStatus_t inval = CUBLAS_STATUS_INVALID_VALUE;
    float host[64], alpha = 1.0f, beta = 0.0f;
    float *d;

    (void)state;
    for (int i = 0; i < 64; i++)
        host[i] = (float)i;
    d = dev_upload(host, sizeof(host));
    /* m = 4, n = 3, k = 2 with lda 4 (N) / 2 (T), ldb 2 (N) / 3 (T). */
    assert_int_equal(cublasSgemm_v2(NULL, N, N, 4, 3, 2, &alpha, d, 4, d, 2,
                                    &beta, d, 4),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasSgemm_v2(h, N, N, -1, 3, 2, &alpha, d, 4, d, 2,
                                    &beta, d, 4), inval);
    assert_int_equal(cublasSgemm_v2(h, N, N, 4, -1, 2, &alpha, d, 4, d, 2,
                                    &beta, d, 4), inval);
    assert_int_equal(cublasSgemm_v2(h, N, N, 4, 3, -1, &alpha, d, 4, d, 2,
                                    &beta, d, 4), inval);
    assert_int_equal(cublasSgemm_v2(h, bad, N, 4, 3, 2, &alpha, d, 4, d, 2,
                                    &beta, d, 4), inval);
    assert_int_equal(cublasSgemm_v2(h, N, bad, 4, 3, 2, &alpha, d, 4, d, 2,
                                    &beta, d, 4), inval);
    assert_int_equal(cublasSgemm_v2(h, N, N, 4, 3, 2, &alpha, d, 3, d, 2,
                                    &beta, d, 4), inval);   /* lda < m */
    assert_int_equal(cublasSgemm_v2(h, T, N, 4, 3, 2, &alpha, d, 1, d, 2,
                                    &beta, d, 4), inval);   /* lda < k */
    assert_int_equal(cublasSgemm_v2(h, N, N, 4, 3, 2, &alpha, d, 4, d, 1,
                                    &beta, d, 4), inval);   /* ldb < k */
    assert_int_equal(cublasSgemm_v2(h, N, T, 4, 3, 2, &alpha, d, 4, d, 2,
                                    &beta, d, 4), inval);   /* ldb < n */
    assert_int_equal(cublasSgemm_v2(h, N, N, 4, 3, 2, &alpha, d, 4, d, 2,
                                    &beta, d, 3), inval);   /* ldc < m */
    assert_int_equal(cublasSgemm_v2(h, N, N, 0, 3, 2, &alpha, d, 0, d, 2,
                                    &beta, d, 1), inval);   /* lda < 1 */
    assert_int_equal(cublasSgemm_v2(h, N, N, 0, 3, 2, &alpha, d, 1, d, 2,
                                    &beta, d, 0), inval);   /* ldc < 1 */
    assert_int_equal(cublasSgemm_v2(h, T, T, 4, 3, 0, &alpha, d, 0, d, 3,
                                    &beta, d, 4), inval);   /* lda < 1 */
    assert_dev_equals(d, host, sizeof(host));
    /* The same shapes with the smallest legal leading dimensions pass. */
    assert_int_equal(cublasSgemm_v2(h, T, T, 4, 3, 2, &alpha, d, 2, d, 3,
                                    &beta, d + 32, 4), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_free(d);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

static int
tf32_allowed(void)
{
    const char *v = getenv("NVIDIA_TF32_OVERRIDE");

    return !(v != NULL && strcmp(v, "0") == 0);
}

/* The handle's math mode decides what FP32 GEMMs may do to operands. */
static void
test_sgemm_math_modes(void **state)
{
    cublasHandle_t h = handle_new();
    struct gemm_case g = { CUBLAS_OP_N, CUBLAS_OP_T, 16, 12, 40, 16, 12, 16,
                           1.0f, 0.25f };

    (void)state;
    assert_int_equal(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH),
                     CUBLAS_STATUS_SUCCESS);
    run_sgemm_rounded(h, &g, 0.0f, tf32_allowed() ? RND_TF32 : RND_NONE);
    assert_int_equal(cublasSetMathMode(h, CUBLAS_TENSOR_OP_MATH),
                     CUBLAS_STATUS_SUCCESS);
    run_sgemm_rounded(h, &g, 0.0f, RND_F16);
    assert_int_equal(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH),
                     CUBLAS_STATUS_SUCCESS);
    run_sgemm(h, &g, 0.0f);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* ---- cublasGemmEx -------------------------------------------------------- */

struct ex_case {
    cudaDataType ab, c;
    cublasComputeType_t compute;
    enum ref_rounding round;    /* what the library does to FP32 operands */
    cublasOperation_t ta, tb;
};

/* Operands in the given type: random values made representable in it. */
static float *
typed_floats(cudaDataType t, size_t n)
{
    float *v = host_floats(n);
    enum ref_rounding r = t == CUDA_R_16F ? RND_F16
                        : t == CUDA_R_16BF ? RND_BF16 : RND_NONE;

    for (size_t i = 0; i < n; i++)
        v[i] = round_as(v[i], r);
    return v;
}

static double
out_rounding(cudaDataType t)
{
    return t == CUDA_R_16F ? 0x1p-11 : t == CUDA_R_16BF ? 0x1p-8 : 0.0;
}

/* Largest |rounded reference - plain reference| over its tolerance: > 1
 * means the check can tell a missing operand rounding. */
static double
rounding_visible(const struct gemm_case *g, const float *a, const float *b,
                 const float *c, const double *ref, const double *mag)
{
    size_t mn = (size_t)g->m * (size_t)g->n;
    double *plain = calloc(mn, sizeof(double));
    double *pmag = calloc(mn, sizeof(double)), worst = 0.0;

    assert_true(plain && pmag);
    ref_gemm(g, a, b, c, plain, pmag);
    for (size_t i = 0; i < mn; i++) {
        double q = fabs(plain[i] - ref[i]) / ((g->k + 4) * 0x1p-24 * mag[i]);
        worst = q > worst ? q : worst;
    }
    free(plain);
    free(pmag);
    return worst;
}

static void
run_gemm_ex(cublasHandle_t h, const struct ex_case *e)
{
    struct gemm_case g = { e->ta, e->tb, 24, 20, 64, 0, 0, 27, 1.5f, -0.5f };
    size_t na, nb, nc = (size_t)g.ldc * (size_t)g.n, mn = 24 * 20;
    float *a, *b, *c, *ar, *br;
    double *ref = calloc(mn, sizeof(double)), *mag = calloc(mn, sizeof(double));
    void *ea, *eb, *ec, *da, *db, *dc;
    const float *pa, *pb;
    float *ds;

    scalar_ptrs(h, &g.alpha, &g.beta, &pa, &pb, &ds);
    g.lda = by_op(g.ta, g.m, g.k) + 1;
    g.ldb = by_op(g.tb, g.k, g.n) + 2;
    na = a_count(&g);
    nb = b_count(&g);
    a = typed_floats(e->ab, na);
    b = typed_floats(e->ab, nb);
    c = typed_floats(e->c, nc);
    ar = malloc(na * sizeof(float));
    br = malloc(nb * sizeof(float));
    assert_true(ref && mag && ar && br);
    for (size_t i = 0; i < na; i++)
        ar[i] = round_as(a[i], e->round);
    for (size_t i = 0; i < nb; i++)
        br[i] = round_as(b[i], e->round);
    ref_gemm(&g, ar, br, c, ref, mag);
    if (e->round != RND_NONE)
        assert_true(rounding_visible(&g, a, b, c, ref, mag) > 4.0);
    ea = encode(e->ab, a, na);
    eb = encode(e->ab, b, nb);
    ec = encode(e->c, c, nc);
    da = dev_upload(ea, na * type_bytes(e->ab));
    db = dev_upload(eb, nb * type_bytes(e->ab));
    dc = dev_upload(ec, nc * type_bytes(e->c));
    assert_int_equal(cublasGemmEx(h, g.ta, g.tb, g.m, g.n, g.k, pa, da,
                                  e->ab, g.lda, db, e->ab, g.ldb, pb, dc,
                                  e->c, g.ldc, e->compute,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(ec, dc, nc * type_bytes(e->c));
    decode(e->c, ec, nc, c);
    check_gemm_result(&g, c, ref, mag, out_rounding(e->c));
    dev_free(da), dev_free(db), dev_free(dc);
    if (ds != NULL)
        dev_free(ds);
    free(a), free(b), free(c), free(ar), free(br), free(ref), free(mag);
    free(ea), free(eb), free(ec);
}

/* FP32 operands: the compute type says how they are rounded. */
static void
test_gemm_ex_fp32_compute_types(void **state)
{
    const enum ref_rounding tf32 = tf32_allowed() ? RND_TF32 : RND_NONE;
    const struct ex_case cases[] = {
        { CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, RND_NONE,
          CUBLAS_OP_N, CUBLAS_OP_N },
        { CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, RND_NONE,
          CUBLAS_OP_T, CUBLAS_OP_N },
        { CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F, RND_F16,
          CUBLAS_OP_N, CUBLAS_OP_T },
        { CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, RND_BF16,
          CUBLAS_OP_T, CUBLAS_OP_T },
        { CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, tf32,
          CUBLAS_OP_C, CUBLAS_OP_N },
        /* BF16x9 only on compute capability 10.0 and 10.3: FP32 here
         * (test_b200_bf16x9 has it). */
        { CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_EMULATED_16BFX9,
          RND_NONE, CUBLAS_OP_T, CUBLAS_OP_N },
    };
    cublasHandle_t h = handle_new();

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_gemm_ex(h, &cases[i]);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* FP16 and BF16 operands, FP32 accumulation, FP32 or same-type output. */
static void
test_gemm_ex_half_operands(void **state)
{
    const struct ex_case cases[] = {
        { CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, RND_NONE,
          CUBLAS_OP_N, CUBLAS_OP_N },
        { CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, RND_NONE,
          CUBLAS_OP_T, CUBLAS_OP_N },
        { CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, RND_NONE,
          CUBLAS_OP_N, CUBLAS_OP_T },
        { CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, RND_NONE,
          CUBLAS_OP_C, CUBLAS_OP_C },
        { CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, RND_NONE,
          CUBLAS_OP_T, CUBLAS_OP_T },
        { CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, RND_NONE,
          CUBLAS_OP_N, CUBLAS_OP_N },
    };
    cublasHandle_t h = handle_new();

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_gemm_ex(h, &cases[i]);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* Combinations outside the documented table: NOT_SUPPORTED, no work. */
static void
test_gemm_ex_unsupported(void **state)
{
    static const struct {
        cudaDataType a, b, c;
        cublasComputeType_t compute;
    } bad[] = {
        { CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F },
        { CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32 },
        { CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF },
        { CUDA_R_16F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F },
        { CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F },
        { CUDA_R_16F, CUDA_R_16F, CUDA_R_16BF, CUBLAS_COMPUTE_32F },
        { CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16F, CUBLAS_COMPUTE_32F },
        { CUDA_R_32F, CUDA_R_32F, CUDA_R_16F, CUBLAS_COMPUTE_32F },
        { CUDA_R_32F, CUDA_R_32F, CUDA_R_16F, CUBLAS_COMPUTE_32F_FAST_16F },
        { CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_64F },
        { CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_32F },
    };
    cublasHandle_t h = handle_new();
    double host[64];
    float alpha = 1.0f, beta = 0.0f;
    void *d;

    (void)state;
    for (int i = 0; i < 64; i++)
        host[i] = i + 0.5;
    d = dev_upload(host, sizeof(host));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4,
                                         &alpha, d, bad[i].a, 4, d, bad[i].b,
                                         4, &beta, d, bad[i].c, 4,
                                         bad[i].compute, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_NOT_SUPPORTED)
            fail_msg("case %zu: status %d, want NOT_SUPPORTED", i, (int)st);
    }
    /* Shape checks still come with INVALID_VALUE. */
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 4,
                                  &alpha, d, CUDA_R_16F, 4, d, CUDA_R_16F, 4,
                                  &beta, d, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasGemmEx(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4,
                                  &alpha, d, CUDA_R_16F, 4, d, CUDA_R_16F, 4,
                                  &beta, d, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_dev_equals(d, host, sizeof(host));
    dev_free(d);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* ---- Batched, strided, _64 and SgemmEx entry points ---------------------- */

enum batch_api {
    API_SGEMM_64, API_GEMM_EX_64, API_SGEMM_EX, API_SGEMM_EX_64,
    API_SGEMM_STRIDED, API_SGEMM_STRIDED_64, API_SGEMM_BATCHED,
    API_SGEMM_BATCHED_64, API_EX_STRIDED, API_EX_STRIDED_64, API_EX_BATCHED,
    API_EX_BATCHED_64,
};

/* `count` problems of one shape laid out `gap` elements apart in one
 * buffer per operand; pointer-array APIs get device arrays pointing into
 * those buffers. */
struct batch_run {
    enum batch_api api;
    cudaDataType ab, c;
    cublasComputeType_t compute;
    enum ref_rounding round;    /* what the library does to the operands */
    struct gemm_case g;
    int count;
    int share_a;                /* stride 0 (or one pointer) for A */
    int reverse_c;              /* Carray[i] points at problem count-1-i
                                 * (pointer-array APIs only) */
};

static int
is_pointer_api(enum batch_api api)
{
    return api == API_SGEMM_BATCHED || api == API_SGEMM_BATCHED_64 ||
           api == API_EX_BATCHED || api == API_EX_BATCHED_64;
}

/* Device array of `count` pointers base + slot(i) * stride elements. */
static void *
pointer_array(cudaStream_t s, char *base, size_t stride_bytes, int count,
              int reverse, void **host_copy)
{
    void **host = calloc((size_t)count + 1, sizeof(void *));
    void *dev = NULL;

    assert_non_null(host);
    for (int i = 0; i < count; i++)
        host[i] = base + (size_t)(reverse ? count - 1 - i : i) * stride_bytes;
    assert_int_equal(cudaMalloc(&dev, ((size_t)count + 1) * sizeof(void *)),
                     cudaSuccess);
    /* Queued on the work's stream, not synchronised: the GEMM must read
     * the array when it runs, not when it is called. */
    assert_int_equal(cudaMemcpyAsync(dev, host, (size_t)count * sizeof(void *),
                                     cudaMemcpyHostToDevice, s),
                     cudaSuccess);
    *host_copy = host;
    return dev;
}

static cublasStatus_t
call_batch(cublasHandle_t h, const struct batch_run *r, const float *pa,
           const float *pb, void *da, void *db, void *dc, long long sa,
           long long sb, long long sc)
{
    const struct gemm_case *g = &r->g;
    const int64_t m = g->m, n = g->n, k = g->k;
    const int64_t lda = g->lda, ldb = g->ldb, ldc = g->ldc, cnt = r->count;

    switch (r->api) {
    case API_SGEMM_64:
        return cublasSgemm_v2_64(h, g->ta, g->tb, m, n, k, pa, da, lda, db,
                                 ldb, pb, dc, ldc);
    case API_GEMM_EX_64:
        return cublasGemmEx_64(h, g->ta, g->tb, m, n, k, pa, da, r->ab, lda,
                               db, r->ab, ldb, pb, dc, r->c, ldc, r->compute,
                               CUBLAS_GEMM_DEFAULT);
    case API_SGEMM_EX:
        return cublasSgemmEx(h, g->ta, g->tb, g->m, g->n, g->k, pa, da, r->ab,
                             g->lda, db, r->ab, g->ldb, pb, dc, r->c, g->ldc);
    case API_SGEMM_EX_64:
        return cublasSgemmEx_64(h, g->ta, g->tb, m, n, k, pa, da, r->ab, lda,
                                db, r->ab, ldb, pb, dc, r->c, ldc);
    case API_SGEMM_STRIDED:
        return cublasSgemmStridedBatched(h, g->ta, g->tb, g->m, g->n, g->k,
                                         pa, da, g->lda, sa, db, g->ldb, sb,
                                         pb, dc, g->ldc, sc, r->count);
    case API_SGEMM_STRIDED_64:
        return cublasSgemmStridedBatched_64(h, g->ta, g->tb, m, n, k, pa, da,
                                            lda, sa, db, ldb, sb, pb, dc, ldc,
                                            sc, cnt);
    case API_SGEMM_BATCHED:
        return cublasSgemmBatched(h, g->ta, g->tb, g->m, g->n, g->k, pa, da,
                                  g->lda, db, g->ldb, pb, dc, g->ldc,
                                  r->count);
    case API_SGEMM_BATCHED_64:
        return cublasSgemmBatched_64(h, g->ta, g->tb, m, n, k, pa, da, lda,
                                     db, ldb, pb, dc, ldc, cnt);
    case API_EX_STRIDED:
        return cublasGemmStridedBatchedEx(h, g->ta, g->tb, g->m, g->n, g->k,
                                          pa, da, r->ab, g->lda, sa, db,
                                          r->ab, g->ldb, sb, pb, dc, r->c,
                                          g->ldc, sc, r->count, r->compute,
                                          CUBLAS_GEMM_DEFAULT);
    case API_EX_STRIDED_64:
        return cublasGemmStridedBatchedEx_64(h, g->ta, g->tb, m, n, k, pa, da,
                                             r->ab, lda, sa, db, r->ab, ldb,
                                             sb, pb, dc, r->c, ldc, sc, cnt,
                                             r->compute, CUBLAS_GEMM_DEFAULT);
    case API_EX_BATCHED:
        return cublasGemmBatchedEx(h, g->ta, g->tb, g->m, g->n, g->k, pa, da,
                                   r->ab, g->lda, db, r->ab, g->ldb, pb, dc,
                                   r->c, g->ldc, r->count, r->compute,
                                   CUBLAS_GEMM_DEFAULT);
    default:
        return cublasGemmBatchedEx_64(h, g->ta, g->tb, m, n, k, pa, da, r->ab,
                                      lda, db, r->ab, ldb, pb, dc, r->c, ldc,
                                      cnt, r->compute, CUBLAS_GEMM_DEFAULT);
    }
}

/* Problem i of C (element offset `at`) against its reference; every C
 * element outside the m x n results keeps its value. */
static void
check_batch_c(const struct batch_run *r, const float *got, const float *orig,
              size_t total, size_t stride, const double *ref,
              const double *mag)
{
    const struct gemm_case *g = &r->g;
    size_t mn = (size_t)g->m * (size_t)g->n;
    float *one = malloc((size_t)g->ldc * (size_t)g->n * sizeof(float) + 4);

    assert_non_null(one);
    for (int i = 0; i < r->count; i++) {
        int slot = r->reverse_c ? r->count - 1 - i : i;
        memcpy(one, got + (size_t)slot * stride,
               (size_t)g->ldc * (size_t)g->n * sizeof(float));
        check_gemm_result(g, one, ref + (size_t)i * mn, mag + (size_t)i * mn,
                          out_rounding(r->c));
    }
    for (size_t idx = 0; idx < total; idx++) {
        size_t in = idx % stride, row = in % (size_t)g->ldc;
        int inside = idx / stride < (size_t)r->count && row < (size_t)g->m &&
                     in < (size_t)g->ldc * (size_t)g->n;
        if (!inside && got[idx] != orig[idx])
            fail_msg("C element %zu outside the results changed", idx);
    }
    free(one);
}

/* Runs r on stream s and checks every problem against ref_gemm of its
 * rounded operands. With `deferred`, the call's work is still queued on s
 * when it returns. */
static void
run_batch(cublasHandle_t h, cudaStream_t s, const struct batch_run *run,
          int deferred)
{
    struct batch_run rr = *run;
    const struct batch_run *r = &rr;
    const struct gemm_case *g = &r->g;
    size_t sta = a_count(g) + 3, stb = b_count(g) + 5;
    size_t stc = (size_t)g->ldc * (size_t)g->n + 2, cnt = (size_t)r->count;
    size_t mn = (size_t)g->m * (size_t)g->n;
    float *a = typed_floats(r->ab, sta * cnt), *b = typed_floats(r->ab, stb * cnt);
    float *c = typed_floats(r->c, stc * cnt), *got = malloc(stc * cnt * 4);
    double *ref = calloc(mn * cnt + 1, sizeof(double));
    double *mag = calloc(mn * cnt + 1, sizeof(double));
    float *ar = malloc(sta * cnt * 4), *br = malloc(stb * cnt * 4);
    void *ea, *eb, *ec, *da, *db, *dc, *pa_arr = NULL, *pb_arr = NULL;
    void *pc_arr = NULL, *ha = NULL, *hb = NULL, *hc = NULL;
    const float *pa, *pb;
    float *ds;
    cublasStatus_t st;

    assert_true(got && ref && mag && ar && br);
    rr.reverse_c = rr.reverse_c && is_pointer_api(rr.api);
    assert_int_equal(cublasSetStream_v2(h, s), CUBLAS_STATUS_SUCCESS);
    scalar_ptrs(h, &g->alpha, &g->beta, &pa, &pb, &ds);
    for (size_t i = 0; i < sta * cnt; i++)
        ar[i] = round_as(a[r->share_a ? i % sta : i], r->round);
    for (size_t i = 0; i < stb * cnt; i++)
        br[i] = round_as(b[i], r->round);
    for (size_t i = 0; i < cnt; i++) {
        size_t slot = r->reverse_c ? cnt - 1 - i : i;
        ref_gemm(g, ar + i * sta, br + i * stb, c + slot * stc, ref + i * mn,
                 mag + i * mn);
    }
    ea = encode(r->ab, a, sta * cnt);
    eb = encode(r->ab, b, stb * cnt);
    ec = encode(r->c, c, stc * cnt);
    da = dev_upload(ea, sta * cnt * type_bytes(r->ab));
    db = dev_upload(eb, stb * cnt * type_bytes(r->ab));
    dc = dev_upload(ec, stc * cnt * type_bytes(r->c));
    if (is_pointer_api(r->api)) {
        pa_arr = pointer_array(s, da, r->share_a ? 0 : sta * type_bytes(r->ab),
                               r->count, 0, &ha);
        pb_arr = pointer_array(s, db, stb * type_bytes(r->ab), r->count, 0,
                               &hb);
        pc_arr = pointer_array(s, dc, stc * type_bytes(r->c), r->count,
                               r->reverse_c, &hc);
        st = call_batch(h, r, pa, pb, pa_arr, pb_arr, pc_arr, 0, 0, 0);
    } else {
        st = call_batch(h, r, pa, pb, da, db, dc,
                        r->share_a ? 0 : (long long)sta, (long long)stb,
                        (long long)stc);
    }
    assert_int_equal(st, CUBLAS_STATUS_SUCCESS);
    if (deferred)   /* queued, not run at the call */
        assert_int_equal(cudaStreamQuery(s), cudaErrorNotReady);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    dev_download(ec, dc, stc * cnt * type_bytes(r->c));
    decode(r->c, ec, stc * cnt, got);
    check_batch_c(r, got, c, stc * cnt, stc, ref, mag);
    dev_free(da), dev_free(db), dev_free(dc);
    if (pa_arr != NULL)
        dev_free(pa_arr), dev_free(pb_arr), dev_free(pc_arr);
    if (ds != NULL)
        dev_free(ds);
    free(ha), free(hb), free(hc), free(ea), free(eb), free(ec);
    free(a), free(b), free(c), free(got), free(ref), free(mag), free(ar);
    free(br);
    assert_int_equal(cublasSetStream_v2(h, NULL), CUBLAS_STATUS_SUCCESS);
}

static const struct gemm_case batch_shape = {
    CUBLAS_OP_T, CUBLAS_OP_N, 19, 13, 30, 31, 33, 21, 0.75f, -0.5f
};

/* cublasSgemm_v2_64 and cublasGemmEx_64: the same contract with 64-bit
 * sizes. */
static void
test_gemm_64_entry_points(void **state)
{
    cublasHandle_t h = handle_new();
    struct batch_run r = { API_SGEMM_64, CUDA_R_32F, CUDA_R_32F,
                           CUBLAS_COMPUTE_32F, RND_NONE, batch_shape, 1, 0,
                           0 };
    float host[64], alpha = 1.0f, beta = 0.0f, *d;

    (void)state;
    run_batch(h, NULL, &r, 0);
    r.g.ta = CUBLAS_OP_N, r.g.tb = CUBLAS_OP_C, r.g.lda = 20, r.g.ldb = 14;
    run_batch(h, NULL, &r, 0);
    r.api = API_GEMM_EX_64, r.ab = CUDA_R_16F;
    run_batch(h, NULL, &r, 0);
    r.ab = CUDA_R_32F, r.compute = CUBLAS_COMPUTE_32F_FAST_16BF;
    r.round = RND_BF16;
    run_batch(h, NULL, &r, 0);

    for (int i = 0; i < 64; i++)
        host[i] = (float)i;
    d = dev_upload(host, sizeof(host));
    assert_int_equal(cublasSgemm_v2_64(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 4, 3,
                                       2, &alpha, d, 4, d, 2, &beta, d, 4),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasSgemm_v2_64(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 3, 2,
                                       &alpha, d, 4, d, 2, &beta, d, 4),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSgemm_v2_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 3, 2,
                                       &alpha, d, 3, d, 2, &beta, d, 4),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasGemmEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 3, 2,
                                     &alpha, d, CUDA_R_16F, 4, d, CUDA_R_16F,
                                     2, &beta, d, CUDA_R_16BF, 4,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_dev_equals(d, host, sizeof(host));
    dev_free(d);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* Strided batches (stride 0 shares A) and pointer-array batches
 * (Aarray, Barray, Carray in device memory, uploaded asynchronously just
 * before the call, so they must be read when the work runs; Carray
 * reversed): every problem right, in both pointer modes and under a
 * Tensor Core math mode, and nothing run before the stream is
 * synchronised. */
static void
test_sgemm_batched_and_strided(void **state)
{
    static const enum batch_api apis[][2] = {
        { API_SGEMM_STRIDED, API_SGEMM_STRIDED_64 },
        { API_SGEMM_BATCHED, API_SGEMM_BATCHED_64 },
    };
    cublasHandle_t h = handle_new();
    cudaStream_t quiet;

    (void)state;
    assert_int_equal(cudaStreamCreateWithFlags(&quiet, cudaStreamNonBlocking),
                     cudaSuccess);
    for (int v = 0; v < 2; v++) {
        struct batch_run r = { apis[v][0], CUDA_R_32F, CUDA_R_32F,
                               CUBLAS_COMPUTE_32F, RND_NONE, batch_shape, 4,
                               0, 1 };
        run_batch(h, quiet, &r, 1);
        r.share_a = 1, r.g.ta = CUBLAS_OP_N, r.g.lda = 19;
        run_batch(h, quiet, &r, 1);
        r.api = apis[v][1], r.share_a = 0, r.count = 3;
        run_batch(h, quiet, &r, 1);
        assert_int_equal(cublasSetPointerMode_v2(h,
                                                 CUBLAS_POINTER_MODE_DEVICE),
                         CUBLAS_STATUS_SUCCESS);
        run_batch(h, quiet, &r, 1);
        assert_int_equal(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST),
                         CUBLAS_STATUS_SUCCESS);
        assert_int_equal(cublasSetMathMode(h, CUBLAS_TENSOR_OP_MATH),
                         CUBLAS_STATUS_SUCCESS);
        r.round = RND_F16;
        run_batch(h, quiet, &r, 1);
        assert_int_equal(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH),
                         CUBLAS_STATUS_SUCCESS);
    }
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(quiet), cudaSuccess);
}

/* One problem of GemmBatchedEx through the pointer array arr (A, B, C):
 * m x m x 8, A and B of type ab with leading dimension 8, an FP32 C of
 * leading dimension m, alpha 1 and beta 0. */
static cublasStatus_t
batched_ex_ld8(cublasHandle_t h, void **arr, cudaDataType ab, int m)
{
    const float alpha = 1.0f, beta = 0.0f;

    return cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, 8, &alpha,
                               (const void **)arr, ab, 8,
                               (const void **)(arr + 1), ab, 8, &beta,
                               arr + 2, CUDA_R_32F, m, 1, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT);
}

/* A pointer-array GemmBatchedEx of FP16 A and B whose leading dimensions
 * suit 16-byte vectors runs a kernel that takes every matrix to be
 * 16-byte aligned, as cuBLAS's did on an H200: a C 4 bytes past an
 * aligned address faults, sticky, with cudaErrorMisalignedAddress; the
 * same call with FP32 A and B runs, as does one whose ldc is not a
 * multiple of 16 bytes. */
static void
test_gemm_batched_ex_alignment(void **state)
{
    enum { M = 8, LD = 8 };
    const float one = 1.0f;
    uint16_t ones16[LD * M];
    float ones32[LD * M], c[LD * M + 4];
    char *buf16, *buf32, *cbuf;
    void *ptrs[3], **arr;
    cublasHandle_t h;
    int i;

    (void)state;
    for (i = 0; i < LD * M; i++) {
        ones16[i] = 0x3c00; /* 1.0 in FP16 */
        ones32[i] = one;
    }
    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    buf16 = dev_upload(ones16, sizeof ones16);
    buf32 = dev_upload(ones32, sizeof ones32);
    assert_int_equal(cudaMalloc((void **)&cbuf, sizeof c), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&arr, sizeof ptrs), cudaSuccess);

    /* FP32 A and B, C 4 bytes off: runs, C = k = 8 everywhere. */
    ptrs[0] = buf32, ptrs[1] = buf32, ptrs[2] = cbuf + 4;
    assert_int_equal(cudaMemcpy(arr, ptrs, sizeof ptrs,
                                cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(batched_ex_ld8(h, arr, CUDA_R_32F, M), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(c, cbuf, sizeof c);
    assert_true(c[1] == 8.0f && c[LD * M] == 8.0f);

    /* FP16 A and B, ldc 7 floats (no 16-byte vectors): runs too. */
    ptrs[0] = buf16, ptrs[1] = buf16;
    assert_int_equal(cudaMemcpy(arr, ptrs, sizeof ptrs,
                                cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(batched_ex_ld8(h, arr, CUDA_R_16F, 7), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);

    /* FP16 A and B, ldc 8 floats: the call is accepted and the kernel
     * faults, for the context's life. */
    assert_int_equal(batched_ex_ld8(h, arr, CUDA_R_16F, M), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaErrorMisalignedAddress);
    assert_int_equal(cudaMemcpy(c, cbuf, sizeof c, cudaMemcpyDeviceToHost),
                     cudaErrorMisalignedAddress);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceReset(), cudaSuccess);
}

/* GemmBatchedEx and GemmStridedBatchedEx follow the GemmEx type table. */
static void
test_gemm_batched_ex(void **state)
{
    static const struct {
        enum batch_api api;
        cudaDataType ab, c;
        cublasComputeType_t compute;
        enum ref_rounding round;
    } cases[] = {
        { API_EX_BATCHED, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F,
          RND_NONE },
        { API_EX_BATCHED_64, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F,
          RND_NONE },
        { API_EX_BATCHED, CUDA_R_32F, CUDA_R_32F,
          CUBLAS_COMPUTE_32F_FAST_16F, RND_F16 },
        { API_EX_STRIDED, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F,
          RND_NONE },
        { API_EX_STRIDED_64, CUDA_R_32F, CUDA_R_32F,
          CUBLAS_COMPUTE_32F_FAST_16BF, RND_BF16 },
        { API_EX_STRIDED, CUDA_R_16BF, CUDA_R_32F,
          CUBLAS_COMPUTE_32F_PEDANTIC, RND_NONE },
    };
    cublasHandle_t h = handle_new();

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct batch_run r = { cases[i].api, cases[i].ab, cases[i].c,
                               cases[i].compute, cases[i].round, batch_shape,
                               3, (int)(i % 2), (int)(i % 2) };
        run_batch(h, NULL, &r, 0);
    }
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* The documented checks of the batched forms: exact status, nothing
 * queued, nothing written; batch 0 and empty shapes succeed untouched. */
static void
test_batched_argument_checks(void **state)
{
    const cublasOperation_t N = CUBLAS_OP_N;
    const cublasStatus_t inval = CUBLAS_STATUS_INVALID_VALUE;
    const cublasStatus_t unsup = CUBLAS_STATUS_NOT_SUPPORTED;
    cublasHandle_t h = handle_new();
    float host[64], alpha = 1.0f, beta = 0.0f;
    float *d;
    void **arr;

    (void)state;
    for (int i = 0; i < 64; i++)
        host[i] = (float)i;
    d = dev_upload(host, sizeof(host));
    arr = (void **)d;   /* a device "array" that is never read */
    assert_int_equal(cublasSgemmBatched(NULL, N, N, 4, 4, 4, &alpha,
                                        (const float **)arr, 4,
                                        (const float **)arr, 4, &beta,
                                        (float **)arr, 4, 1),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasSgemmBatched(h, N, N, 4, 4, 4, &alpha,
                                        (const float **)arr, 4,
                                        (const float **)arr, 4, &beta,
                                        (float **)arr, 4, -1), inval);
    assert_int_equal(cublasSgemmBatched_64(h, N, N, 4, 4, 4, &alpha,
                                           (const float **)arr, 3,
                                           (const float **)arr, 4, &beta,
                                           (float **)arr, 4, 2), inval);
    assert_int_equal(cublasSgemmStridedBatched(h, N, N, 4, 4, 4, &alpha, d, 4,
                                               16, d, 4, 16, &beta, d, 4, 16,
                                               -1), inval);
    assert_int_equal(cublasSgemmStridedBatched_64(h, N, N, 4, -4, 4, &alpha,
                                                  d, 4, 16, d, 4, 16, &beta,
                                                  d, 4, 16, 2), inval);
    assert_int_equal(cublasSgemmStridedBatched(h, N, N, 4, 4, 4, NULL, d, 4,
                                               16, d, 4, 16, &beta, d, 4, 16,
                                               2), inval);
    assert_int_equal(cublasGemmBatchedEx(h, N, N, 4, 4, 4, &alpha,
                                         (const void **)arr, CUDA_R_16F, 4,
                                         (const void **)arr, CUDA_R_16F, 4,
                                         &beta, arr, CUDA_R_32F, 4, -2,
                                         CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT), inval);
    assert_int_equal(cublasGemmBatchedEx_64(h, N, N, 4, 4, 4, &alpha,
                                            (const void **)arr, CUDA_R_16F, 4,
                                            (const void **)arr, CUDA_R_32F, 4,
                                            &beta, arr, CUDA_R_32F, 4, 2,
                                            CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT), unsup);
    assert_int_equal(cublasGemmStridedBatchedEx(h, N, N, 4, 4, 4, &alpha, d,
                                                CUDA_R_32F, 4, 16, d,
                                                CUDA_R_32F, 4, 16, &beta, d,
                                                CUDA_R_32F, 4, 16, 2,
                                                CUBLAS_COMPUTE_64F,
                                                CUBLAS_GEMM_DEFAULT), unsup);
    assert_int_equal(cublasGemmStridedBatchedEx_64(h, N, N, 4, 4, 4, &alpha,
                                                   d, CUDA_R_16F, 4, 16, d,
                                                   CUDA_R_16F, 4, 16, &beta,
                                                   d, CUDA_R_16F, 4, 16, -1,
                                                   CUBLAS_COMPUTE_32F,
                                                   CUBLAS_GEMM_DEFAULT),
                     inval);
    /* Nothing to do: batch 0 (with NULL arrays), m == 0, C = 1 * C. */
    assert_int_equal(cublasSgemmBatched(h, N, N, 4, 4, 4, &alpha, NULL, 4,
                                        NULL, 4, &beta, NULL, 4, 0),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemmStridedBatched_64(h, N, N, 4, 4, 4, &alpha, d,
                                                  4, 16, d, 4, 16, &beta, d,
                                                  4, 16, 0),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGemmStridedBatchedEx(h, N, N, 0, 4, 4, &alpha, d,
                                                CUDA_R_32F, 1, 16, d,
                                                CUDA_R_32F, 4, 16, &beta, d,
                                                CUDA_R_32F, 1, 16, 3,
                                                CUBLAS_COMPUTE_32F,
                                                CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    beta = 1.0f, alpha = 0.0f;
    assert_int_equal(cublasSgemmBatched_64(h, N, N, 4, 4, 4, &alpha, NULL, 4,
                                           NULL, 4, &beta, NULL, 4, 5),
                     CUBLAS_STATUS_SUCCESS);
    assert_dev_equals(d, host, sizeof(host));
    dev_free(d);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* cublasSgemmEx: float scalars and its own type table. */
static void
test_sgemm_ex(void **state)
{
    static const struct {
        cudaDataType ab, c;
    } ok[] = {
        { CUDA_R_32F, CUDA_R_32F }, { CUDA_R_16F, CUDA_R_32F },
        { CUDA_R_16F, CUDA_R_16F }, { CUDA_R_16BF, CUDA_R_32F },
        { CUDA_R_16BF, CUDA_R_16BF },
    };
    static const struct {
        cudaDataType a, b, c;
    } bad[] = {
        { CUDA_R_32F, CUDA_R_32F, CUDA_R_16F },
        { CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F },
        { CUDA_R_16F, CUDA_R_16F, CUDA_R_16BF },
        { CUDA_R_8I, CUDA_R_8I, CUDA_R_16F },
        { CUDA_R_8I, CUDA_R_8I, CUDA_R_32I },
        { CUDA_R_64F, CUDA_R_64F, CUDA_R_64F },
    };
    cublasHandle_t h = handle_new();
    float alpha = 1.0f, beta = 0.0f;
    double host[32];
    void *d;

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct batch_run r = { i % 2 ? API_SGEMM_EX_64 : API_SGEMM_EX,
                               ok[i].ab, ok[i].c, CUBLAS_COMPUTE_32F,
                               RND_NONE, batch_shape, 1, 0, 0 };
        run_batch(h, NULL, &r, 0);
    }
    /* FP32 operands follow the math mode, as in cublasSgemm_v2. */
    assert_int_equal(cublasSetMathMode(h, CUBLAS_TENSOR_OP_MATH),
                     CUBLAS_STATUS_SUCCESS);
    {
        struct batch_run r = { API_SGEMM_EX, CUDA_R_32F, CUDA_R_32F,
                               CUBLAS_COMPUTE_32F, RND_F16, batch_shape, 1,
                               0, 0 };
        run_batch(h, NULL, &r, 0);
    }
    for (int i = 0; i < 32; i++)
        host[i] = i;
    d = dev_upload(host, sizeof(host));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cublasStatus_t st = cublasSgemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2,
                                          2, &alpha, d, bad[i].a, 2, d,
                                          bad[i].b, 2, &beta, d, bad[i].c, 2);
        if (st != CUBLAS_STATUS_NOT_SUPPORTED)
            fail_msg("case %zu: status %d, want NOT_SUPPORTED", i, (int)st);
    }
    assert_int_equal(cublasSgemmEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, -2,
                                      &alpha, d, CUDA_R_8I, 2, d, CUDA_R_8I,
                                      2, &beta, d, CUDA_R_32F, 2),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSgemmEx(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2,
                                   &alpha, d, CUDA_R_64F, 2, d, CUDA_R_64F, 2,
                                   &beta, d, CUDA_R_64F, 2),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_dev_equals(d, host, sizeof(host));
    dev_free(d);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* INT8 operands of SgemmEx convert exactly: small integer products and
 * sums are exact in FP32, so the result equals the integer reference. */
static void
test_sgemm_ex_int8(void **state)
{
    enum { M = 7, N = 5, K = 9 };
    int8_t a[K * M], b[K * N];
    float c[M * N], alpha = 2.0f, beta = -1.0f;
    cublasHandle_t h = handle_new();
    void *da, *db, *dc;

    (void)state;
    for (int i = 0; i < K * M; i++)
        a[i] = (int8_t)((i * 37) % 255 - 127);
    for (int i = 0; i < K * N; i++)
        b[i] = (int8_t)((i * 53) % 251 - 125);
    for (int i = 0; i < M * N; i++)
        c[i] = (float)(i - 17);
    da = dev_upload(a, sizeof(a));
    db = dev_upload(b, sizeof(b));
    dc = dev_upload(c, sizeof(c));
    /* op(A) = A^T (A is K x M, lda K), op(B) = B (K x N, ldb K). */
    assert_int_equal(cublasSgemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K,
                                   &alpha, da, CUDA_R_8I, K, db, CUDA_R_8I, K,
                                   &beta, dc, CUDA_R_32F, M),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    {
        float got[M * N];
        dev_download(got, dc, sizeof(got));
        for (int j = 0; j < N; j++) {
            for (int i = 0; i < M; i++) {
                long s = 0;
                for (int p = 0; p < K; p++)
                    s += (long)a[p + i * K] * b[p + j * K];
                assert_true(got[i + j * M] ==
                            (float)(2 * s - (i + j * M - 17)));
            }
        }
    }
    dev_free(da), dev_free(db), dev_free(dc);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* ---- Grouped GEMM -------------------------------------------------------- */

#define GROUPS 3
#define PROBLEMS 3  /* 2 in group 0, 1 in group 1, 0 in group 2 */

struct grouped_data {
    cublasOperation_t ta[GROUPS], tb[GROUPS];
    int m[GROUPS], n[GROUPS], k[GROUPS], lda[GROUPS], ldb[GROUPS];
    int ldc[GROUPS], size[GROUPS];
    float alpha[GROUPS], beta[GROUPS];
};

static const struct grouped_data grouped_base = {
    { CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_N },
    { CUBLAS_OP_T, CUBLAS_OP_N, CUBLAS_OP_N },
    { 9, 5, 4 }, { 7, 6, 4 }, { 11, 13, 4 }, { 10, 14, 4 }, { 8, 15, 4 },
    { 12, 5, 4 }, { 2, 1, 0 }, { 1.25f, -1.0f, 3.0f }, { 0.5f, 0.0f, 2.0f },
};

static struct gemm_case
group_case(const struct grouped_data *gd, int g)
{
    struct gemm_case c = { gd->ta[g], gd->tb[g], gd->m[g], gd->n[g],
                           gd->k[g], gd->lda[g], gd->ldb[g], gd->ldc[g],
                           gd->alpha[g], gd->beta[g] };
    return c;
}

static int
group_of(int problem)
{
    return problem < 2 ? 0 : 1;
}

static cublasStatus_t
call_grouped(cublasHandle_t h, int api, const struct grouped_data *gd,
             cudaDataType ab, int group_count, void **pa, void **pb,
             void **pc)
{
    int64_t m[GROUPS], n[GROUPS], k[GROUPS], lda[GROUPS], ldb[GROUPS];
    int64_t ldc[GROUPS], size[GROUPS];

    for (int g = 0; g < GROUPS; g++) {
        m[g] = gd->m[g], n[g] = gd->n[g], k[g] = gd->k[g];
        lda[g] = gd->lda[g], ldb[g] = gd->ldb[g], ldc[g] = gd->ldc[g];
        size[g] = gd->size[g];
    }
    switch (api) {
    case 0:
        return cublasSgemmGroupedBatched(
            h, gd->ta, gd->tb, gd->m, gd->n, gd->k, gd->alpha,
            (const float **)pa, gd->lda, (const float **)pb, gd->ldb,
            gd->beta, (float **)pc, gd->ldc, group_count, gd->size);
    case 1:
        return cublasSgemmGroupedBatched_64(
            h, gd->ta, gd->tb, m, n, k, gd->alpha, (const float **)pa, lda,
            (const float **)pb, ldb, gd->beta, (float **)pc, ldc,
            group_count, size);
    case 2:
        return cublasGemmGroupedBatchedEx(
            h, gd->ta, gd->tb, gd->m, gd->n, gd->k, gd->alpha,
            (const void **)pa, ab, gd->lda, (const void **)pb, ab, gd->ldb,
            gd->beta, pc, CUDA_R_32F, gd->ldc, group_count, gd->size,
            CUBLAS_COMPUTE_32F);
    default:
        return cublasGemmGroupedBatchedEx_64(
            h, gd->ta, gd->tb, m, n, k, gd->alpha, (const void **)pa, ab,
            lda, (const void **)pb, ab, ldb, gd->beta, pc, CUDA_R_32F, ldc,
            group_count, size, CUBLAS_COMPUTE_32F);
    }
}

/* Each group with its own shape, transposes and scalars; problems in
 * device pointer arrays; beta == 0 in group 1 with NaN in its C. */
static void
run_grouped(cublasHandle_t h, int api, cudaDataType ab)
{
    const struct grouped_data *gd = &grouped_base;
    void *hp[3][PROBLEMS], *dp[3], *dev[3][PROBLEMS];
    float *host[3][PROBLEMS];
    double ref[PROBLEMS][12 * 7], mag[PROBLEMS][12 * 7];

    for (int p = 0; p < PROBLEMS; p++) {
        struct gemm_case g = group_case(gd, group_of(p));
        size_t counts[3] = { a_count(&g), b_count(&g),
                             (size_t)g.ldc * (size_t)g.n };
        for (int o = 0; o < 3; o++) {
            void *enc;
            host[o][p] = typed_floats(o < 2 ? ab : CUDA_R_32F, counts[o]);
            if (o == 2 && g.beta == 0.0f)
                for (size_t i = 0; i < counts[2]; i++)
                    host[2][p][i] = NAN;
            enc = encode(o < 2 ? ab : CUDA_R_32F, host[o][p], counts[o]);
            dev[o][p] = dev_upload(enc, counts[o] *
                                            type_bytes(o < 2 ? ab
                                                             : CUDA_R_32F));
            hp[o][p] = dev[o][p];
            free(enc);
        }
        ref_gemm(&g, host[0][p], host[1][p], host[2][p], ref[p], mag[p]);
    }
    for (int o = 0; o < 3; o++)
        dp[o] = dev_upload(hp[o], sizeof(hp[o]));
    assert_int_equal(call_grouped(h, api, gd, ab, GROUPS, dp[0], dp[1],
                                  dp[2]),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    for (int p = 0; p < PROBLEMS; p++) {
        struct gemm_case g = group_case(gd, group_of(p));
        size_t nc = (size_t)g.ldc * (size_t)g.n;
        float *got = malloc(nc * sizeof(float));

        assert_non_null(got);
        dev_download(got, dev[2][p], nc * sizeof(float));
        check_gemm_result(&g, got, ref[p], mag[p], 0.0);
        for (int j = 0; j < g.n; j++)
            for (int i = g.m; i < g.ldc; i++) {
                size_t at = (size_t)i + (size_t)j * (size_t)g.ldc;
                assert_memory_equal(&got[at], &host[2][p][at], 4);
            }
        free(got);
        for (int o = 0; o < 3; o++)
            dev_free(dev[o][p]), free(host[o][p]);
    }
    for (int o = 0; o < 3; o++)
        dev_free(dp[o]);
}

static void
test_grouped_batched(void **state)
{
    cublasHandle_t h = handle_new();

    (void)state;
    run_grouped(h, 0, CUDA_R_32F);
    run_grouped(h, 1, CUDA_R_32F);
    run_grouped(h, 2, CUDA_R_16F);
    run_grouped(h, 3, CUDA_R_16BF);
    run_grouped(h, 2, CUDA_R_32F);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* Grouped checks: per-group sizes, group counts, host scalars only. */
static void
test_grouped_argument_checks(void **state)
{
    const cublasStatus_t inval = CUBLAS_STATUS_INVALID_VALUE;
    cublasHandle_t h = handle_new();
    struct grouped_data gd = grouped_base;
    float host[64];
    void **d;

    (void)state;
    for (int i = 0; i < 64; i++)
        host[i] = (float)i;
    d = dev_upload(host, sizeof(host));
    assert_int_equal(call_grouped(NULL, 0, &gd, CUDA_R_32F, GROUPS, d, d, d),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(call_grouped(h, 0, &gd, CUDA_R_32F, -1, d, d, d), inval);
    assert_int_equal(call_grouped(h, 1, &gd, CUDA_R_32F, -1, d, d, d), inval);
    gd.size[1] = -1;
    assert_int_equal(call_grouped(h, 0, &gd, CUDA_R_32F, GROUPS, d, d, d),
                     inval);
    gd = grouped_base, gd.m[2] = -1;
    assert_int_equal(call_grouped(h, 1, &gd, CUDA_R_32F, GROUPS, d, d, d),
                     inval);
    gd = grouped_base, gd.lda[1] = 12;       /* op(A) is k x m: lda >= 13 */
    assert_int_equal(call_grouped(h, 2, &gd, CUDA_R_32F, GROUPS, d, d, d),
                     inval);
    gd = grouped_base, gd.ldc[0] = 8;
    assert_int_equal(call_grouped(h, 3, &gd, CUDA_R_32F, GROUPS, d, d, d),
                     inval);
    gd = grouped_base, gd.tb[2] = (cublasOperation_t)9;
    assert_int_equal(call_grouped(h, 0, &gd, CUDA_R_32F, GROUPS, d, d, d),
                     inval);
    assert_int_equal(cublasSgemmGroupedBatched(
                         h, grouped_base.ta, grouped_base.tb, grouped_base.m,
                         grouped_base.n, grouped_base.k, NULL,
                         (const float **)d, grouped_base.lda,
                         (const float **)d, grouped_base.ldb,
                         grouped_base.beta, (float **)d, grouped_base.ldc,
                         GROUPS, grouped_base.size), inval);
    assert_int_equal(call_grouped(h, 2, &grouped_base, CUDA_R_64F, GROUPS, d,
                                  d, d), CUBLAS_STATUS_NOT_SUPPORTED);
    /* alpha_array and beta_array are host arrays: device mode refused. */
    assert_int_equal(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(call_grouped(h, 0, &grouped_base, CUDA_R_32F, GROUPS, d,
                                  d, d), CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(call_grouped(h, 3, &grouped_base, CUDA_R_16F, GROUPS, d,
                                  d, d), CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST),
                     CUBLAS_STATUS_SUCCESS);
    /* No groups, or only empty ones: success, nothing read or written. */
    assert_int_equal(call_grouped(h, 0, &grouped_base, CUDA_R_32F, 0, NULL,
                                  NULL, NULL), CUBLAS_STATUS_SUCCESS);
    gd = grouped_base, gd.size[0] = 0, gd.size[1] = 0;
    assert_int_equal(call_grouped(h, 1, &gd, CUDA_R_32F, GROUPS, NULL, NULL,
                                  NULL), CUBLAS_STATUS_SUCCESS);
    assert_dev_equals(d, host, sizeof(host));
    dev_free(d);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* A batch is one launch whose modelled time counts every problem's flops
 * at the precision used. */
static void
test_batched_modelled_time(void **state)
{
    enum { S = 256, B = 6 };
    size_t nn = (size_t)S * S;
    cublasHandle_t h = handle_new();
    float alpha = 1.0f, beta = 0.0f, ms32, ms16;
    void *da, *dc;
    cudaEvent_t e0, e1;
    double flops = 2.0 * S * S * S * B;
    double want32 = emu_model_ns(flops, EMU_PREC_FP32, 12.0 * nn * B) / 1e6;
    double want16 = emu_model_ns(flops, EMU_PREC_FP16, 8.0 * nn * B) / 1e6;

    (void)state;
    assert_int_equal(cudaMalloc(&da, nn * 4), cudaSuccess);
    assert_int_equal(cudaMalloc(&dc, nn * 4 * B), cudaSuccess);
    assert_int_equal(cudaMemset(da, 0, nn * 4), cudaSuccess);
    assert_int_equal(cudaEventCreate(&e0), cudaSuccess);
    assert_int_equal(cudaEventCreate(&e1), cudaSuccess);
    assert_int_equal(cudaEventRecord(e0, NULL), cudaSuccess);
    assert_int_equal(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N,
                                               S, S, S, &alpha, da, S, 0, da,
                                               S, 0, &beta, dc, S,
                                               (long long)nn, B),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaEventRecord(e1, NULL), cudaSuccess);
    assert_int_equal(cudaEventSynchronize(e1), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms32, e0, e1), cudaSuccess);
    ms32 -= (float)(emu_event_record_ns() * 1e-6); /* e1's record */
    assert_int_equal(cudaEventRecord(e0, NULL), cudaSuccess);
    assert_int_equal(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N,
                                                S, S, S, &alpha, da,
                                                CUDA_R_16F, S, 0, da,
                                                CUDA_R_16F, S, 0, &beta, dc,
                                                CUDA_R_32F, S, (long long)nn,
                                                B, CUBLAS_COMPUTE_32F,
                                                CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaEventRecord(e1, NULL), cudaSuccess);
    assert_int_equal(cudaEventSynchronize(e1), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms16, e0, e1), cudaSuccess);
    ms16 -= (float)(emu_event_record_ns() * 1e-6);
    assert_true(fabs(ms32 - want32) <= 0.01 * want32 + 1e-4);
    assert_true(fabs(ms16 - want16) <= 0.01 * want16 + 1e-4);
    assert_true(ms16 < ms32);
    assert_int_equal(cudaEventDestroy(e0), cudaSuccess);
    assert_int_equal(cudaEventDestroy(e1), cudaSuccess);
    dev_free(da), dev_free(dc);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* ---- A GPU without TF32 ---------------------------------------------------- */

#define V100_ARG "--v100"

/* One N^3 GEMM of `type` operands (FP32 C) on h with `compute`, timed
 * between events: its modelled milliseconds (the span less the second
 * event's record); C into c (N * N floats). */
static float
timed_gemm_ex(cublasHandle_t h, cudaDataType type, cublasComputeType_t compute,
              const void *da, void *dc, int n, float *c)
{
    float alpha = 1.0f, beta = 0.0f, ms = 0.0f;
    cudaEvent_t e0, e1;

    assert_int_equal(cudaEventCreate(&e0), cudaSuccess);
    assert_int_equal(cudaEventCreate(&e1), cudaSuccess);
    assert_int_equal(cudaEventRecord(e0, NULL), cudaSuccess);
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n,
                                  &alpha, da, type, n, da, type, n, &beta,
                                  dc, CUDA_R_32F, n, compute,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaEventRecord(e1, NULL), cudaSuccess);
    assert_int_equal(cudaEventSynchronize(e1), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, e0, e1), cudaSuccess);
    dev_download(c, dc, (size_t)n * n * sizeof(float));
    assert_int_equal(cudaEventDestroy(e0), cudaSuccess);
    assert_int_equal(cudaEventDestroy(e1), cudaSuccess);
    return ms - (float)(emu_event_record_ns() * 1e-6);
}

/* Under AMPSHIM_EMU_GPU=v100: a Tesla V100 (compute capability 7.0) has
 * no TF32. cuBLAS's TF32 requests only allow it (cublasMath_t's
 * CUBLAS_TF32_TENSOR_OP_MATH, cublasComputeType_t's
 * CUBLAS_COMPUTE_32F_FAST_TF32: "allows the library to use Tensor Cores
 * with TF32 compute"): they are accepted and compute plain FP32, at the
 * FP32 rate. Its FP16 Tensor Cores run 125 TFLOPS to FP32's 15.7 (the V100
 * datasheet): a compute-bound FP16 GEMM takes 1/7.96 of the FP32 one's
 * time past the launch; BF16 operands, without BF16 Tensor Cores before
 * Ampere, run at the FP32 rate. */
static void
test_v100_model(void **state)
{
    enum { N = 1024 };
    size_t nn = (size_t)N * N;
    struct cudaDeviceProp prop;
    cublasHandle_t h = handle_new();
    cublasMath_t math;
    float *a = host_floats(nn), *ref = malloc(nn * 4), *c = malloc(nn * 4);
    float alpha = 1.0f, beta = 0.0f, ms32, mstf, ms16, ms_bf;
    void *da = dev_upload(a, nn * 4), *dh, *dc;
    uint16_t *half = malloc(nn * 2);
    double lat = emu_gpu()->launch_latency_us * 1e-3;

    (void)state;
    assert_true(ref && c && half);
    assert_int_equal(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    assert_int_equal(prop.major, 7);
    assert_int_equal(prop.minor, 0);
    assert_non_null(strstr(prop.name, "V100"));
    assert_int_equal(cudaMalloc(&dc, nn * 4), cudaSuccess);

    /* FP32, the reference. */
    ms32 = timed_gemm_ex(h, CUDA_R_32F, CUBLAS_COMPUTE_32F, da, dc, N, ref);
    /* TF32 asked through the compute type: FP32's bits and time. */
    mstf = timed_gemm_ex(h, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, da, dc,
                         N, c);
    assert_memory_equal(c, ref, nn * 4);
    assert_true(mstf == ms32);
    /* ... and through the math mode, which the handle keeps. */
    assert_int_equal(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetMathMode(h, &math), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(math, CUBLAS_TF32_TENSOR_OP_MATH);
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_T, N, N, N,
                                    &alpha, da, N, da, N, &beta, dc, N),
                     CUBLAS_STATUS_SUCCESS);
    dev_download(c, dc, nn * 4);
    assert_memory_equal(c, ref, nn * 4);

    /* FP16 Tensor Cores: 125 / 15.7 times the FP32 rate. */
    for (size_t i = 0; i < nn; i++)
        half[i] = emu_f32_to_f16(a[i]);
    dh = dev_upload(half, nn * 2);
    ms16 = timed_gemm_ex(h, CUDA_R_16F, CUBLAS_COMPUTE_32F, dh, dc, N, c);
    print_message("v100 %dx%dx%d: fp32 %.4f ms, fp16 %.4f ms\n", N, N, N,
                  ms32, ms16);
    assert_true(fabs((ms32 - lat) / (ms16 - lat) - 125.0 / 15.7) <
                1e-3 * 125.0 / 15.7);
    /* BF16 operands: the CUDA cores, FP32's rate (and bytes of half). */
    for (size_t i = 0; i < nn; i++)
        half[i] = emu_f32_to_bf16(a[i]);
    assert_int_equal(cudaMemcpy(dh, half, nn * 2, cudaMemcpyHostToDevice),
                     cudaSuccess);
    ms_bf = timed_gemm_ex(h, CUDA_R_16BF, CUBLAS_COMPUTE_32F, dh, dc, N, c);
    assert_true(fabs(ms_bf - ms32) < 1e-3 * ms32);
    dev_free(da), dev_free(dh), dev_free(dc);
    free(a), free(ref), free(c), free(half);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

#define B200_ARG "--b200"

/* The worst of |c - exact| / (k u sum_p |a_ip| |a_jp|) over C = A A^T
 * (column-major, n x n, A n x n): the error over FP32's accumulation
 * bound, u = 2^-24. */
static double
over_fp32_bound(const float *a, const float *c, int n)
{
    double worst = 0.0, u = ldexp(1.0, -24);

    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            double exact = 0.0, mag = 0.0;

            for (int p = 0; p < n; p++) {
                double t = (double)a[i + (size_t)p * n] * a[j + (size_t)p * n];

                exact += t;
                mag += fabs(t);
            }
            worst = fmax(worst, fabs(c[i + (size_t)j * n] - exact) /
                                    (n * u * mag));
        }
    return worst;
}

/* Under AMPSHIM_EMU_GPU=b200, compute capability 10.0: cuBLAS's BF16x9
 * emulation of FP32 (docs/emulator.md, "FP32 emulation"). With the EAGER
 * strategy every EMULATED_16BFX9 product is emulated: its bits differ from
 * the FP32 product's and its error stays within FP32's bound; the math
 * mode CUBLAS_FP32_EMULATED_BF16X9_MATH makes cublasSgemm_v2 the same
 * product. The default strategy (PERFORMANT unless
 * CUBLAS_EMULATION_STRATEGY says otherwise) emulates only where it is
 * faster: a 1024^3 product, not a 64^3 one, which keeps FP32's bits. */
static void
test_b200_bf16x9(void **state)
{
    enum { N = 1024, S = 64 };
    size_t nn = (size_t)N * N;
    cublasHandle_t h = handle_new();
    cublasEmulationStrategy_t strategy;
    float *a = host_floats(nn), *ref = malloc(nn * 4), *c = malloc(nn * 4);
    float alpha = 1.0f, beta = 0.0f, ms32, ms9;
    void *da = dev_upload(a, nn * 4), *dc;

    (void)state;
    assert_true(ref && c);
    assert_int_equal(emu_gpu()->cc_major, 10);
    assert_int_equal(cudaMalloc(&dc, nn * 4), cudaSuccess);
    assert_int_equal(cublasGetEmulationStrategy(h, &strategy),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(strategy, CUBLAS_EMULATION_STRATEGY_DEFAULT);
    assert_int_equal(cublasSetEmulationStrategy(
                         h, (cublasEmulationStrategy_t)3),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasGetEmulationStrategy(h, NULL),
                     CUBLAS_STATUS_INVALID_VALUE);

    /* Small: FP32 is faster, so PERFORMANT keeps FP32's bits; EAGER
     * emulates. */
    ms32 = timed_gemm_ex(h, CUDA_R_32F, CUBLAS_COMPUTE_32F, da, dc, S, ref);
    ms9 = timed_gemm_ex(h, CUDA_R_32F, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, da,
                        dc, S, c);
    assert_memory_equal(c, ref, (size_t)S * S * 4);
    assert_true(ms9 == ms32);
    assert_int_equal(cublasSetEmulationStrategy(
                         h, CUBLAS_EMULATION_STRATEGY_EAGER),
                     CUBLAS_STATUS_SUCCESS);
    ms9 = timed_gemm_ex(h, CUDA_R_32F, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, da,
                        dc, S, c);
    assert_true(memcmp(c, ref, (size_t)S * S * 4) != 0);
    assert_true(ms9 > ms32);

    /* Large, with the default strategy again: emulated, faster, and as
     * accurate as FP32. */
    assert_int_equal(cublasSetEmulationStrategy(
                         h, CUBLAS_EMULATION_STRATEGY_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    ms32 = timed_gemm_ex(h, CUDA_R_32F, CUBLAS_COMPUTE_32F, da, dc, N, ref);
    ms9 = timed_gemm_ex(h, CUDA_R_32F, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, da,
                        dc, N, c);
    print_message("b200 %d^3: fp32 %.4f ms, bf16x9 %.4f ms (%.2fx); error "
                  "over FP32's bound: fp32 %.3f, bf16x9 %.3f\n", N, ms32,
                  ms9, ms32 / ms9, over_fp32_bound(a, ref, N),
                  over_fp32_bound(a, c, N));
    assert_true(memcmp(c, ref, nn * 4) != 0);
    assert_true(ms9 < ms32);
    assert_true(over_fp32_bound(a, c, N) <= 1.0);

    /* The math mode: cublasSgemm_v2 computes the same product. */
    assert_int_equal(cublasSetMathMode(h, CUBLAS_FP32_EMULATED_BF16X9_MATH),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_T, N, N, N,
                                    &alpha, da, N, da, N, &beta, dc, N),
                     CUBLAS_STATUS_SUCCESS);
    dev_download(ref, dc, nn * 4);
    assert_memory_equal(ref, c, nn * 4);
    dev_free(da), dev_free(dc);
    free(a), free(ref), free(c);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* This program again, with `arg`, under AMPSHIM_EMU_GPU=gpu (read once
 * per process): it must exit 0. */
static void
run_model_child(const char *gpu, const char *arg)
{
    int status = 0;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("AMPSHIM_EMU_GPU", gpu, 1);
        unsetenv("CUBLAS_EMULATION_STRATEGY");
        execl("/proc/self/exe", "test_emu_cublas", arg, (char *)NULL);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void
test_b200_emulation(void **state)
{
    (void)state;
    run_model_child("b200", B200_ARG);
}

static void
test_v100_without_tf32(void **state)
{
    (void)state;
    run_model_child("v100", V100_ARG);
}

/* ---- Matrix and vector copies ------------------------------------------- */

/* A rows x cols matrix of elem-byte elements through the device and back,
 * with three different leading dimensions; the device padding stays. */
static void
round_trip_matrix(int rows, int cols, int elem, int async)
{
    int lda = rows + 2, ldb = rows + 3, ldc = rows + 1;
    size_t sa = (size_t)lda * cols * elem, sb = (size_t)ldb * cols * elem;
    size_t sc = (size_t)ldc * cols * elem;
    unsigned char *a = malloc(sa), *b = malloc(sb), *c = calloc(1, sc);
    unsigned char *dev;
    cudaStream_t s = NULL;

    assert_true(a && b && c);
    for (size_t i = 0; i < sa; i++)
        a[i] = (unsigned char)(rnd() * 127.0f + 128.0f);
    memset(b, 0xa5, sb);
    dev = dev_upload(b, sb);
    if (async) {
        assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
        assert_int_equal(cublasSetMatrixAsync(rows, cols, elem, a, lda, dev,
                                              ldb, s), CUBLAS_STATUS_SUCCESS);
        assert_int_equal(cublasGetMatrixAsync(rows, cols, elem, dev, ldb, c,
                                              ldc, s), CUBLAS_STATUS_SUCCESS);
        assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
        assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    } else {
        assert_int_equal(cublasSetMatrix(rows, cols, elem, a, lda, dev, ldb),
                         CUBLAS_STATUS_SUCCESS);
        assert_int_equal(cublasGetMatrix(rows, cols, elem, dev, ldb, c, ldc),
                         CUBLAS_STATUS_SUCCESS);
    }
    for (int j = 0; j < cols; j++) {
        assert_memory_equal(c + (size_t)j * ldc * elem,
                            a + (size_t)j * lda * elem, (size_t)rows * elem);
        memcpy(b + (size_t)j * ldb * elem, a + (size_t)j * lda * elem,
               (size_t)rows * elem);
    }
    assert_dev_equals(dev, b, sb);  /* rows..ldb-1 keep 0xa5 */
    dev_free(dev);
    free(a), free(b), free(c);
}

static void
test_matrix_round_trip(void **state)
{
    (void)state;
    round_trip_matrix(7, 5, 4, 0);
    round_trip_matrix(13, 3, 2, 0);
    round_trip_matrix(4, 9, 8, 1);
    round_trip_matrix(1, 1, 4, 1);
}

static void
round_trip_vector(int n, int elem, int incx, int incy, int async)
{
    size_t sx = (size_t)n * incx * elem, sy = (size_t)n * incy * elem;
    unsigned char *x = malloc(sx), *y = malloc(sy), *back = calloc(1, sx);
    unsigned char *dev;
    cudaStream_t s = NULL;

    assert_true(x && y && back);
    for (size_t i = 0; i < sx; i++)
        x[i] = (unsigned char)(rnd() * 127.0f + 128.0f);
    memset(y, 0x3c, sy);
    dev = dev_upload(y, sy);
    if (async) {
        assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
        assert_int_equal(cublasSetVectorAsync(n, elem, x, incx, dev, incy, s),
                         CUBLAS_STATUS_SUCCESS);
        assert_int_equal(cublasGetVectorAsync(n, elem, dev, incy, back, incx,
                                              s), CUBLAS_STATUS_SUCCESS);
        assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
        assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    } else {
        assert_int_equal(cublasSetVector(n, elem, x, incx, dev, incy),
                         CUBLAS_STATUS_SUCCESS);
        assert_int_equal(cublasGetVector(n, elem, dev, incy, back, incx),
                         CUBLAS_STATUS_SUCCESS);
    }
    for (int i = 0; i < n; i++) {
        size_t at_x = (size_t)i * incx * elem, at_y = (size_t)i * incy * elem;
        assert_memory_equal(back + at_x, x + at_x, (size_t)elem);
        memcpy(y + at_y, x + at_x, (size_t)elem);
    }
    for (size_t i = 0; i < sx; i++)     /* the gaps of back stay zero */
        if ((i / (size_t)elem) % (size_t)incx != 0)
            assert_int_equal(back[i], 0);
    assert_dev_equals(dev, y, sy);
    dev_free(dev);
    free(x), free(y), free(back);
}

static void
test_vector_round_trip(void **state)
{
    (void)state;
    round_trip_vector(17, 4, 1, 1, 0);
    round_trip_vector(17, 4, 2, 3, 0);
    round_trip_vector(9, 8, 3, 1, 1);
    round_trip_vector(5, 2, 1, 4, 1);
}

static void
test_copy_argument_checks(void **state)
{
    const cublasStatus_t inval = CUBLAS_STATUS_INVALID_VALUE;
    float host[32], out[32];
    float *d;

    (void)state;
    for (int i = 0; i < 32; i++)
        host[i] = (float)i, out[i] = -1.0f;
    d = dev_upload(host, sizeof(host));
    /* Documented: rows, cols < 0 or elemSize, lda, ldb <= 0. */
    assert_int_equal(cublasSetMatrix(-1, 2, 4, out, 4, d, 4), inval);
    assert_int_equal(cublasSetMatrix(2, -1, 4, out, 4, d, 4), inval);
    assert_int_equal(cublasSetMatrix(2, 2, 0, out, 4, d, 4), inval);
    assert_int_equal(cublasSetMatrix(2, 2, 4, out, 0, d, 4), inval);
    assert_int_equal(cublasSetMatrix(2, 2, 4, out, 4, d, -4), inval);
    assert_int_equal(cublasSetMatrixAsync(2, 2, -4, out, 4, d, 4, NULL),
                     inval);
    assert_int_equal(cublasGetMatrix(2, -3, 4, d, 4, out, 4), inval);
    assert_int_equal(cublasGetMatrixAsync(2, 2, 4, d, 0, out, 4, NULL), inval);
    /* A leading dimension below the row count is refused by the strided
     * copy underneath: a mapping error, and nothing is copied. */
    assert_int_equal(cublasSetMatrix(4, 2, 4, out, 3, d, 4),
                     CUBLAS_STATUS_MAPPING_ERROR);
    assert_int_equal(cublasGetMatrix(4, 2, 4, d, 4, out, 2),
                     CUBLAS_STATUS_MAPPING_ERROR);
    /* Documented for vectors: incx, incy, elemSize <= 0. */
    assert_int_equal(cublasSetVector(4, 4, out, 0, d, 1), inval);
    assert_int_equal(cublasSetVector(4, 4, out, 1, d, -1), inval);
    assert_int_equal(cublasSetVector(4, 0, out, 1, d, 1), inval);
    assert_int_equal(cublasGetVector(4, 4, d, 1, out, 0), inval);
    assert_int_equal(cublasSetVectorAsync(4, 4, out, -2, d, 1, NULL), inval);
    assert_int_equal(cublasGetVectorAsync(4, -1, d, 1, out, 1, NULL), inval);
    /* Empty copies succeed and copy nothing. */
    assert_int_equal(cublasSetMatrix(0, 3, 4, out, 1, d, 1),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSetVector(0, 4, out, 1, d, 1),
                     CUBLAS_STATUS_SUCCESS);
    assert_dev_equals(d, host, sizeof(host));
    for (int i = 0; i < 32; i++)
        assert_true(out[i] == -1.0f);
    dev_free(d);
}

/* ---- Level 1 and 2 ------------------------------------------------------ */

/* Element i of a BLAS vector of len elements: a negative increment walks
 * it from the end (the pointer is its lowest address). */
static size_t
vec_at(int i, int len, int inc)
{
    return inc >= 0 ? (size_t)i * (size_t)inc
                    : (size_t)(len - 1 - i) * (size_t)(-inc);
}

static size_t
vec_span(int len, int inc)
{
    return (size_t)(len - 1) * (size_t)abs(inc) + 1;
}

static void
run_saxpy(cublasHandle_t h, int n, float alpha, int incx, int incy,
          int device_alpha)
{
    size_t sx = vec_span(n, incx), sy = vec_span(n, incy);
    float *x = host_floats(sx), *y = host_floats(sy), *want = malloc(sy * 4);
    double *mag = calloc(sy, sizeof(double));
    float *dx, *dy, *da;

    assert_true(want && mag);
    memcpy(want, y, sy * 4);
    for (int i = 0; i < n; i++) {
        size_t yi = vec_at(i, n, incy);
        double ax = (double)alpha * x[vec_at(i, n, incx)];
        want[yi] = (float)(ax + y[yi]);
        mag[yi] = fabs(ax) + fabs((double)y[yi]);
    }
    dx = dev_upload(x, sx * 4);
    dy = dev_upload(y, sy * 4);
    da = dev_upload(&alpha, 4);
    assert_int_equal(cublasSetPointerMode_v2(h, device_alpha
                                             ? CUBLAS_POINTER_MODE_DEVICE
                                             : CUBLAS_POINTER_MODE_HOST),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSaxpy_v2(h, n, device_alpha ? da : &alpha, dx,
                                    incx, dy, incy), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(y, dy, sy * 4);
    /* Two roundings there and one in want: within 3 u32 of the terms;
     * the gaps (mag 0) stay exact. */
    for (size_t i = 0; i < sy; i++)
        if (!(fabs((double)y[i] - want[i]) <= 0x1p-22 * mag[i]))
            fail_msg("y[%zu] = %.9g, want %.9g", i, y[i], want[i]);
    dev_free(dx), dev_free(dy), dev_free(da);
    free(x), free(y), free(want), free(mag);
}

static void
test_saxpy(void **state)
{
    cublasHandle_t h = handle_new();
    float host[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, alpha = 2.0f;
    float *d;

    (void)state;
    run_saxpy(h, 100, 0.75f, 1, 1, 0);
    run_saxpy(h, 37, -1.5f, 2, 3, 0);
    run_saxpy(h, 37, 3.0f, -2, 1, 0);
    run_saxpy(h, 21, 0.5f, 1, -3, 0);
    run_saxpy(h, 21, -0.25f, -1, -2, 1);
    run_saxpy(h, 10, 0.0f, 1, 1, 0);            /* y unchanged */
    assert_int_equal(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST),
                     CUBLAS_STATUS_SUCCESS);
    d = dev_upload(host, sizeof(host));
    assert_int_equal(cublasSaxpy_v2(h, 0, &alpha, d, 1, d + 4, 1),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSaxpy_v2(h, -3, &alpha, d, 1, d + 4, 1),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSaxpy_v2(NULL, 4, &alpha, d, 1, d + 4, 1),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_dev_equals(d, host, sizeof(host));
    dev_free(d);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

struct gemv_case {
    cublasOperation_t trans;
    int m, n, lda, incx, incy;
    float alpha, beta;
};

static void
run_sgemv(cublasHandle_t h, const struct gemv_case *v, float y_fill)
{
    int lenx = v->trans == CUBLAS_OP_N ? v->n : v->m;
    int leny = v->trans == CUBLAS_OP_N ? v->m : v->n;
    size_t na = (size_t)v->lda * v->n;
    size_t sx = vec_span(lenx, v->incx), sy = vec_span(leny, v->incy);
    float *a = host_floats(na), *x = host_floats(sx), *y = host_floats(sy);
    float *got = malloc(sy * 4);
    float *da, *dx, *dy, *ds;
    const float *pa, *pb;

    assert_non_null(got);
    scalar_ptrs(h, &v->alpha, &v->beta, &pa, &pb, &ds);
    for (int i = 0; i < leny && y_fill != 0.0f; i++)
        y[vec_at(i, leny, v->incy)] = y_fill;
    da = dev_upload(a, na * 4);
    dx = dev_upload(x, sx * 4);
    dy = dev_upload(y, sy * 4);
    assert_int_equal(cublasSgemv_v2(h, v->trans, v->m, v->n, pa, da, v->lda,
                                    dx, v->incx, pb, dy, v->incy),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(got, dy, sy * 4);
    for (int i = 0; i < leny; i++) {
        double s = 0.0, mag = 0.0, want, cv = 0.0;
        size_t yi = vec_at(i, leny, v->incy);
        for (int p = 0; p < lenx; p++) {
            double av = v->trans == CUBLAS_OP_N
                            ? a[(size_t)i + (size_t)p * v->lda]
                            : a[(size_t)p + (size_t)i * v->lda];
            double prod = av * x[vec_at(p, lenx, v->incx)];
            s += prod;
            mag += fabs(prod);
        }
        if (v->beta != 0.0f)
            cv = (double)v->beta * y[yi];
        want = v->alpha * s + cv;
        mag = fabs((double)v->alpha) * mag + fabs(cv);
        if (!(fabs(got[yi] - want) <= (lenx + 4) * 0x1p-24 * mag + 0x1p-100))
            fail_msg("y(%d) = %.9g, reference %.9g", i, got[yi], want);
        y[yi] = got[yi];
    }
    assert_memory_equal(got, y, sy * 4);    /* the gaps are untouched */
    dev_free(da), dev_free(dx), dev_free(dy);
    if (ds != NULL)
        dev_free(ds);
    free(a), free(x), free(y), free(got);
}

static void
test_sgemv(void **state)
{
    const struct gemv_case cases[] = {
        { CUBLAS_OP_N, 37, 23, 40, 1, 1, 1.25f, -0.5f },
        { CUBLAS_OP_T, 37, 23, 37, 1, 1, -0.75f, 2.0f },
        { CUBLAS_OP_N, 19, 30, 21, 2, 3, 0.5f, 1.0f },
        { CUBLAS_OP_C, 19, 30, 19, 3, 2, 1.0f, 0.25f },
        { CUBLAS_OP_N, 16, 11, 16, -2, -3, 1.5f, 0.5f },
        { CUBLAS_OP_T, 16, 11, 17, -1, 2, 2.0f, -1.0f },
    };
    const struct gemv_case nan_y = { CUBLAS_OP_T, 12, 9, 14, 1, -2, 1.0f,
                                     0.0f };
    cublasHandle_t h = handle_new();

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_sgemv(h, &cases[i], 0.0f);
    run_sgemv(h, &nan_y, NAN);              /* beta == 0: y not read */
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

static void
test_sgemv_argument_checks(void **state)
{
    cublasHandle_t h = handle_new();
    const cublasOperation_t N = CUBLAS_OP_N;
    const cublasStatus_t inval = CUBLAS_STATUS_INVALID_VALUE;
    float host[32], alpha = 1.0f, beta = 0.0f;
    float *d;

    (void)state;
    for (int i = 0; i < 32; i++)
        host[i] = (float)i;
    d = dev_upload(host, sizeof(host));
    assert_int_equal(cublasSgemv_v2(NULL, N, 4, 2, &alpha, d, 4, d, 1, &beta,
                                    d + 8, 1), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasSgemv_v2(h, (cublasOperation_t)9, 4, 2, &alpha, d,
                                    4, d, 1, &beta, d + 8, 1), inval);
    assert_int_equal(cublasSgemv_v2(h, N, -1, 2, &alpha, d, 4, d, 1, &beta,
                                    d + 8, 1), inval);
    assert_int_equal(cublasSgemv_v2(h, N, 4, -2, &alpha, d, 4, d, 1, &beta,
                                    d + 8, 1), inval);
    assert_int_equal(cublasSgemv_v2(h, N, 4, 2, &alpha, d, 3, d, 1, &beta,
                                    d + 8, 1), inval);
    assert_int_equal(cublasSgemv_v2(h, CUBLAS_OP_T, 0, 2, &alpha, d, 0, d, 1,
                                    &beta, d + 8, 1), inval);
    assert_int_equal(cublasSgemv_v2(h, N, 4, 2, &alpha, d, 4, d, 0, &beta,
                                    d + 8, 1), inval);
    assert_int_equal(cublasSgemv_v2(h, N, 4, 2, &alpha, d, 4, d, 1, &beta,
                                    d + 8, 0), inval);
    /* Empty: success, nothing written. */
    assert_int_equal(cublasSgemv_v2(h, N, 0, 2, &alpha, d, 1, d, 1, &beta,
                                    d + 8, 1), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemv_v2(h, N, 4, 0, &alpha, d, 4, d, 1, &beta,
                                    d + 8, 1), CUBLAS_STATUS_SUCCESS);
    assert_dev_equals(d, host, sizeof(host));
    dev_free(d);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* ---- Non-finite values and threads ------------------------------------- */

/* NaN and Inf in the operands come out where FP32 arithmetic puts them;
 * the rest of C stays finite and correct. */
static void
test_sgemm_nan_inf_propagate(void **state)
{
    cublasHandle_t h = handle_new();
    struct gemm_case g = { CUBLAS_OP_N, CUBLAS_OP_N, 5, 6, 7, 5, 7, 5,
                           1.0f, 0.0f };
    float *a = host_floats(35), *b = host_floats(42), c[30], got[30];
    double ref[30], mag[30];
    float *da, *db, *dc;

    (void)state;
    for (int i = 0; i < 42; i++)
        b[i] = fabsf(b[i]) + 0.125f;        /* no Inf * 0, no sign mix */
    a[1 + 2 * 5] = NAN;                     /* row 1 of C: NaN */
    a[3 + 4 * 5] = INFINITY;                /* row 3 of C: +Inf */
    b[6 + 2 * 7] = -INFINITY;               /* column 2: +-Inf or NaN */
    for (int i = 0; i < 30; i++)
        c[i] = NAN;
    ref_gemm(&g, a, b, c, ref, mag);
    da = dev_upload(a, 35 * 4), db = dev_upload(b, 42 * 4);
    dc = dev_upload(c, 30 * 4);
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 5, 6, 7,
                                    &g.alpha, da, 5, db, 7, &g.beta, dc, 5),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(got, dc, 30 * 4);
    for (int i = 0; i < 30; i++) {
        int row = i % 5, col = i / 5;
        if (row == 1)
            assert_true(isnan(ref[i]));
        else if (row == 3 || col == 2)
            assert_false(isfinite(ref[i]));
        if (isnan(ref[i]))
            assert_true(isnan(got[i]));
        else if (isinf(ref[i]))
            assert_true(got[i] == ref[i]);
        else
            assert_true(fabs(got[i] - ref[i]) <= 11 * 0x1p-24 * mag[i]);
    }
    dev_free(da), dev_free(db), dev_free(dc);
    free(a), free(b);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* A binary16 C overflows to infinity exactly where the FP32 sum passes
 * the largest half (65504), and holds 65280 = 255 * 16 * 16 exactly. */
static void
test_gemm_ex_half_output_overflow(void **state)
{
    enum { K = 256 };
    cublasHandle_t h = handle_new();
    uint16_t a[2 * K], b[K * 2], c[4];
    float alpha = 1.0f, beta = 0.0f;
    void *da, *db, *dc;

    (void)state;
    for (int i = 0; i < 2 * K; i++)
        a[i] = 0x4c00u, b[i] = 0x4c00u;     /* 16.0 */
    for (int p = 0; p < K; p++)             /* row 0 of A: one term short */
        a[2 * p] = p == K - 1 ? 0 : 0x4c00u;
    da = dev_upload(a, sizeof(a)), db = dev_upload(b, sizeof(b));
    assert_int_equal(cudaMalloc(&dc, sizeof(c)), cudaSuccess);
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, K,
                                  &alpha, da, CUDA_R_16F, 2, db, CUDA_R_16F,
                                  K, &beta, dc, CUDA_R_16F, 2,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(c, dc, sizeof(c));
    assert_int_equal(c[0], 0x7bf8u);        /* 65280 */
    assert_int_equal(c[2], 0x7bf8u);
    assert_int_equal(c[1], 0x7c00u);        /* 65536: +Inf */
    assert_int_equal(c[3], 0x7c00u);
    dev_free(da), dev_free(db), dev_free(dc);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* Sgemv and GemmEx with alpha and beta in device memory. */
static void
test_device_scalars_gemv_gemm_ex(void **state)
{
    const struct gemv_case v = { CUBLAS_OP_T, 20, 15, 22, 2, -1, 0.5f,
                                 -1.5f };
    const struct ex_case e = { CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F,
                               RND_NONE, CUBLAS_OP_N, CUBLAS_OP_T };
    cublasHandle_t h = handle_new();

    (void)state;
    assert_int_equal(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE),
                     CUBLAS_STATUS_SUCCESS);
    run_sgemv(h, &v, 0.0f);
    run_gemm_ex(h, &e);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

struct worker {
    cublasHandle_t handle;
    int seed, bad;
};

/* One thread's GEMMs on the shared handle, checked without cmocka (its
 * asserts must not jump across threads). */
static void *
worker_run(void *arg)
{
    struct worker *w = arg;
    float a[64], b[64], c[64], alpha = 1.0f, beta = 0.0f;
    float *da = NULL, *db = NULL, *dc = NULL;

    for (int i = 0; i < 64; i++)
        a[i] = (float)((i + w->seed) % 7), b[i] = (float)(i % 5);
    if (cudaMalloc((void **)&da, 256) || cudaMalloc((void **)&db, 256) ||
        cudaMalloc((void **)&dc, 256) ||
        cudaMemcpy(da, a, 256, cudaMemcpyHostToDevice) ||
        cudaMemcpy(db, b, 256, cudaMemcpyHostToDevice)) {
        w->bad = -1;
        goto out;
    }
    for (int round = 0; round < 50 && !w->bad; round++) {
        if (cublasSgemm_v2(w->handle, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8,
                           &alpha, da, 8, db, 8, &beta, dc, 8) ||
            cudaMemcpy(c, dc, 256, cudaMemcpyDeviceToHost)) {
            w->bad = -1;
            break;
        }
        for (int i = 0; i < 8; i++) {
            for (int j = 0; j < 8; j++) {
                float s = 0.0f;     /* small integers: exact */
                for (int p = 0; p < 8; p++)
                    s += a[i + 8 * p] * b[p + 8 * j];
                w->bad += c[i + 8 * j] != s;
            }
        }
    }
out:
    cudaFree(da), cudaFree(db), cudaFree(dc);
    return NULL;
}

/* cuBLAS routines are thread-safe on one handle. */
static void
test_shared_handle_threads(void **state)
{
    struct worker w[4];
    pthread_t t[4];
    cublasHandle_t h = handle_new();

    (void)state;
    for (int i = 0; i < 4; i++) {
        w[i].handle = h, w[i].seed = i, w[i].bad = 0;
        assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].bad, 0);
    }
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* ---- Deferred execution -------------------------------------------------- */

/* Work on a non-blocking stream changes device memory only once that
 * stream has run; host scalars are taken at the call. A blocking stream's
 * work is ordered before later legacy-stream copies. */
static void
test_deferred_execution(void **state)
{
    cublasHandle_t h = handle_new();
    struct gemm_case g = { CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, 8, 8, 8,
                           1.0f, 0.0f };
    float *a = host_floats(64), *b = host_floats(64), *c = host_c(&g, 0.0f);
    float got[64], alpha = 1.0f, beta = 0.0f;
    double ref[64], mag[64];
    float *da = dev_upload(a, 256), *db = dev_upload(b, 256);
    float *dc = dev_upload(c, 256);
    cudaStream_t quiet, blocking;

    (void)state;
    ref_gemm(&g, a, b, c, ref, mag);
    assert_int_equal(cudaStreamCreateWithFlags(&quiet, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaStreamCreate(&blocking), cudaSuccess);
    assert_int_equal(cublasSetStream_v2(h, quiet), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8,
                                    &alpha, da, 8, db, 8, &beta, dc, 8),
                     CUBLAS_STATUS_SUCCESS);
    alpha = 1000.0f;    /* host scalars were read at the call */
    assert_int_equal(cudaStreamQuery(quiet), cudaErrorNotReady);
    assert_int_equal(cudaStreamSynchronize(quiet), cudaSuccess);
    dev_download(got, dc, 256);
    check_gemm_result(&g, got, ref, mag, 0.0);

    /* A blocking stream: the legacy-stream copy waits for it. */
    g.alpha = -2.0f;
    alpha = -2.0f;
    ref_gemm(&g, a, b, c, ref, mag);
    assert_int_equal(cublasSetStream_v2(h, blocking), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8,
                                    &alpha, da, 8, db, 8, &beta, dc, 8),
                     CUBLAS_STATUS_SUCCESS);
    dev_download(got, dc, 256);
    check_gemm_result(&g, got, ref, mag, 0.0);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(quiet), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(blocking), cudaSuccess);
    dev_free(da), dev_free(db), dev_free(dc);
    free(a), free(b), free(c);
}

/* A GEMM captured into a graph runs only when the graph is launched, and
 * each launch runs it again with the scalars of the captured call. */
static void
test_graph_capture_replay(void **state)
{
    cublasHandle_t h = handle_new();
    struct gemm_case g = { CUBLAS_OP_N, CUBLAS_OP_T, 6, 5, 9, 6, 5, 6,
                           0.5f, 1.0f };
    float *a = host_floats(54), *b = host_floats(45), *c = host_c(&g, 0.0f);
    float c1[30], got[30];
    double ref1[30], ref2[30], mag1[30], mag2[30];
    float *da = dev_upload(a, 54 * 4), *db = dev_upload(b, 45 * 4);
    float *dc = dev_upload(c, 30 * 4);
    cudaStream_t s;
    CUgraph graph;
    CUgraphExec exec;

    (void)state;
    ref_gemm(&g, a, b, c, ref1, mag1);
    for (int i = 0; i < 30; i++)
        c1[i] = (float)ref1[i];
    ref_gemm(&g, a, b, c1, ref2, mag2);
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cublasSetStream_v2(h, s), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    assert_int_equal(cublasSgemm_v2(h, g.ta, g.tb, 6, 5, 9, &g.alpha, da, 6,
                                    db, 5, &g.beta, dc, 6),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
    assert_int_equal(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
    assert_dev_equals(dc, c, 30 * 4);       /* captured, not run */
    assert_int_equal(cuGraphLaunch(exec, s), CUDA_SUCCESS);
    assert_int_equal(cuGraphLaunch(exec, s), CUDA_SUCCESS);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    dev_download(got, dc, 30 * 4);
    for (int i = 0; i < 30; i++)
        mag2[i] += mag1[i];
    check_gemm_result(&g, got, ref2, mag2, 0.0);
    assert_int_equal(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    assert_int_equal(cuGraphDestroy(graph), CUDA_SUCCESS);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    dev_free(da), dev_free(db), dev_free(dc);
    free(a), free(b), free(c);
}

/* ---- Modelled timing ---------------------------------------------------- */

/* Modelled milliseconds of one GEMM between an event pair on stream s
 * (the span less the stop event's record). */
static float
timed_gemm(cublasHandle_t h, cudaStream_t s, cudaDataType ab, void *a,
           void *b, float *c, int n)
{
    cudaEvent_t start, stop;
    float alpha = 1.0f, beta = 0.0f, ms = -1.0f;

    assert_int_equal(cudaEventCreate(&start), cudaSuccess);
    assert_int_equal(cudaEventCreate(&stop), cudaSuccess);
    assert_int_equal(cublasSetStream_v2(h, s), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaEventRecord(start, s), cudaSuccess);
    if (ab == CUDA_R_32F)
        assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
                                        &alpha, a, n, b, n, &beta, c, n),
                         CUBLAS_STATUS_SUCCESS);
    else
        assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
                                      &alpha, a, ab, n, b, ab, n, &beta, c,
                                      CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT),
                         CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaEventRecord(stop, s), cudaSuccess);
    assert_int_equal(cudaEventSynchronize(stop), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    assert_int_equal(cudaEventDestroy(start), cudaSuccess);
    assert_int_equal(cudaEventDestroy(stop), cudaSuccess);
    return ms - (float)(emu_event_record_ns() * 1e-6);
}

/* Roofline milliseconds of an n^3 GEMM, C written once, not read, at
 * `tflops` (a peak times the share the model delivers of it). */
static double
roofline_ms(int n, double tflops, size_t ab_bytes)
{
    const struct emu_gpu *gpu = emu_gpu();
    double nn = (double)n * n;
    double math = 2.0 * nn * n / (tflops * 1e12);
    double bytes = nn * (2.0 * (double)ab_bytes + 4.0);
    double mem = bytes / (gpu->bandwidth_tbs * 1e12 * gpu->mem_efficiency);

    return ((math > mem ? math : mem) + gpu->launch_latency_us * 1e-6) * 1e3;
}

static void
test_modelled_timing(void **state)
{
    const struct emu_gpu *gpu = emu_gpu();
    const int n = 1024;
    size_t nn = (size_t)n * n;
    cublasHandle_t h = handle_new();
    uint16_t *half = malloc(nn * 2);
    float *ones = malloc(nn * 4), *got = malloc(nn * 4);
    void *da, *db, *ha, *hb;
    float *dc;
    double want32 = roofline_ms(n, gpu->fp32_tflops * gpu->fp32_efficiency,
                                4);
    double want16 = roofline_ms(n, gpu->fp16_tflops * gpu->fp16_efficiency,
                                2);
    float ms32, ms16;
    cudaStream_t s;

    (void)state;
    assert_true(half && ones && got);
    for (size_t i = 0; i < nn; i++)
        ones[i] = 1.0f, half[i] = 0x3c00u;  /* 1.0 in binary16 */
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    da = dev_upload(ones, nn * 4);
    db = dev_upload(ones, nn * 4);
    ha = dev_upload(half, nn * 2);
    hb = dev_upload(half, nn * 2);
    assert_int_equal(cudaMalloc((void **)&dc, nn * 4), cudaSuccess);
    ms32 = timed_gemm(h, s, CUDA_R_32F, da, db, dc, n);
    dev_download(got, dc, nn * 4);
    assert_true(got[0] == 1024.0f && got[nn - 1] == 1024.0f);
    ms16 = timed_gemm(h, s, CUDA_R_16F, ha, hb, dc, n);
    dev_download(got, dc, nn * 4);
    assert_true(got[0] == 1024.0f && got[nn / 2 + 7] == 1024.0f);
    print_message("emulated %s: 1024^3 FP32 %.4f ms (model %.4f), "
                  "FP16 %.4f ms (model %.4f)\n", gpu->name, ms32, want32,
                  ms16, want16);
    assert_true(fabs(ms32 - want32) <= 0.02 * want32);
    assert_true(fabs(ms16 - want16) <= 0.02 * want16);
    /* Faster by what the GPU's rates say: ~7x on an H100, ~2x on an RTX
     * 4090 (FP32-accumulate Tensor Core rate). */
    assert_true(ms16 < ms32);
    assert_true(fabs(ms32 / ms16 - want32 / want16) <= 0.05 * want32 / want16);
    dev_free(da), dev_free(db), dev_free(ha), dev_free(hb), dev_free(dc);
    free(half), free(ones), free(got);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* ---- Fault injection (in a child with AMPSHIM_EMU_FAIL set) ------------ */

#define FAULT_ARG "--fault-child"
#define FAULT_SPEC                                                           \
    "cublasGemmEx:1,cublasCreate_v2:1,cublasSgemm_v2:1:partial,"             \
    "cublasSgemmStridedBatched:2:14:partial"

/* Runs in the child: the first create and the first GemmEx fail with the
 * stand-in's documented statuses, the next ones work. */
static void
test_fault_child(void **state)
{
    cublasHandle_t h = (cublasHandle_t)0x1;
    struct gemm_case g = { CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, 4, 4, 4,
                           1.0f, 0.0f };
    float a[16], b[16], c[16], got[16];
    double ref[16], mag[16];
    float *da, *db, *dc;

    (void)state;
    for (int i = 0; i < 16; i++)
        a[i] = rnd(), b[i] = rnd(), c[i] = 7.0f;
    ref_gemm(&g, a, b, c, ref, mag);
    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_ptr_equal(h, (cublasHandle_t)0x1);
    h = handle_new();
    da = dev_upload(a, 64), db = dev_upload(b, 64), dc = dev_upload(c, 64);
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4,
                                  &g.alpha, da, CUDA_R_32F, 4, db, CUDA_R_32F,
                                  4, &g.beta, dc, CUDA_R_32F, 4,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_EXECUTION_FAILED);
    assert_dev_equals(dc, c, 64);           /* the failed call did nothing */
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4,
                                  &g.alpha, da, CUDA_R_32F, 4, db, CUDA_R_32F,
                                  4, &g.beta, dc, CUDA_R_32F, 4,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(got, dc, 64);
    check_gemm_result(&g, got, ref, mag, 0.0);
    dev_free(da), dev_free(db), dev_free(dc);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* A partial fault: the call fails, and once the stream has run, the first
 * half of the columns of its first matrix hold the whole result (beta
 * applied) and everything else is as it was. The reference is the same
 * call, unfaulted, on another copy of C. */
static void
test_fault_partial_child(void **state)
{
    cublasHandle_t h = handle_new();
    const float alpha = 1.5f, beta = 0.5f;
    float a[32], b[32], c[32], full[32], got[32];
    float *da, *db, *dc, *dref;

    (void)state;
    for (int i = 0; i < 32; i++)
        a[i] = rnd(), b[i] = rnd(), c[i] = rnd();
    da = dev_upload(a, sizeof a), db = dev_upload(b, sizeof b);
    dc = dev_upload(c, sizeof c), dref = dev_upload(c, sizeof c);
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4,
                                    &alpha, da, 4, db, 4, &beta, dc, 4),
                     CUBLAS_STATUS_EXECUTION_FAILED);
    assert_int_equal(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4,
                                    &alpha, da, 4, db, 4, &beta, dref, 4),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(full, dref, 64);
    dev_download(got, dc, 64);
    assert_memory_equal(got, full, 8 * sizeof(float));
    assert_memory_equal(got + 8, c + 8, 8 * sizeof(float));

    /* A batch of two: the first call works, the second fails with the
     * entry's status and writes only half of its first matrix. */
    assert_int_equal(cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice),
                     cudaSuccess);
    assert_int_equal(cudaMemcpy(dref, c, sizeof c, cudaMemcpyHostToDevice),
                     cudaSuccess);
    assert_int_equal(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N,
                                               4, 4, 4, &alpha, da, 4, 16,
                                               db, 4, 16, &beta, dref, 4, 16,
                                               2),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N,
                                               4, 4, 4, &alpha, da, 4, 16,
                                               db, 4, 16, &beta, dc, 4, 16,
                                               2),
                     CUBLAS_STATUS_INTERNAL_ERROR);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(full, dref, sizeof full);
    dev_download(got, dc, sizeof got);
    assert_memory_equal(got, full, 8 * sizeof(float));
    assert_memory_equal(got + 8, c + 8, 24 * sizeof(float));
    dev_free(da), dev_free(db), dev_free(dc), dev_free(dref);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

/* The variable is read once per process: run the checks in a fresh one. */
static void
test_fault_injection(void **state)
{
    (void)state;
    emu_test_rerun_with_faults("test_emu_cublas", FAULT_SPEC, FAULT_ARG);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest fault_tests[] = {
        cmocka_unit_test(test_fault_child),
        cmocka_unit_test(test_fault_partial_child),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handle_lifecycle),
        cmocka_unit_test(test_handle_stream),
        cmocka_unit_test(test_handle_pointer_mode),
        cmocka_unit_test(test_handle_math_mode),
        cmocka_unit_test(test_handle_sm_count_target),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_sgemm_transposes),
        cmocka_unit_test(test_sgemm_blocked_sizes),
        cmocka_unit_test(test_sgemm_beta_zero_ignores_c),
        cmocka_unit_test(test_sgemm_alpha_zero_and_k_zero),
        cmocka_unit_test(test_sgemm_empty),
        cmocka_unit_test(test_sgemm_device_scalars),
        cmocka_unit_test(test_sgemm_argument_checks),
        cmocka_unit_test(test_sgemm_math_modes),
        cmocka_unit_test(test_gemm_ex_fp32_compute_types),
        cmocka_unit_test(test_gemm_ex_half_operands),
        cmocka_unit_test(test_gemm_ex_unsupported),
        cmocka_unit_test(test_gemm_64_entry_points),
        cmocka_unit_test(test_sgemm_batched_and_strided),
        cmocka_unit_test(test_gemm_batched_ex),
        cmocka_unit_test(test_gemm_batched_ex_alignment),
        cmocka_unit_test(test_batched_argument_checks),
        cmocka_unit_test(test_sgemm_ex),
        cmocka_unit_test(test_sgemm_ex_int8),
        cmocka_unit_test(test_grouped_batched),
        cmocka_unit_test(test_grouped_argument_checks),
        cmocka_unit_test(test_batched_modelled_time),
        cmocka_unit_test(test_matrix_round_trip),
        cmocka_unit_test(test_vector_round_trip),
        cmocka_unit_test(test_copy_argument_checks),
        cmocka_unit_test(test_saxpy),
        cmocka_unit_test(test_sgemv),
        cmocka_unit_test(test_sgemv_argument_checks),
        cmocka_unit_test(test_sgemm_nan_inf_propagate),
        cmocka_unit_test(test_gemm_ex_half_output_overflow),
        cmocka_unit_test(test_device_scalars_gemv_gemm_ex),
        cmocka_unit_test(test_shared_handle_threads),
        cmocka_unit_test(test_deferred_execution),
        cmocka_unit_test(test_graph_capture_replay),
        cmocka_unit_test(test_modelled_timing),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_v100_without_tf32),
        cmocka_unit_test(test_b200_emulation),
    };
    const struct CMUnitTest v100_tests[] = {
        cmocka_unit_test(test_v100_model),
    };
    const struct CMUnitTest b200_tests[] = {
        cmocka_unit_test(test_b200_bf16x9),
    };

    if (argc > 1 && strcmp(argv[1], FAULT_ARG) == 0)
        return cmocka_run_group_tests_name("emu_cublas_faults", fault_tests,
                                           NULL, NULL);
    if (argc > 1 && strcmp(argv[1], V100_ARG) == 0)
        return cmocka_run_group_tests_name("emu_cublas_v100", v100_tests,
                                           NULL, NULL);
    if (argc > 1 && strcmp(argv[1], B200_ARG) == 0)
        return cmocka_run_group_tests_name("emu_cublas_b200", b200_tests,
                                           NULL, NULL);
    /* Faults only where a test asks for them, in its own process. */
    unsetenv("AMPSHIM_EMU_FAIL");
    return cmocka_run_group_tests_name("emu_cublas", tests, NULL, NULL);
}
