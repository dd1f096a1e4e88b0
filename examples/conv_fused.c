/* conv_fused: an ordinary FP32 cuDNN program doing what TensorFlow's fused
 * convolution and darknet-style trainers do: cudnnConvolutionBiasActivation
 * Forward, y = act(alpha1 * conv(x) + alpha2 * z + bias), with ReLU or
 * IDENTITY, no side input (z is y, alpha2 0), a residual in place (z is y,
 * alpha2 1), a side input apart, groups, strides, NCHW and NHWC, each
 * checked element by element against a double-precision reference with
 * the tolerance named on the command line (--tol fp32, tf32, fp16, bf16 or
 * a number) for the convolution, and FP32's for the bias and activation.
 * It picks its algorithm with cudnnGetConvolutionForwardAlgorithm_v7 and
 * allocates exactly the workspace that algorithm needs; a SIGMOID case
 * expects cuDNN's refusal and an untouched y.
 *
 * Prints one line per case:
 * case NAME m=OUT n=GROUPS k=LEN op=FA status=NAME(N) err/bound=R hash=H
 *      ok|FAIL api=cudnnConvolutionBiasActivationForward class=CLASS
 * and exits 0 when every case passed. */
#include <cublas_v2.h> /* only for example_util.h's status names */
#include <cudnn.h>

#define EXAMPLE_PROG "conv_fused"
#include "example_util.h"

#include <inttypes.h>

/* conv: the shim can convert it; invalid: cuDNN refuses it. */
enum cls { CONV, INVALID };
static const char *const cls_name[] = { "conv", "invalid" };

enum zmode { Z_IS_Y, Z_APART };

struct fcase {
    const char *name;
    int n, c, k, h, w, r, s;
    int pad, stride, groups;
    int nhwc;
    float alpha1, alpha2;
    enum zmode z;              /* Z_IS_Y with alpha2 0: y filled with NaN */
    cudnnActivationMode_t act;
    int algo;                  /* -1: the heuristic's first */
    enum cls cls;
};

#if defined(__clang__)
#pragma clang diagnostic ignored "-Winitializer-overrides"
#else
#pragma GCC diagnostic ignored "-Woverride-init"
#endif
#define BASE .pad = 1, .stride = 1, .groups = 1, .alpha1 = 1.0f, \
             .act = CUDNN_ACTIVATION_RELU, .algo = -1

static const struct fcase cases[] = {
    { "relu_bias", 2, 3, 8, 8, 8, 3, 3, BASE },
    { "relu_residual_nhwc", 2, 8, 8, 6, 6, 3, 3, BASE, .nhwc = 1,
      .alpha1 = 0.5f, .alpha2 = 1.0f },
    { "identity_precomp", 2, 4, 6, 7, 7, 3, 3, BASE, .alpha1 = 1.5f,
      .act = CUDNN_ACTIVATION_IDENTITY,
      .algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM },
    { "relu_groups2_stride2", 1, 8, 12, 9, 9, 3, 3, BASE, .groups = 2,
      .stride = 2 },
    { "relu_1x1_c64", 1, 64, 16, 5, 5, 1, 1, BASE, .pad = 0 },
    { "side_input_apart", 2, 3, 8, 6, 6, 3, 3, BASE, .alpha2 = 0.5f,
      .z = Z_APART },
    { "sigmoid_refused", 1, 3, 4, 5, 5, 3, 3, BASE,
      .act = CUDNN_ACTIVATION_SIGMOID, .cls = INVALID },
};

static const char *
dnn_status_name(cudnnStatus_t s)
{
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_OTHER";
    }
}

/* The tolerance of the convolution's sums of len products. */
static double
tol_conv(const struct tolerance *tol, int len)
{
    double terms = (double)len * 0x1p-23;

    switch (tol->kind) {
    case TOL_FP16: return 0x1p-10 + 0x1p-11 + terms;
    case TOL_BF16: return 0x1p-7 + 0x1p-8 + terms;
    case TOL_TF32: return 0x1p-10 + terms;
    case TOL_FP32: return terms;
    case TOL_FIXED: break;
    }
    return tol->fixed;
}

/* Element offset of logical (n, c, h, w) in a packed NCHW or NHWC
 * tensor of C channels, H x W. */
static size_t
at(int nhwc, int c_count, int h_count, int w_count, int n, int c, int h,
   int w)
{
    if (nhwc)
        return (((size_t)n * h_count + h) * w_count + w) * c_count + c;
    return (((size_t)n * c_count + c) * h_count + h) * w_count + w;
}

static int
out_dim(int in, int r, int pad, int stride)
{
    return 1 + (in + 2 * pad - r) / stride;
}

/* The convolution's sums and sums of |products| at each y element (in
 * y's memory order), cross-correlation, x and y in the case's layout, w
 * KCRS (NCHW) or KRSC (NHWC). */
static void
reference(const struct fcase *fc, const float *x, const float *w,
          double *sum, double *mag)
{
    int p = out_dim(fc->h, fc->r, fc->pad, fc->stride);
    int q = out_dim(fc->w, fc->s, fc->pad, fc->stride);
    int cg = fc->c / fc->groups, kg = fc->k / fc->groups;

    for (int n = 0; n < fc->n; n++)
    for (int k = 0; k < fc->k; k++)
    for (int oh = 0; oh < p; oh++)
    for (int ow = 0; ow < q; ow++) {
        size_t yi = at(fc->nhwc, fc->k, p, q, n, k, oh, ow);
        double acc = 0.0, m = 0.0;

        for (int cl = 0; cl < cg; cl++)
        for (int rr = 0; rr < fc->r; rr++)
        for (int ss = 0; ss < fc->s; ss++) {
            int ih = oh * fc->stride - fc->pad + rr;
            int iw = ow * fc->stride - fc->pad + ss;
            int c = (k / kg) * cg + cl;
            double prod;

            if (ih < 0 || ih >= fc->h || iw < 0 || iw >= fc->w)
                continue;
            prod = (double)x[at(fc->nhwc, fc->c, fc->h, fc->w, n, c, ih,
                                iw)] *
                   w[at(fc->nhwc, cg, fc->r, fc->s, k, cl, rr, ss)];
            acc += prod;
            m += fabs(prod);
        }
        sum[yi] = acc;
        mag[yi] = m;
    }
}

/* Exits when a setup call failed. */
static void
dnn_ok(const char *what, cudnnStatus_t s)
{
    if (cudnn_failed(what, s))
        exit(EXIT_CUDA_ERROR);
}

/* Runs one case on dnn; 1 when it passed. */
static int
run_case(cudnnHandle_t dnn, const struct fcase *fc,
         const struct tolerance *tol, uint64_t *seed)
{
    cudnnTensorFormat_t fmt = fc->nhwc ? CUDNN_TENSOR_NHWC
                                       : CUDNN_TENSOR_NCHW;
    int p = out_dim(fc->h, fc->r, fc->pad, fc->stride);
    int q = out_dim(fc->w, fc->s, fc->pad, fc->stride);
    int cg = fc->c / fc->groups, len = cg * fc->r * fc->s;
    size_t nx = (size_t)fc->n * fc->c * fc->h * fc->w;
    size_t nw = (size_t)fc->k * cg * fc->r * fc->s;
    size_t ny = (size_t)fc->n * fc->k * p * q;
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t ad;
    float *hx = host_data(nx, seed), *hw = host_data(nw, seed);
    float *hz = host_data(ny, seed), *hb = host_data((size_t)fc->k, seed);
    float *got = malloc(ny * sizeof(float));
    double *sum = malloc(ny * sizeof(double));
    double *mag = malloc(ny * sizeof(double));
    void *dx, *dw, *dy, *dz = NULL, *db, *ws = NULL;
    size_t ws_bytes = 0;
    double worst = 0.0;
    uint64_t hash;
    cudnnStatus_t st;
    int algo = fc->algo, pass = 0;

    if (!hx || !hw || !hz || !hb || !got || !sum || !mag) {
        fprintf(stderr, "conv_fused: out of memory\n");
        exit(EXIT_CUDA_ERROR);
    }
    /* No side input: y holds NaN, which alpha2 == 0 never reads. */
    if (fc->z == Z_IS_Y && fc->alpha2 == 0.0f)
        for (size_t i = 0; i < ny; i++)
            hz[i] = NAN;
    dnn_ok("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&xd));
    dnn_ok("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&yd));
    dnn_ok("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&bd));
    dnn_ok("cudnnCreateFilterDescriptor", cudnnCreateFilterDescriptor(&wd));
    dnn_ok("cudnnCreateConvolutionDescriptor",
           cudnnCreateConvolutionDescriptor(&cd));
    dnn_ok("cudnnCreateActivationDescriptor",
           cudnnCreateActivationDescriptor(&ad));
    dnn_ok("cudnnSetTensor4dDescriptor",
           cudnnSetTensor4dDescriptor(xd, fmt, CUDNN_DATA_FLOAT, fc->n,
                                      fc->c, fc->h, fc->w));
    dnn_ok("cudnnSetTensor4dDescriptor",
           cudnnSetTensor4dDescriptor(yd, fmt, CUDNN_DATA_FLOAT, fc->n,
                                      fc->k, p, q));
    dnn_ok("cudnnSetTensor4dDescriptor",
           cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW,
                                      CUDNN_DATA_FLOAT, 1, fc->k, 1, 1));
    dnn_ok("cudnnSetFilter4dDescriptor",
           cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, fmt, fc->k, cg,
                                      fc->r, fc->s));
    dnn_ok("cudnnSetConvolution2dDescriptor",
           cudnnSetConvolution2dDescriptor(cd, fc->pad, fc->pad, fc->stride,
                                           fc->stride, 1, 1,
                                           CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT));
    dnn_ok("cudnnSetConvolutionGroupCount",
           cudnnSetConvolutionGroupCount(cd, fc->groups));
    dnn_ok("cudnnSetActivationDescriptor",
           cudnnSetActivationDescriptor(ad, fc->act, CUDNN_NOT_PROPAGATE_NAN,
                                        0.0));
    dx = device_copy(hx, nx * 4);
    dw = device_copy(hw, nw * 4);
    dy = device_copy(hz, ny * 4);
    db = device_copy(hb, (size_t)fc->k * 4);
    if (fc->z == Z_APART)
        dz = device_copy(hz, ny * 4);
    if (!dx || !dw || !dy || !db || (fc->z == Z_APART && !dz)) {
        fprintf(stderr, "conv_fused: cudaMalloc or cudaMemcpy failed\n");
        exit(EXIT_CUDA_ERROR);
    }
    if (fc->z == Z_APART) {
        /* y's old contents differ from z's: neither may stand in. */
        if (cuda_failed("cudaMemset", cudaMemset(dy, 0x7f, ny * 4)))
            exit(EXIT_CUDA_ERROR);
    }
    if (algo < 0) {
        cudnnConvolutionFwdAlgoPerf_t perf;
        int returned = 0;

        if (cudnn_failed("cudnnGetConvolutionForwardAlgorithm_v7",
                         cudnnGetConvolutionForwardAlgorithm_v7(
                             dnn, xd, wd, cd, yd, 1, &returned, &perf)))
            exit(EXIT_CUDA_ERROR);
        algo = (int)perf.algo;
    }
    cudnnGetConvolutionForwardWorkspaceSize(
        dnn, xd, wd, cd, yd, (cudnnConvolutionFwdAlgo_t)algo, &ws_bytes);
    if (ws_bytes && cuda_failed("cudaMalloc", cudaMalloc(&ws, ws_bytes)))
        exit(EXIT_CUDA_ERROR);
    st = cudnnConvolutionBiasActivationForward(
        dnn, &fc->alpha1, xd, dx, wd, dw, cd,
        (cudnnConvolutionFwdAlgo_t)algo, ws, ws_bytes, &fc->alpha2, yd,
        fc->z == Z_APART ? dz : dy, bd, db, ad, yd, dy);
    if (cuda_failed("cudaDeviceSynchronize", cudaDeviceSynchronize()) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(got, dy, ny * 4,
                                             cudaMemcpyDeviceToHost)))
        exit(EXIT_CUDA_ERROR);
    printf("case %s m=%zu n=%d k=%d op=FA status=%s(%d)", fc->name, ny,
           fc->groups, len, dnn_status_name(st), (int)st);
    hash = fnv1a64(got, ny * 4, 0xcbf29ce484222325ULL);
    if (st != CUDNN_STATUS_SUCCESS) {
        /* Refused only where cuDNN documents it, y untouched (it held z's
         * values). */
        pass = fc->cls == INVALID && fc->z == Z_IS_Y &&
               memcmp(got, hz, ny * 4) == 0;
        printf(" err/bound=- hash=%016" PRIx64 " %s", hash,
               pass ? "ok" : "FAIL");
    } else {
        reference(fc, hx, hw, sum, mag);
        for (size_t i = 0; i < ny; i++) {
            int k = fc->nhwc ? (int)(i % (size_t)fc->k)
                             : (int)(i / ((size_t)p * q) % (size_t)fc->k);
            double conv = (double)fc->alpha1 * sum[i];
            double side = fc->alpha2 != 0.0f ? (double)fc->alpha2 * hz[i]
                                             : 0.0;
            double ref = conv + side + hb[k];
            /* The convolution within the mode's bound; the FP32 sums and
             * the activation after it within FP32's. */
            double bound = fabs((double)fc->alpha1) * mag[i] *
                               tol_conv(tol, len) +
                           (fabs((double)fc->alpha1) * mag[i] + fabs(side) +
                            fabs((double)hb[k])) * 3.0 * 0x1p-24;
            double ratio;

            if (fc->act == CUDNN_ACTIVATION_RELU && ref < 0.0)
                ref = 0.0;
            ratio = element_ratio(got[i], ref, bound);
            if (ratio > worst)
                worst = ratio;
        }
        pass = fc->cls != INVALID && worst <= 1.0;
        printf(" err/bound=%.3e hash=%016" PRIx64 " %s", worst, hash,
               pass ? "ok" : "FAIL");
    }
    printf(" api=cudnnConvolutionBiasActivationForward class=%s\n",
           cls_name[fc->cls]);
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyTensorDescriptor(bd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
    cudnnDestroyActivationDescriptor(ad);
    cudaFree(dx), cudaFree(dw), cudaFree(dy), cudaFree(dz), cudaFree(db);
    cudaFree(ws);
    free(hx), free(hw), free(hz), free(hb), free(got), free(sum), free(mag);
    return pass;
}

int
main(int argc, char **argv)
{
    struct tolerance tol = { TOL_TF32, 0.0 };
    uint64_t seed = 0x5eed0f05edULL;
    cudnnHandle_t dnn;
    int failed = 0, count = (int)(sizeof(cases) / sizeof(cases[0]));

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc &&
            tol_parse(argv[i + 1], &tol) == 0) {
            i++;
            continue;
        }
        fprintf(stderr, "usage: conv_fused [--tol fp32|tf32|fp16|bf16|X]\n");
        return EXIT_USAGE;
    }
    if (cudnn_failed("cudnnCreate", cudnnCreate(&dnn)))
        return EXIT_CUDA_ERROR;
    for (int i = 0; i < count; i++)
        failed += !run_case(dnn, &cases[i], &tol, &seed);
    cudnnDestroy(dnn);
    printf("result: %d of %d cases passed\n", count - failed, count);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
