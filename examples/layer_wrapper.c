/* layer_wrapper: an ordinary FP32 program shaped as a framework is: every
 * SGEMM goes through one wrapper function, which four layer functions
 * call, with 40 distinct shapes between them. Shape ILL (the 37th) is
 * ill-conditioned: its products cancel to about 0.1 % of their terms, so
 * 16-bit operands put its result several per cent off, while FP32's
 * stays near 1e-4. It knows nothing of any shim: it checks every call's
 * result against a double-precision product on the host and prints, per
 * shape, the worst relative error (max norm) over its calls.
 *
 * usage: layer_wrapper [CALLS]   (each shape's calls in a row, shape
 * after shape, default 12) */
#include <cublas_v2.h>

#define EXAMPLE_PROG "layer_wrapper"
#include "example_util.h"

#include <math.h>

enum { NSHAPES = 40, ILL = 36 };

struct gemm {
    float *a, *b, *c;          /* device: A (m x k), B (k x n), C (m x n) */
    float *host_c;             /* the result read back */
    double *ref;               /* the double-precision product */
    double ref_max;            /* max |ref| */
    int m, n, k;
};

/* Every SGEMM of the program: the one place that calls cuBLAS. */
static __attribute__((noinline)) cublasStatus_t
sgemm(cublasHandle_t h, const struct gemm *g)
{
    const float one = 1.0f, zero = 0.0f;

    return cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, g->m, g->n, g->k,
                          &one, g->a, g->m, g->b, g->k, &zero, g->c, g->m);
}

/* The layers, each calling the wrapper from its own code. */
static __attribute__((noinline)) cublasStatus_t
attention_proj(cublasHandle_t h, const struct gemm *g)
{
    cublasStatus_t st = sgemm(h, g);

    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return st;
}

static __attribute__((noinline)) cublasStatus_t
mlp_up(cublasHandle_t h, const struct gemm *g)
{
    cublasStatus_t st = sgemm(h, g);

    __asm__ volatile("" ::: "memory");
    return st;
}

static __attribute__((noinline)) cublasStatus_t
mlp_down(cublasHandle_t h, const struct gemm *g)
{
    cublasStatus_t st = sgemm(h, g);

    __asm__ volatile("" ::: "memory");
    return st;
}

static __attribute__((noinline)) cublasStatus_t
head(cublasHandle_t h, const struct gemm *g)
{
    cublasStatus_t st = sgemm(h, g);

    __asm__ volatile("" ::: "memory");
    return st;
}

static cublasStatus_t (*const layers[])(cublasHandle_t,
                                        const struct gemm *) = {
    attention_proj, mlp_up, mlp_down, head,
};
static const char *const layer_names[] = {
    "attention_proj", "mlp_up", "mlp_down", "head",
};

/* Shape i's operands on the device and its reference; 0, or -1. The
 * ill-conditioned shape's A has equal column pairs and B's rows come in
 * pairs b and -1.001 b. */
static int
gemm_make(struct gemm *g, int i)
{
    size_t na, nb, nc;
    float *ha = NULL, *hb = NULL;
    uint64_t rng = 1000 + (uint64_t)i;
    int ill = i == ILL, rc = -1;

    *g = (struct gemm){ .m = 128 + 16 * (i % 8), .n = 128 + 16 * (i / 8),
                        .k = 256 };
    na = (size_t)g->m * g->k;
    nb = (size_t)g->k * g->n;
    nc = (size_t)g->m * g->n;
    ha = malloc(na * sizeof *ha);
    hb = malloc(nb * sizeof *hb);
    g->host_c = malloc(nc * sizeof *g->host_c);
    g->ref = malloc(nc * sizeof *g->ref);
    if (!ha || !hb || !g->host_c || !g->ref)
        goto out;
    for (size_t r = 0; r < (size_t)g->k; r++)
        for (size_t row = 0; row < (size_t)g->m; row++)
            ha[r * g->m + row] = ill && r % 2 == 1
                                     ? ha[(r - 1) * g->m + row]
                                     : rng_float(&rng, 1.0f);
    for (size_t col = 0; col < (size_t)g->n; col++)
        for (size_t r = 0; r < (size_t)g->k; r++)
            hb[col * g->k + r] = ill && r % 2 == 1
                                     ? -1.001f * hb[col * g->k + r - 1]
                                     : rng_float(&rng, 1.0f);
    g->ref_max = 0;
    for (size_t col = 0; col < (size_t)g->n; col++) {
        for (size_t row = 0; row < (size_t)g->m; row++) {
            double s = 0;

            for (size_t r = 0; r < (size_t)g->k; r++)
                s += (double)ha[r * g->m + row] * hb[col * g->k + r];
            g->ref[col * g->m + row] = s;
            if (fabs(s) > g->ref_max)
                g->ref_max = fabs(s);
        }
    }
    g->a = device_copy(ha, na * sizeof *ha);
    g->b = device_copy(hb, nb * sizeof *hb);
    g->c = device_copy(NULL, nc * sizeof *g->c);
    if (!g->a || !g->b || !g->c) {
        fprintf(stderr, EXAMPLE_PROG ": device memory for shape %d\n", i);
        goto out;
    }
    rc = 0;
out:
    free(ha);
    free(hb);
    return rc;
}

static void
gemm_free(struct gemm *g)
{
    cudaFree(g->a);
    cudaFree(g->b);
    cudaFree(g->c);
    free(g->host_c);
    free(g->ref);
}

/* The relative error of the last result in the max norm; -1 when it
 * could not be read. */
static double
gemm_error(struct gemm *g)
{
    size_t nc = (size_t)g->m * g->n;
    double worst = 0;

    if (cuda_failed("cudaMemcpy", cudaMemcpy(g->host_c, g->c,
                                             nc * sizeof *g->host_c,
                                             cudaMemcpyDeviceToHost)))
        return -1;
    for (size_t i = 0; i < nc; i++) {
        double d = fabs((double)g->host_c[i] - g->ref[i]);

        if (!(d <= worst))
            worst = d; /* NaN included */
    }
    return g->ref_max > 0 ? worst / g->ref_max : worst;
}

int
main(int argc, char **argv)
{
    cublasHandle_t handle;
    int calls = 12, failed = 0;

    if (argc > 2 ||
        (argc == 2 && parse_int_range(argv[1], 1, 100000, &calls) != 0)) {
        fprintf(stderr, "usage: layer_wrapper [CALLS]  (CALLS 1 to "
                "100000)\n");
        return EXIT_USAGE;
    }
    if (cublas_failed("cublasCreate_v2", cublasCreate_v2(&handle)))
        return EXIT_CUDA_ERROR;
    for (int i = 0; i < NSHAPES && !failed; i++) {
        struct gemm g;
        double worst = 0;

        if (gemm_make(&g, i) != 0) {
            gemm_free(&g);
            failed = 1;
            break;
        }
        for (int call = 0; call < calls && !failed; call++) {
            double e;

            failed = cublas_failed("cublasSgemm_v2",
                                   layers[i % 4](handle, &g));
            e = failed ? 0 : gemm_error(&g);
            failed = failed || e < 0;
            if (!(e <= worst))
                worst = e;
        }
        if (!failed)
            printf("shape %d layer %s %dx%dx%d%s calls %d max_rel_err %.3e\n",
                   i, layer_names[i % 4], g.m, g.n, g.k,
                   i == ILL ? " ill-conditioned" : "", calls, worst);
        gemm_free(&g);
    }
    cublasDestroy_v2(handle);
    fflush(stdout);
    return failed ? EXIT_CUDA_ERROR : EXIT_ALL_PASS;
}
