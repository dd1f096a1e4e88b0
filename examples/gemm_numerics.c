/* gemm_numerics: an ordinary FP32 cuBLAS program that measures the error
 * of cublasSgemm_v2 on classes of hard inputs (random, rows scaled over a
 * wide range, rows of A near 1e30 and 1e-30, wide-range elements, an
 * ill-conditioned A, a cancelling beta C0) against a double-precision
 * reference, next to the same call with CUBLAS_PEDANTIC_MATH (strict
 * FP32) on the same inputs. It prints one line per class and judges
 * nothing. */
#include <cublas_v2.h>

#define EXAMPLE_PROG "gemm_numerics"
#include "example_util.h"

/* C = alpha op(A) op(B) + beta C0 with op(A) = A^T: A is stored K x M. */
#define M 256
#define N 96
#define K 256
#define ALPHA 1.5f
#define BETA (-0.5f)

enum matrix_class {
    CLASS_RANDOM,       /* uniform in [-1, 1) */
    CLASS_ROWS_14,      /* rows of op(A), columns of B over 2^-14..2^14 */
    CLASS_ROWS_20,      /* ... over 2^-20..2^20: beyond FP16's window */
    CLASS_ROWS_100,     /* rows of op(A) over 2^-100..2^100 (1e-30..1e30),
                           columns of B over 2^-20..2^20: FP32's range,
                           far beyond FP16's */
    CLASS_ELEMENTS_20,  /* every element its own scale in 2^-20..2^20 */
    CLASS_ILLCOND,      /* op(A) = U diag V, condition number 1e6 */
    CLASS_CANCEL,       /* beta C0 cancels alpha A B to about 2^-10 */
    CLASS_COUNT,
};

static const char *const class_names[CLASS_COUNT] = {
    "random", "rows_2^14", "rows_2^20", "rows_2^100", "elements_2^20",
    "illcond_1e6", "cancel",
};

struct problem {
    float a[K * M];             /* A, K x M, lda K: op(A)(i, l) = a[i K + l] */
    float b[K * N];             /* B, K x N, ldb K */
    float c0[M * N];            /* C0, M x N, ldc M */
};

/* 2^e for an integer e uniform in [-range, range]. */
static float
random_scale(uint64_t *rng, int range)
{
    return ldexpf(1.0f, (int)(rng_next(rng) % (uint64_t)(2 * range + 1)) -
                            range);
}

/* x[0], x[step], ..., x[(count - 1) step] times s. */
static void
scale_strided(float *x, int count, int step, float s)
{
    for (int i = 0; i < count; i++)
        x[(size_t)i * step] *= s;
}

/* x := (I - 2 v v^T / v^T v) x for each of `count` vectors of length n,
 * `stride` apart, element step `step`. */
static void
reflect(double *x, int n, int count, int stride, int step, const double *v)
{
    double vv = 0.0;

    for (int i = 0; i < n; i++)
        vv += v[i] * v[i];
    for (int c = 0; c < count; c++) {
        double *col = x + (size_t)c * stride, dot = 0.0;

        for (int i = 0; i < n; i++)
            dot += v[i] * col[(size_t)i * step];
        for (int i = 0; i < n; i++)
            col[(size_t)i * step] -= 2.0 * dot / vv * v[i];
    }
}

/* op(A) = U diag(s) V, U and V products of two random Householder
 * reflections, s log-spaced from 1 to 1e-6 (M == K). */
static void
fill_illcond(float *a, uint64_t *rng)
{
    static double x[M * K];     /* op(A), row-major: x[i K + l] */
    double v[K];

    memset(x, 0, sizeof x);
    for (int i = 0; i < M; i++)
        x[(size_t)i * K + i] = pow(1e-6, (double)i / (M - 1));
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < M; i++)
            v[i] = rng_float(rng, 1.0f);
        reflect(x, M, K, 1, K, v);   /* U: mixes rows, per column */
        for (int i = 0; i < K; i++)
            v[i] = rng_float(rng, 1.0f);
        reflect(x, K, M, K, 1, v);   /* V: mixes columns, per row */
    }
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = (float)x[i];
}

static void
fill(struct problem *p, enum matrix_class cls, uint64_t *rng)
{
    int range = cls == CLASS_ROWS_14 ? 14 : 20;
    int range_a = cls == CLASS_ROWS_100 ? 100 : range;

    for (size_t i = 0; i < (size_t)K * M; i++)
        p->a[i] = rng_float(rng, 1.0f);
    for (size_t i = 0; i < (size_t)K * N; i++)
        p->b[i] = rng_float(rng, 1.0f);
    for (size_t i = 0; i < (size_t)M * N; i++)
        p->c0[i] = rng_float(rng, 1.0f);
    switch (cls) {
    case CLASS_ROWS_14: case CLASS_ROWS_20: case CLASS_ROWS_100:
        /* Row i of op(A) and C0 by one scale, column j of B and C0 by
         * another: C(i, j) keeps its relative size (and stays a normal
         * FP32 number: at least 2^-120). */
        for (int i = 0; i < M; i++) {
            float s = random_scale(rng, range_a);

            scale_strided(p->a + (size_t)i * K, K, 1, s);
            scale_strided(p->c0 + i, N, M, s);
        }
        for (int j = 0; j < N; j++) {
            float s = random_scale(rng, range);

            scale_strided(p->b + (size_t)j * K, K, 1, s);
            scale_strided(p->c0 + (size_t)j * M, M, 1, s);
        }
        break;
    case CLASS_ELEMENTS_20:
        for (size_t i = 0; i < (size_t)K * M; i++)
            p->a[i] *= random_scale(rng, range);
        for (size_t i = 0; i < (size_t)K * N; i++)
            p->b[i] *= random_scale(rng, range);
        break;
    case CLASS_ILLCOND:
        fill_illcond(p->a, rng);
        break;
    case CLASS_CANCEL:
        /* beta C0 = -alpha A B (1 + d), |d| <= 2^-10. */
        for (int j = 0; j < N; j++)
            for (int i = 0; i < M; i++) {
                double sum = 0.0;

                for (int l = 0; l < K; l++)
                    sum += (double)p->a[i * K + l] * p->b[j * K + l];
                p->c0[j * M + i] =
                    (float)(-ALPHA * sum / BETA *
                            (1.0 + rng_float(rng, 0x1p-10f)));
            }
        break;
    default:
        break;
    }
}

/* Runs the GEMM from C0 in the handle's current math mode; c gets C. */
static int
run_gemm(cublasHandle_t handle, const struct problem *p, const float *da,
         const float *db, float *dc, float *c)
{
    const float alpha = ALPHA, beta = BETA;

    return cuda_failed("cudaMemcpy", cudaMemcpy(dc, p->c0, sizeof p->c0,
                                                cudaMemcpyHostToDevice)) ||
           cublas_failed("cublasSgemm_v2",
                         cublasSgemm_v2(handle, CUBLAS_OP_T, CUBLAS_OP_N, M,
                                        N, K, &alpha, da, K, db, K, &beta, dc,
                                        M)) ||
           cuda_failed("cudaMemcpy", cudaMemcpy(c, dc, sizeof p->c0,
                                                cudaMemcpyDeviceToHost))
               ? -1
               : 0;
}

/* max over C of |C - C_ref| / (|alpha| |op(A)| |op(B)| + |beta| |C0|). */
static double
max_error(const struct problem *p, const float *c)
{
    const struct operand_view va = { p->a, K, 1 }, vb = { p->b, K, 0 };
    double worst = 0.0;

    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            double e = gemm_element_ratio(&va, &vb, i, j, K, ALPHA, BETA,
                                          p->c0[j * M + i], c[j * M + i],
                                          1.0);
            if (!(e <= worst))
                worst = e;
        }
    return worst;
}

int
main(void)
{
    static struct problem p;
    static float c[M * N];
    float *da = NULL, *db = NULL, *dc = NULL;
    cublasHandle_t handle;
    uint64_t rng = 2024;

    if (cublas_failed("cublasCreate_v2", cublasCreate_v2(&handle)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&da, sizeof p.a)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&db, sizeof p.b)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&dc, sizeof p.c0)))
        return EXIT_CUDA_ERROR;
    for (int cls = 0; cls < CLASS_COUNT; cls++) {
        double err, err_fp32;

        fill(&p, (enum matrix_class)cls, &rng);
        if (cuda_failed("cudaMemcpy", cudaMemcpy(da, p.a, sizeof p.a,
                                                 cudaMemcpyHostToDevice)) ||
            cuda_failed("cudaMemcpy", cudaMemcpy(db, p.b, sizeof p.b,
                                                 cudaMemcpyHostToDevice)) ||
            cublas_failed("cublasSetMathMode",
                          cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH)) ||
            run_gemm(handle, &p, da, db, dc, c) != 0)
            return EXIT_CUDA_ERROR;
        err = max_error(&p, c);
        if (cublas_failed("cublasSetMathMode",
                          cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH)) ||
            run_gemm(handle, &p, da, db, dc, c) != 0)
            return EXIT_CUDA_ERROR;
        err_fp32 = max_error(&p, c);
        printf("class name=%s m=%d n=%d k=%d err=%.6e err_fp32=%.6e\n",
               class_names[cls], M, N, K, err, err_fp32);
    }
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cublasDestroy_v2(handle);
    fflush(stdout);
    return EXIT_ALL_PASS;
}
