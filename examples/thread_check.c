/* thread_check: an ordinary multi-threaded FP32 cuBLAS and cuDNN program.
 * Every thread runs every GEMM entry point it uses and the three legacy
 * convolutions, on its own handles and stream and on one handle of each
 * library that all threads share, and checks each result against a
 * double-precision reference with the tolerance named on the command line.
 *
 * usage: thread_check [--tol T] [--threads N] [--iters N] [--serial]
 *                     [--fork] [--exit-early] [--no-cuda]
 *   --serial      the same work, one thread after the other
 *   --fork        one converted round, then fork: the child runs a round
 *                 and exits, then the parent runs another
 *   --exit-early  the threads loop until main calls exit() under them
 *   --no-cuda     print nothing, call nothing
 *
 * Prints one line per thread, handle and entry point, in the
 * "case ... hash=H ok api=API class=gemm" form of the other examples
 * (sorted by thread), and "result: P of N cases passed". */
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "thread_check"
#include "example_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 32
#define GM 24   /* GEMM m, n, k */
#define GN 20
#define GK 40
#define BATCH 2
/* Convolution: N C H W, K filters of R x S, padding 1, stride 1. */
#define CN 1
#define CC 4
#define CH 6
#define CW 6
#define CK 4
#define CR 3

enum api {
    SGEMM, SGEMM_EX, GEMM_EX, SGEMM_BATCHED, SGEMM_STRIDED, GEMM_BATCHED_EX,
    GEMM_STRIDED_EX, CONV_FWD, CONV_BWD_DATA, CONV_BWD_FILTER, API_COUNT
};
static const char *const api_names[API_COUNT] = {
    "cublasSgemm_v2", "cublasSgemmEx", "cublasGemmEx", "cublasSgemmBatched",
    "cublasSgemmStridedBatched", "cublasGemmBatchedEx",
    "cublasGemmStridedBatchedEx", "cudnnConvolutionForward",
    "cudnnConvolutionBackwardData", "cudnnConvolutionBackwardFilter",
};

struct shared {
    cublasHandle_t blas;
    cudnnHandle_t dnn;
};

struct result {
    int status;
    double ratio;
    uint64_t hash;
};

struct worker {
    pthread_t tid;
    int index, iters, own;  /* own: this thread's handles (else shared) */
    struct tolerance tol;
    const struct shared *shared;
    struct result res[2][API_COUNT];  /* [own][api], of the last round */
    int failed_setup;
};

static int exit_early;

/* ---- Data and references ------------------------------------------------- */

static void
fill(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rng_float(&seed, 1.0f);
}

/* Column-major C (m x n) = A (m x k) B (k x n); worst error/bound. */
static double
gemm_ratio(const float *a, const float *b, const float *c, double tol)
{
    struct operand_view va = { a, GM, 0 }, vb = { b, GK, 0 };

    return gemm_worst_ratio(&va, &vb, GM, GN, GK, c, tol);
}

#define XN (CN * CC * CH * CW)
#define WN (CK * CC * CR * CR)
#define YN (CN * CK * CH * CW)

/* The three convolutions in double, with the sums of magnitudes for the
 * bounds; NCHW, padding 1, cross-correlation. */
struct conv_ref {
    double y[YN], ym[YN], dx[XN], dxm[XN], dw[WN], dwm[WN];
};

static void
conv_reference(const float *x, const float *w, const float *dy,
               struct conv_ref *ref)
{
    memset(ref, 0, sizeof(*ref));
    for (int n = 0; n < CN; n++)
    for (int k = 0; k < CK; k++)
    for (int c = 0; c < CC; c++)
    for (int p = 0; p < CH; p++)
    for (int q = 0; q < CW; q++)
    for (int r = 0; r < CR; r++)
    for (int s = 0; s < CR; s++) {
        int h = p + r - 1, v = q + s - 1;
        int xi, wi = ((k * CC + c) * CR + r) * CR + s;
        int yi = ((n * CK + k) * CH + p) * CW + q;

        if (h < 0 || h >= CH || v < 0 || v >= CW)
            continue;
        xi = ((n * CC + c) * CH + h) * CW + v;
        ref->y[yi] += (double)x[xi] * w[wi];
        ref->ym[yi] += fabs((double)x[xi] * w[wi]);
        ref->dx[xi] += (double)dy[yi] * w[wi];
        ref->dxm[xi] += fabs((double)dy[yi] * w[wi]);
        ref->dw[wi] += (double)x[xi] * dy[yi];
        ref->dwm[wi] += fabs((double)x[xi] * dy[yi]);
    }
}

static double
conv_ratio(const float *got, const double *ref, const double *mag, size_t n,
           const struct tolerance *tol, int len)
{
    double worst = 0.0, f = tol_factor(tol, len);

    for (size_t i = 0; i < n; i++) {
        double r = element_ratio(got[i], ref[i], mag[i] * f);

        if (!(r <= worst))
            worst = r;
    }
    return worst;
}

/* ---- One round: every entry point once --------------------------------- */

struct round {
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    cudaStream_t stream;     /* the handles' stream */
    float *da, *db, *dc;     /* BATCH of each */
    float *dx, *dw, *dy;
    const float **dap, **dbp;
    float **dcp;
    float a[BATCH * GM * GK], b[BATCH * GK * GN], c[BATCH * GM * GN];
    float x[XN], w[WN], y[YN], dyh[YN];
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    void *ws;
    size_t ws_size;
};

static int
gemm_call(struct round *r, enum api api)
{
    const float one = 1.0f, zero = 0.0f;
    const long long sa = GM * GK, sb = GK * GN, sc = GM * GN;
    const cublasOperation_t N = CUBLAS_OP_N;

    switch (api) {
    case SGEMM:
        return cublasSgemm(r->blas, N, N, GM, GN, GK, &one, r->da, GM, r->db,
                           GK, &zero, r->dc, GM);
    case SGEMM_EX:
        return cublasSgemmEx(r->blas, N, N, GM, GN, GK, &one, r->da,
                             CUDA_R_32F, GM, r->db, CUDA_R_32F, GK, &zero,
                             r->dc, CUDA_R_32F, GM);
    case GEMM_EX:
        return cublasGemmEx(r->blas, N, N, GM, GN, GK, &one, r->da,
                            CUDA_R_32F, GM, r->db, CUDA_R_32F, GK, &zero,
                            r->dc, CUDA_R_32F, GM, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT);
    case SGEMM_BATCHED:
        return cublasSgemmBatched(r->blas, N, N, GM, GN, GK, &one, r->dap,
                                  GM, r->dbp, GK, &zero, r->dcp, GM, BATCH);
    case SGEMM_STRIDED:
        return cublasSgemmStridedBatched(r->blas, N, N, GM, GN, GK, &one,
                                         r->da, GM, sa, r->db, GK, sb, &zero,
                                         r->dc, GM, sc, BATCH);
    case GEMM_BATCHED_EX:
        return cublasGemmBatchedEx(r->blas, N, N, GM, GN, GK, &one,
                                   (const void *const *)r->dap, CUDA_R_32F,
                                   GM, (const void *const *)r->dbp,
                                   CUDA_R_32F, GK, &zero,
                                   (void *const *)r->dcp, CUDA_R_32F, GM,
                                   BATCH, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT);
    case GEMM_STRIDED_EX:
        return cublasGemmStridedBatchedEx(r->blas, N, N, GM, GN, GK, &one,
                                          r->da, CUDA_R_32F, GM, sa, r->db,
                                          CUDA_R_32F, GK, sb, &zero, r->dc,
                                          CUDA_R_32F, GM, sc, BATCH,
                                          CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT);
    default:
        return -1;
    }
}

static int
batched(enum api api)
{
    return api == SGEMM_BATCHED || api == SGEMM_STRIDED ||
           api == GEMM_BATCHED_EX || api == GEMM_STRIDED_EX;
}

/* Runs one GEMM entry point and judges it. */
static void
run_gemm(struct round *r, enum api api, const struct tolerance *tol,
         struct result *res)
{
    int nb = batched(api) ? BATCH : 1;
    size_t bytes = sizeof(float) * (size_t)nb * GM * GN;

    memset(res, 0, sizeof(*res));
    cudaMemsetAsync(r->dc, 0xff, sizeof(r->c), r->stream);
    res->status = gemm_call(r, api);
    if (cudaStreamSynchronize(r->stream) != cudaSuccess ||
        cudaMemcpy(r->c, r->dc, bytes, cudaMemcpyDeviceToHost) !=
            cudaSuccess) {
        res->ratio = INFINITY;
        return;
    }
    res->hash = fnv1a64(r->c, bytes, 0xcbf29ce484222325ULL);
    for (int i = 0; i < nb && res->status == 0; i++) {
        double q = gemm_ratio(r->a + i * GM * GK, r->b + i * GK * GN,
                              r->c + i * GM * GN, tol_factor(tol, GK));

        if (!(q <= res->ratio))
            res->ratio = q;
    }
}

static void
run_conv(struct round *r, enum api api, const struct conv_ref *ref,
         const struct tolerance *tol, struct result *res)
{
    const float one = 1.0f, zero = 0.0f;
    float *dst = api == CONV_FWD ? r->dy : api == CONV_BWD_DATA ? r->dx
                                                                 : r->dw;
    float *host = api == CONV_FWD ? r->y : api == CONV_BWD_DATA ? r->x
                                                                 : r->w;
    size_t n = api == CONV_FWD ? YN : api == CONV_BWD_DATA ? XN : WN;

    memset(res, 0, sizeof(*res));
    if (api == CONV_FWD)
        res->status = cudnnConvolutionForward(
            r->dnn, &one, r->xd, r->dx, r->wd, r->dw, r->cd,
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, r->ws, r->ws_size,
            &zero, r->yd, r->dy);
    else if (api == CONV_BWD_DATA)
        res->status = cudnnConvolutionBackwardData(
            r->dnn, &one, r->wd, r->dw, r->yd, r->dy, r->cd,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, r->ws, r->ws_size, &zero,
            r->xd, r->dx);
    else
        res->status = cudnnConvolutionBackwardFilter(
            r->dnn, &one, r->xd, r->dx, r->yd, r->dy, r->cd,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, r->ws, r->ws_size, &zero,
            r->wd, r->dw);
    if (cudaStreamSynchronize(r->stream) != cudaSuccess ||
        cudaMemcpy(host, dst, n * sizeof(float), cudaMemcpyDeviceToHost) !=
            cudaSuccess) {
        res->ratio = INFINITY;
        return;
    }
    res->hash = fnv1a64(host, n * sizeof(float), 0xcbf29ce484222325ULL);
    if (res->status != 0)
        return;
    if (api == CONV_FWD)
        res->ratio = conv_ratio(host, ref->y, ref->ym, n, tol, CC * CR * CR);
    else if (api == CONV_BWD_DATA)
        res->ratio = conv_ratio(host, ref->dx, ref->dxm, n, tol,
                                CK * CR * CR);
    else
        res->ratio = conv_ratio(host, ref->dw, ref->dwm, n, tol,
                                CN * CH * CW);
}

/* The convolutions reuse the device buffers: each direction's inputs are
 * uploaded before it runs. */
static int
upload_conv_inputs(struct round *r, const float *x, const float *w,
                   const float *dy)
{
    return cudaMemcpy(r->dx, x, sizeof(r->x), cudaMemcpyHostToDevice) ||
           cudaMemcpy(r->dw, w, sizeof(r->w), cudaMemcpyHostToDevice) ||
           cudaMemcpy(r->dy, dy, sizeof(r->y), cudaMemcpyHostToDevice);
}

static void
run_round(struct round *r, uint64_t seed, const struct tolerance *tol,
          struct result *res)
{
    static __thread struct conv_ref ref;
    float x[XN], w[WN], dy[YN];

    fill(r->a, sizeof(r->a) / sizeof(float), seed);
    fill(r->b, sizeof(r->b) / sizeof(float), seed + 1);
    fill(x, XN, seed + 2);
    fill(w, WN, seed + 3);
    fill(dy, YN, seed + 4);
    conv_reference(x, w, dy, &ref);
    if (cudaMemcpy(r->da, r->a, sizeof(r->a), cudaMemcpyHostToDevice) ||
        cudaMemcpy(r->db, r->b, sizeof(r->b), cudaMemcpyHostToDevice)) {
        for (int a = 0; a < API_COUNT; a++)
            res[a] = (struct result){ -1, INFINITY, 0 };
        return;
    }
    for (int a = SGEMM; a <= GEMM_STRIDED_EX; a++)
        run_gemm(r, (enum api)a, tol, &res[a]);
    for (int a = CONV_FWD; a <= CONV_BWD_FILTER; a++) {
        if (upload_conv_inputs(r, x, w, dy)) {
            res[a] = (struct result){ -1, INFINITY, 0 };
            continue;
        }
        run_conv(r, (enum api)a, &ref, tol, &res[a]);
    }
}

/* ---- Set-up -------------------------------------------------------------- */

static int
round_open(struct round *r, const struct shared *shared)
{
    int dims_x[4] = { CN, CC, CH, CW }, dims_y[4] = { CN, CK, CH, CW };
    int st_x[4] = { CC * CH * CW, CH * CW, CW, 1 };
    int st_y[4] = { CK * CH * CW, CH * CW, CW, 1 };
    int wdims[4] = { CK, CC, CR, CR }, pad[2] = { 1, 1 }, one[2] = { 1, 1 };
    const float *ap[BATCH], *bp[BATCH];
    float *cp[BATCH];

    memset(r, 0, sizeof(*r));
    if (shared) {
        r->blas = shared->blas;
        r->dnn = shared->dnn;
        r->stream = 0;
    } else if (cudaStreamCreate(&r->stream) ||
               cublasCreate(&r->blas) ||
               cublasSetStream(r->blas, r->stream) ||
               cudnnCreate(&r->dnn) || cudnnSetStream(r->dnn, r->stream)) {
        return -1;
    }
    if (cudaMalloc((void **)&r->da, sizeof(r->a)) ||
        cudaMalloc((void **)&r->db, sizeof(r->b)) ||
        cudaMalloc((void **)&r->dc, sizeof(r->c)) ||
        cudaMalloc((void **)&r->dx, sizeof(r->x)) ||
        cudaMalloc((void **)&r->dw, sizeof(r->w)) ||
        cudaMalloc((void **)&r->dy, sizeof(r->y)) ||
        cudaMalloc((void **)&r->dap, sizeof(ap)) ||
        cudaMalloc((void **)&r->dbp, sizeof(bp)) ||
        cudaMalloc((void **)&r->dcp, sizeof(cp)))
        return -1;
    for (int i = 0; i < BATCH; i++) {
        ap[i] = r->da + i * GM * GK;
        bp[i] = r->db + i * GK * GN;
        cp[i] = r->dc + i * GM * GN;
    }
    if (cudaMemcpy(r->dap, ap, sizeof(ap), cudaMemcpyHostToDevice) ||
        cudaMemcpy(r->dbp, bp, sizeof(bp), cudaMemcpyHostToDevice) ||
        cudaMemcpy(r->dcp, cp, sizeof(cp), cudaMemcpyHostToDevice))
        return -1;
    if (cudnnCreateTensorDescriptor(&r->xd) ||
        cudnnCreateTensorDescriptor(&r->yd) ||
        cudnnCreateFilterDescriptor(&r->wd) ||
        cudnnCreateConvolutionDescriptor(&r->cd) ||
        cudnnSetTensorNdDescriptor(r->xd, CUDNN_DATA_FLOAT, 4, dims_x,
                                   st_x) ||
        cudnnSetTensorNdDescriptor(r->yd, CUDNN_DATA_FLOAT, 4, dims_y,
                                   st_y) ||
        cudnnSetFilterNdDescriptor(r->wd, CUDNN_DATA_FLOAT,
                                   CUDNN_TENSOR_NCHW, 4, wdims) ||
        cudnnSetConvolutionNdDescriptor(r->cd, 2, pad, one, one,
                                        CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT))
        return -1;
    /* The largest workspace of the three algorithms used. */
    {
        size_t f = 0, d = 0, w = 0;

        if (cudnnGetConvolutionForwardWorkspaceSize(
                r->dnn, r->xd, r->wd, r->cd, r->yd,
                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &f) ||
            cudnnGetConvolutionBackwardDataWorkspaceSize(
                r->dnn, r->wd, r->yd, r->cd, r->xd,
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &d) ||
            cudnnGetConvolutionBackwardFilterWorkspaceSize(
                r->dnn, r->xd, r->yd, r->cd, r->wd,
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, &w))
            return -1;
        r->ws_size = f > d ? f : d;
        r->ws_size = w > r->ws_size ? w : r->ws_size;
        if (r->ws_size && cudaMalloc(&r->ws, r->ws_size))
            return -1;
    }
    return 0;
}

static void
round_close(struct round *r, int own)
{
    cudaFree(r->da); cudaFree(r->db); cudaFree(r->dc);
    cudaFree(r->dx); cudaFree(r->dw); cudaFree(r->dy);
    cudaFree((void *)r->dap); cudaFree((void *)r->dbp); cudaFree(r->dcp);
    cudaFree(r->ws);
    cudnnDestroyTensorDescriptor(r->xd);
    cudnnDestroyTensorDescriptor(r->yd);
    cudnnDestroyFilterDescriptor(r->wd);
    cudnnDestroyConvolutionDescriptor(r->cd);
    if (own) {
        cublasDestroy(r->blas);
        cudnnDestroy(r->dnn);
        cudaStreamDestroy(r->stream);
    }
}

/* Thread index i's seed: its own data, the same in every run. */
static uint64_t
seed_of(int index, int own)
{
    return 0x5eed0000ULL + (uint64_t)index * 64 + (uint64_t)own * 16;
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    struct round r;

    if (round_open(&r, w->own ? NULL : w->shared) != 0) {
        w->failed_setup = 1;
        return NULL;
    }
    for (int it = 0; it < w->iters || exit_early; it++)
        run_round(&r, seed_of(w->index, w->own), &w->tol,
                  w->res[w->own]);
    round_close(&r, w->own);
    return NULL;
}

/* ---- Output -------------------------------------------------------------- */

static int
print_results(const struct worker *w, int nthreads)
{
    int failed = 0;

    for (int t = 0; t < nthreads; t++) {
        for (int a = 0; a < API_COUNT; a++) {
            const struct result *res = &w[2 * t + 1].res[1][a];
            const struct result *sh = &w[2 * t].res[0][a];

            for (int own = 1; own >= 0; own--) {
                const struct result *x = own ? res : sh;
                int ok = x->status == 0 && x->ratio <= 1.0;

                failed += !ok;
                printf("case t%d_%s_%s m=%d n=%d k=%d op=NN status=S(%d) "
                       "err/bound=%.3e hash=%016" PRIx64 " %s api=%s "
                       "class=gemm\n", t, own ? "own" : "shared",
                       api_names[a], a < CONV_FWD ? GM : 1,
                       a < CONV_FWD ? GN : 1, a < CONV_FWD ? GK : 1,
                       x->status, x->ratio, x->hash, ok ? "ok" : "FAIL",
                       api_names[a]);
            }
        }
    }
    printf("result: %d of %d cases passed\n",
           2 * nthreads * API_COUNT - failed, 2 * nthreads * API_COUNT);
    return failed;
}

/* Runs 2 * nthreads workers (own and shared handles), all at once or one
 * after the other; returns the number of failed cases, -1 on set-up. */
static int
run_workers(int nthreads, int iters, int serial, const struct tolerance *tol)
{
    static struct worker w[2 * MAX_THREADS];
    struct shared shared;
    int n = 2 * nthreads, failed;

    if (cublasCreate(&shared.blas) || cudnnCreate(&shared.dnn)) {
        printf("handle creation failed\n");
        return -1;
    }
    memset(w, 0, sizeof(w));
    for (int i = 0; i < n; i++) {
        w[i] = (struct worker){ .index = i / 2, .iters = iters,
                                .own = i % 2, .tol = *tol,
                                .shared = &shared };
        if (serial) {
            worker_main(&w[i]);
        } else if (pthread_create(&w[i].tid, NULL, worker_main, &w[i])) {
            printf("pthread_create failed\n");
            return -1;
        }
    }
    for (int i = 0; i < n && !serial; i++)
        pthread_join(w[i].tid, NULL);
    for (int i = 0; i < n; i++)
        if (w[i].failed_setup) {
            printf("worker %d: set-up failed\n", i);
            return -1;
        }
    failed = print_results(w, nthreads);
    cublasDestroy(shared.blas);
    cudnnDestroy(shared.dnn);
    return failed;
}

/* The threads loop without end; main exits under them. */
static int
run_exit_early(int nthreads, const struct tolerance *tol)
{
    static struct worker w[MAX_THREADS];

    exit_early = 1;
    for (int i = 0; i < nthreads; i++) {
        w[i] = (struct worker){ .index = i, .own = 1, .tol = *tol };
        if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
            return EXIT_CUDA_ERROR;
    }
    usleep(300 * 1000);
    printf("exiting with %d threads running\n", nthreads);
    fflush(stdout);
    exit(EXIT_ALL_PASS);
}

/* One round in the parent; the child runs one and exits; the parent runs
 * another after the child. */
static int
run_fork(const struct tolerance *tol)
{
    int failed = run_workers(1, 1, 1, tol);
    pid_t child;
    int status;

    fflush(stdout);
    child = fork();
    if (child < 0)
        return EXIT_CUDA_ERROR;
    if (child == 0) {
        printf("child pid=%d\n", (int)getpid());
        failed = run_workers(1, 1, 1, tol);
        fflush(stdout);
        exit(failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS);
    }
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        failed++;
    printf("parent pid=%d child exit=%d\n", (int)getpid(),
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    failed += run_workers(1, 1, 1, tol);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}

int
main(int argc, char **argv)
{
    struct tolerance tol = { TOL_FP32, 0.0 };
    int nthreads = 8, iters = 2, serial = 0, do_fork = 0, early = 0;
    int failed;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc &&
            tol_parse(argv[i + 1], &tol) == 0)
            i++;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "--serial") == 0)
            serial = 1;
        else if (strcmp(argv[i], "--fork") == 0)
            do_fork = 1;
        else if (strcmp(argv[i], "--exit-early") == 0)
            early = 1;
        else if (strcmp(argv[i], "--no-cuda") == 0)
            return EXIT_ALL_PASS;
        else
            nthreads = -1;
        if (nthreads < 1 || nthreads > MAX_THREADS || iters < 1) {
            fprintf(stderr, "usage: thread_check [--tol T] [--threads 1-%d] "
                    "[--iters N] [--serial] [--fork] [--exit-early] "
                    "[--no-cuda]\n", MAX_THREADS);
            return EXIT_USAGE;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (early)
        return run_exit_early(nthreads, &tol);
    if (do_fork)
        return run_fork(&tol);
    failed = run_workers(nthreads, iters, serial, &tol);
    if (failed < 0)
        return EXIT_CUDA_ERROR;
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
