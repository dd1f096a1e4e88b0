/* primary_retain: FP32 SGEMMs made by a library that retains and releases
 * the device's primary context around its work, as a library written
 * against the driver API does (cuDevicePrimaryCtxRetain, cuCtxPushCurrent,
 * its work, cuCtxPopCurrent, cuDevicePrimaryCtxRelease).
 *
 * Phase "last" (before the runtime holds the context): CYCLES times, the
 * primary context is retained by the program alone, made current, a cuBLAS
 * handle and driver buffers made, one SGEMM checked, everything freed, and
 * the context released: the release is the last one, so the context ends
 * (the program checks cuDevicePrimaryCtxGetState says inactive) and the
 * next cycle works in a new one.
 *
 * Phase "held": the runtime holds the primary context (cudaSetDevice and
 * cudaMalloc); ROUNDS times the library retains it, pushes it, makes one
 * SGEMM on the program's buffers, reads it back, pops and releases it: no
 * release is the last one. Then the program frees its buffers and handle
 * and exits with the context still held, so that device memory at exit is
 * what the process left in it.
 *
 * Each checked product is compared element by element with a
 * double-precision reference within the tolerance named on the command
 * line (fp32, tf32, fp16, bf16 or a number).
 *
 * usage: primary_retain TOLERANCE [ROUNDS [CYCLES]]   (defaults 100 and 2)
 *
 * Prints one line per checked call, then "result: ...":
 * case NAME m=M n=N k=K op=NN status=NAME(N) err/bound=R hash=H ok|FAIL
 *      api=cublasSgemm_v2
 * Exit status: 0 all within the bound, 1 a product outside it, 2 usage, 3
 * a CUDA or cuBLAS error (a release that should have been the last left
 * the context active included). */
#include <cublas_v2.h>
#include <cuda.h>

#define EXAMPLE_PROG "primary_retain"
#include "example_util.h"

#include <inttypes.h>

#define M 64
#define N 48
#define K 32

struct job {
    struct tolerance tol;
    float *a, *b, *c;             /* host operands and result */
    int failed, checked;
};

static int
cu_failed(const char *what, CUresult r)
{
    const char *name = NULL;

    if (r == CUDA_SUCCESS)
        return 0;
    cuGetErrorName(r, &name);
    printf("%s status=%s(%d)\n", what, name ? name : "CUDA_ERROR_UNKNOWN",
           (int)r);
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %s (%d)\n", what,
            name ? name : "unknown error", (int)r);
    return 1;
}

/* Checks job->c = A B and prints its case line. */
static void
check(struct job *job, const char *name)
{
    struct operand_view va = {job->a, M, 0}, vb = {job->b, K, 0};
    double worst = gemm_worst_ratio(&va, &vb, M, N, K, job->c,
                                    tol_factor(&job->tol, K));
    uint64_t hash = fnv1a64(job->c, (size_t)M * N * 4,
                            0xcbf29ce484222325ull);

    printf("case %s m=%d n=%d k=%d op=NN status=CUBLAS_STATUS_SUCCESS(0) "
           "err/bound=%.3e hash=%016" PRIx64 " %s api=cublasSgemm_v2\n",
           name, M, N, K, worst, hash, worst <= 1.0 ? "ok" : "FAIL");
    job->failed += !(worst <= 1.0);
    job->checked++;
}

/* C = A B on handle h (one call site for every product, so that they
 * share one site and shape). */
static cublasStatus_t
sgemm(cublasHandle_t h, const float *a, const float *b, float *c)
{
    const float one = 1.0f, zero = 0.0f;

    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, a, M, b,
                       K, &zero, c, M);
}

/* One cycle of phase "last": 0, or -1 after naming what failed. */
static int
last_cycle(struct job *job, int cycle)
{
    CUcontext ctx = NULL;
    CUdeviceptr da = 0, db = 0, dc = 0;
    cublasHandle_t h = NULL;
    unsigned flags;
    int active = 1, ok = -1;
    char name[32];

    if (cu_failed("cuDevicePrimaryCtxRetain",
                  cuDevicePrimaryCtxRetain(&ctx, 0)) ||
        cu_failed("cuCtxSetCurrent", cuCtxSetCurrent(ctx)))
        return -1;
    if (cublas_failed("cublasCreate", cublasCreate(&h)) ||
        cu_failed("cuMemAlloc", cuMemAlloc(&da, (size_t)M * K * 4)) ||
        cu_failed("cuMemAlloc", cuMemAlloc(&db, (size_t)K * N * 4)) ||
        cu_failed("cuMemAlloc", cuMemAlloc(&dc, (size_t)M * N * 4)) ||
        cu_failed("cuMemcpyHtoD", cuMemcpyHtoD(da, job->a, (size_t)M * K * 4))
        || cu_failed("cuMemcpyHtoD",
                     cuMemcpyHtoD(db, job->b, (size_t)K * N * 4)) ||
        cublas_failed("cublasSgemm", sgemm(h, (const float *)da,
                                           (const float *)db, (float *)dc)) ||
        cu_failed("cuMemcpyDtoH", cuMemcpyDtoH(job->c, dc, (size_t)M * N * 4)))
        goto out;
    snprintf(name, sizeof name, "last%d", cycle);
    check(job, name);
    ok = 0;
out:
    if (h)
        cublasDestroy(h);
    cuMemFree(da);
    cuMemFree(db);
    cuMemFree(dc);
    cuCtxSetCurrent(NULL);
    if (cu_failed("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(0)))
        return -1;
    if (ok == 0 &&
        (cu_failed("cuDevicePrimaryCtxGetState",
                   cuDevicePrimaryCtxGetState(0, &flags, &active)) ||
         active)) {
        fprintf(stderr, EXAMPLE_PROG ": the primary context is still "
                "active after the program's only retain was released\n");
        return -1;
    }
    return ok;
}

/* Phase "held": 0, or -1 after naming what failed. */
static int
held_rounds(struct job *job, int rounds)
{
    float *da, *db, *dc;
    cublasHandle_t h = NULL;
    CUcontext ctx, popped;
    char name[32];
    int ok = -1;

    if (cuda_failed("cudaSetDevice", cudaSetDevice(0)))
        return -1;
    da = device_copy(job->a, (size_t)M * K * 4);
    db = device_copy(job->b, (size_t)K * N * 4);
    dc = device_copy(NULL, (size_t)M * N * 4);
    if (!da || !db || !dc) {
        fprintf(stderr, EXAMPLE_PROG ": no device memory\n");
        goto out;
    }
    if (cublas_failed("cublasCreate", cublasCreate(&h)))
        goto out;
    for (int r = 0; r < rounds; r++) {
        if (cu_failed("cuDevicePrimaryCtxRetain",
                      cuDevicePrimaryCtxRetain(&ctx, 0)) ||
            cu_failed("cuCtxPushCurrent", cuCtxPushCurrent(ctx)))
            goto out;
        if (cublas_failed("cublasSgemm", sgemm(h, da, db, dc)) ||
            cuda_failed("cudaMemcpy", cudaMemcpy(job->c, dc,
                                                 (size_t)M * N * 4,
                                                 cudaMemcpyDeviceToHost)) ||
            cu_failed("cuCtxPopCurrent", cuCtxPopCurrent(&popped)) ||
            cu_failed("cuDevicePrimaryCtxRelease",
                      cuDevicePrimaryCtxRelease(0)))
            goto out;
        snprintf(name, sizeof name, "held%d", r);
        check(job, name);
    }
    ok = 0;
out:
    if (h)
        cublasDestroy(h);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    return ok;
}

int
main(int argc, char **argv)
{
    struct job job = {0};
    uint64_t seed = 0x5e7a1ull;
    int rounds = 100, cycles = 2, status = EXIT_CUDA_ERROR;

    if (argc < 2 || argc > 4 || tol_parse(argv[1], &job.tol) != 0 ||
        (argc > 2 && parse_int_range(argv[2], 0, 1000, &rounds) != 0) ||
        (argc > 3 && parse_int_range(argv[3], 0, 100, &cycles) != 0)) {
        fprintf(stderr, "usage: primary_retain fp32|tf32|fp16|bf16|X "
                "[ROUNDS [CYCLES]]\n");
        return EXIT_USAGE;
    }
    job.a = host_data((size_t)M * K, &seed);
    job.b = host_data((size_t)K * N, &seed);
    job.c = malloc((size_t)M * N * sizeof *job.c);
    if (!job.a || !job.b || !job.c ||
        cu_failed("cuInit", cuInit(0)))
        goto out;
    for (int i = 0; i < cycles; i++)
        if (last_cycle(&job, i) != 0)
            goto out;
    if (held_rounds(&job, rounds) != 0)
        goto out;
    printf("result: %d of %d results within the bound\n",
           job.checked - job.failed, job.checked);
    status = job.failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
out:
    free(job.a);
    free(job.b);
    free(job.c);
    return status;
}
