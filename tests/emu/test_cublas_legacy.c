/* Tests for the emulated legacy cuBLAS API (cublas.h): the implicit
 * context, cublasGetError's read-and-clear status, the kernel stream, and
 * cublasSgemm against a double-precision reference. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cublas.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { M = 7, N = 6, K = 9, LD = 10 };

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static float
rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 40) / 8388608.0 - 1.0);
}

/* Operands in LD x 10 column-major buffers, used as M x K / K x M for A
 * and K x N / N x K for B; C is M x N with leading dimension LD. */
struct operands {
    float a[LD * LD], b[LD * LD], c[LD * N];
    float *da, *db, *dc;
};

static void
operands_new(struct operands *o)
{
    for (int i = 0; i < LD * LD; i++)
        o->a[i] = rnd(), o->b[i] = rnd();
    for (int i = 0; i < LD * N; i++)
        o->c[i] = rnd();
    assert_int_equal(cublasAlloc(LD * LD, sizeof(float), (void **)&o->da),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasAlloc(LD * LD, sizeof(float), (void **)&o->db),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasAlloc(LD * N, sizeof(float), (void **)&o->dc),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaMemcpy(o->da, o->a, sizeof(o->a),
                                cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(o->db, o->b, sizeof(o->b),
                                cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(o->dc, o->c, sizeof(o->c),
                                cudaMemcpyHostToDevice), cudaSuccess);
}

static void
operands_free(struct operands *o)
{
    assert_int_equal(cublasFree(o->da), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasFree(o->db), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasFree(o->dc), CUBLAS_STATUS_SUCCESS);
}

static double
op_at(const float *x, int trans, int i, int p)
{
    return trans ? x[p + i * LD] : x[i + p * LD];
}

/* The device C against alpha op(A) op(B) + beta C0 in double, within
 * (k + 4) u32 of the sum of magnitudes; padding rows untouched. */
static void
check_sgemm(const struct operands *o, int ta, int tb, float alpha,
            float beta)
{
    float got[LD * N];

    assert_int_equal(cudaMemcpy(got, o->dc, sizeof(got),
                                cudaMemcpyDeviceToHost), cudaSuccess);
    for (int j = 0; j < N; j++) {
        for (int i = 0; i < LD; i++) {
            double s = 0.0, mag = 0.0, ref;
            if (i >= M) {
                assert_true(got[i + j * LD] == o->c[i + j * LD]);
                continue;
            }
            for (int p = 0; p < K; p++) {
                double prod = op_at(o->a, ta, i, p) * op_at(o->b, tb, p, j);
                s += prod;
                mag += fabs(prod);
            }
            ref = alpha * s + (double)beta * o->c[i + j * LD];
            mag = fabs(alpha) * mag + fabs(beta * o->c[i + j * LD]);
            if (!(fabs(got[i + j * LD] - ref) <= (K + 4) * 0x1p-24 * mag))
                fail_msg("C(%d,%d) = %.9g, reference %.9g", i, j,
                         got[i + j * LD], ref);
        }
    }
}

/* Before cublasInit: no context to keep an error, no stream to set; the
 * memory helpers need none. */
static void
test_before_init(void **state)
{
    void *p = (void *)&state;

    (void)state;
    assert_int_equal(cublasGetError(), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasSetKernelStream(NULL),
                     CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasShutdown(), CUBLAS_STATUS_SUCCESS);
    cublasSgemm('N', 'N', 2, 2, 2, 1.0f, NULL, 2, NULL, 2, 0.0f, NULL, 2);
    assert_int_equal(cublasGetError(), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasAlloc(0, 4, &p), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasAlloc(4, -1, &p), CUBLAS_STATUS_INVALID_VALUE);
    assert_ptr_equal(p, (void *)&state);    /* untouched on failure */
    assert_int_equal(cublasAlloc(4, 4, &p), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasFree(p), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasFree(NULL), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasFree((void *)&p), CUBLAS_STATUS_INTERNAL_ERROR);
}

/* Every transpose character, in either case, against the reference. */
static void
test_sgemm_transposes(void **state)
{
    static const char ops[] = "NnTtCc";
    struct operands o;

    (void)state;
    assert_int_equal(cublasInit(), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasInit(), CUBLAS_STATUS_SUCCESS);   /* again: ok */
    operands_new(&o);
    for (int x = 0; x < 6; x++) {
        for (int y = 0; y < 6; y += 2) {
            int ta = x >= 2, tb = (y + x) % 6 >= 2;
            char cb = ops[(y + x) % 6];
            assert_int_equal(cudaMemcpy(o.dc, o.c, sizeof(o.c),
                                        cudaMemcpyHostToDevice), cudaSuccess);
            cublasSgemm(ops[x], cb, M, N, K, 1.5f, o.da, LD, o.db, LD, -0.25f,
                        o.dc, LD);
            assert_int_equal(cublasGetError(), CUBLAS_STATUS_SUCCESS);
            check_sgemm(&o, ta, tb, 1.5f, -0.25f);
        }
    }
    operands_free(&o);
    assert_int_equal(cublasShutdown(), CUBLAS_STATUS_SUCCESS);
}

/* Errors wait for cublasGetError, which returns and clears them; a later
 * successful call does not clear an earlier error. */
static void
test_error_state(void **state)
{
    struct operands o;

    (void)state;
    assert_int_equal(cublasInit(), CUBLAS_STATUS_SUCCESS);
    operands_new(&o);
    cublasSgemm('X', 'N', M, N, K, 1.0f, o.da, LD, o.db, LD, 0.0f, o.dc, LD);
    assert_int_equal(cublasGetError(), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasGetError(), CUBLAS_STATUS_SUCCESS);
    cublasSgemm('N', 'n', -1, N, K, 1.0f, o.da, LD, o.db, LD, 0.0f, o.dc,
                LD);
    cublasSgemm('N', 'N', M, N, K, 1.0f, o.da, LD, o.db, LD, 0.0f, o.dc, LD);
    assert_int_equal(cublasGetError(), CUBLAS_STATUS_INVALID_VALUE);
    cublasSgemm('t', 'N', M, N, K, 1.0f, o.da, 8, o.db, LD, 0.0f, o.dc, LD);
    assert_int_equal(cublasGetError(), CUBLAS_STATUS_INVALID_VALUE); /* lda */
    cublasSgemm('N', 'N', M, N, K, 1.0f, o.da, LD, o.db, LD, 0.0f, o.dc, 6);
    assert_int_equal(cublasGetError(), CUBLAS_STATUS_INVALID_VALUE); /* ldc */
    /* The refused calls touched nothing: C holds the one good result. */
    check_sgemm(&o, 0, 0, 1.0f, 0.0f);
    operands_free(&o);
    assert_int_equal(cublasShutdown(), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetError(), CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(cublasSetKernelStream(NULL),
                     CUBLAS_STATUS_NOT_INITIALIZED);
}

/* cublasSgemm queues on the kernel stream: unfinished when the call
 * returns, and the scalars are the call's values. */
static void
test_kernel_stream_deferred(void **state)
{
    struct operands o;
    cudaStream_t quiet;

    (void)state;
    assert_int_equal(cublasInit(), CUBLAS_STATUS_SUCCESS);
    operands_new(&o);
    assert_int_equal(cudaStreamCreateWithFlags(&quiet, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cublasSetKernelStream(quiet), CUBLAS_STATUS_SUCCESS);
    cublasSgemm('T', 'c', M, N, K, -2.0f, o.da, LD, o.db, LD, 0.5f, o.dc, LD);
    assert_int_equal(cublasGetError(), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamQuery(quiet), cudaErrorNotReady);
    assert_int_equal(cudaStreamSynchronize(quiet), cudaSuccess);
    check_sgemm(&o, 1, 1, -2.0f, 0.5f);
    assert_int_equal(cublasSetKernelStream(NULL), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(quiet), cudaSuccess);
    operands_free(&o);
    assert_int_equal(cublasShutdown(), CUBLAS_STATUS_SUCCESS);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_before_init),
        cmocka_unit_test(test_sgemm_transposes),
        cmocka_unit_test(test_error_state),
        cmocka_unit_test(test_kernel_stream_deferred),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
