/* report_prog: an ordinary FP32 cuBLAS program for the report tests. It
 * makes --calls calls of cublasSgemm_v2 (M x N x K, beta 0) from one call
 * site, round-robin over --streams streams, then exits with --exit STATUS,
 * from main or, with --exit-thread, from a worker thread while main waits
 * in pthread_join. With --m2 --n2 --k2, a second call site (second_site)
 * then makes --calls calls more on the first stream, M2 x N2 x K2 and
 * M2 x N2 x K2/2 in turn, starting with K2. With --nonfinite every element
 * of A and B is NaN, so that no element of a product is finite. With
 * --segv-after MS, after its first site's calls it goes on calling (one
 * call, then a synchronisation) for MS milliseconds, then dies of a
 * segmentation fault: a store to a page it may not write. */
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_STREAMS 8

static int exit_status;
/* Global: still reachable when a thread exits the process. */
static float *host;

static void *
exit_from_thread(void *arg)
{
    (void)arg;
    exit(exit_status);
}

static int
option(int argc, char **argv, const char *name, int dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return atoi(argv[i + 1]);
    return dflt;
}

static int
flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

/* Another call site of cublasSgemm_v2, with two shapes. */
static __attribute__((noinline)) int
second_site(cublasHandle_t handle, int m, int n, int k, int calls,
            const float *a, const float *b, float *c)
{
    const float alpha = 1.0f, beta = 0.0f;

    for (int i = 0; i < calls; i++) {
        int ki = i % 2 ? k / 2 : k;

        if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, ki, &alpha, a,
                        m, b, ki, &beta, c, m) != CUBLAS_STATUS_SUCCESS)
            return -1;
    }
    return 0;
}

/* Calls for ms milliseconds, then a segmentation fault. */
static void
call_then_fault(cublasHandle_t handle, int m, int n, int k, const float *a,
                const float *b, float *c, int ms)
{
    const float alpha = 1.0f, beta = 0.0f;
    struct timespec t0, t;
    volatile int *page;
    long elapsed;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, m,
                    b, k, &beta, c, m);
        cudaDeviceSynchronize();
        clock_gettime(CLOCK_MONOTONIC, &t);
        elapsed = (t.tv_sec - t0.tv_sec) * 1000L +
                  (t.tv_nsec - t0.tv_nsec) / 1000000L;
    } while (elapsed < ms);
    page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page != MAP_FAILED)
        *page = 1;
    fprintf(stderr, "report_prog: no fault\n");
    exit(7);
}

static size_t
larger(size_t a, size_t b)
{
    return a > b ? a : b;
}

static CUcontext own;

/* Resets the device the way `how` says; 0 on success. */
static int
reset(const char *how)
{
    if (strcmp(how, "destroy") == 0)
        return cuCtxDestroy(own) != CUDA_SUCCESS;
    if (strcmp(how, "runtime") == 0)
        return cudaDeviceReset() != cudaSuccess;
    if (strcmp(how, "driver") == 0)
        return cuDevicePrimaryCtxReset(0) != CUDA_SUCCESS;
    fprintf(stderr, "report_prog: --reset runtime, driver or destroy, not "
            "%s\n", how);
    return 1;
}

/* Max-norm relative error of the m x n product of report_prog's data (A
 * m x k, B k x n, both from host[]) in c, against double. */
static double
check_product(const float *c, int m, int n, int k)
{
    double err = 0.0, ref = 0.0;

    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double want = 0.0;

            for (int l = 0; l < k; l++)
                want += (double)host[i + (size_t)l * m] *
                        (double)host[l + (size_t)j * k];
            err = fmax(err, fabs(c[i + (size_t)j * m] - want));
            ref = fmax(ref, fabs(want));
        }
    return ref > 0.0 ? err / ref : err;
}

int
main(int argc, char **argv)
{
    int m = option(argc, argv, "--m", 256), n = option(argc, argv, "--n", 256);
    int k = option(argc, argv, "--k", 256);
    int calls = option(argc, argv, "--calls", 4);
    int nstreams = option(argc, argv, "--streams", 1);
    const char *how = NULL;
    int again = option(argc, argv, "--again", 0);
    cudaStream_t streams[MAX_STREAMS];
    float *a, *b, *c, alpha = 1.0f, beta = 0.0f, *result;
    cublasHandle_t handle;
    pthread_t worker;
    int m2 = option(argc, argv, "--m2", 0), n2 = option(argc, argv, "--n2", 0);
    int k2 = option(argc, argv, "--k2", 0);
    int nonfinite = flag(argc, argv, "--nonfinite");
    size_t big = (size_t)(m > n ? m : n) * (size_t)(k > n ? k : n);
    size_t big2 = larger((size_t)m2, (size_t)n2) * larger((size_t)k2,
                                                          (size_t)n2);

    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--reset") == 0)
            how = argv[i + 1];
    big = larger(big, big2);
    exit_status = option(argc, argv, "--exit", 0);
    if (nstreams < 1 || nstreams > MAX_STREAMS)
        return 2;
    host = malloc(big * sizeof *host);
    result = malloc((size_t)m * n * sizeof *result);
    for (size_t i = 0; i < big; i++)
        host[i] = nonfinite ? NAN : (float)((i * 7) % 13) / 13.0f - 0.5f;
    /* Once, or twice with a reset between and --again. */
    int rounds = how ? 1 + again : 1;

    for (int round = 0; round < rounds; round++) {
        /* A context of the program's own, or after a reset the device's
         * primary context, made current. */
        if (how && strcmp(how, "destroy") == 0
                ? cuInit(0) != CUDA_SUCCESS ||
                      cuCtxCreate(&own, NULL, 0, 0) != CUDA_SUCCESS
                : round > 0 && cudaSetDevice(0) != cudaSuccess) {
            fprintf(stderr, "report_prog: no context\n");
            return 3;
        }
        if (cudaMalloc((void **)&a, big * 4) != cudaSuccess ||
            cudaMalloc((void **)&b, big * 4) != cudaSuccess ||
            cudaMalloc((void **)&c, big * 4) != cudaSuccess ||
            cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "report_prog: no device\n");
            return 3;
        }
        cudaMemcpy(a, host, big * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(b, host, big * 4, cudaMemcpyHostToDevice);
        for (int s = 0; s < nstreams; s++)
            cudaStreamCreate(&streams[s]);
        for (int i = 0; i < calls; i++) {
            cublasSetStream(handle, streams[i % nstreams]);
            if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
                            a, m, b, k, &beta, c, m) !=
                CUBLAS_STATUS_SUCCESS) {
                fprintf(stderr, "report_prog: cublasSgemm failed\n");
                return 4;
            }
        }
        if (option(argc, argv, "--segv-after", 0) > 0)
            call_then_fault(handle, m, n, k, a, b, c,
                            option(argc, argv, "--segv-after", 0));
        if (how && (round + 1 < rounds || again == 0)) {
            /* The calls are still pending: the reset ends them. */
            if (reset(how) != 0) {
                fprintf(stderr, "report_prog: the reset failed\n");
                return 6;
            }
            continue;
        }
        cudaDeviceSynchronize();
        if (cudaMemcpy(result, c, (size_t)m * n * 4,
                       cudaMemcpyDeviceToHost) != cudaSuccess) {
            fprintf(stderr, "report_prog: cannot read the result\n");
            return 4;
        }
        if (round > 0) {
            double rel = check_product(result, m, n, k);

            printf("report_prog after the reset: max_rel=%.3g\n", rel);
            if (!(rel <= 1e-2))
                return 5;
        }
    }
    if (m2 > 0 && n2 > 0 && k2 > 0) {
        cublasSetStream(handle, streams[0]);
        if (second_site(handle, m2, n2, k2, calls, a, b, c) != 0) {
            fprintf(stderr, "report_prog: cublasSgemm failed\n");
            return 4;
        }
        cudaDeviceSynchronize();
    }
    printf("report_prog calls=%d c0=%g\n", calls,
           how && again == 0 ? 0.0 : result[0]);
    fflush(stdout);
    if (flag(argc, argv, "--exit-thread")) {
        /* exit() from the worker while main waits here. */
        pthread_create(&worker, NULL, exit_from_thread, NULL);
        pthread_join(worker, NULL);
    }
    free(result);
    free(host);
    return exit_status;
}
