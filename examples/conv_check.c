/* conv_check: an ordinary FP32 cuDNN program: legacy convolutions forward,
 * backward data and backward filter over layouts (NCHW, NHWC), groups,
 * strides, dilations, padding, alpha/beta and channel counts 1 to 64,
 * each checked element by element against a double-precision reference
 * with the tolerance named on the command line (--tol fp32, tf32, fp16,
 * bf16 or a number). Like any program, it picks its algorithm with
 * cudnnGet...Algorithm_v7 and allocates exactly the workspace that
 * algorithm needs.
 *
 * With --only NAME, only the case of that name runs (as printed, e.g.
 * fma_math_FW). With --reset, the cases run twice, in two contexts: the program then
 * resets the device (cudaDeviceReset), makes a new handle, runs them
 * again and ends with a reset, as many CUDA samples do. With --repeat N,
 * each case runs N times in a row on the same inputs, each run checked:
 * the same call again at the same site, as a training step makes it.
 *
 * Prints one line per case:
 * case NAME m=OUT n=GROUPS k=LEN op=DIR status=NAME(N) err/bound=R hash=H
 *      ok|FAIL api=API class=CLASS
 * and exits 0 when every case passed. */
#include <cublas_v2.h> /* only for example_util.h's status names */
#include <cudnn.h>

#define EXAMPLE_PROG "conv_check"
#include "example_util.h"

#include <inttypes.h>

enum dir { FWD, BWD_DATA, BWD_FILTER };
static const char *const dir_api[] = {
    "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
    "cudnnConvolutionBackwardFilter",
};
static const char *const dir_op[] = { "FW", "BD", "BF" };

/* What a case is, for the tests: a convertible FP32 convolution, a call
 * of other types or Tensor Core settings (typed), FMA math (strict), or
 * arguments cuDNN refuses (invalid). */
enum cls { CONV, TYPED, STRICT, INVALID };
static const char *const cls_name[] = { "conv", "typed", "strict",
                                        "invalid" };

struct ccase {
    const char *name;
    int n, c, k, h, w, r, s;
    int pad, stride, dil, groups;
    int nhwc;
    int flip;                  /* CUDNN_CONVOLUTION */
    float alpha, beta;         /* beta 0: destination filled with NaN */
    int algo;                  /* -1: the heuristic's first */
    enum cls cls;
    cudnnDataType_t type;      /* FLOAT unless typed */
    cudnnMathType_t math;
    int nan_input;
    int tiny_workspace;        /* invalid: algorithm 1 with no workspace */
};

/* A case names BASE, then what differs from it. */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Winitializer-overrides"
#else
#pragma GCC diagnostic ignored "-Woverride-init"
#endif
#define BASE .pad = 1, .stride = 1, .dil = 1, .groups = 1, .alpha = 1.0f, \
             .algo = -1, .type = CUDNN_DATA_FLOAT, .math = CUDNN_DEFAULT_MATH

static const struct ccase all_dirs[] = {
    { "c1", 2, 1, 4, 7, 7, 3, 3, BASE },
    { "c3_nhwc", 2, 3, 8, 6, 6, 3, 3, BASE, .nhwc = 1 },
    { "c8_stride2", 2, 8, 8, 8, 8, 3, 3, BASE, .stride = 2 },
    { "c13_nhwc_dil2", 1, 13, 5, 8, 8, 3, 3, BASE, .nhwc = 1, .dil = 2,
      .pad = 2 },
    { "c64", 1, 64, 16, 5, 5, 3, 3, BASE },
    { "groups2", 2, 8, 12, 6, 6, 3, 3, BASE, .groups = 2 },
    { "groups4_nhwc_flip", 1, 12, 8, 6, 6, 3, 3, BASE, .groups = 4,
      .nhwc = 1, .flip = 1 },
    { "pad0_1x1", 2, 13, 8, 5, 5, 1, 1, BASE, .pad = 0 },
    { "alpha_beta", 2, 3, 8, 6, 6, 3, 3, BASE, .alpha = 0.5f,
      .beta = 0.25f },
    { "precomp_exact_ws", 2, 3, 8, 6, 6, 3, 3, BASE, .algo = 1 },
    { "nan_input", 1, 3, 4, 5, 5, 3, 3, BASE, .nan_input = 1 },
};

static const struct ccase forward_only[] = {
    { "half_data", 1, 8, 8, 6, 6, 3, 3, BASE, .cls = TYPED,
      .type = CUDNN_DATA_HALF },
    { "tensor_op_math", 1, 8, 8, 6, 6, 3, 3, BASE, .cls = TYPED,
      .math = CUDNN_TENSOR_OP_MATH },
    { "fma_math", 1, 8, 8, 6, 6, 3, 3, BASE, .cls = STRICT,
      .math = CUDNN_FMA_MATH },
    { "no_workspace", 1, 3, 8, 6, 6, 3, 3, BASE, .cls = INVALID, .algo = 1,
      .tiny_workspace = 1 },
};

/* --long: a backward-filter reduction over N P Q = 3 x 512 x 512 =
 * 786,432 terms, longer than the shim runs in FP16 (2^19). */
static const struct ccase long_reduction[] = {
    { "long_nhw", 3, 1, 1, 512, 512, 3, 3, BASE },
};

static const char *
dnn_status_name(cudnnStatus_t s)
{
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_EXECUTION_FAILED:
        return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_OTHER";
    }
}

/* A 4-d tensor (N, C, H, W logical) and its element strides. */
struct t4 {
    int d[4];
    int st[4];
};

static struct t4
layout(int n, int c, int h, int w, int nhwc)
{
    struct t4 t = { { n, c, h, w }, { 0, 0, 0, 0 } };

    if (nhwc) {
        t.st[1] = 1; t.st[3] = c; t.st[2] = c * w; t.st[0] = c * w * h;
    } else {
        t.st[3] = 1; t.st[2] = w; t.st[1] = w * h; t.st[0] = w * h * c;
    }
    return t;
}

static size_t
count(const struct t4 *t)
{
    return (size_t)t->d[0] * t->d[1] * t->d[2] * t->d[3];
}

static size_t
off(const struct t4 *t, int a, int b, int c, int d)
{
    return (size_t)a * t->st[0] + (size_t)b * t->st[1] +
           (size_t)c * t->st[2] + (size_t)d * t->st[3];
}

/* The reference: every product of the convolution once, summed (with
 * magnitudes) into the destination of the direction. */
static void
reference(const struct ccase *cc, enum dir dir, const struct t4 *tx,
          const float *x, const struct t4 *tw, const float *w,
          const struct t4 *ty, const float *y, double *sum, double *mag)
{
    int cg = cc->c / cc->groups, kg = cc->k / cc->groups;

    for (int n = 0; n < tx->d[0]; n++)
    for (int k = 0; k < cc->k; k++)
    for (int p = 0; p < ty->d[2]; p++)
    for (int q = 0; q < ty->d[3]; q++)
    for (int cl = 0; cl < cg; cl++)
    for (int r = 0; r < cc->r; r++)
    for (int s = 0; s < cc->s; s++) {
        int c = k / kg * cg + cl;
        int hi = p * cc->stride - cc->pad + r * cc->dil;
        int wi = q * cc->stride - cc->pad + s * cc->dil;
        int rr = cc->flip ? cc->r - 1 - r : r, ss = cc->flip ? cc->s - 1 - s : s;
        size_t xo, wo, yo, at;
        double prod;

        if (hi < 0 || hi >= tx->d[2] || wi < 0 || wi >= tx->d[3])
            continue;
        xo = off(tx, n, c, hi, wi);
        wo = off(tw, k, cl, rr, ss);
        yo = off(ty, n, k, p, q);
        if (dir == FWD) {
            prod = (double)x[xo] * w[wo];
            at = yo;
        } else if (dir == BWD_DATA) {
            prod = (double)y[yo] * w[wo];
            at = xo;
        } else {
            prod = (double)x[xo] * y[yo];
            at = wo;
        }
        sum[at] += prod;
        mag[at] += fabs(prod);
    }
}

static double
tol_conv(const struct tolerance *tol, int len)
{
    double terms = (double)len * 0x1p-23;

    switch (tol->kind) {
    case TOL_FP16: return 0x1p-10 + 0x1p-11 + terms; /* + half output */
    case TOL_BF16: return 0x1p-7 + 0x1p-8 + terms;
    case TOL_TF32: return 0x1p-10 + terms;
    case TOL_FP32: return terms;
    case TOL_FIXED: break;
    }
    return tol->fixed;
}

static void
fill(float *v, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        v[i] = rng_float(seed, 1.0f);
}

static int
run_case(cudnnHandle_t dnn, const struct ccase *cc, enum dir dir,
         const struct tolerance *tol, uint64_t seed)
{
    int ho = (cc->h + 2 * cc->pad - cc->dil * (cc->r - 1) - 1) / cc->stride + 1;
    int wo = (cc->w + 2 * cc->pad - cc->dil * (cc->s - 1) - 1) / cc->stride + 1;
    struct t4 tx = layout(cc->n, cc->c, cc->h, cc->w, cc->nhwc);
    struct t4 tw = layout(cc->k, cc->c / cc->groups, cc->r, cc->s, cc->nhwc);
    struct t4 ty = layout(cc->n, cc->k, ho, wo, cc->nhwc);
    const struct t4 *tout = dir == FWD ? &ty : dir == BWD_DATA ? &tx : &tw;
    size_t nx = count(&tx), nw = count(&tw), ny = count(&ty), nout = count(tout);
    size_t esize = cc->type == CUDNN_DATA_HALF ? 2 : 4;
    float *hx = calloc(nx, 4), *hw = calloc(nw, 4), *hy = calloc(ny, 4);
    float *old = calloc(nout, 4), *got = calloc(nout, 4);
    double *sum = calloc(nout, 8), *mag = calloc(nout, 8);
    float *host[3] = { hx, hw, hy };
    size_t n3[3] = { nx, nw, ny };
    void *dev[3] = { NULL, NULL, NULL }, *ws = NULL;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int pads[2] = { cc->pad, cc->pad }, strides[2] = { cc->stride, cc->stride };
    int dils[2] = { cc->dil, cc->dil }, algo = cc->algo, returned = 0;
    int len = dir == FWD ? cc->c / cc->groups * cc->r * cc->s
              : dir == BWD_DATA ? cc->k / cc->groups * cc->r * cc->s
                                : cc->n * ho * wo;
    int outi = dir == FWD ? 2 : dir == BWD_DATA ? 0 : 1, pass = 1;
    cudnnTensorFormat_t fmt = cc->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    size_t ws_bytes = 0;
    double worst = 0.0;
    uint64_t hash;
    cudnnStatus_t st;

    fill(hx, nx, &seed);
    fill(hw, nw, &seed);
    fill(hy, ny, &seed);
    if (cc->nan_input)
        (dir == BWD_DATA ? hy : hx)[3] = NAN;
    for (size_t i = 0; i < nout; i++)
        old[i] = cc->beta == 0.0f ? NAN : rng_float(&seed, 1.0f);
    memcpy(host[outi], old, nout * 4);
    for (int i = 0; i < 3; i++) {
        if (cuda_failed("cudaMalloc", cudaMalloc(&dev[i], n3[i] * 4)))
            exit(EXIT_CUDA_ERROR);
        if (esize == 2) /* half data: the bits do not matter, the type does */
            memset(host[i], 0, n3[i] * 4);
        cudaMemcpy(dev[i], host[i], n3[i] * 4, cudaMemcpyHostToDevice);
    }
    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd);
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetTensor4dDescriptor(xd, fmt, cc->type, cc->n, cc->c, cc->h, cc->w);
    cudnnSetTensor4dDescriptor(yd, fmt, cc->type, cc->n, cc->k, ho, wo);
    cudnnSetFilter4dDescriptor(wd, cc->type, fmt, cc->k, cc->c / cc->groups,
                               cc->r, cc->s);
    cudnnSetConvolutionNdDescriptor(cd, 2, pads, strides, dils,
                                    cc->flip ? CUDNN_CONVOLUTION
                                             : CUDNN_CROSS_CORRELATION,
                                    CUDNN_DATA_FLOAT);
    cudnnSetConvolutionGroupCount(cd, cc->groups);
    cudnnSetConvolutionMathType(cd, cc->math);
    if (algo < 0) {
        if (dir == FWD) {
            cudnnConvolutionFwdAlgoPerf_t p;
            cudnnGetConvolutionForwardAlgorithm_v7(dnn, xd, wd, cd, yd, 1,
                                                   &returned, &p);
            algo = (int)p.algo;
        } else if (dir == BWD_DATA) {
            cudnnConvolutionBwdDataAlgoPerf_t p;
            cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, wd, yd, cd, xd,
                                                        1, &returned, &p);
            algo = (int)p.algo;
        } else {
            cudnnConvolutionBwdFilterAlgoPerf_t p;
            cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, xd, yd, cd, wd,
                                                          1, &returned, &p);
            algo = (int)p.algo;
        }
    }
    if (dir == FWD)
        cudnnGetConvolutionForwardWorkspaceSize(
            dnn, xd, wd, cd, yd, (cudnnConvolutionFwdAlgo_t)algo, &ws_bytes);
    else if (dir == BWD_DATA)
        cudnnGetConvolutionBackwardDataWorkspaceSize(
            dnn, wd, yd, cd, xd, (cudnnConvolutionBwdDataAlgo_t)algo,
            &ws_bytes);
    else
        cudnnGetConvolutionBackwardFilterWorkspaceSize(
            dnn, xd, yd, cd, wd, (cudnnConvolutionBwdFilterAlgo_t)algo,
            &ws_bytes);
    if (cc->tiny_workspace)
        ws_bytes = 0;
    /* Exactly the FP32 algorithm's workspace, no more. */
    if (ws_bytes && cuda_failed("cudaMalloc", cudaMalloc(&ws, ws_bytes)))
        exit(EXIT_CUDA_ERROR);
    if (dir == FWD)
        st = cudnnConvolutionForward(dnn, &cc->alpha, xd, dev[0], wd, dev[1],
                                     cd, (cudnnConvolutionFwdAlgo_t)algo, ws,
                                     ws_bytes, &cc->beta, yd, dev[2]);
    else if (dir == BWD_DATA)
        st = cudnnConvolutionBackwardData(
            dnn, &cc->alpha, wd, dev[1], yd, dev[2], cd,
            (cudnnConvolutionBwdDataAlgo_t)algo, ws, ws_bytes, &cc->beta, xd,
            dev[0]);
    else
        st = cudnnConvolutionBackwardFilter(
            dnn, &cc->alpha, xd, dev[0], yd, dev[2], cd,
            (cudnnConvolutionBwdFilterAlgo_t)algo, ws, ws_bytes, &cc->beta, wd,
            dev[1]);
    if (cuda_failed("cudaDeviceSynchronize", cudaDeviceSynchronize()) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(got, dev[outi], nout * 4,
                                             cudaMemcpyDeviceToHost)))
        exit(EXIT_CUDA_ERROR);
    printf("case %s_%s m=%zu n=%d k=%d op=%s status=%s(%d)", cc->name,
           dir_op[dir], nout, cc->groups, len, dir_op[dir],
           dnn_status_name(st), (int)st);
    hash = fnv1a64(got, nout * 4, 0xcbf29ce484222325ULL);
    if (st != CUDNN_STATUS_SUCCESS || esize == 2) {
        /* Refused (the destination must be untouched) or half data (only
         * the status matters). */
        if (st != CUDNN_STATUS_SUCCESS)
            pass = memcmp(got, host[outi], nout * 4) == 0 &&
                   cc->cls == INVALID;
        printf(" err/bound=- hash=%016" PRIx64 " %s", hash,
               pass ? "ok" : "FAIL");
    } else {
        reference(cc, dir, &tx, hx, &tw, hw, &ty, hy, sum, mag);
        for (size_t i = 0; i < nout; i++) {
            double ref = (double)cc->alpha * sum[i];
            double bound = fabs((double)cc->alpha) * mag[i];
            double ratio;

            if (cc->beta != 0.0f) {
                ref += (double)cc->beta * old[i];
                bound += fabs((double)cc->beta) * fabs((double)old[i]);
            }
            /* A NaN input reaches the sums it is part of. */
            if (isnan(mag[i]))
                ref = NAN;
            ratio = element_ratio(got[i], ref, bound * tol_conv(tol, len));
            if (ratio > worst)
                worst = ratio;
        }
        pass = worst <= 1.0;
        printf(" err/bound=%.3e hash=%016" PRIx64 " %s", worst, hash,
               pass ? "ok" : "FAIL");
    }
    printf(" api=%s class=%s\n", dir_api[dir], cls_name[cc->cls]);
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
    for (int i = 0; i < 3; i++)
        cudaFree(dev[i]);
    cudaFree(ws);
    free(hx); free(hw); free(hy); free(old); free(got); free(sum); free(mag);
    return pass;
}

/* --only's case name, or NULL for every case. */
static const char *only;

/* 1 when case cc in direction dir is to run. */
static int
selected(const struct ccase *cc, enum dir dir)
{
    char name[128];

    snprintf(name, sizeof name, "%s_%s", cc->name, dir_op[dir]);
    return !only || strcmp(only, name) == 0;
}

int
main(int argc, char **argv)
{
    struct tolerance tol = { TOL_TF32, 0.0 };
    cudnnHandle_t dnn;
    cudnnStatus_t st;
    int failed = 0, cases = 0, resets = 0, repeat = 1, long_only = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc &&
            tol_parse(argv[i + 1], &tol) == 0) {
            i++;
            continue;
        }
        if (strcmp(argv[i], "--reset") == 0) {
            resets = 1;
            continue;
        }
        if (strcmp(argv[i], "--long") == 0) {
            long_only = 1;
            continue;
        }
        if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc &&
            parse_int_range(argv[i + 1], 1, 100, &repeat) == 0) {
            i++;
            continue;
        }
        fprintf(stderr, "usage: conv_check [--tol fp32|tf32|fp16|bf16|X] "
                "[--only CASE] [--reset] [--repeat N] [--long]\n");
        return EXIT_USAGE;
    }
again:
    st = cudnnCreate(&dnn);
    if (st != CUDNN_STATUS_SUCCESS) {
        /* No GPU: the statuses of a call on a NULL handle. */
        printf("cudnnCreate status=%s(%d)\n", dnn_status_name(st), (int)st);
        for (int d = 0; d < 3; d++) {
            float one = 1.0f, zero = 0.0f;
            cudnnStatus_t s = d == 0
                ? cudnnConvolutionForward(NULL, &one, NULL, NULL, NULL, NULL,
                                          NULL, 0, NULL, 0, &zero, NULL, NULL)
                : d == 1
                ? cudnnConvolutionBackwardData(NULL, &one, NULL, NULL, NULL,
                                               NULL, NULL, 0, NULL, 0, &zero,
                                               NULL, NULL)
                : cudnnConvolutionBackwardFilter(NULL, &one, NULL, NULL, NULL,
                                                 NULL, NULL, 0, NULL, 0,
                                                 &zero, NULL, NULL);
            printf("%s handle=NULL status=%s(%d)\n", dir_api[d],
                   dnn_status_name(s), (int)s);
        }
        return EXIT_CUDA_ERROR;
    }
    if (long_only) {
        for (int r = 0; r < repeat; r++, cases++)
            failed += !run_case(dnn, &long_reduction[0], BWD_FILTER, &tol,
                                0x5eed1000u);
        goto done;
    }
    for (size_t i = 0; i < sizeof all_dirs / sizeof all_dirs[0]; i++)
        for (int d = 0; d < 3; d++) {
            if (!selected(&all_dirs[i], (enum dir)d))
                continue;
            for (int r = 0; r < repeat; r++, cases++)
                failed += !run_case(dnn, &all_dirs[i], (enum dir)d, &tol,
                                    0x5eed0000u + i * 3 + (unsigned)d);
        }
    for (size_t i = 0; i < sizeof forward_only / sizeof forward_only[0];
         i++) {
        if (!selected(&forward_only[i], FWD))
            continue;
        for (int r = 0; r < repeat; r++, cases++)
            failed += !run_case(dnn, &forward_only[i], FWD, &tol,
                                0x5eedf000u + i);
    }
done:
    cudnnDestroy(dnn);
    if (resets > 0 &&
        cuda_failed("cudaDeviceReset", cudaDeviceReset()))
        return EXIT_CUDA_ERROR;
    if (resets == 1) {
        resets = 2;
        goto again;
    }
    if (only && cases == 0) {
        fprintf(stderr, "conv_check: no case named %s\n", only);
        return EXIT_USAGE;
    }
    printf("result: %d of %d cases passed\n", cases - failed, cases);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
