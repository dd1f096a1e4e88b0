/* matmul_check: an ordinary FP32 cuBLAS program that checks its product as
 * NVIDIA's matrixMulCUBLAS sample does: it runs C = A B a few times, then
 * compares the last C with a CPU reference summed in double in the
 * relative Frobenius (L2) norm, ||C - C_ref||_F / ||C_ref||_F < 1e-6, and
 * prints PASS or FAIL. FP32 meets that bound; an FP16 product does not.
 *
 * usage: matmul_check [--iterations N] [--shape MxNxK]
 *        (default 3 iterations of 1024x512x1024)
 * Exits 0 on PASS, 1 on FAIL, 2 on a usage error, 3 on a CUDA error. */
#include <cublas_v2.h>

#define EXAMPLE_PROG "matmul_check"
#include "example_util.h"

/* Column-major, A M x K, B K x N, C M x N; by default 512M multiply-adds,
 * every dimension a multiple of 8, which the built-in policy converts. */
static int M = 1024, N = 512, K = 1024;
#define DIM_MAX 4096
#define BOUND 1.0e-6

/* C_ref = A B, summed in double, as the sample's reference. */
static void
reference(const float *a, const float *b, double *c)
{
    memset(c, 0, sizeof(double) * M * N);
    for (int j = 0; j < N; j++)
        for (int l = 0; l < K; l++) {
            double blj = b[l + (size_t)j * K];
            const float *al = a + (size_t)l * M;
            double *cj = c + (size_t)j * M;

            for (int i = 0; i < M; i++)
                cj[i] += (double)al[i] * blj;
        }
}

/* ||c - ref||_F / ||ref||_F. */
static double
relative_frobenius(const float *c, const double *ref)
{
    double diff = 0.0, norm = 0.0;

    for (size_t i = 0; i < (size_t)M * N; i++) {
        double d = (double)c[i] - ref[i];

        diff += d * d;
        norm += ref[i] * ref[i];
    }
    return sqrt(diff) / sqrt(norm);
}

/* A failed cuBLAS call's message. (Not example_util.h's cublas_failed:
 * a function of this program named cublas_* reads, to ampshim run, as
 * cuBLAS linked in statically.) */
static int
blas_failed(const char *what, cublasStatus_t s)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    fprintf(stderr, EXAMPLE_PROG ": %s failed: status %d\n", what, (int)s);
    return 1;
}

static int
usage(void)
{
    fprintf(stderr, "usage: " EXAMPLE_PROG " [--iterations N] [--shape MxNxK]\n"
            "  --iterations N  products run before the check, 1 to 1000 "
            "(default 3)\n"
            "  --shape MxNxK   the product's dimensions, each 1 to %d "
            "(default 1024x512x1024)\n", DIM_MAX);
    return EXIT_USAGE;
}

/* "MxNxK" into M, N and K; 0 when it is not three dimensions in range. */
static int
parse_shape(const char *s)
{
    long v[3];
    char *end;

    for (int i = 0; i < 3; i++) {
        v[i] = strtol(s, &end, 10);
        if (end == s || v[i] < 1 || v[i] > DIM_MAX ||
            *end != (i < 2 ? 'x' : '\0'))
            return 0;
        s = end + 1;
    }
    M = (int)v[0];
    N = (int)v[1];
    K = (int)v[2];
    return 1;
}

int
main(int argc, char **argv)
{
    const float alpha = 1.0f, beta = 0.0f;
    float *a = NULL, *b = NULL, *c = NULL, *da = NULL, *db = NULL, *dc = NULL;
    double *ref = NULL, err;
    cublasHandle_t handle = NULL;
    uint64_t rng = 2026;
    long iterations = 3;
    int rc = EXIT_CUDA_ERROR;

    for (int i = 1; i < argc; i += 2) {
        char *end;

        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--iterations") == 0) {
            iterations = strtol(argv[i + 1], &end, 10);
            if (end == argv[i + 1] || *end || iterations < 1 ||
                iterations > 1000)
                return usage();
        } else if (strcmp(argv[i], "--shape") != 0 ||
                   !parse_shape(argv[i + 1])) {
            return usage();
        }
    }
    a = malloc(sizeof(float) * M * K);
    b = malloc(sizeof(float) * K * N);
    c = malloc(sizeof(float) * M * N);
    ref = malloc(sizeof(double) * M * N);
    if (!a || !b || !c || !ref) {
        fprintf(stderr, EXAMPLE_PROG ": out of memory\n");
        goto out;
    }
    /* As the sample's randomInit: uniform in [0, 1). */
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = rng_float(&rng, 0.5f) + 0.5f;
    for (size_t i = 0; i < (size_t)K * N; i++)
        b[i] = rng_float(&rng, 0.5f) + 0.5f;
    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&da,
                                             sizeof(float) * M * K)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&db,
                                             sizeof(float) * K * N)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&dc,
                                             sizeof(float) * M * N)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(da, a, sizeof(float) * M * K,
                                             cudaMemcpyHostToDevice)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(db, b, sizeof(float) * K * N,
                                             cudaMemcpyHostToDevice)) ||
        blas_failed("cublasCreate", cublasCreate(&handle)))
        goto out;
    for (long it = 0; it < iterations; it++)
        if (blas_failed("cublasSgemm", cublasSgemm(handle, CUBLAS_OP_N,
                                                   CUBLAS_OP_N, M, N, K,
                                                   &alpha, da, M, db, K,
                                                   &beta, dc, M)))
            goto out;
    if (cuda_failed("cudaMemcpy", cudaMemcpy(c, dc, sizeof(float) * M * N,
                                             cudaMemcpyDeviceToHost)))
        goto out;
    reference(a, b, ref);
    err = relative_frobenius(c, ref);
    printf("Comparing CUBLAS Matrix Multiply with CPU results: "
           "relative L2 error %.3e, bound %.0e: %s\n", err, BOUND,
           err < BOUND ? "PASS" : "FAIL");
    rc = err < BOUND ? EXIT_ALL_PASS : EXIT_CHECK_FAILED;
out:
    if (handle)
        cublasDestroy(handle);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    free(a);
    free(b);
    free(c);
    free(ref);
    return rc;
}
