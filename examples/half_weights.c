/* half_weights: an FP32 cuDNN program that also runs a layer in half
 * precision, as NVIDIA's mnistCUDNN sample does with its FP16 import: its
 * FP32 weights converted to HALF with cudnnTransformTensor (a FLOAT and a
 * HALF 1 x size x 1 x 1 tensor), its input converted to HALF and padded
 * by one pixel on each side with a tensor-transform descriptor
 * (cudnnTransformTensorEx), then the same convolution twice:
 *
 *   - half: HALF data with FLOAT compute on the padded input, no
 *     convolution padding (a call the shim must pass through untouched);
 *   - fp32: FLOAT data, padding 1, on the original input (the call the
 *     shim may convert).
 *
 * Each output is checked in double precision: half's against its own
 * half-rounded inputs within FP16's unit of least precision, fp32's with the
 * tolerance named on the command line (default tf32: cuDNN runs FP32
 * convolutions in TF32 by default on Ampere and later). The converted
 * weights must equal the host's round-to-nearest-even FP16 values bit for
 * bit. Prints one line per check with a hash of the result and exits 0
 * when all passed.
 * usage: half_weights [--tol fp32|tf32|fp16|bf16|X] */
#include <cublas_v2.h> /* only for example_util.h's status names */
#include <cudnn.h>

#define EXAMPLE_PROG "half_weights"
#include "example_util.h"

enum { N = 4, C = 16, K = 32, H = 12, W = 12, R = 3 };
#define HP (H + 2)
#define WP (W + 2)

struct layer {
    cudnnHandle_t dnn;
    cudnnTensorDescriptor_t x32, x16, y32, y16, wflat32, wflat16;
    cudnnFilterDescriptor_t w32, w16;
    cudnnConvolutionDescriptor_t pad1, pad0;
    cudnnTensorTransformDescriptor_t padding;
};

/* Host FP16 rounding, to nearest even: 11 significant bits down to
 * 2^-14, a spacing of 2^-24 below it, infinity past 65504. */
static float
to_half(float v)
{
    int e, ulp;
    float r;

    if (!isfinite(v) || v == 0.0f)
        return v;
    frexpf(v, &e);              /* |v| in [2^(e-1), 2^e) */
    ulp = e - 11 < -24 ? -24 : e - 11;
    r = ldexpf(nearbyintf(ldexpf(v, -ulp)), ulp);
    return fabsf(r) > 65504.0f ? copysignf(INFINITY, v) : r;
}

/* The convolution at output (n, k, p, q) in double, and the sum of the
 * terms' magnitudes; x is NCHW of h x w with padding `pad`. */
static double
conv_ref(const float *x, const float *w, int h, int wd, int pad, int n,
         int k, int p, int q, double *mag)
{
    double sum = 0.0;

    *mag = 0.0;
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++)
            for (int s = 0; s < R; s++) {
                int y = p + r - pad, xx = q + s - pad;
                double t;

                if (y < 0 || y >= h || xx < 0 || xx >= wd)
                    continue;
                t = (double)x[(((size_t)n * C + c) * h + y) * wd + xx] *
                    w[(((size_t)k * C + c) * R + r) * R + s];
                sum += t;
                *mag += fabs(t);
            }
    return sum;
}

/* The worst error / bound of out (N x K x H x W) against the convolution
 * of x (h x w, padding pad) and w, with per-element bound
 * mag * tol + |ref| * out_round. */
static double
conv_worst(const float *out, const float *x, const float *w, int h, int wd,
           int pad, double tol, double out_round)
{
    double worst = 0.0;

    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < H; p++)
                for (int q = 0; q < W; q++) {
                    double mag, ref = conv_ref(x, w, h, wd, pad, n, k, p, q,
                                               &mag);
                    double r = element_ratio(
                        out[(((size_t)n * K + k) * H + p) * W + q], ref,
                        mag * tol + fabs(ref) * out_round);

                    if (r > worst)
                        worst = r;
                }
    return worst;
}

/* Prints a convolution's check line (its hash over the N x K x H x W
 * floats of out); 1 when it passed. */
static int
conv_report(const char *name, const float *out, double worst)
{
    printf("check %s m=%d n=%d k=%d err/bound=%.3g hash=%016llx %s\n", name,
           N * H * W, K, C * R * R, worst,
           (unsigned long long)fnv1a64(out, (size_t)N * K * H * W *
                                                sizeof(float),
                                       0xcbf29ce484222325ULL),
           worst <= 1.0 ? "ok" : "FAIL");
    return worst <= 1.0;
}

static int
layer_make(struct layer *l)
{
    static const int32_t before[4] = { 0, 0, 1, 1 }, after[4] = { 0, 0, 1, 1 };
    const int wsize = K * C * R * R;

    if (cudnn_failed("cudnnCreate", cudnnCreate(&l->dnn)))
        return -1;
    cudnnTensorDescriptor_t *t[] = { &l->x32, &l->x16, &l->y32, &l->y16,
                                     &l->wflat32, &l->wflat16 };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (cudnn_failed("cudnnCreateTensorDescriptor",
                         cudnnCreateTensorDescriptor(t[i])))
            return -1;
    if (cudnn_failed("cudnnCreateFilterDescriptor",
                     cudnnCreateFilterDescriptor(&l->w32)) ||
        cudnn_failed("cudnnCreateFilterDescriptor",
                     cudnnCreateFilterDescriptor(&l->w16)) ||
        cudnn_failed("cudnnCreateConvolutionDescriptor",
                     cudnnCreateConvolutionDescriptor(&l->pad1)) ||
        cudnn_failed("cudnnCreateConvolutionDescriptor",
                     cudnnCreateConvolutionDescriptor(&l->pad0)) ||
        cudnn_failed("cudnnCreateTensorTransformDescriptor",
                     cudnnCreateTensorTransformDescriptor(&l->padding)))
        return -1;
    /* mnistCUDNN's weight import: the filter as a flat tensor. */
    if (cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(l->wflat32, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, 1, wsize, 1,
                                                1)) ||
        cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(l->wflat16, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_HALF, 1, wsize, 1,
                                                1)) ||
        cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(l->x32, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, N, C, H, W)) ||
        cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(l->y32, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, N, K, H, W)) ||
        cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(l->y16, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_HALF, N, K, H, W)) ||
        cudnn_failed("cudnnSetFilter4dDescriptor",
                     cudnnSetFilter4dDescriptor(l->w32, CUDNN_DATA_FLOAT,
                                                CUDNN_TENSOR_NCHW, K, C, R,
                                                R)) ||
        cudnn_failed("cudnnSetFilter4dDescriptor",
                     cudnnSetFilter4dDescriptor(l->w16, CUDNN_DATA_HALF,
                                                CUDNN_TENSOR_NCHW, K, C, R,
                                                R)) ||
        cudnn_failed("cudnnSetConvolution2dDescriptor",
                     cudnnSetConvolution2dDescriptor(
                         l->pad1, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                         CUDNN_DATA_FLOAT)) ||
        cudnn_failed("cudnnSetConvolution2dDescriptor",
                     cudnnSetConvolution2dDescriptor(
                         l->pad0, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                         CUDNN_DATA_FLOAT)) ||
        cudnn_failed("cudnnSetTensorTransformDescriptor",
                     cudnnSetTensorTransformDescriptor(
                         l->padding, 4, CUDNN_TENSOR_NCHW, before, after,
                         NULL, CUDNN_TRANSFORM_FOLD)))
        return -1;
    return 0;
}

/* One convolution with the workspace its heuristic's first algorithm
 * needs. */
static int
conv_run(const struct layer *l, cudnnTensorDescriptor_t xd, const void *x,
         cudnnFilterDescriptor_t wd, const void *w,
         cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd, void *y)
{
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int got = 0, rc = -1;
    size_t ws = 0;
    void *work = NULL;
    const float one = 1.0f, zero = 0.0f;

    if (cudnn_failed("cudnnGetConvolutionForwardAlgorithm_v7",
                     cudnnGetConvolutionForwardAlgorithm_v7(
                         l->dnn, xd, wd, cd, yd, 8, &got, perf)) ||
        got < 1 ||
        cudnn_failed("cudnnGetConvolutionForwardWorkspaceSize",
                     cudnnGetConvolutionForwardWorkspaceSize(
                         l->dnn, xd, wd, cd, yd, perf[0].algo, &ws)))
        return -1;
    if (ws > 0 && cuda_failed("cudaMalloc", cudaMalloc(&work, ws)))
        return -1;
    if (!cudnn_failed("cudnnConvolutionForward",
                      cudnnConvolutionForward(l->dnn, &one, xd, x, wd, w, cd,
                                              perf[0].algo, work, ws, &zero,
                                              yd, y)))
        rc = 0;
    cudaFree(work);
    return rc;
}

/* A device array of n halfs back as floats, through cuDNN's own
 * HALF-to-FLOAT transform; NULL on failure. */
static float *
half_download(const struct layer *l, const void *dev, int n, int c, int h,
              int w)
{
    cudnnTensorDescriptor_t hd = NULL, fd = NULL;
    size_t count = (size_t)n * c * h * w;
    float *out = malloc(count * sizeof(float));
    void *tmp = device_copy(NULL, count * sizeof(float));
    const float one = 1.0f, zero = 0.0f;
    int ok = out && tmp &&
             !cudnnCreateTensorDescriptor(&hd) &&
             !cudnnCreateTensorDescriptor(&fd) &&
             !cudnnSetTensor4dDescriptor(hd, CUDNN_TENSOR_NCHW,
                                         CUDNN_DATA_HALF, n, c, h, w) &&
             !cudnnSetTensor4dDescriptor(fd, CUDNN_TENSOR_NCHW,
                                         CUDNN_DATA_FLOAT, n, c, h, w) &&
             !cudnn_failed("cudnnTransformTensor (HALF to FLOAT)",
                           cudnnTransformTensor(l->dnn, &one, hd, dev, &zero,
                                                fd, tmp)) &&
             !cuda_failed("cudaMemcpy", cudaMemcpy(out, tmp,
                                                   count * sizeof(float),
                                                   cudaMemcpyDeviceToHost));

    if (hd)
        cudnnDestroyTensorDescriptor(hd);
    if (fd)
        cudnnDestroyTensorDescriptor(fd);
    cudaFree(tmp);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* Destroys what layer_make made (NULL members were not). */
static void
layer_free(struct layer *l)
{
    cudnnTensorDescriptor_t t[] = { l->x32, l->x16, l->y32, l->y16,
                                    l->wflat32, l->wflat16 };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (t[i])
            cudnnDestroyTensorDescriptor(t[i]);
    if (l->w32)
        cudnnDestroyFilterDescriptor(l->w32);
    if (l->w16)
        cudnnDestroyFilterDescriptor(l->w16);
    if (l->pad1)
        cudnnDestroyConvolutionDescriptor(l->pad1);
    if (l->pad0)
        cudnnDestroyConvolutionDescriptor(l->pad0);
    if (l->padding)
        cudnnDestroyTensorTransformDescriptor(l->padding);
    if (l->dnn)
        cudnnDestroy(l->dnn);
}

/* The host arrays: inputs, their half-rounded values, results. */
enum { X, W_, XH, WH, Y32, W16, Y16, NHOST };
/* The device arrays: FP32 inputs, HALF weights and padded input, both
 * outputs. */
enum { DX, DW, DWH, DXP, DY32, DY16, NDEV };

/* The three checks; the exit status. */
static int
checks_run(const struct tolerance *tol, struct layer *l, float **h, void **d)
{
    const size_t nw = (size_t)K * C * R * R;
    const size_t nxp = (size_t)N * C * HP * WP, ny = (size_t)N * K * H * W;
    const float one = 1.0f, zero = 0.0f;
    int passed = 0, checks = 3;
    size_t bytes = 0;

    /* The weights to HALF, as mnistCUDNN imports them. */
    if (cudnn_failed("cudnnTransformTensor (weights to HALF)",
                     cudnnTransformTensor(l->dnn, &one, l->wflat32, d[DW],
                                          &zero, l->wflat16, d[DWH])))
        return EXIT_CUDA_ERROR;
    h[W16] = half_download(l, d[DWH], 1, (int)nw, 1, 1);
    if (h[W16] == NULL)
        return EXIT_CUDA_ERROR;
    {
        int same = memcmp(h[W16], h[WH], nw * sizeof(float)) == 0;

        printf("check weights-to-half n=%zu hash=%016llx %s\n", nw,
               (unsigned long long)fnv1a64(h[W16], nw * sizeof(float),
                                           0xcbf29ce484222325ULL),
               same ? "ok" : "FAIL");
        passed += same;
    }

    /* The input to HALF with one pixel of zeros around it. */
    if (cudnn_failed("cudnnInitTransformDest",
                     cudnnInitTransformDest(l->padding, l->x32, l->x16,
                                            &bytes)))
        return EXIT_CUDA_ERROR;
    if (bytes != nxp * sizeof(float)) {
        fprintf(stderr, "half_weights: the padded input is %zu bytes, not "
                "%zu\n", bytes, nxp * sizeof(float));
        return EXIT_CHECK_FAILED;
    }
    if (cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(l->x16, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_HALF, N, C, HP,
                                                WP)) ||
        cudnn_failed("cudnnTransformTensorEx (input to padded HALF)",
                     cudnnTransformTensorEx(l->dnn, l->padding, &one, l->x32,
                                            d[DX], &zero, l->x16, d[DXP])))
        return EXIT_CUDA_ERROR;

    /* half: the padded HALF input, no convolution padding. */
    if (conv_run(l, l->x16, d[DXP], l->w16, d[DWH], l->pad0, l->y16,
                 d[DY16]) != 0)
        return EXIT_CUDA_ERROR;
    h[Y16] = half_download(l, d[DY16], N, K, H, W);
    if (h[Y16] == NULL)
        return EXIT_CUDA_ERROR;
    passed += conv_report("half", h[Y16],
                          conv_worst(h[Y16], h[XH], h[WH], H, W, 1,
                                     C * R * R * 0x1p-23, 0x1p-10));

    /* fp32: the program's FP32 convolution. */
    if (conv_run(l, l->x32, d[DX], l->w32, d[DW], l->pad1, l->y32,
                 d[DY32]) != 0 ||
        cuda_failed("cudaMemcpy", cudaMemcpy(h[Y32], d[DY32],
                                             ny * sizeof(float),
                                             cudaMemcpyDeviceToHost)))
        return EXIT_CUDA_ERROR;
    passed += conv_report("fp32", h[Y32],
                          conv_worst(h[Y32], h[X], h[W_], H, W, 1,
                                     tol_factor(tol, C * R * R), 0.0));

    printf("result: %d of %d checks passed\n", passed, checks);
    return passed == checks ? EXIT_ALL_PASS : EXIT_CHECK_FAILED;
}

int
main(int argc, char **argv)
{
    struct tolerance tol = { TOL_TF32, 0.0 };
    struct layer l;
    uint64_t seed = 20261129;
    const size_t nx = (size_t)N * C * H * W, nw = (size_t)K * C * R * R;
    const size_t ny = (size_t)N * K * H * W, nxp = (size_t)N * C * HP * WP;
    float *h[NHOST] = { NULL };
    void *d[NDEV] = { NULL };
    int rc = EXIT_CUDA_ERROR, ok = 1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc &&
            tol_parse(argv[i + 1], &tol) == 0) {
            i++;
            continue;
        }
        fprintf(stderr, "usage: half_weights [--tol fp32|tf32|fp16|bf16|X]\n");
        return EXIT_USAGE;
    }
    memset(&l, 0, sizeof(l));
    h[X] = host_data(nx, &seed);
    h[W_] = host_data(nw, &seed);
    h[XH] = malloc(nx * sizeof(float));
    h[WH] = malloc(nw * sizeof(float));
    h[Y32] = malloc(ny * sizeof(float));
    for (int i = 0; i <= Y32; i++)
        ok &= h[i] != NULL;
    if (ok) {
        for (size_t i = 0; i < nx; i++)
            h[XH][i] = to_half(h[X][i]);
        for (size_t i = 0; i < nw; i++)
            h[WH][i] = to_half(h[W_][i]);
        d[DX] = device_copy(h[X], nx * sizeof(float));
        d[DW] = device_copy(h[W_], nw * sizeof(float));
        d[DWH] = device_copy(NULL, nw * 2);
        d[DXP] = device_copy(NULL, nxp * 2);
        d[DY32] = device_copy(NULL, ny * sizeof(float));
        d[DY16] = device_copy(NULL, ny * 2);
        for (int i = 0; i < NDEV; i++)
            ok &= d[i] != NULL;
    }
    if (ok && layer_make(&l) == 0)
        rc = checks_run(&tol, &l, h, d);
    layer_free(&l);
    for (int i = 0; i < NDEV; i++)
        cudaFree(d[i]);
    for (int i = 0; i < NHOST; i++)
        free(h[i]);
    return rc;
}
