/* legacy_sgemm: an old FP32 program on the legacy cuBLAS API (cublas.h:
 * cublasInit, cublasSgemm without a handle, cublasSetKernelStream,
 * cublasGetError) that checks every element against a double-precision
 * CPU reference with the tolerance given on the command line. */
#include <cublas.h>

#define EXAMPLE_PROG "legacy_sgemm"
#include "example_util.h"

#include <inttypes.h>

/* One cublasSgemm call; leading dimensions are rows plus pad. */
struct lcase {
    const char *name;
    char transa, transb;
    int m, n, k, pad;
    float alpha, beta;
    int c_nan;          /* C0 all NaN (beta is 0) */
    int own_stream;     /* on a stream set with cublasSetKernelStream */
    int bad_lda;        /* lda one short: CUBLAS_STATUS_INVALID_VALUE */
    int before_init;    /* called before cublasInit */
};

static const struct lcase cases[] = {
    { "legacy_before_init", 'N', 'N', 16, 12, 20, 0, 1.0f, 0.0f, 0, 0, 0, 1 },
    { "legacy_nn_nan_c", 'N', 'N', 40, 36, 64, 0, 1.0f, 0.0f, 1, 0, 0, 0 },
    { "legacy_tc_ld", 't', 'c', 29, 31, 70, 3, 0.75f, 0.5f, 0, 0, 0, 0 },
    { "legacy_ct_stream", 'C', 'T', 33, 27, 90, 1, -1.5f, 0.25f, 0, 1, 0, 0 },
    { "legacy_nt", 'n', 't', 45, 20, 33, 2, 2.0f, -1.0f, 0, 0, 0, 0 },
    { "legacy_k0", 'N', 'N', 9, 7, 0, 0, 1.0f, 2.0f, 0, 0, 0, 0 },
    { "legacy_alpha0", 'T', 'N', 12, 10, 14, 0, 0.0f, 0.5f, 0, 0, 0, 0 },
    { "legacy_bad_lda", 'N', 'N', 12, 10, 8, 0, 1.0f, 0.0f, 0, 0, 1, 0 },
    { "legacy_bad_op", 'x', 'N', 12, 10, 8, 0, 1.0f, 0.0f, 0, 0, 0, 0 },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

struct host {
    int rows_a, cols_a, lda, rows_b, cols_b, ldb, ldc;
    size_t na, nb, nc;
    float *a, *b, *c0, *c;
};

static int
is_n(char op)
{
    return op == 'N' || op == 'n';
}

static int
host_make(const struct lcase *tc, uint64_t seed, struct host *h)
{
    uint64_t rng = seed;

    h->rows_a = is_n(tc->transa) ? tc->m : tc->k;
    h->cols_a = is_n(tc->transa) ? tc->k : tc->m;
    h->rows_b = is_n(tc->transb) ? tc->k : tc->n;
    h->cols_b = is_n(tc->transb) ? tc->n : tc->k;
    h->lda = (h->rows_a > 0 ? h->rows_a : 1) + tc->pad;
    h->ldb = (h->rows_b > 0 ? h->rows_b : 1) + tc->pad;
    h->ldc = (tc->m > 0 ? tc->m : 1) + tc->pad;
    h->na = (size_t)h->lda * (size_t)(h->cols_a > 0 ? h->cols_a : 1);
    h->nb = (size_t)h->ldb * (size_t)(h->cols_b > 0 ? h->cols_b : 1);
    h->nc = (size_t)h->ldc * (size_t)(tc->n > 0 ? tc->n : 1);
    h->a = malloc(h->na * 4);
    h->b = malloc(h->nb * 4);
    h->c0 = malloc(h->nc * 4);
    h->c = malloc(h->nc * 4);
    if (!h->a || !h->b || !h->c0 || !h->c)
        return -1;
    for (size_t i = 0; i < h->na; i++)
        h->a[i] = (int)(i % (size_t)h->lda) < h->rows_a
                      ? rng_float(&rng, 1.0f) : PAD_INPUT;
    for (size_t i = 0; i < h->nb; i++)
        h->b[i] = (int)(i % (size_t)h->ldb) < h->rows_b
                      ? rng_float(&rng, 1.0f) : PAD_INPUT;
    for (size_t i = 0; i < h->nc; i++)
        h->c0[i] = (int)(i % (size_t)h->ldc) < tc->m
                       ? (tc->c_nan ? NAN : rng_float(&rng, 1.0f))
                       : PAD_OUTPUT;
    return 0;
}

static void
host_free(struct host *h)
{
    free(h->a);
    free(h->b);
    free(h->c0);
    free(h->c);
}

/* Max error / bound; -1 when padding changed. */
static double
check(const struct lcase *tc, const struct host *h, double tol)
{
    const struct operand_view a = { h->a, h->lda, !is_n(tc->transa) };
    const struct operand_view b = { h->b, h->ldb, !is_n(tc->transb) };
    double worst = 0.0;

    for (int j = 0; j < tc->n; j++) {
        for (int i = 0; i < h->ldc; i++) {
            size_t at = (size_t)j * h->ldc + i;
            double r;

            if (i >= tc->m) {
                if (memcmp(&h->c[at], &h->c0[at], 4) != 0)
                    return -1.0;
                continue;
            }
            r = gemm_element_ratio(&a, &b, i, j, tc->k, tc->alpha, tc->beta,
                                   h->c0[at], h->c[at], tol);
            if (r > worst)
                worst = r;
        }
    }
    return worst;
}

/* Runs one case on device copies; returns the cublasGetError status. */
static cublasStatus
run_gemm(const struct lcase *tc, struct host *h, int *cuda_error)
{
    float *a = NULL, *b = NULL, *c = NULL;
    cudaStream_t stream = NULL;
    cublasStatus s = CUBLAS_STATUS_SUCCESS;

    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&a, h->na * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&b, h->nb * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&c, h->nc * 4)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(a, h->a, h->na * 4,
                                             cudaMemcpyHostToDevice)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(b, h->b, h->nb * 4,
                                             cudaMemcpyHostToDevice)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(c, h->c0, h->nc * 4,
                                             cudaMemcpyHostToDevice)) ||
        (tc->own_stream &&
         (cuda_failed("cudaStreamCreateWithFlags",
                      cudaStreamCreateWithFlags(&stream,
                                                cudaStreamNonBlocking)) ||
          cublas_failed("cublasSetKernelStream",
                        cublasSetKernelStream(stream))))) {
        *cuda_error = 1;
        goto out;
    }
    cublasGetError(); /* a clean slate */
    cublasSgemm(tc->transa, tc->transb, tc->m, tc->n, tc->k, tc->alpha, a,
                h->lda - tc->bad_lda, b, h->ldb, tc->beta, c, h->ldc);
    s = cublasGetError();
    /* Ordered after the GEMM on its stream. */
    if (cuda_failed("cudaMemcpyAsync",
                    cudaMemcpyAsync(h->c, c, h->nc * 4,
                                    cudaMemcpyDeviceToHost, stream)) ||
        cuda_failed("cudaStreamSynchronize", cudaStreamSynchronize(stream)))
        *cuda_error = 1;
    if (tc->own_stream &&
        cublas_failed("cublasSetKernelStream", cublasSetKernelStream(NULL)))
        *cuda_error = 1;
out:
    if (stream)
        cudaStreamDestroy(stream);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return s;
}

static const char *
case_class(const struct lcase *tc)
{
    if (tc->bad_lda || tc->before_init || !strchr("NnTtCc", tc->transa))
        return "invalid";
    if (tc->m == 0 || tc->n == 0 || tc->k == 0 || tc->alpha == 0.0f)
        return "trivial";
    return "gemm";
}

static int
run_case(const struct tolerance *tol, uint64_t seed, size_t index)
{
    const struct lcase *tc = &cases[index];
    struct host h = { 0 };
    cublasStatus s = CUBLAS_STATUS_SUCCESS;
    int cuda_error = 0, rc = EXIT_CUDA_ERROR;
    double worst;
    uint64_t hash;

    if (host_make(tc, seed + 0x1000 * index, &h) != 0) {
        fprintf(stderr, EXAMPLE_PROG ": out of host memory\n");
        goto out;
    }
    s = run_gemm(tc, &h, &cuda_error);
    printf("case %s m=%d n=%d k=%d op=%c%c status=%s(%d)", tc->name, tc->m,
           tc->n, tc->k, tc->transa, tc->transb, cublas_status_name(s),
           (int)s);
    if (cuda_error) {
        printf(" err/bound=- hash=- ERROR api=cublasSgemm class=%s\n",
               case_class(tc));
        goto out;
    }
    hash = fnv1a64(h.c, h.nc * 4, 0xcbf29ce484222325ULL);
    if (s != CUBLAS_STATUS_SUCCESS) {
        /* Refused: C untouched. */
        int same = memcmp(h.c, h.c0, h.nc * 4) == 0;

        printf(" err/bound=- hash=%016" PRIx64 " %s api=cublasSgemm "
               "class=%s\n", hash, same ? "ok" : "FAIL", case_class(tc));
        rc = same ? EXIT_ALL_PASS : EXIT_CHECK_FAILED;
        goto out;
    }
    worst = check(tc, &h, tol_factor(tol, tc->k));
    printf(" err/bound=%.3e hash=%016" PRIx64 " %s api=cublasSgemm "
           "class=%s\n", worst < 0 ? INFINITY : worst, hash,
           worst >= 0 && worst <= 1.0 ? "ok" : "FAIL", case_class(tc));
    rc = worst >= 0 && worst <= 1.0 ? EXIT_ALL_PASS : EXIT_CHECK_FAILED;
out:
    host_free(&h);
    return rc;
}

int
main(int argc, char **argv)
{
    struct tolerance tol = { TOL_FP32, 0.0 };
    unsigned failed = 0, errors = 0;
    int initialised = 0;

    if (argc == 3 && strcmp(argv[1], "--tol") == 0) {
        if (tol_parse(argv[2], &tol) != 0) {
            fprintf(stderr, EXAMPLE_PROG ": bad --tol '%s': a positive "
                    "number, fp16, bf16, tf32 or fp32\n", argv[2]);
            return EXIT_USAGE;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: " EXAMPLE_PROG " [--tol TOL]\n"
                "Runs the legacy cublasSgemm on %zu cases; exit status 0 "
                "all pass, 1 a check failed, 3 a CUDA call failed.\n",
                N_CASES);
        return EXIT_USAGE;
    }
    printf(EXAMPLE_PROG ": %zu cases\n", N_CASES);
    for (size_t i = 0; i < N_CASES; i++) {
        int rc;

        if (!cases[i].before_init && !initialised) {
            if (cublas_failed("cublasInit", cublasInit())) {
                fflush(stdout);
                return EXIT_CUDA_ERROR;
            }
            initialised = 1;
        }
        rc = run_case(&tol, 1, i);
        failed += rc == EXIT_CHECK_FAILED;
        errors += rc == EXIT_CUDA_ERROR;
        fflush(stdout);
    }
    cublas_failed("cublasShutdown", cublasShutdown());
    printf("result: %zu cases, %zu passed, %u failed, %u errors\n", N_CASES,
           N_CASES - failed - errors, failed, errors);
    fflush(stdout);
    if (errors)
        return EXIT_CUDA_ERROR;
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
