/* Helpers the example programs share: status names, reporting failed
 * CUDA calls, deterministic test data, result hashes, the tolerance named
 * on the command line and the per-element check. Include after the cuBLAS
 * header of the program's choice (cublas.h or cublas_v2.h), with
 * EXAMPLE_PROG defined to the program's name. */
#ifndef EXAMPLE_UTIL_H
#define EXAMPLE_UTIL_H

#include <cuda_runtime_api.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exit statuses. */
#define EXIT_ALL_PASS 0
#define EXIT_CHECK_FAILED 1
#define EXIT_USAGE 2
#define EXIT_CUDA_ERROR 3

/* Padding: huge but finite in A and B (a reader of the padding gets
 * visibly wrong results); C padding must come back bit for bit. */
#define PAD_INPUT 1.0e30f
#define PAD_OUTPUT -777.25f

static inline const char *
cublas_status_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

static inline int
cuda_failed(const char *what, cudaError_t err)
{
    const char *name;

    if (err == cudaSuccess)
        return 0;
    name = cudaGetErrorName(err);
    printf("%s status=%s(%d)\n", what, name ? name : "cudaErrorUnknown",
           (int)err);
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %s (%d)\n", what,
            name ? name : "unknown error", (int)err);
    return 1;
}

static inline int
cublas_failed(const char *what, cublasStatus_t s)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    printf("%s status=%s(%d)\n", what, cublas_status_name(s), (int)s);
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %s (%d)\n", what,
            cublas_status_name(s), (int)s);
    return 1;
}

#ifdef CUDNN_MAJOR
/* 0 when s is success, else 1 after naming the call and status on stderr
 * (in the programs that include cudnn.h before this header). */
static inline int
cudnn_failed(const char *what, cudnnStatus_t s)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return 0;
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %s (%d)\n", what,
            cudnnGetErrorString(s), (int)s);
    return 1;
}
#endif

#ifdef CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA
/* Destroys the descriptors of one cuBLASLt product, those that were made
 * (NULL: not), in the programs that include cublasLt.h before this
 * header. */
static inline void
lt_descs_destroy(cublasLtMatmulPreference_t pref, cublasLtMatmulDesc_t op,
                 cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                 cublasLtMatrixLayout_t lc)
{
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (op)
        cublasLtMatmulDescDestroy(op);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
}
#endif

/* splitmix64: deterministic test data. */
static inline uint64_t
rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [-scale, scale), from 24 random bits (exact in float). */
static inline float
rng_float(uint64_t *state, float scale)
{
    int32_t bits = (int32_t)(rng_next(state) >> 40) - (1 << 23);

    return (float)bits * 0x1p-23f * scale;
}

/* n floats uniform in [-1, 1) from *seed; NULL when out of memory. */
static inline float *
host_data(size_t n, uint64_t *seed)
{
    float *v = malloc(n * sizeof(*v));

    for (size_t i = 0; v && i < n; i++)
        v[i] = rng_float(seed, 1.0f);
    return v;
}

/* A device copy of `bytes` of host (uninitialised when host is NULL);
 * NULL when the allocation or the copy fails. */
static inline void *
device_copy(const void *host, size_t bytes)
{
    void *dev = NULL;

    if (cudaMalloc(&dev, bytes) != cudaSuccess)
        return NULL;
    if (host && cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) !=
                    cudaSuccess) {
        cudaFree(dev);
        return NULL;
    }
    return dev;
}

/* A decimal integer in [min, max] into *out: 0, or -1 when s is not one. */
static inline int
parse_int_range(const char *s, int min, int max, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

static inline uint64_t
fnv1a64(const void *data, size_t len, uint64_t h)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* ---- tolerance --------------------------------------------------------- */

enum tol_kind {
    TOL_FIXED, /* the number given */
    TOL_FP16,  /* 2^-10 + k 2^-23 */
    TOL_BF16,  /* 2^-7 + k 2^-23 */
    TOL_TF32,  /* 2^-10 + k 2^-23 (TF32 keeps FP16's precision) */
    TOL_FP32,  /* k 2^-23 */
};

struct tolerance {
    enum tol_kind kind;
    double fixed;
};

/* Parses fp16, bf16, tf32, fp32 or a positive number; 0 or -1. */
static inline int
tol_parse(const char *s, struct tolerance *tol)
{
    static const struct { const char *name; enum tol_kind kind; } named[] = {
        { "fp16", TOL_FP16 }, { "bf16", TOL_BF16 }, { "tf32", TOL_TF32 },
        { "fp32", TOL_FP32 },
    };
    char *end;
    double v;

    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        if (strcmp(s, named[i].name) == 0) {
            tol->kind = named[i].kind;
            return 0;
        }
    }
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > 0.0) || !isfinite(v))
        return -1;
    tol->kind = TOL_FIXED;
    tol->fixed = v;
    return 0;
}

/* The per-element factor for inner dimension k (k == 0 still rounds
 * beta * C0 once: one term). */
static inline double
tol_factor(const struct tolerance *tol, int k)
{
    double terms = (k > 0 ? (double)k : 1.0) * 0x1p-23;

    switch (tol->kind) {
    case TOL_FP16: case TOL_TF32: return 0x1p-10 + terms;
    case TOL_BF16: return 0x1p-7 + terms;
    case TOL_FP32: return terms;
    case TOL_FIXED: break;
    }
    return tol->fixed;
}

/* error / bound of one element; a non-finite reference must be matched
 * exactly (NaN by NaN, an infinity by itself). */
static inline double
element_ratio(double got, double ref, double bound)
{
    double err;

    if (isnan(ref))
        return isnan(got) ? 0.0 : INFINITY;
    if (isinf(ref))
        return got == ref ? 0.0 : INFINITY;
    err = fabs(got - ref);
    if (err == 0.0)
        return 0.0;
    if (!isfinite(err) || !(bound > 0.0))
        return INFINITY;
    return err / bound;
}

/* One stored column-major operand as the GEMM reads it: op(X)(r, c). */
struct operand_view {
    const float *x;
    int ld;
    int transposed;            /* OP_T or OP_C (real data) */
};

static inline double
operand_at(const struct operand_view *v, int r, int c)
{
    return v->transposed ? v->x[(size_t)r * v->ld + c]
                         : v->x[(size_t)c * v->ld + r];
}

/* error / bound of C(i, j) = got against the double-precision
 * alpha op(A) op(B) + beta c0 (C0 not read when beta is 0), with the
 * bound tol (|alpha| |op(A)| |op(B)| + |beta| |c0|). */
static inline double
gemm_element_ratio(const struct operand_view *a, const struct operand_view *b,
                   int i, int j, int k, float alpha, float beta, float c0,
                   float got, double tol)
{
    double sum = 0.0, mag = 0.0, ref, bound;

    for (int l = 0; l < k; l++) {
        double x = operand_at(a, i, l) * operand_at(b, l, j);

        sum += x;
        mag += fabs(x);
    }
    ref = (double)alpha * sum;
    bound = fabs((double)alpha) * mag;
    if (beta != 0.0f) {
        ref += (double)beta * c0;
        bound += fabs((double)beta) * fabs((double)c0);
    }
    return element_ratio(got, ref, bound * tol);
}

/* The largest error / bound over C = op(A) op(B) (m x n, column-major with
 * leading dimension m; alpha 1, beta 0), each element judged as
 * gemm_element_ratio does. */
static inline double
gemm_worst_ratio(const struct operand_view *a, const struct operand_view *b,
                 int m, int n, int k, const float *c, double tol)
{
    double worst = 0.0;

    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double r = gemm_element_ratio(a, b, i, j, k, 1.0f, 0.0f, 0.0f,
                                          c[(size_t)j * m + i], tol);

            if (r > worst)
                worst = r;
        }
    return worst;
}

#endif
