/* A producer and a consumer on two streams: the producer copies A and B to
 * the device and computes C = A B on its stream, then records an event;
 * the consumer waits for the event on its own stream, computes D = C E and
 * copies C and D back. Each round checks C against A B and D against the
 * C it got times E, in double precision, within the tolerance given.
 * --unordered leaves the event wait out: a race a GPU usually forgives
 * (the producer's work was queued first), which the emulator runs in queue
 * order and names on stderr.
 * usage: two_streams [--tol fp32|tf32|fp16|bf16|X] [--unordered] */
#include <cublas_v2.h>

#define EXAMPLE_PROG "two_streams"
#include "example_util.h"

struct side {
    cudaStream_t stream;
    cublasHandle_t blas;
};

/* One round at size n: 0 when both products are within the tolerance. */
static int
round_run(const struct side *prod, const struct side *cons, int n,
          int unordered, const struct tolerance *tol, uint64_t *seed,
          int *failed)
{
    size_t count = (size_t)n * n, bytes = count * sizeof(float);
    float *h[5] = { NULL }, *d[4] = { NULL };
    const float one = 1.0f, zero = 0.0f;
    cudaEvent_t made = NULL;
    int rc = EXIT_CUDA_ERROR;
    double worst_c, worst_d;

    for (int i = 0; i < 5; i++)
        if (cuda_failed("cudaMallocHost",
                        cudaMallocHost((void **)&h[i], bytes)))
            goto out;
    for (int i = 0; i < 4; i++)
        if (cuda_failed("cudaMalloc", cudaMalloc((void **)&d[i], bytes)))
            goto out;
    for (size_t i = 0; i < count; i++) {
        h[0][i] = rng_float(seed, 1.0f);    /* A */
        h[1][i] = rng_float(seed, 1.0f);    /* B */
        h[2][i] = rng_float(seed, 1.0f);    /* E */
    }
    if (cuda_failed("cudaEventCreate",
                    cudaEventCreateWithFlags(&made, cudaEventDisableTiming)))
        goto out;
    /* The producer: A, B and E to the device, C = A B, the event. */
    for (int i = 0; i < 3; i++)
        if (cuda_failed("cudaMemcpyAsync",
                        cudaMemcpyAsync(d[i], h[i], bytes,
                                        cudaMemcpyHostToDevice,
                                        prod->stream)))
            goto out;
    if (cublas_failed("cublasSgemm_v2 (producer)",
                      cublasSgemm_v2(prod->blas, CUBLAS_OP_N, CUBLAS_OP_N, n,
                                     n, n, &one, d[0], n, d[1], n, &zero,
                                     d[3], n)) ||
        cuda_failed("cudaEventRecord", cudaEventRecord(made, prod->stream)))
        goto out;
    /* The consumer: D = C E after the event, C and D back. */
    if (!unordered &&
        cuda_failed("cudaStreamWaitEvent",
                    cudaStreamWaitEvent(cons->stream, made, 0)))
        goto out;
    if (cublas_failed("cublasSgemm_v2 (consumer)",
                      cublasSgemm_v2(cons->blas, CUBLAS_OP_N, CUBLAS_OP_N, n,
                                     n, n, &one, d[3], n, d[2], n, &zero,
                                     d[1], n)))
        goto out;
    if (cuda_failed("cudaMemcpyAsync",
                    cudaMemcpyAsync(h[3], d[3], bytes, cudaMemcpyDeviceToHost,
                                    cons->stream)) ||
        cuda_failed("cudaMemcpyAsync",
                    cudaMemcpyAsync(h[4], d[1], bytes, cudaMemcpyDeviceToHost,
                                    cons->stream)) ||
        cuda_failed("cudaStreamSynchronize",
                    cudaStreamSynchronize(cons->stream)) ||
        cuda_failed("cudaStreamSynchronize",
                    cudaStreamSynchronize(prod->stream)))
        goto out;
    {
        struct operand_view a = { h[0], n, 0 }, b = { h[1], n, 0 };
        struct operand_view c = { h[3], n, 0 }, e = { h[2], n, 0 };

        worst_c = gemm_worst_ratio(&a, &b, n, n, n, h[3],
                                   tol_factor(tol, n));
        worst_d = gemm_worst_ratio(&c, &e, n, n, n, h[4],
                                   tol_factor(tol, n));
    }
    *failed = !(worst_c <= 1.0 && worst_d <= 1.0);
    printf("round n=%d c err/bound=%.3e d err/bound=%.3e %s\n", n, worst_c,
           worst_d, *failed ? "FAIL" : "ok");
    rc = 0;
out:
    if (made)
        cudaEventDestroy(made);
    for (int i = 0; i < 4; i++)
        cudaFree(d[i]);
    for (int i = 0; i < 5; i++)
        cudaFreeHost(h[i]);
    return rc;
}

static int
side_new(struct side *s)
{
    return cuda_failed("cudaStreamCreateWithFlags",
                       cudaStreamCreateWithFlags(&s->stream,
                                                 cudaStreamNonBlocking)) ||
           cublas_failed("cublasCreate_v2", cublasCreate_v2(&s->blas)) ||
           cublas_failed("cublasSetStream_v2",
                         cublasSetStream_v2(s->blas, s->stream));
}

int
main(int argc, char **argv)
{
    static const int sizes[] = { 64, 96, 128 };
    struct tolerance tol = { TOL_FP32, 0.0 };
    struct side prod = { 0 }, cons = { 0 };
    uint64_t seed = 0x2057eau;
    int unordered = 0, failed = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc &&
            tol_parse(argv[i + 1], &tol) == 0) {
            i++;
            continue;
        }
        if (strcmp(argv[i], "--unordered") == 0) {
            unordered = 1;
            continue;
        }
        fprintf(stderr, "usage: two_streams [--tol fp32|tf32|fp16|bf16|X] "
                "[--unordered]\n");
        return EXIT_USAGE;
    }
    if (side_new(&prod) || side_new(&cons))
        return EXIT_CUDA_ERROR;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int bad = 0;

        if (round_run(&prod, &cons, sizes[i], unordered, &tol, &seed, &bad))
            return EXIT_CUDA_ERROR;
        failed += bad;
    }
    cublasDestroy_v2(prod.blas);
    cublasDestroy_v2(cons.blas);
    cudaStreamDestroy(prod.stream);
    cudaStreamDestroy(cons.stream);
    printf("result: %d of %zu rounds passed\n",
           (int)(sizeof sizes / sizeof sizes[0]) - failed,
           sizeof sizes / sizeof sizes[0]);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
