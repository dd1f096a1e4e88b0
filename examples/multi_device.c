/* multi_device: an ordinary FP32 CUDA program that drives every device of
 * the machine from one process, with the runtime API, cuBLAS and cuDNN.
 *
 * usage: multi_device [--tol T] [--threads N] [--switch] [--iters K]
 *   --threads N  N threads at once (default 8): thread i calls
 *                cudaSetDevice(i % devices), makes its own cuBLAS and
 *                cuDNN handles on a stream of its own, and runs K SGEMMs,
 *                one strided batched SGEMM and one convolution of shapes
 *                and data of its own
 *   --switch     one thread that switches devices between calls: a handle
 *                and stream per device (device 0's on the legacy default
 *                stream, the others' on streams of their own), then K
 *                rounds of cudaSetDevice(d) and an SGEMM on device d's
 *                handle for every device d, back and forth, and one
 *                strided batched SGEMM and one convolution per device
 *   --iters K    SGEMMs per thread, or rounds (default 3)
 *   --tol T      the bound of every element (see sgemm_check; default
 *                fp32)
 *
 * Every result is checked against a double-precision reference. Prints
 * one line per case, in the "case ... hash=H ok" form of the other
 * examples with "device=D api=API" after the verdict, in a fixed order
 * (by thread, then case), and "result: P of N cases passed". Exit status:
 * 0 all pass, 1 a check failed, 2 bad usage, 3 a CUDA, cuBLAS or cuDNN
 * call failed. */
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "multi_device"
#include "example_util.h"

#include <inttypes.h>
#include <pthread.h>

#define MAX_THREADS 32
#define MAX_DEVICES 16
#define MAX_ITERS 16
/* Cases of one worker: K SGEMMs, then per device a strided batched SGEMM
 * and a convolution. */
#define MAX_CASES (MAX_ITERS * MAX_DEVICES + 2 * MAX_DEVICES)
#define BATCH 3

enum kind { KIND_SGEMM, KIND_STRIDED, KIND_CONV };

static const char *const api_names[] = {
    [KIND_SGEMM] = "cublasSgemm_v2",
    [KIND_STRIDED] = "cublasSgemmStridedBatched",
    [KIND_CONV] = "cudnnConvolutionForward",
};

/* What one case ran and gave. */
struct result {
    char name[96];
    enum kind kind;
    int device;
    int m, n, k;               /* convolution: 1 x outputs x its reduction */
    int ta;                    /* op(A) transposed */
    int status;                /* cuBLAS or cuDNN status */
    int failed;                /* a call around it failed */
    double ratio;              /* max error / bound */
    uint64_t hash;
};

/* One device's objects: handles on one stream. */
struct device_state {
    int device;
    cudaStream_t stream;       /* NULL: the legacy default stream */
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    int made;
};

struct worker {
    pthread_t tid;
    int index, iters;
    int ndev;
    struct tolerance tol;
    struct result res[MAX_CASES];
    int nres;
    int failed_setup;
};

/* ---- Data ------------------------------------------------------------------ */

static float *
filled(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof(float));

    for (size_t i = 0; x && i < n; i++)
        x[i] = rng_float(&seed, 1.0f);
    return x;
}

/* The seed of a case: its own data in every run. */
static uint64_t
seed_of(int worker, int device, int index)
{
    return 0xd0d0000ULL + (uint64_t)worker * 4096 + (uint64_t)device * 256 +
           (uint64_t)index * 8;
}

/* Uploads n floats into fresh device memory of the current device; NULL
 * on failure (reported). */
static float *
upload(const float *host, size_t n)
{
    float *d = NULL;

    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&d, n * 4)))
        return NULL;
    if (host && cuda_failed("cudaMemcpy", cudaMemcpy(d, host, n * 4,
                                                     cudaMemcpyHostToDevice))) {
        cudaFree(d);
        return NULL;
    }
    return d;
}

/* Waits for the stream and downloads n floats of d into host; 0 or -1. */
static int
download(float *host, const float *d, size_t n, cudaStream_t stream)
{
    return cuda_failed("cudaStreamSynchronize",
                       cudaStreamSynchronize(stream)) ||
                   cuda_failed("cudaMemcpy",
                               cudaMemcpy(host, d, n * 4,
                                          cudaMemcpyDeviceToHost))
               ? -1
               : 0;
}

/* ---- GEMMs ----------------------------------------------------------------- */

/* C (m x n, column-major) = alpha op(A) B + beta C0 for `batch` members
 * stored one after the other, on ds; checked and hashed into r. */
static void
run_gemm(const struct device_state *ds, struct result *r, uint64_t seed,
         const struct tolerance *tol)
{
    const int m = r->m, n = r->n, k = r->k, batch =
        r->kind == KIND_STRIDED ? BATCH : 1;
    const int lda = r->ta ? k : m, ldb = k, ldc = m;
    const float alpha = r->kind == KIND_STRIDED ? 1.0f : 0.75f;
    const float beta = r->kind == KIND_STRIDED ? 0.0f : 0.5f;
    size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
    float *a = filled(na * batch, seed), *b = filled(nb * batch, seed + 1);
    float *c0 = filled(nc * batch, seed + 2), *c = malloc(nc * batch * 4);
    float *da = NULL, *db = NULL, *dc = NULL;
    cublasOperation_t opa = r->ta ? CUBLAS_OP_T : CUBLAS_OP_N;

    r->ratio = INFINITY;
    if (!a || !b || !c0 || !c) {
        r->failed = 1;
        goto out;
    }
    da = upload(a, na * batch);
    db = upload(b, nb * batch);
    dc = upload(c0, nc * batch);
    if (!da || !db || !dc) {
        r->failed = 1;
        goto out;
    }
    if (r->kind == KIND_STRIDED)
        r->status = cublasSgemmStridedBatched(
            ds->blas, opa, CUBLAS_OP_N, m, n, k, &alpha, da, lda,
            (long long)na, db, ldb, (long long)nb, &beta, dc, ldc,
            (long long)nc, batch);
    else
        r->status = cublasSgemm_v2(ds->blas, opa, CUBLAS_OP_N, m, n, k,
                                   &alpha, da, lda, db, ldb, &beta, dc, ldc);
    if (download(c, dc, nc * batch, ds->stream) != 0) {
        r->failed = 1;
        goto out;
    }
    r->hash = fnv1a64(c, nc * batch * 4, 0xcbf29ce484222325ULL);
    r->ratio = 0.0;
    for (int s = 0; s < batch; s++) {
        struct operand_view va = { a + s * na, lda, r->ta };
        struct operand_view vb = { b + s * nb, ldb, 0 };

        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double q = gemm_element_ratio(
                    &va, &vb, i, j, k, alpha, beta,
                    c0[s * nc + (size_t)j * m + i],
                    c[s * nc + (size_t)j * m + i], tol_factor(tol, k));

                if (!(q <= r->ratio))
                    r->ratio = q;
            }
    }
out:
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    free(a);
    free(b);
    free(c0);
    free(c);
}

/* ---- A convolution --------------------------------------------------------- */

/* y = conv(x, w): x 1 x C x H x H, w K x C x 3 x 3, padding 1, stride 1,
 * cross-correlation, NCHW; C and H from the case (r->k = C 9, r->n = K,
 * r->m = H H). */
static void
run_conv(const struct device_state *ds, struct result *r, int channels,
         int side, uint64_t seed, const struct tolerance *tol)
{
    const int C = channels, H = side, K = r->n, R = 3;
    const size_t nx = (size_t)C * H * H, nw = (size_t)K * C * R * R,
                 ny = (size_t)K * H * H;
    const float one = 1.0f, zero = 0.0f;
    int dx_[4] = { 1, C, H, H }, dy_[4] = { 1, K, H, H };
    int sx[4] = { C * H * H, H * H, H, 1 }, sy[4] = { K * H * H, H * H, H, 1 };
    int wd_[4] = { K, C, R, R }, pad[2] = { 1, 1 }, ones[2] = { 1, 1 };
    float *x = filled(nx, seed), *w = filled(nw, seed + 1);
    float *y = malloc(ny * 4), *dx = NULL, *dw = NULL, *dy = NULL;
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    cudnnFilterDescriptor_t wdesc = NULL;
    cudnnConvolutionDescriptor_t cd = NULL;
    void *ws = NULL;
    size_t ws_size = 0;
    const cudnnConvolutionFwdAlgo_t algo =
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;

    r->ratio = INFINITY;
    if (!x || !w || !y) {
        r->failed = 1;
        goto out;
    }
    dx = upload(x, nx);
    dw = upload(w, nw);
    dy = upload(NULL, ny);
    if (!dx || !dw || !dy ||
        cudnnCreateTensorDescriptor(&xd) || cudnnCreateTensorDescriptor(&yd) ||
        cudnnCreateFilterDescriptor(&wdesc) ||
        cudnnCreateConvolutionDescriptor(&cd) ||
        cudnnSetTensorNdDescriptor(xd, CUDNN_DATA_FLOAT, 4, dx_, sx) ||
        cudnnSetTensorNdDescriptor(yd, CUDNN_DATA_FLOAT, 4, dy_, sy) ||
        cudnnSetFilterNdDescriptor(wdesc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                   4, wd_) ||
        cudnnSetConvolutionNdDescriptor(cd, 2, pad, ones, ones,
                                        CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT) ||
        cudnnGetConvolutionForwardWorkspaceSize(ds->dnn, xd, wdesc, cd, yd,
                                                algo, &ws_size) ||
        (ws_size && cuda_failed("cudaMalloc", cudaMalloc(&ws, ws_size)))) {
        fprintf(stderr, "multi_device: convolution set-up failed\n");
        r->failed = 1;
        goto out;
    }
    r->status = cudnnConvolutionForward(ds->dnn, &one, xd, dx, wdesc, dw, cd,
                                        algo, ws, ws_size, &zero, yd, dy);
    if (download(y, dy, ny, ds->stream) != 0) {
        r->failed = 1;
        goto out;
    }
    r->hash = fnv1a64(y, ny * 4, 0xcbf29ce484222325ULL);
    r->ratio = 0.0;
    for (int k = 0; k < K; k++)
        for (int p = 0; p < H; p++)
            for (int q = 0; q < H; q++) {
                double sum = 0.0, mag = 0.0, e;

                for (int c = 0; c < C; c++)
                    for (int i = 0; i < R; i++)
                        for (int j = 0; j < R; j++) {
                            int h = p + i - 1, v = q + j - 1;
                            double t;

                            if (h < 0 || h >= H || v < 0 || v >= H)
                                continue;
                            t = (double)x[((size_t)c * H + h) * H + v] *
                                w[(((size_t)k * C + c) * R + i) * R + j];
                            sum += t;
                            mag += fabs(t);
                        }
                e = element_ratio(y[((size_t)k * H + p) * H + q], sum,
                                  mag * tol_factor(tol, C * R * R));
                if (!(e <= r->ratio))
                    r->ratio = e;
            }
out:
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wdesc);
    cudnnDestroyConvolutionDescriptor(cd);
    cudaFree(ws);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    free(x);
    free(w);
    free(y);
}

/* ---- Devices ---------------------------------------------------------------- */

/* Makes device d current and its handles on a stream of its own (the
 * legacy default stream when !own_stream); 0 or -1 (reported). */
static int
device_open(struct device_state *ds, int d, int own_stream)
{
    memset(ds, 0, sizeof(*ds));
    ds->device = d;
    if (cuda_failed("cudaSetDevice", cudaSetDevice(d)) ||
        (own_stream && cuda_failed("cudaStreamCreate",
                                   cudaStreamCreate(&ds->stream))) ||
        cublas_failed("cublasCreate_v2", cublasCreate_v2(&ds->blas)) ||
        cublas_failed("cublasSetStream_v2",
                      cublasSetStream_v2(ds->blas, ds->stream)))
        return -1;
    if (cudnnCreate(&ds->dnn) != CUDNN_STATUS_SUCCESS ||
        cudnnSetStream(ds->dnn, ds->stream) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "multi_device: cuDNN handle on device %d failed\n",
                d);
        return -1;
    }
    ds->made = 1;
    return 0;
}

/* Destroys ds's objects, with its device current. */
static void
device_close(struct device_state *ds)
{
    if (cudaSetDevice(ds->device) != cudaSuccess)
        return;
    if (ds->blas)
        cublasDestroy_v2(ds->blas);
    if (ds->dnn)
        cudnnDestroy(ds->dnn);
    if (ds->stream)
        cudaStreamDestroy(ds->stream);
}

/* A new case of w on device d, named "<prefix>_<what>_d<d>". */
static struct result *
case_add(struct worker *w, enum kind kind, int d, const char *prefix,
         const char *what)
{
    struct result *r = &w->res[w->nres++];

    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->device = d;
    snprintf(r->name, sizeof r->name, "%s_%s_d%d", prefix, what, d);
    return r;
}

/* Runs an SGEMM case of shape index `shape` on ds (device current). */
static void
gemm_case(struct worker *w, const struct device_state *ds, struct result *r,
          int shape, uint64_t seed)
{
    /* Distinct shapes per worker, device and call. */
    r->m = 16 + 4 * w->index + 2 * shape + ds->device;
    r->n = 12 + 2 * shape + 3 * ds->device;
    r->k = 24 + 8 * (w->index % 4) + 4 * shape;
    r->ta = shape % 2;
    run_gemm(ds, r, seed, &w->tol);
}

static void
strided_case(struct worker *w, const struct device_state *ds,
             struct result *r, uint64_t seed)
{
    r->m = 20 + 2 * w->index + ds->device;
    r->n = 18 + ds->device;
    r->k = 32 + 4 * (w->index % 3);
    run_gemm(ds, r, seed, &w->tol);
}

static void
conv_case(struct worker *w, const struct device_state *ds, struct result *r,
          uint64_t seed)
{
    int channels = 2 + (w->index + ds->device) % 3, side = 5 + w->index % 4;

    r->m = side * side;
    r->n = 3 + ds->device % 2;
    r->k = channels * 9;
    run_conv(ds, r, channels, side, seed, &w->tol);
}

/* --threads: one device, its own handles and stream. */
static void *
thread_main(void *arg)
{
    struct worker *w = arg;
    struct device_state ds;
    int d = w->index % w->ndev;
    char prefix[24], what[24];

    if (device_open(&ds, d, 1) != 0) {
        w->failed_setup = 1;
        device_close(&ds);
        return NULL;
    }
    snprintf(prefix, sizeof prefix, "t%d", w->index);
    for (int i = 0; i < w->iters; i++) {
        snprintf(what, sizeof what, "sgemm%d", i);
        gemm_case(w, &ds, case_add(w, KIND_SGEMM, d, prefix, what), i,
                  seed_of(w->index, d, i));
    }
    strided_case(w, &ds, case_add(w, KIND_STRIDED, d, prefix, "strided"),
                 seed_of(w->index, d, MAX_ITERS));
    conv_case(w, &ds, case_add(w, KIND_CONV, d, prefix, "conv"),
              seed_of(w->index, d, MAX_ITERS + 1));
    device_close(&ds);
    return NULL;
}

/* --switch: every device's handles made first, then calls that switch
 * devices between each other. */
static void
switch_main(struct worker *w)
{
    static struct device_state ds[MAX_DEVICES];
    char prefix[24];
    int d, i;

    for (d = 0; d < w->ndev; d++)
        if (device_open(&ds[d], d, d > 0) != 0)
            w->failed_setup = 1;
    for (i = 0; i < w->iters && !w->failed_setup; i++) {
        snprintf(prefix, sizeof prefix, "switch_r%d", i);
        for (d = 0; d < w->ndev; d++) {
            if (cuda_failed("cudaSetDevice", cudaSetDevice(d))) {
                w->failed_setup = 1;
                break;
            }
            gemm_case(w, &ds[d], case_add(w, KIND_SGEMM, d, prefix, "sgemm"),
                      i, seed_of(0, d, i));
        }
    }
    for (d = 0; d < w->ndev && !w->failed_setup; d++) {
        if (cuda_failed("cudaSetDevice", cudaSetDevice(d))) {
            w->failed_setup = 1;
            break;
        }
        strided_case(w, &ds[d], case_add(w, KIND_STRIDED, d, "switch",
                                         "strided"),
                     seed_of(0, d, MAX_ITERS));
        conv_case(w, &ds[d], case_add(w, KIND_CONV, d, "switch", "conv"),
                  seed_of(0, d, MAX_ITERS + 1));
    }
    for (d = 0; d < w->ndev; d++)
        device_close(&ds[d]);
}

/* ---- Output ----------------------------------------------------------------- */

static int
print_results(const struct worker *w, int nworkers)
{
    int failed = 0, total = 0;

    for (int t = 0; t < nworkers; t++) {
        for (int i = 0; i < w[t].nres; i++) {
            const struct result *r = &w[t].res[i];
            int ok = !r->failed && r->status == 0 && r->ratio <= 1.0;
            const char *status =
                r->kind == KIND_CONV
                    ? cudnnGetErrorString((cudnnStatus_t)r->status)
                    : cublas_status_name((cublasStatus_t)r->status);

            total++;
            failed += !ok;
            printf("case %s m=%d n=%d k=%d op=%sN status=%s(%d) "
                   "err/bound=%.3e hash=%016" PRIx64 " %s device=%d api=%s\n",
                   r->name, r->m, r->n, r->k, r->ta ? "T" : "N", status,
                   r->status, r->ratio, r->hash, ok ? "ok" : "FAIL",
                   r->device, api_names[r->kind]);
        }
    }
    printf("result: %d of %d cases passed\n", total - failed, total);
    return failed;
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: multi_device [--tol T] [--threads 1-%d] [--switch] "
            "[--iters 1-%d]\n", MAX_THREADS, MAX_ITERS);
}

int
main(int argc, char **argv)
{
    static struct worker w[MAX_THREADS];
    struct tolerance tol = { TOL_FP32, 0.0 };
    int nthreads = 8, iters = 3, do_switch = 0, ndev = 0, failed;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc &&
            tol_parse(argv[i + 1], &tol) == 0) {
            i++;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            nthreads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--switch") == 0) {
            do_switch = 1;
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return EXIT_ALL_PASS;
        } else {
            usage(stderr);
            return EXIT_USAGE;
        }
        if (nthreads < 1 || nthreads > MAX_THREADS || iters < 1 ||
            iters > MAX_ITERS) {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (cuda_failed("cudaGetDeviceCount", cudaGetDeviceCount(&ndev)))
        return EXIT_CUDA_ERROR;
    if (ndev > MAX_DEVICES)
        ndev = MAX_DEVICES;
    printf("devices: %d\n", ndev);
    if (do_switch) {
        w[0] = (struct worker){ .index = 0, .iters = iters, .ndev = ndev,
                                .tol = tol };
        switch_main(&w[0]);
        nthreads = 1;
    } else {
        for (int i = 0; i < nthreads; i++) {
            w[i] = (struct worker){ .index = i, .iters = iters, .ndev = ndev,
                                    .tol = tol };
            if (pthread_create(&w[i].tid, NULL, thread_main, &w[i])) {
                fprintf(stderr, "multi_device: pthread_create failed\n");
                return EXIT_CUDA_ERROR;
            }
        }
        for (int i = 0; i < nthreads; i++)
            pthread_join(w[i].tid, NULL);
    }
    for (int i = 0; i < nthreads; i++)
        if (w[i].failed_setup) {
            printf("worker %d: set-up failed\n", i);
            return EXIT_CUDA_ERROR;
        }
    failed = print_results(w, nthreads);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
