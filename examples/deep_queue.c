/* deep_queue: an ordinary FP32 cuBLAS and cuDNN program that keeps the
 * device far behind the host: one long SGEMM first, then, with no
 * synchronisation, many modest SGEMMs of three shapes in turn and cuDNN
 * forward convolutions spread among them, all on one stream, each call's
 * host time measured. A real GPU runs hundreds of calls behind the host
 * (the emulator runs each call at once); a library that waits for the
 * device in a call, or reuses memory the device has not finished with,
 * shows here in the host times or in the results. It measures and does
 * not judge.
 *
 * The operands are NaN until stream-ordered copies, issued after the long
 * SGEMM, fill them: work that does not keep to the stream's order reads
 * NaN. Every call reads and writes its own mix of a few buffers (seven
 * GEMM operands, four C; three x, two w, two y); the long SGEMM's C and
 * the last result in each C and y buffer are checked on a sample against
 * a double-precision reference, error over TOL times sum |a||b| (bf16 by
 * default: the shim's loosest mode; a result from the wrong operands or
 * out of order is far off any of them).
 *
 * usage: deep_queue [--tiny] [--long N] [--gemms N] [--gemm-size N]
 *                   [--convs N] [--conv N,C,K,H,W,R] [--tol TOL] [--help]
 *   defaults: --long 8192 --gemms 2000 --gemm-size 512 --convs 200
 *   --conv 8,64,64,28,28,3 (padding R/2, stride 1); --tiny sets --long 256
 *   --gemms 200 --gemm-size 64 --convs 20 --conv 2,8,8,8,8,3 (options
 *   after it still apply). The GEMMs cycle through (m,n,k) = (S/2,3S/4,S),
 *   (3S/4,S,S/2), (S,S/2,3S/4) for --gemm-size S.
 * Prints
 *   result: gemms=N gemm_host_us_mean=X gemm_host_us_max=Y convs=N
 *           conv_host_us_mean=X conv_host_us_max=Y sync_ms=Z
 *           check=ok|FAIL err_over_bound=E   (one line)
 * host times in microseconds of wall clock per call (the first call of
 * each kind is made before the long SGEMM, untimed); sync_ms: the wall
 * time of the stream synchronisation after the last call.
 * Exit status 0 when it ran (whatever the check), 2 on bad options, 3 on a
 * failed call (named, with its status, on stderr). */
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "deep_queue"
#include "example_util.h"

#include <time.h>

#define GEMM_OPERANDS 7
#define GEMM_OUTPUTS 4
#define CONV_INPUTS 3
#define CONV_FILTERS 2
#define CONV_OUTPUTS 2
#define SAMPLE 16              /* rows and columns of a GEMM result */
#define CONV_SAMPLE 256        /* elements of a convolution result */

struct options {
    int long_n, gemms, gemm_size, convs;
    int conv[6];               /* N, C, K, H, W, R */
    struct tolerance tol;
};

/* A device buffer with its host copy; `stage` holds the data on the device
 * until the stream-ordered copy into `dev`. */
struct buffer {
    float *host, *dev, *stage;
    size_t count;
};

struct queue {
    struct options o;
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    cudaStream_t stream;
    int shape[3][3];           /* (m, n, k) of the modest SGEMMs */
    struct buffer big[3];      /* the long SGEMM's A, B, C */
    struct buffer operand[GEMM_OPERANDS], out[GEMM_OUTPUTS];
    struct buffer x[CONV_INPUTS], w[CONV_FILTERS], y[CONV_OUTPUTS];
    int last_gemm[GEMM_OUTPUTS], last_conv[CONV_OUTPUTS];
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t algo;
    void *workspace;
    size_t workspace_bytes;
};

static double
now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

/* ---- buffers ----------------------------------------------------------- */

/* count floats uniform in [-1, 1), on the host and staged on the device;
 * dev allocated and filled with NaN. 0 or 1. */
static int
buffer_make(struct buffer *b, size_t count, int staged, uint64_t *rng)
{
    b->count = count;
    b->host = malloc(count * sizeof(float));
    if (b->host == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of host memory\n");
        return 1;
    }
    for (size_t i = 0; i < count; i++)
        b->host[i] = rng_float(rng, 1.0f);
    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&b->dev, count * 4)) ||
        cuda_failed("cudaMemset", cudaMemset(b->dev, 0xff, count * 4)))
        return 1;
    if (!staged)
        return cuda_failed("cudaMemcpy", cudaMemcpy(b->dev, b->host,
                                                    count * 4,
                                                    cudaMemcpyHostToDevice));
    return cuda_failed("cudaMalloc",
                       cudaMalloc((void **)&b->stage, count * 4)) ||
           cuda_failed("cudaMemcpy", cudaMemcpy(b->stage, b->host, count * 4,
                                                cudaMemcpyHostToDevice));
}

/* The stream-ordered copy from stage into dev. */
static int
buffer_fill(const struct buffer *b, cudaStream_t stream)
{
    return cuda_failed("cudaMemcpyAsync",
                       cudaMemcpyAsync(b->dev, b->stage, b->count * 4,
                                       cudaMemcpyDeviceToDevice, stream));
}

static void
buffer_free(struct buffer *b)
{
    free(b->host);
    cudaFree(b->dev);
    cudaFree(b->stage);
}

/* ---- the calls ----------------------------------------------------------- */

/* C = A B (m x n x k, column-major, tight leading dimensions), every
 * SGEMM of the program from this one call site. */
static __attribute__((noinline)) cublasStatus_t
sgemm(cublasHandle_t h, const int *s, const float *a, const float *b,
      float *c)
{
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, s[0], s[1],
                                       s[2], &one, a, s[0], b, s[2], &zero, c,
                                       s[0]);

    __asm__ volatile("" ::: "memory");
    return st;
}

/* The operands of modest SGEMM i (A, B from the pool, C). */
static void
gemm_buffers(const struct queue *q, int i, const struct buffer **a,
             const struct buffer **b, const struct buffer **c)
{
    *a = &q->operand[i % GEMM_OPERANDS];
    *b = &q->operand[(i + 3) % GEMM_OPERANDS];
    *c = &q->out[i % GEMM_OUTPUTS];
}

static cublasStatus_t
gemm_issue(const struct queue *q, int i, int staged)
{
    const struct buffer *a, *b, *c;

    gemm_buffers(q, i, &a, &b, &c);
    return sgemm(q->blas, q->shape[i % 3], staged ? a->stage : a->dev,
                 staged ? b->stage : b->dev, c->dev);
}

static cudnnStatus_t
conv_issue(const struct queue *q, int j, int staged)
{
    const struct buffer *x = &q->x[j % CONV_INPUTS];
    const struct buffer *w = &q->w[j % CONV_FILTERS];
    const float one = 1.0f, zero = 0.0f;

    return cudnnConvolutionForward(q->dnn, &one, q->xd,
                                   staged ? x->stage : x->dev, q->wd,
                                   staged ? w->stage : w->dev, q->cd,
                                   q->algo, q->workspace, q->workspace_bytes,
                                   &zero, q->yd, q->y[j % CONV_OUTPUTS].dev);
}

/* ---- checks ------------------------------------------------------------- */

static int
spread(int r, int count, int n)
{
    return count > 1 ? (int)((int64_t)r * (n - 1) / (count - 1)) : 0;
}

/* The largest error over bound of a SAMPLE x SAMPLE grid of C = A B;
 * -1 when C could not be read. */
static double
gemm_check(const struct queue *q, const int *s, const struct buffer *a,
           const struct buffer *b, const struct buffer *c)
{
    struct operand_view va = { a->host, s[0], 0 }, vb = { b->host, s[2], 0 };
    int ci_n = s[0] < SAMPLE ? s[0] : SAMPLE;
    int cj_n = s[1] < SAMPLE ? s[1] : SAMPLE;
    float *col = malloc((size_t)s[0] * sizeof(float));
    double worst = 0.0;

    if (col == NULL)
        return -1.0;
    for (int cj = 0; cj < cj_n; cj++) {
        int j = spread(cj, cj_n, s[1]);

        if (cuda_failed("cudaMemcpy",
                        cudaMemcpy(col, c->dev + (size_t)j * s[0],
                                   (size_t)s[0] * sizeof(float),
                                   cudaMemcpyDeviceToHost))) {
            free(col);
            return -1.0;
        }
        for (int ci = 0; ci < ci_n; ci++) {
            int i = spread(ci, ci_n, s[0]);
            double r = gemm_element_ratio(&va, &vb, i, j, s[2], 1.0f, 0.0f,
                                          0.0f, col[i],
                                          tol_factor(&q->o.tol, s[2]));

            if (!(r <= worst))
                worst = r;
        }
    }
    free(col);
    return worst;
}

/* The same for CONV_SAMPLE elements of y = conv(x, w) (NCHW, padding
 * R/2, stride 1, cross-correlation). */
static double
conv_check(const struct queue *q, const struct buffer *x,
           const struct buffer *w, const struct buffer *y)
{
    const int *d = q->o.conv;
    int c = d[1], k = d[2], h = d[3], wd = d[4], r = d[5];
    int pad = r / 2, count = (int)(y->count < CONV_SAMPLE ? y->count
                                                          : CONV_SAMPLE);
    float *got = malloc(y->count * sizeof(float));
    double worst = 0.0, tol = tol_factor(&q->o.tol, c * r * r);

    if (got == NULL ||
        cuda_failed("cudaMemcpy", cudaMemcpy(got, y->dev, y->count * 4,
                                             cudaMemcpyDeviceToHost))) {
        free(got);
        return -1.0;
    }
    for (int e = 0; e < count; e++) {
        size_t at = (size_t)spread(e, count, (int)y->count);
        int ox = (int)(at % (size_t)wd), oy = (int)(at / wd % (size_t)h);
        int ok = (int)(at / ((size_t)wd * h) % (size_t)k);
        int on = (int)(at / ((size_t)wd * h * k));
        double ref = 0.0, mag = 0.0, ratio;

        for (int ch = 0; ch < c; ch++)
            for (int u = 0; u < r; u++)
                for (int v = 0; v < r; v++) {
                    int iy = oy + u - pad, ix = ox + v - pad;
                    double t;

                    if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
                        continue;
                    t = (double)x->host[(((size_t)on * c + ch) * h + iy) *
                                            wd + ix] *
                        w->host[(((size_t)ok * c + ch) * r + u) * r + v];
                    ref += t;
                    mag += fabs(t);
                }
        ratio = element_ratio(got[at], ref, mag * tol);
        if (!(ratio <= worst))
            worst = ratio;
    }
    free(got);
    return worst;
}

/* Every checked result's worst error over bound; -1 when one could not be
 * read. */
static double
check_all(const struct queue *q)
{
    int long_shape[3] = { q->o.long_n, q->o.long_n, q->o.long_n };
    double worst = gemm_check(q, long_shape, &q->big[0], &q->big[1],
                              &q->big[2]), e;

    for (int b = 0; worst >= 0.0 && b < GEMM_OUTPUTS; b++) {
        const struct buffer *a, *bb, *c;
        int i = q->last_gemm[b];

        if (i < 0)
            continue;
        gemm_buffers(q, i, &a, &bb, &c);
        e = gemm_check(q, q->shape[i % 3], a, bb, c);
        worst = e < 0.0 ? e : e > worst ? e : worst;
    }
    for (int b = 0; worst >= 0.0 && b < CONV_OUTPUTS; b++) {
        int j = q->last_conv[b];

        if (j < 0)
            continue;
        e = conv_check(q, &q->x[j % CONV_INPUTS], &q->w[j % CONV_FILTERS],
                       &q->y[b]);
        worst = e < 0.0 ? e : e > worst ? e : worst;
    }
    return worst;
}

/* ---- set-up ------------------------------------------------------------- */

static int
conv_setup(struct queue *q)
{
    const int *d = q->o.conv;
    cudnnConvolutionFwdAlgoPerf_t perf;
    int got = 0, on, oc, oh, ow;

    if (cudnn_failed("cudnnCreateTensorDescriptor",
                     cudnnCreateTensorDescriptor(&q->xd)) ||
        cudnn_failed("cudnnCreateTensorDescriptor",
                     cudnnCreateTensorDescriptor(&q->yd)) ||
        cudnn_failed("cudnnCreateFilterDescriptor",
                     cudnnCreateFilterDescriptor(&q->wd)) ||
        cudnn_failed("cudnnCreateConvolutionDescriptor",
                     cudnnCreateConvolutionDescriptor(&q->cd)) ||
        cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(q->xd, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, d[0], d[1],
                                                d[3], d[4])) ||
        cudnn_failed("cudnnSetFilter4dDescriptor",
                     cudnnSetFilter4dDescriptor(q->wd, CUDNN_DATA_FLOAT,
                                                CUDNN_TENSOR_NCHW, d[2], d[1],
                                                d[5], d[5])) ||
        cudnn_failed("cudnnSetConvolution2dDescriptor",
                     cudnnSetConvolution2dDescriptor(
                         q->cd, d[5] / 2, d[5] / 2, 1, 1, 1, 1,
                         CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)) ||
        cudnn_failed("cudnnGetConvolution2dForwardOutputDim",
                     cudnnGetConvolution2dForwardOutputDim(q->cd, q->xd,
                                                           q->wd, &on, &oc,
                                                           &oh, &ow)) ||
        cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(q->yd, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, on, oc, oh,
                                                ow)) ||
        cudnn_failed("cudnnGetConvolutionForwardAlgorithm_v7",
                     cudnnGetConvolutionForwardAlgorithm_v7(
                         q->dnn, q->xd, q->wd, q->cd, q->yd, 1, &got,
                         &perf)))
        return 1;
    if (got < 1) {
        fprintf(stderr, EXAMPLE_PROG ": cudnnGetConvolutionForwardAlgorithm"
                "_v7 returned no algorithm\n");
        return 1;
    }
    q->algo = perf.algo;
    if (cudnn_failed("cudnnGetConvolutionForwardWorkspaceSize",
                     cudnnGetConvolutionForwardWorkspaceSize(
                         q->dnn, q->xd, q->wd, q->cd, q->yd, q->algo,
                         &q->workspace_bytes)) ||
        (q->workspace_bytes > 0 &&
         cuda_failed("cudaMalloc",
                     cudaMalloc(&q->workspace, q->workspace_bytes))))
        return 1;
    if (oh != d[3] || ow != d[4]) {
        fprintf(stderr, EXAMPLE_PROG ": R must be odd\n");
        return 1;
    }
    return 0;
}

static int
setup(struct queue *q)
{
    const int *d = q->o.conv;
    size_t lb = (size_t)q->o.long_n * q->o.long_n;
    size_t sb = (size_t)q->o.gemm_size * q->o.gemm_size;
    size_t xb = (size_t)d[0] * d[1] * d[3] * d[4];
    size_t wb = (size_t)d[2] * d[1] * d[5] * d[5];
    size_t yb = (size_t)d[0] * d[2] * d[3] * d[4];
    int s = q->o.gemm_size, sizes[3];
    uint64_t rng = 0xbb67ae85u;

    sizes[0] = s / 2 > 0 ? s / 2 : 1;
    sizes[1] = 3 * s / 4 > 0 ? 3 * s / 4 : 1;
    sizes[2] = s;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            q->shape[i][j] = sizes[(i + j) % 3];
    if (cublas_failed("cublasCreate_v2", cublasCreate_v2(&q->blas)) ||
        cudnn_failed("cudnnCreate", cudnnCreate(&q->dnn)) ||
        cuda_failed("cudaStreamCreate", cudaStreamCreate(&q->stream)) ||
        cublas_failed("cublasSetStream_v2",
                      cublasSetStream_v2(q->blas, q->stream)) ||
        cudnn_failed("cudnnSetStream", cudnnSetStream(q->dnn, q->stream)) ||
        conv_setup(q))
        return 1;
    for (int i = 0; i < 3; i++)
        if (buffer_make(&q->big[i], lb, 0, &rng))
            return 1;
    for (int i = 0; i < GEMM_OPERANDS; i++)
        if (buffer_make(&q->operand[i], sb, 1, &rng))
            return 1;
    for (int i = 0; i < GEMM_OUTPUTS; i++)
        if (buffer_make(&q->out[i], sb, 0, &rng))
            return 1;
    for (int i = 0; i < CONV_INPUTS; i++)
        if (buffer_make(&q->x[i], xb, 1, &rng))
            return 1;
    for (int i = 0; i < CONV_FILTERS; i++)
        if (buffer_make(&q->w[i], wb, 1, &rng))
            return 1;
    for (int i = 0; i < CONV_OUTPUTS; i++)
        if (buffer_make(&q->y[i], yb, 0, &rng))
            return 1;
    return 0;
}

static void
teardown(struct queue *q)
{
    struct buffer *all[] = { q->big, q->operand, q->out, q->x, q->w, q->y };
    const int counts[] = { 3, GEMM_OPERANDS, GEMM_OUTPUTS, CONV_INPUTS,
                           CONV_FILTERS, CONV_OUTPUTS };

    for (size_t g = 0; g < sizeof(counts) / sizeof(counts[0]); g++)
        for (int i = 0; i < counts[g]; i++)
            buffer_free(&all[g][i]);
    cudaFree(q->workspace);
    cudnnDestroyTensorDescriptor(q->xd);
    cudnnDestroyTensorDescriptor(q->yd);
    cudnnDestroyFilterDescriptor(q->wd);
    cudnnDestroyConvolutionDescriptor(q->cd);
    cublasDestroy_v2(q->blas);
    cudnnDestroy(q->dnn);
    cudaStreamDestroy(q->stream);
}

/* ---- the run ------------------------------------------------------------ */

struct host_time {
    int calls;
    double sum_us, max_us;
};

static void
host_time_add(struct host_time *t, double us)
{
    t->calls++;
    t->sum_us += us;
    if (us > t->max_us)
        t->max_us = us;
}

/* One call of each shape and a convolution on the staged data, waited
 * for: the process's first calls are not the timed ones. */
static int
warm_up(struct queue *q)
{
    for (int i = 0; i < 3; i++)
        if (cublas_failed("cublasSgemm_v2", gemm_issue(q, i, 1)))
            return 1;
    return cudnn_failed("cudnnConvolutionForward", conv_issue(q, 0, 1)) ||
           cuda_failed("cudaStreamSynchronize",
                       cudaStreamSynchronize(q->stream));
}

static int
run(struct queue *q)
{
    int long_shape[3] = { q->o.long_n, q->o.long_n, q->o.long_n };
    struct host_time gemm = { 0, 0.0, 0.0 }, conv = { 0, 0.0, 0.0 };
    int convs = 0;
    double t, sync_ms, worst;

    if (warm_up(q) ||
        cublas_failed("cublasSgemm_v2 (long)",
                      sgemm(q->blas, long_shape, q->big[0].dev,
                            q->big[1].dev, q->big[2].dev)))
        return 1;
    for (int i = 0; i < GEMM_OPERANDS; i++)
        if (buffer_fill(&q->operand[i], q->stream))
            return 1;
    for (int i = 0; i < CONV_INPUTS; i++)
        if (buffer_fill(&q->x[i], q->stream))
            return 1;
    for (int i = 0; i < CONV_FILTERS; i++)
        if (buffer_fill(&q->w[i], q->stream))
            return 1;
    /* The convolutions spread evenly among the SGEMMs. */
    for (int i = 0; i <= q->o.gemms; i++) {
        if (i < q->o.gemms) {
            cublasStatus_t st;

            t = now_us();
            st = gemm_issue(q, i, 0);
            host_time_add(&gemm, now_us() - t);
            if (cublas_failed("cublasSgemm_v2", st))
                return 1;
            q->last_gemm[i % GEMM_OUTPUTS] = i;
        }
        while (convs < q->o.convs &&
               (i == q->o.gemms ||
                (long)(convs + 1) * q->o.gemms <= (long)(i + 1) * q->o.convs)) {
            cudnnStatus_t st;

            t = now_us();
            st = conv_issue(q, convs, 0);
            host_time_add(&conv, now_us() - t);
            if (cudnn_failed("cudnnConvolutionForward", st))
                return 1;
            q->last_conv[convs % CONV_OUTPUTS] = convs;
            convs++;
        }
    }
    t = now_us();
    if (cuda_failed("cudaStreamSynchronize", cudaStreamSynchronize(q->stream)))
        return 1;
    sync_ms = (now_us() - t) * 1e-3;
    worst = check_all(q);
    if (worst < 0.0)
        return 1;
    printf("result: gemms=%d gemm_host_us_mean=%.2f gemm_host_us_max=%.2f "
           "convs=%d conv_host_us_mean=%.2f conv_host_us_max=%.2f "
           "sync_ms=%.3f check=%s err_over_bound=%.3e\n", gemm.calls,
           gemm.calls ? gemm.sum_us / gemm.calls : 0.0, gemm.max_us,
           conv.calls, conv.calls ? conv.sum_us / conv.calls : 0.0,
           conv.max_us, sync_ms, worst <= 1.0 ? "ok" : "FAIL", worst);
    return 0;
}

/* ---- options ---------------------------------------------------------- */

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: deep_queue [--tiny] [--long N] [--gemms N] "
            "[--gemm-size N] [--convs N]\n"
            "                  [--conv N,C,K,H,W,R] [--tol TOL] [--help]\n"
            "  one long SGEMM (default 8192), then with no synchronisation "
            "--gemms SGEMMs\n"
            "  (default 2000, sizes from --gemm-size, default 512) and "
            "--convs forward\n"
            "  convolutions (default 200 of 8,64,64,28,28,3) on one "
            "stream\n"
            "  --tiny: --long 256 --gemms 200 --gemm-size 64 --convs 20 "
            "--conv 2,8,8,8,8,3\n"
            "  --tol: the check's bound, bf16 (default), fp16, tf32, fp32 "
            "or a number\n"
            "  result: gemms=N gemm_host_us_mean=X gemm_host_us_max=Y "
            "convs=N\n"
            "          conv_host_us_mean=X conv_host_us_max=Y sync_ms=Z "
            "check=ok|FAIL\n"
            "          err_over_bound=E\n"
            "  exit 0 ran, 2 usage, 3 a failed call\n");
}

/* 0 to run, 1 after --help, -1 on a bad option. */
static int
parse_options(int argc, char **argv, struct options *o)
{
    static const struct options tiny = { 256, 200, 64, 20,
                                         { 2, 8, 8, 8, 8, 3 },
                                         { TOL_BF16, 0.0 } };

    *o = (struct options){ 8192, 2000, 512, 200, { 8, 64, 64, 28, 28, 3 },
                           { TOL_BF16, 0.0 } };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(arg, "--tiny") == 0) {
            struct tolerance tol = o->tol;

            *o = tiny;
            o->tol = tol;
            continue;
        }
        if (val == NULL)
            return -1;
        i++;
        if (strcmp(arg, "--long") == 0) {
            if (parse_int_range(val, 1, 65536, &o->long_n))
                return -1;
        } else if (strcmp(arg, "--gemms") == 0) {
            if (parse_int_range(val, 0, 10000000, &o->gemms))
                return -1;
        } else if (strcmp(arg, "--gemm-size") == 0) {
            if (parse_int_range(val, 1, 16384, &o->gemm_size))
                return -1;
        } else if (strcmp(arg, "--convs") == 0) {
            if (parse_int_range(val, 0, 10000000, &o->convs))
                return -1;
        } else if (strcmp(arg, "--conv") == 0) {
            int *d = o->conv, used = 0;

            if (sscanf(val, "%d,%d,%d,%d,%d,%d%n", &d[0], &d[1], &d[2],
                       &d[3], &d[4], &d[5], &used) != 6 ||
                val[used] != '\0' || d[0] < 1 || d[1] < 1 || d[2] < 1 ||
                d[3] < 1 || d[4] < 1 || d[5] < 1 || d[5] % 2 == 0)
                return -1;
        } else if (strcmp(arg, "--tol") == 0) {
            if (tol_parse(val, &o->tol))
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct queue q;
    int opt, rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&q, 0, sizeof q);
    opt = parse_options(argc, argv, &q.o);
    if (opt != 0) {
        if (opt < 0)
            usage(stderr);
        return opt < 0 ? EXIT_USAGE : EXIT_ALL_PASS;
    }
    for (int i = 0; i < GEMM_OUTPUTS; i++)
        q.last_gemm[i] = -1;
    for (int i = 0; i < CONV_OUTPUTS; i++)
        q.last_conv[i] = -1;
    rc = setup(&q) || run(&q) ? EXIT_CUDA_ERROR : EXIT_ALL_PASS;
    teardown(&q);
    return rc;
}
