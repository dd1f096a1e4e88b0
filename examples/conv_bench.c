/* conv_bench: an ordinary FP32 cuDNN program that times legacy
 * convolutions per direction (cudnnConvolutionForward,
 * cudnnConvolutionBackwardData, cudnnConvolutionBackwardFilter) and
 * layout (NCHW, NHWC) with CUDA events. Like any program it picks each
 * algorithm with cudnnGet...Algorithm_v7 (the first answer) and allocates
 * that algorithm's workspace. It knows nothing of any shim: the GPU check
 * runs it plain and under the shim in each mode and compares.
 *
 * usage: conv_bench [--shape N,C,K,H,W,R] [--warmup N] [--reps N]
 *                   [--math default|tensor-op|tensor-op-allow-conversion|fma]
 *                   [--dirs fwd,bwd_data,bwd_filter] [--layouts nchw,nhwc]
 *                   [--help]
 *   defaults: --shape 64,256,256,56,56,3 (padding R/2, stride 1,
 *   cross-correlation), --warmup 3, --reps 10, --math default (cuDNN's
 *   CUDNN_DEFAULT_MATH), every direction and layout.
 * Prints one line per direction and layout:
 *   result: dir=fwd|bwd_data|bwd_filter layout=nchw|nhwc n=N c=C k=K h=H
 *           w=W r=R ms=X tflops=Y algo=A math=M   (one line)
 * ms: the mean device time of one call over --reps calls after --warmup
 * untimed ones; tflops: 2 N K P Q C R R over that time (P x Q the output).
 * Exit status 0 when every line was printed, 2 on bad options, 3 when a
 * call failed (named, with its status, on stderr; the other directions
 * and layouts still run). */
#include <cublas_v2.h> /* only for example_util.h's status names */
#include <cudnn.h>

#define EXAMPLE_PROG "conv_bench"
#include "example_util.h"

enum dir { FWD, BWD_DATA, BWD_FILTER, DIRS };
static const char *const dir_name[] = { "fwd", "bwd_data", "bwd_filter" };
static const char *const layout_name[] = { "nchw", "nhwc" };

static const struct {
    const char *name;
    cudnnMathType_t math;
} maths[] = {
    { "default", CUDNN_DEFAULT_MATH },
    { "tensor-op", CUDNN_TENSOR_OP_MATH },
    { "tensor-op-allow-conversion", CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION },
    { "fma", CUDNN_FMA_MATH },
};

struct options {
    int shape[6];              /* N, C, K, H, W, R */
    int warmup, reps;
    int math;                  /* index into maths */
    int dirs[DIRS], layouts[2];
};

/* One layout's descriptors and the buffers every direction shares. */
struct bench {
    const struct options *o;
    cudnnHandle_t dnn;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int out_h, out_w;
    float *x, *dx, *w, *dw, *y;
    cudaEvent_t start, stop;
};

/* ---- one direction --------------------------------------------------- */

static int
no_algo(const char *what)
{
    fprintf(stderr, EXAMPLE_PROG ": %s returned no algorithm\n", what);
    return 1;
}

/* The first algorithm cudnnGet...Algorithm_v7 answers for dir, and its
 * workspace size; 0 or 1. */
static int
pick_algo(const struct bench *b, enum dir dir, int *algo, size_t *bytes)
{
    int got = 0;

    if (dir == FWD) {
        cudnnConvolutionFwdAlgoPerf_t p;

        if (cudnn_failed("cudnnGetConvolutionForwardAlgorithm_v7",
                         cudnnGetConvolutionForwardAlgorithm_v7(
                             b->dnn, b->xd, b->wd, b->cd, b->yd, 1, &got,
                             &p)) ||
            (got < 1 && no_algo("cudnnGetConvolutionForwardAlgorithm_v7")))
            return 1;
        *algo = (int)p.algo;
        return cudnn_failed("cudnnGetConvolutionForwardWorkspaceSize",
                            cudnnGetConvolutionForwardWorkspaceSize(
                                b->dnn, b->xd, b->wd, b->cd, b->yd, p.algo,
                                bytes));
    }
    if (dir == BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t p;

        if (cudnn_failed("cudnnGetConvolutionBackwardDataAlgorithm_v7",
                         cudnnGetConvolutionBackwardDataAlgorithm_v7(
                             b->dnn, b->wd, b->yd, b->cd, b->xd, 1, &got,
                             &p)) ||
            (got < 1 && no_algo("cudnnGetConvolutionBackwardDataAlgorithm_v7")))
            return 1;
        *algo = (int)p.algo;
        return cudnn_failed("cudnnGetConvolutionBackwardDataWorkspaceSize",
                            cudnnGetConvolutionBackwardDataWorkspaceSize(
                                b->dnn, b->wd, b->yd, b->cd, b->xd, p.algo,
                                bytes));
    }
    {
        cudnnConvolutionBwdFilterAlgoPerf_t p;

        if (cudnn_failed("cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                         cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                             b->dnn, b->xd, b->yd, b->cd, b->wd, 1, &got,
                             &p)) ||
            (got < 1 && no_algo("cudnnGetConvolutionBackwardFilterAlgorithm_v7")))
            return 1;
        *algo = (int)p.algo;
        return cudnn_failed("cudnnGetConvolutionBackwardFilterWorkspaceSize",
                            cudnnGetConvolutionBackwardFilterWorkspaceSize(
                                b->dnn, b->xd, b->yd, b->cd, b->wd, p.algo,
                                bytes));
    }
}

/* One call of dir, every call of the program from this one call site per
 * direction. */
static __attribute__((noinline)) int
conv_call(const struct bench *b, enum dir dir, int algo, void *ws,
          size_t bytes)
{
    const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t st;

    if (dir == FWD)
        st = cudnnConvolutionForward(b->dnn, &one, b->xd, b->x, b->wd, b->w,
                                     b->cd, (cudnnConvolutionFwdAlgo_t)algo,
                                     ws, bytes, &zero, b->yd, b->y);
    else if (dir == BWD_DATA)
        st = cudnnConvolutionBackwardData(
            b->dnn, &one, b->wd, b->w, b->yd, b->y, b->cd,
            (cudnnConvolutionBwdDataAlgo_t)algo, ws, bytes, &zero, b->xd,
            b->dx);
    else
        st = cudnnConvolutionBackwardFilter(
            b->dnn, &one, b->xd, b->x, b->yd, b->y, b->cd,
            (cudnnConvolutionBwdFilterAlgo_t)algo, ws, bytes, &zero, b->wd,
            b->dw);
    __asm__ volatile("" ::: "memory");
    if (st == CUDNN_STATUS_SUCCESS)
        return 0;
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %s (%d)\n",
            dir == FWD        ? "cudnnConvolutionForward"
            : dir == BWD_DATA ? "cudnnConvolutionBackwardData"
                              : "cudnnConvolutionBackwardFilter",
            cudnnGetErrorString(st), (int)st);
    return 1;
}

/* Times dir in this layout and prints its line; 0 or 1. */
static int
bench_dir(const struct bench *b, enum dir dir, int layout)
{
    const struct options *o = b->o;
    const int *s = o->shape;
    size_t bytes = 0;
    void *ws = NULL;
    int algo = -1, rc = 1;
    float ms = 0.0f;
    double flops, per_call;

    if (pick_algo(b, dir, &algo, &bytes) ||
        (bytes > 0 && cuda_failed("cudaMalloc", cudaMalloc(&ws, bytes))))
        goto out;
    for (int i = 0; i < o->warmup; i++)
        if (conv_call(b, dir, algo, ws, bytes))
            goto out;
    if (cuda_failed("cudaEventRecord", cudaEventRecord(b->start, NULL)))
        goto out;
    for (int i = 0; i < o->reps; i++)
        if (conv_call(b, dir, algo, ws, bytes))
            goto out;
    if (cuda_failed("cudaEventRecord", cudaEventRecord(b->stop, NULL)) ||
        cuda_failed("cudaEventSynchronize", cudaEventSynchronize(b->stop)) ||
        cuda_failed("cudaEventElapsedTime",
                    cudaEventElapsedTime(&ms, b->start, b->stop)))
        goto out;
    per_call = (double)ms / o->reps;
    flops = 2.0 * s[0] * s[2] * (double)b->out_h * b->out_w * s[1] * s[5] *
            s[5];
    printf("result: dir=%s layout=%s n=%d c=%d k=%d h=%d w=%d r=%d ms=%.4f "
           "tflops=%.3f algo=%d math=%s\n", dir_name[dir],
           layout_name[layout], s[0], s[1], s[2], s[3], s[4], s[5], per_call,
           per_call > 0.0 ? flops / (per_call * 1e-3) / 1e12 : 0.0, algo,
           maths[o->math].name);
    rc = 0;
out:
    cudaFree(ws);
    return rc;
}

/* ---- one layout -------------------------------------------------------- */

static int
describe(struct bench *b, int layout)
{
    const int *s = b->o->shape;
    cudnnTensorFormat_t fmt = layout ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    int on, oc;

    return cudnn_failed("cudnnSetTensor4dDescriptor",
                        cudnnSetTensor4dDescriptor(b->xd, fmt,
                                                   CUDNN_DATA_FLOAT, s[0],
                                                   s[1], s[3], s[4])) ||
           cudnn_failed("cudnnSetFilter4dDescriptor",
                        cudnnSetFilter4dDescriptor(b->wd, CUDNN_DATA_FLOAT,
                                                   fmt, s[2], s[1], s[5],
                                                   s[5])) ||
           cudnn_failed("cudnnSetConvolution2dDescriptor",
                        cudnnSetConvolution2dDescriptor(
                            b->cd, s[5] / 2, s[5] / 2, 1, 1, 1, 1,
                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)) ||
           cudnn_failed("cudnnSetConvolutionMathType",
                        cudnnSetConvolutionMathType(
                            b->cd, maths[b->o->math].math)) ||
           cudnn_failed("cudnnGetConvolution2dForwardOutputDim",
                        cudnnGetConvolution2dForwardOutputDim(
                            b->cd, b->xd, b->wd, &on, &oc, &b->out_h,
                            &b->out_w)) ||
           cudnn_failed("cudnnSetTensor4dDescriptor",
                        cudnnSetTensor4dDescriptor(b->yd, fmt,
                                                   CUDNN_DATA_FLOAT, on, oc,
                                                   b->out_h, b->out_w));
}

/* count floats uniform in [-1, 1) on the device. */
static float *
device_data(size_t count, uint64_t *rng)
{
    float *host = malloc(count * sizeof(float)), *dev = NULL;

    if (host == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of host memory\n");
        return NULL;
    }
    for (size_t i = 0; i < count; i++)
        host[i] = rng_float(rng, 1.0f);
    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&dev, count * 4)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(dev, host, count * 4,
                                             cudaMemcpyHostToDevice))) {
        cudaFree(dev);
        dev = NULL;
    }
    free(host);
    return dev;
}

static int
setup(struct bench *b)
{
    const int *s = b->o->shape;
    size_t xn = (size_t)s[0] * s[1] * s[3] * s[4];
    size_t wn = (size_t)s[2] * s[1] * s[5] * s[5];
    size_t yn;
    uint64_t rng = 0x3c6ef372u;

    if (cudnn_failed("cudnnCreate", cudnnCreate(&b->dnn)) ||
        cudnn_failed("cudnnCreateTensorDescriptor",
                     cudnnCreateTensorDescriptor(&b->xd)) ||
        cudnn_failed("cudnnCreateTensorDescriptor",
                     cudnnCreateTensorDescriptor(&b->yd)) ||
        cudnn_failed("cudnnCreateFilterDescriptor",
                     cudnnCreateFilterDescriptor(&b->wd)) ||
        cudnn_failed("cudnnCreateConvolutionDescriptor",
                     cudnnCreateConvolutionDescriptor(&b->cd)) ||
        cuda_failed("cudaEventCreate", cudaEventCreate(&b->start)) ||
        cuda_failed("cudaEventCreate", cudaEventCreate(&b->stop)) ||
        describe(b, 0))
        return 1;
    /* The output's size is the same in both layouts. */
    yn = (size_t)s[0] * s[2] * b->out_h * b->out_w;
    b->x = device_data(xn, &rng);
    b->dx = device_data(xn, &rng);
    b->w = device_data(wn, &rng);
    b->dw = device_data(wn, &rng);
    b->y = device_data(yn, &rng);
    return !b->x || !b->dx || !b->w || !b->dw || !b->y;
}

static void
teardown(struct bench *b)
{
    cudaFree(b->x);
    cudaFree(b->dx);
    cudaFree(b->w);
    cudaFree(b->dw);
    cudaFree(b->y);
    cudaEventDestroy(b->start);
    cudaEventDestroy(b->stop);
    cudnnDestroyTensorDescriptor(b->xd);
    cudnnDestroyTensorDescriptor(b->yd);
    cudnnDestroyFilterDescriptor(b->wd);
    cudnnDestroyConvolutionDescriptor(b->cd);
    if (b->dnn)
        cudnnDestroy(b->dnn);
}

/* ---- options ------------------------------------------------------------ */

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: conv_bench [--shape N,C,K,H,W,R] [--warmup N] [--reps N]\n"
            "                  [--math default|tensor-op|"
            "tensor-op-allow-conversion|fma]\n"
            "                  [--dirs fwd,bwd_data,bwd_filter] "
            "[--layouts nchw,nhwc] [--help]\n"
            "  FP32 convolutions (padding R/2, stride 1) timed with CUDA "
            "events;\n"
            "  defaults 64,256,256,56,56,3, 3 warm-up and 10 timed calls, "
            "cuDNN's default math\n"
            "  result: dir=D layout=L n=N c=C k=K h=H w=W r=R ms=X "
            "tflops=Y algo=A math=M\n"
            "  exit 0 every line printed, 2 usage, 3 a failed call\n");
}

/* A comma-separated list of names from `names`: on[i] set for each. */
static int
parse_list(const char *s, const char *const *names, int count, int *on)
{
    char copy[256], *save = NULL;

    if (strlen(s) >= sizeof copy)
        return -1;
    strcpy(copy, s);
    memset(on, 0, (size_t)count * sizeof(int));
    for (char *t = strtok_r(copy, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        int i = 0;

        while (i < count && strcmp(t, names[i]) != 0)
            i++;
        if (i == count)
            return -1;
        on[i] = 1;
    }
    for (int i = 0; i < count; i++)
        if (on[i])
            return 0;
    return -1;
}

/* 0 to run, 1 after --help, -1 on a bad option. */
static int
parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){ { 64, 256, 256, 56, 56, 3 }, 3, 10, 0,
                           { 1, 1, 1 }, { 1, 1 } };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 1;
        }
        if (val == NULL)
            return -1;
        i++;
        if (strcmp(arg, "--shape") == 0) {
            int *d = o->shape, used = 0;

            if (sscanf(val, "%d,%d,%d,%d,%d,%d%n", &d[0], &d[1], &d[2],
                       &d[3], &d[4], &d[5], &used) != 6 ||
                val[used] != '\0' || d[0] < 1 || d[1] < 1 || d[2] < 1 ||
                d[3] < 1 || d[4] < 1 || d[5] < 1)
                return -1;
        } else if (strcmp(arg, "--warmup") == 0) {
            if (parse_int_range(val, 0, 100000, &o->warmup))
                return -1;
        } else if (strcmp(arg, "--reps") == 0) {
            if (parse_int_range(val, 1, 100000, &o->reps))
                return -1;
        } else if (strcmp(arg, "--math") == 0) {
            int m = 0, count = (int)(sizeof(maths) / sizeof(maths[0]));

            while (m < count && strcmp(val, maths[m].name) != 0)
                m++;
            if (m == count)
                return -1;
            o->math = m;
        } else if (strcmp(arg, "--dirs") == 0) {
            if (parse_list(val, dir_name, DIRS, o->dirs))
                return -1;
        } else if (strcmp(arg, "--layouts") == 0) {
            if (parse_list(val, layout_name, 2, o->layouts))
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
    struct options o;
    struct bench b;
    int opt, failed = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    opt = parse_options(argc, argv, &o);
    if (opt != 0) {
        if (opt < 0)
            usage(stderr);
        return opt < 0 ? EXIT_USAGE : EXIT_ALL_PASS;
    }
    memset(&b, 0, sizeof b);
    b.o = &o;
    if (setup(&b)) {
        teardown(&b);
        return EXIT_CUDA_ERROR;
    }
    for (int layout = 0; layout < 2; layout++) {
        if (!o.layouts[layout])
            continue;
        if (describe(&b, layout)) {
            failed = 1;
            continue;
        }
        for (int dir = 0; dir < DIRS; dir++)
            if (o.dirs[dir])
                failed |= bench_dir(&b, (enum dir)dir, layout);
    }
    teardown(&b);
    return failed ? EXIT_CUDA_ERROR : EXIT_ALL_PASS;
}
