/* Tests for the emulated cuDNN handle, descriptors and the CNN operations
 * other than convolution (add, set, scale, activation, pooling, softmax),
 * each against a double-precision reference written here. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_test.h"
#include "cudnn_test.h"

/* ---- Handle, versions, errors ------------------------------------------- */

/* Creating a handle allocates device memory: during a global capture
 * that fails and invalidates the capture. */
static void
handle_under_capture(void)
{
    cudnnHandle_t h = NULL;
    cudaStream_t s = capture_begin();

    assert_int_equal(cudnnCreate(&h),
                     CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED);
    assert_null(h);
    capture_expect_invalidated(s);
}

static void
test_handle_versions_errors(void **state)
{
    cudnnHandle_t h;
    cudaStream_t s, got = (cudaStream_t)0x1;
    char msg[256];
    int v;

    (void)state;
    assert_int_equal(cudnnCreate(NULL), CUDNN_STATUS_BAD_PARAM);
    h = handle_new();
    assert_int_equal(cudnnGetVersion(), 91900);
    assert_int_equal(cudnnGetVersion(), CUDNN_VERSION);
    DNN_OK(cudnnGetProperty(MAJOR_VERSION, &v));
    assert_int_equal(v, 9);
    DNN_OK(cudnnGetProperty(MINOR_VERSION, &v));
    assert_int_equal(v, CUDNN_MINOR);
    DNN_OK(cudnnGetProperty(PATCH_LEVEL, &v));
    assert_int_equal(v, CUDNN_PATCHLEVEL);
    assert_int_equal(cudnnGetProperty(MAJOR_VERSION, NULL),
                     CUDNN_STATUS_BAD_PARAM);
    assert_string_equal(cudnnGetErrorString(CUDNN_STATUS_SUCCESS),
                        "CUDNN_STATUS_SUCCESS");
    assert_string_equal(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED),
                        "CUDNN_STATUS_NOT_SUPPORTED");
    assert_string_equal(cudnnGetErrorString(CUDNN_STATUS_EXECUTION_FAILED),
                        "CUDNN_STATUS_EXECUTION_FAILED");
    assert_string_equal(cudnnGetErrorString((cudnnStatus_t)12345),
                        "CUDNN_UNKNOWN_STATUS");

    /* The stream: NULL (legacy default) until set. */
    DNN_OK(cudnnGetStream(h, &got));
    assert_null(got);
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    DNN_OK(cudnnSetStream(h, s));
    DNN_OK(cudnnGetStream(h, &got));
    assert_ptr_equal(got, s);
    assert_int_equal(cudnnGetStream(h, NULL), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetStream(NULL, s), CUDNN_STATUS_BAD_PARAM);

    /* The last error: what failed and why, once. */
    cudnnGetLastErrorString(msg, sizeof(msg));
    assert_non_null(strstr(msg, "CUDNN_STATUS_BAD_PARAM"));
    assert_non_null(strstr(msg, "handle"));
    cudnnGetLastErrorString(msg, sizeof(msg));
    assert_string_equal(msg, "");

    DNN_OK(cudnnDestroy(h));
    assert_int_equal(cudnnDestroy(NULL), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    handle_under_capture();
}

/* ---- Descriptors --------------------------------------------------------- */

static void
get4d(cudnnTensorDescriptor_t t, int want[8], cudnnDataType_t want_type)
{
    int got[8];
    cudnnDataType_t type;

    DNN_OK(cudnnGetTensor4dDescriptor(t, &type, &got[0], &got[1], &got[2],
                                      &got[3], &got[4], &got[5], &got[6],
                                      &got[7]));
    assert_int_equal(type, want_type);
    assert_memory_equal(got, want, sizeof(got));
}

static void
test_tensor_descriptors(void **state)
{
    int nchw[8] = { 2, 3, 4, 5, 60, 20, 5, 1 };
    int nhwc[8] = { 2, 3, 4, 5, 60, 1, 15, 3 };
    int padded[8] = { 2, 3, 4, 5, 100, 32, 8, 1 };
    int dim5[5] = { 2, 3, 4, 5, 6 }, str5[5] = { 360, 1, 90, 18, 3 };
    int gd[8], gs[8], nb;
    cudnnTensorDescriptor_t t;
    cudnnDataType_t type;
    size_t bytes;

    (void)state;
    assert_int_equal(cudnnCreateTensorDescriptor(NULL),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnCreateTensorDescriptor(&t));
    /* Not set yet: nothing to get. */
    assert_int_equal(cudnnGetTensorSizeInBytes(t, &bytes),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                      2, 3, 4, 5));
    get4d(t, nchw, CUDNN_DATA_FLOAT);
    DNN_OK(cudnnGetTensorSizeInBytes(t, &bytes));
    assert_int_equal(bytes, 120 * 4);
    DNN_OK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF,
                                      2, 3, 4, 5));
    get4d(t, nhwc, CUDNN_DATA_HALF);
    DNN_OK(cudnnGetTensorSizeInBytes(t, &bytes));
    assert_int_equal(bytes, 120 * 2);
    /* Arbitrary strides: padded rows and planes. */
    DNN_OK(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_BFLOAT16, 2, 3, 4, 5,
                                        100, 32, 8, 1));
    get4d(t, padded, CUDNN_DATA_BFLOAT16);
    DNN_OK(cudnnGetTensorSizeInBytes(t, &bytes));
    assert_int_equal(bytes, (100 + 2 * 32 + 3 * 8 + 4 + 1) * 2);

    /* N-d, with the format inferred only from strides. */
    DNN_OK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 5, dim5, str5));
    DNN_OK(cudnnGetTensorNdDescriptor(t, 8, &type, &nb, gd, gs));
    assert_int_equal(nb, 5);
    assert_memory_equal(gd, dim5, sizeof(dim5));
    assert_memory_equal(gs, str5, sizeof(str5));
    DNN_OK(cudnnGetTensorNdDescriptor(t, 2, &type, &nb, gd, gs));
    assert_int_equal(nb, 5);    /* the true rank, only 2 entries written */
    assert_int_equal(cudnnGetTensor4dDescriptor(t, &type, gd, gd, gd, gd, gd,
                                                gd, gd, gd),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NHWC,
                                        CUDNN_DATA_FLOAT, 5, dim5));
    DNN_OK(cudnnGetTensorNdDescriptor(t, 8, &type, &nb, gd, gs));
    assert_memory_equal(gs, str5, sizeof(str5));

    /* Sizes and strides must be positive; 3 to 8 dimensions. */
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, 0, 3, 4, 5),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, 2, -3, 4, 5),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW_VECT_C,
                                                CUDNN_DATA_FLOAT, 2, 4, 4, 5),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW,
                                                (cudnnDataType_t)99, 2, 3, 4,
                                                5),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 2, 3, 4,
                                                  5, 60, 20, 0, 1),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 2, dim5,
                                                str5),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 9, dim5,
                                                str5),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, 65536, 1024,
                                                64, 1),
                     CUDNN_STATUS_NOT_SUPPORTED);   /* 2^32 elements */
    /* A failed set leaves the last good one. */
    DNN_OK(cudnnGetTensorNdDescriptor(t, 8, &type, &nb, gd, gs));
    assert_int_equal(nb, 5);
    DNN_OK(cudnnDestroyTensorDescriptor(t));
    DNN_OK(cudnnDestroyTensorDescriptor(NULL));
}

static void
test_filter_descriptors(void **state)
{
    cudnnFilterDescriptor_t f;
    cudnnDataType_t type;
    cudnnTensorFormat_t format;
    int k, c, hh, w, nb, dim[5], want[5] = { 8, 4, 3, 3, 3 };
    size_t bytes;

    (void)state;
    DNN_OK(cudnnCreateFilterDescriptor(&f));
    DNN_OK(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC,
                                      16, 8, 3, 5));
    DNN_OK(cudnnGetFilter4dDescriptor(f, &type, &format, &k, &c, &hh, &w));
    assert_int_equal(type, CUDNN_DATA_HALF);
    assert_int_equal(format, CUDNN_TENSOR_NHWC);
    assert_true(k == 16 && c == 8 && hh == 3 && w == 5);
    DNN_OK(cudnnGetFilterSizeInBytes(f, &bytes));
    assert_int_equal(bytes, 16 * 8 * 15 * 2);
    DNN_OK(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                      5, want));
    DNN_OK(cudnnGetFilterNdDescriptor(f, 5, &type, &format, &nb, dim));
    assert_int_equal(nb, 5);
    assert_int_equal(format, CUDNN_TENSOR_NCHW);
    assert_memory_equal(dim, want, sizeof(want));
    assert_int_equal(cudnnGetFilter4dDescriptor(f, &type, &format, &k, &c,
                                                &hh, &w),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT,
                                                CUDNN_TENSOR_NCHW, 8, 0, 3, 3),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT,
                                                CUDNN_TENSOR_NCHW, 2, want),
                     CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnDestroyFilterDescriptor(f));
}

static void
test_convolution_descriptors(void **state)
{
    cudnnConvolutionDescriptor_t conv;
    cudnnTensorDescriptor_t x;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionMode_t mode;
    cudnnDataType_t ct;
    cudnnMathType_t math;
    int v[6], groups, n, c, hh, ww, len, pad[3], str[3], dil[3];
    int xdim[5] = { 2, 6, 9, 10, 11 }, wdim[5] = { 4, 3, 3, 3, 2 };
    int npad[3] = { 1, 0, 2 }, nstr[3] = { 2, 1, 3 }, ndil[3] = { 1, 2, 1 };
    int out[5];

    (void)state;
    DNN_OK(cudnnCreateConvolutionDescriptor(&conv));
    /* Defaults: one group, default math. */
    DNN_OK(cudnnGetConvolutionGroupCount(conv, &groups));
    assert_int_equal(groups, 1);
    DNN_OK(cudnnGetConvolutionMathType(conv, &math));
    assert_int_equal(math, CUDNN_DEFAULT_MATH);

    DNN_OK(cudnnSetConvolution2dDescriptor(conv, 1, 2, 3, 1, 2, 1,
                                           CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT));
    DNN_OK(cudnnGetConvolution2dDescriptor(conv, &v[0], &v[1], &v[2], &v[3],
                                           &v[4], &v[5], &mode, &ct));
    assert_true(v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 1 &&
                v[4] == 2 && v[5] == 1);
    assert_int_equal(mode, CUDNN_CROSS_CORRELATION);
    assert_int_equal(ct, CUDNN_DATA_FLOAT);
    for (int m = CUDNN_DEFAULT_MATH; m <= CUDNN_FMA_MATH; m++) {
        DNN_OK(cudnnSetConvolutionMathType(conv, (cudnnMathType_t)m));
        DNN_OK(cudnnGetConvolutionMathType(conv, &math));
        assert_int_equal(math, m);
    }
    assert_int_equal(cudnnSetConvolutionMathType(conv, (cudnnMathType_t)7),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnSetConvolutionGroupCount(conv, 4));
    DNN_OK(cudnnGetConvolutionGroupCount(conv, &groups));
    assert_int_equal(groups, 4);
    assert_int_equal(cudnnSetConvolutionGroupCount(conv, 0),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolution2dDescriptor(conv, -1, 0, 1, 1, 1, 1,
                                                     CUDNN_CONVOLUTION,
                                                     CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolution2dDescriptor(conv, 0, 0, 0, 1, 1, 1,
                                                     CUDNN_CONVOLUTION,
                                                     CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 0, 1,
                                                     CUDNN_CONVOLUTION,
                                                     CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 1,
                                                     (cudnnConvolutionMode_t)2,
                                                     CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_BAD_PARAM);

    /* Output sizes: 1 + (in + 2 pad - ((f - 1) dil + 1)) / stride. */
    DNN_OK(cudnnCreateTensorDescriptor(&x));
    DNN_OK(cudnnCreateFilterDescriptor(&w));
    DNN_OK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                      2, 8, 17, 12));
    DNN_OK(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC,
                                      12, 2, 3, 4));
    DNN_OK(cudnnSetConvolution2dDescriptor(conv, 1, 2, 3, 1, 2, 1,
                                           CUDNN_CONVOLUTION,
                                           CUDNN_DATA_FLOAT));
    DNN_OK(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &hh,
                                                 &ww));
    assert_int_equal(n, 2);
    assert_int_equal(c, 12);
    assert_int_equal(hh, 1 + (17 + 2 - 5) / 3);
    assert_int_equal(ww, 1 + (12 + 4 - 4) / 1);
    DNN_OK(cudnnSetConvolutionGroupCount(conv, 3));     /* 8 != 2 x 3 */
    assert_int_equal(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c,
                                                           &hh, &ww),
                     CUDNN_STATUS_BAD_PARAM);

    /* N-d: a 3-d convolution. */
    DNN_OK(cudnnSetTensorNdDescriptorEx(x, CUDNN_TENSOR_NCHW,
                                        CUDNN_DATA_FLOAT, 5, xdim));
    DNN_OK(cudnnSetFilterNdDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                      5, wdim));
    DNN_OK(cudnnSetConvolutionNdDescriptor(conv, 3, npad, nstr, ndil,
                                           CUDNN_CONVOLUTION,
                                           CUDNN_DATA_FLOAT));
    DNN_OK(cudnnSetConvolutionGroupCount(conv, 2));
    DNN_OK(cudnnGetConvolutionNdDescriptor(conv, 3, &len, pad, str, dil,
                                           &mode, &ct));
    assert_int_equal(len, 3);
    assert_memory_equal(pad, npad, sizeof(pad));
    assert_memory_equal(str, nstr, sizeof(str));
    assert_memory_equal(dil, ndil, sizeof(dil));
    DNN_OK(cudnnGetConvolutionNdForwardOutputDim(conv, x, w, 5, out));
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 4);
    assert_int_equal(out[2], 1 + (9 + 2 - 3) / 2);
    assert_int_equal(out[3], 1 + (10 - 5) / 1);
    assert_int_equal(out[4], 1 + (11 + 4 - 2) / 3);
    assert_int_equal(cudnnGetConvolutionNdForwardOutputDim(conv, x, w, 4,
                                                           out),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnGetConvolution2dDescriptor(conv, &v[0], &v[1],
                                                     &v[2], &v[3], &v[4],
                                                     &v[5], &mode, &ct),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolutionNdDescriptor(conv, 7, npad, nstr,
                                                     ndil, CUDNN_CONVOLUTION,
                                                     CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnDestroyTensorDescriptor(x));
    DNN_OK(cudnnDestroyFilterDescriptor(w));
    DNN_OK(cudnnDestroyConvolutionDescriptor(conv));
}

/* ---- Element-wise operations --------------------------------------------- */

static float *
randoms(size_t n)
{
    float *v = malloc(n * sizeof(float) + 1);

    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = rnd() * 3.0f;
    return v;
}

static void
assert_near(float got, double want, double tol)
{
    if (!(fabs(got - want) <= tol * (1.0 + fabs(want))))
        fail_msg("got %.9g, want %.9g", (double)got, want);
}

/* Bias 1 x C x 1 x 1 added to N x C x H x W, in NCHW and NHWC. */
static void
test_add_tensor(void **state)
{
    cudnnHandle_t h = handle_new();
    int cdim[4] = { 2, 3, 4, 5 }, adim[4] = { 1, 3, 1, 1 };
    int full[4] = { 2, 3, 4, 5 };

    (void)state;
    for (int f = 0; f < 2; f++) {
        cudnnTensorFormat_t fmt = f ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
        cudnnTensorDescriptor_t a = tensor_new(fmt, CUDNN_DATA_FLOAT, 4, adim);
        cudnnTensorDescriptor_t c = tensor_new(fmt, CUDNN_DATA_FLOAT, 4, cdim);
        cudnnTensorDescriptor_t wrong;
        float *av = randoms(3), *cv = randoms(120), got[120];
        float alpha = 1.5f, beta = f ? 0.0f : -0.5f;
        void *ad = tensor_upload(a, av, 0.0f), *cd;

        if (f)
            for (int i = 0; i < 120; i++)
                cv[i] = NAN;    /* beta == 0: never read */
        cd = tensor_upload(c, cv, 0.0f);
        DNN_OK(cudnnAddTensor(h, &alpha, a, ad, &beta, c, cd));
        tensor_download(c, cd, got);
        for (int i = 0; i < 120; i++) {
            double want = alpha * (double)av[(i / 20) % 3];
            if (beta != 0.0f)
                want += beta * (double)cv[i];
            assert_near(got[i], want, 1e-6);
        }
        /* A not broadcastable, or of another type: BAD_PARAM. */
        full[2] = 3;
        wrong = tensor_new(fmt, CUDNN_DATA_FLOAT, 4, full);
        assert_int_equal(cudnnAddTensor(h, &alpha, wrong, ad, &beta, c, cd),
                         CUDNN_STATUS_BAD_PARAM);
        DNN_OK(cudnnSetTensor4dDescriptor(wrong, fmt, CUDNN_DATA_HALF, 1, 3,
                                          1, 1));
        assert_int_equal(cudnnAddTensor(h, &alpha, wrong, ad, &beta, c, cd),
                         CUDNN_STATUS_BAD_PARAM);
        assert_int_equal(cudnnAddTensor(NULL, &alpha, a, ad, &beta, c, cd),
                         CUDNN_STATUS_BAD_PARAM);
        DNN_OK(cudnnDestroyTensorDescriptor(wrong));
        DNN_OK(cudnnDestroyTensorDescriptor(a));
        DNN_OK(cudnnDestroyTensorDescriptor(c));
        dev_free(ad), dev_free(cd);
        free(av), free(cv);
    }
    DNN_OK(cudnnDestroy(h));
}

/* cudnnSetTensor writes a value of the tensor's own type into every
 * element of a strided tensor and nothing between them; cudnnScaleTensor
 * multiplies by a float. */
static void
test_set_scale_tensor(void **state)
{
    cudnnHandle_t h = handle_new();
    cudnnTensorDescriptor_t t;
    uint16_t half_two = 0x4000u, raw[88];
    float three = 3.0f, v[24], got[24];
    void *d;

    (void)state;
    DNN_OK(cudnnCreateTensorDescriptor(&t));
    DNN_OK(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_HALF, 2, 3, 2, 2, 50,
                                        16, 4, 1));
    for (int i = 0; i < 24; i++)
        v[i] = (float)(i - 12) / 4.0f;
    d = tensor_upload(t, v, -7.0f);
    DNN_OK(cudnnScaleTensor(h, t, d, &three));
    tensor_download(t, d, got);
    for (int i = 0; i < 24; i++)
        assert_true(got[i] == 3.0f * v[i]);
    DNN_OK(cudnnSetTensor(h, t, d, &half_two));
    tensor_download(t, d, got);
    for (int i = 0; i < 24; i++)
        assert_true(got[i] == 2.0f);
    dev_download(raw, d, sizeof(raw));
    assert_int_equal(raw[2], f16_bits(-7.0f));     /* a gap stays */
    assert_int_equal(raw[0], 0x4000u);
    assert_int_equal(cudnnSetTensor(h, t, d, NULL),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    dev_free(d);
    DNN_OK(cudnnDestroyTensorDescriptor(t));
    DNN_OK(cudnnDestroy(h));
}

static double
ref_act(cudnnActivationMode_t m, double x, double coef)
{
    switch (m) {
    case CUDNN_ACTIVATION_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case CUDNN_ACTIVATION_RELU:
        return x > 0 ? x : 0;
    case CUDNN_ACTIVATION_TANH:
        return tanh(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        return x <= 0 ? 0 : (x < coef ? x : coef);
    default:    /* ELU */
        return x > 0 ? x : coef * (exp(x) - 1.0);
    }
}

static double
ref_act_grad(cudnnActivationMode_t m, double x, double coef)
{
    double y = ref_act(m, x, coef);

    switch (m) {
    case CUDNN_ACTIVATION_SIGMOID:
        return y * (1.0 - y);
    case CUDNN_ACTIVATION_RELU:
        return x > 0;
    case CUDNN_ACTIVATION_TANH:
        return 1.0 - y * y;
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        return x > 0 && x < coef;
    default:
        return x > 0 ? 1.0 : y + coef;
    }
}

static void
test_activation(void **state)
{
    cudnnHandle_t h = handle_new();
    cudnnActivationDescriptor_t act;
    cudnnActivationMode_t mode;
    cudnnNanPropagation_t nan_opt;
    int dim[4] = { 2, 3, 4, 5 }, other[4] = { 2, 3, 5, 4 };
    cudnnTensorDescriptor_t t = tensor_new(CUDNN_TENSOR_NHWC,
                                           CUDNN_DATA_FLOAT, 4, dim);
    cudnnTensorDescriptor_t t2 = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 4, other);
    float *x = randoms(120), *dy = randoms(120), *old = randoms(120);
    float y[120], dx[120], alpha = 0.5f, beta = 0.25f;
    void *xd = tensor_upload(t, x, 0.0f), *dyd = tensor_upload(t, dy, 0.0f);
    double coef;

    (void)state;
    DNN_OK(cudnnCreateActivationDescriptor(&act));
    for (int m = CUDNN_ACTIVATION_SIGMOID; m <= CUDNN_ACTIVATION_ELU; m++) {
        void *yd = tensor_upload(t, old, 0.0f);
        void *dxd = tensor_upload(t, old, 0.0f);

        DNN_OK(cudnnSetActivationDescriptor(act, (cudnnActivationMode_t)m,
                                            CUDNN_PROPAGATE_NAN, 1.5));
        DNN_OK(cudnnGetActivationDescriptor(act, &mode, &nan_opt, &coef));
        assert_true(mode == (cudnnActivationMode_t)m && coef == 1.5 &&
                    nan_opt == CUDNN_PROPAGATE_NAN);
        DNN_OK(cudnnActivationForward(h, act, &alpha, t, xd, &beta, t, yd));
        DNN_OK(cudnnActivationBackward(h, act, &alpha, t, yd, t, dyd, t, xd,
                                       &beta, t, dxd));
        tensor_download(t, yd, y);
        tensor_download(t, dxd, dx);
        for (int i = 0; i < 120; i++) {
            double f = ref_act((cudnnActivationMode_t)m, x[i], 1.5);
            /* backward used y = alpha f + beta old, as given */
            double yv = y[i], g;
            assert_near(y[i], alpha * f + beta * old[i], 1e-6);
            switch (m) {
            case CUDNN_ACTIVATION_SIGMOID:
                g = yv * (1.0 - yv);
                break;
            case CUDNN_ACTIVATION_TANH:
                g = 1.0 - yv * yv;
                break;
            case CUDNN_ACTIVATION_ELU:
                g = x[i] > 0 ? 1.0 : yv + 1.5;
                break;
            default:
                g = ref_act_grad((cudnnActivationMode_t)m, x[i], 1.5);
            }
            assert_near(dx[i], alpha * g * dy[i] + beta * old[i], 1e-5);
        }
        dev_free(yd), dev_free(dxd);
    }

    /* RELU and NaN: propagated or not, as asked; beta == 0 ignores y. */
    {
        float nanx[120], ynan[120];
        void *nd, *yd;
        for (int i = 0; i < 120; i++)
            nanx[i] = i % 2 ? NAN : x[i], ynan[i] = NAN;
        nd = tensor_upload(t, nanx, 0.0f);
        yd = tensor_upload(t, ynan, 0.0f);
        beta = 0.0f;
        for (int p = 0; p < 2; p++) {
            DNN_OK(cudnnSetActivationDescriptor(
                act, CUDNN_ACTIVATION_RELU,
                p ? CUDNN_PROPAGATE_NAN : CUDNN_NOT_PROPAGATE_NAN, 0.0));
            DNN_OK(cudnnActivationForward(h, act, &alpha, t, nd, &beta, t,
                                          yd));
            tensor_download(t, yd, y);
            for (int i = 0; i < 120; i++) {
                if (i % 2 == 0)
                    assert_near(y[i], alpha * (x[i] > 0 ? x[i] : 0.0), 1e-7);
                else
                    assert_true(p ? isnan(y[i]) : y[i] == 0.0f);
            }
        }
        /* Sizes that differ, and in-place with other strides. */
        assert_int_equal(cudnnActivationForward(h, act, &alpha, t, nd, &beta,
                                                t2, yd),
                         CUDNN_STATUS_BAD_PARAM);
        DNN_OK(cudnnSetTensor4dDescriptor(t2, CUDNN_TENSOR_NCHW,
                                          CUDNN_DATA_FLOAT, 2, 3, 4, 5));
        assert_int_equal(cudnnActivationForward(h, act, &alpha, t, nd, &beta,
                                                t2, nd),
                         CUDNN_STATUS_BAD_PARAM);
        DNN_OK(cudnnActivationForward(h, act, &alpha, t, nd, &beta, t2, yd));
        dev_free(nd), dev_free(yd);
    }
    DNN_OK(cudnnDestroyActivationDescriptor(act));
    DNN_OK(cudnnDestroyTensorDescriptor(t));
    DNN_OK(cudnnDestroyTensorDescriptor(t2));
    dev_free(xd), dev_free(dyd);
    free(x), free(dy), free(old);
    DNN_OK(cudnnDestroy(h));
}

/* ---- Pooling ------------------------------------------------------------- */

/* Reference pooling on N x C x H x W (row-major): forward y and the
 * gradient dx for dy. */
static void
ref_pool(cudnnPoolingMode_t mode, const int *d, const int *win,
         const int *pad, const int *str, const int *od, const float *x,
         const float *dy, double *y, double *dx)
{
    for (int nc = 0; nc < d[0] * d[1]; nc++)
    for (int p = 0; p < od[2]; p++)
    for (int q = 0; q < od[3]; q++) {
        double best = -INFINITY, sum = 0.0;
        int arg = -1, inside = 0;
        size_t yi = ((size_t)nc * od[2] + p) * od[3] + q;

        for (int r = 0; r < win[0]; r++)
        for (int s = 0; s < win[1]; s++) {
            int ih = p * str[0] - pad[0] + r, iw = q * str[1] - pad[1] + s;
            int xi = (nc * d[2] + ih) * d[3] + iw;
            if (ih < 0 || ih >= d[2] || iw < 0 || iw >= d[3])
                continue;
            inside++;
            sum += x[xi];
            if (x[xi] > best)
                best = x[xi], arg = xi;
        }
        if (mode == CUDNN_POOLING_MAX) {
            y[yi] = best;
            dx[arg] += dy[yi];
            continue;
        }
        int cnt = mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                      ? win[0] * win[1] : inside;
        y[yi] = sum / cnt;
        for (int r = 0; r < win[0]; r++)
        for (int s = 0; s < win[1]; s++) {
            int ih = p * str[0] - pad[0] + r, iw = q * str[1] - pad[1] + s;
            if (ih >= 0 && ih < d[2] && iw >= 0 && iw < d[3])
                dx[(nc * d[2] + ih) * d[3] + iw] += dy[yi] / cnt;
        }
    }
}

static void
test_pooling(void **state)
{
    const cudnnPoolingMode_t modes[] = {
        CUDNN_POOLING_MAX, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
    };
    cudnnHandle_t h = handle_new();
    cudnnPoolingDescriptor_t pd;
    int d[4] = { 2, 3, 7, 6 }, win[2] = { 3, 2 }, pad[2] = { 1, 1 };
    int str[2] = { 2, 2 }, od[4], v[6];
    cudnnPoolingMode_t mode;
    cudnnNanPropagation_t nan_opt;
    float *x = randoms(252);

    (void)state;
    DNN_OK(cudnnCreatePoolingDescriptor(&pd));
    for (int m = 0; m < 3; m++) {
        for (int f = 0; f < 2; f++) {
            cudnnTensorFormat_t fmt = f ? CUDNN_TENSOR_NHWC
                                        : CUDNN_TENSOR_NCHW;
            cudnnTensorDescriptor_t xt = tensor_new(fmt, CUDNN_DATA_FLOAT, 4,
                                                    d), yt;
            float alpha = 1.0f, beta = 0.0f, *dy, y[252], dx[252];
            double ry[252] = { 0 }, rdx[252] = { 0 };
            void *xd = tensor_upload(xt, x, 0.0f), *yd, *dyd, *dxd;
            size_t ny;

            DNN_OK(cudnnSetPooling2dDescriptor(pd, modes[m],
                                               CUDNN_NOT_PROPAGATE_NAN,
                                               win[0], win[1], pad[0], pad[1],
                                               str[0], str[1]));
            DNN_OK(cudnnGetPooling2dDescriptor(pd, &mode, &nan_opt, &v[0],
                                               &v[1], &v[2], &v[3], &v[4],
                                               &v[5]));
            assert_true(mode == modes[m] && v[0] == 3 && v[1] == 2 &&
                        v[2] == 1 && v[3] == 1 && v[4] == 2 && v[5] == 2);
            DNN_OK(cudnnGetPooling2dForwardOutputDim(pd, xt, &od[0], &od[1],
                                                     &od[2], &od[3]));
            assert_true(od[0] == 2 && od[1] == 3 && od[2] == 4 && od[3] == 4);
            ny = (size_t)od[0] * od[1] * od[2] * od[3];
            yt = tensor_new(fmt, CUDNN_DATA_FLOAT, 4, od);
            dy = randoms(ny);
            yd = tensor_upload(yt, dy, 0.0f);
            dyd = tensor_upload(yt, dy, 0.0f);
            dxd = tensor_upload(xt, x, 0.0f);
            DNN_OK(cudnnPoolingForward(h, pd, &alpha, xt, xd, &beta, yt, yd));
            DNN_OK(cudnnPoolingBackward(h, pd, &alpha, yt, yd, yt, dyd, xt,
                                        xd, &beta, xt, dxd));
            tensor_download(yt, yd, y);
            tensor_download(xt, dxd, dx);
            ref_pool(modes[m], d, win, pad, str, od, x, dy, ry, rdx);
            for (size_t i = 0; i < ny; i++)
                assert_near(y[i], ry[i], 1e-6);
            for (size_t i = 0; i < 252; i++)
                assert_near(dx[i], rdx[i], 1e-6);
            /* y not of the pooled size */
            assert_int_equal(cudnnPoolingForward(h, pd, &alpha, xt, xd, &beta,
                                                 xt, yd),
                             CUDNN_STATUS_BAD_PARAM);
            DNN_OK(cudnnDestroyTensorDescriptor(xt));
            DNN_OK(cudnnDestroyTensorDescriptor(yt));
            dev_free(xd), dev_free(yd), dev_free(dyd), dev_free(dxd);
            free(dy);
        }
    }
    assert_int_equal(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX,
                                                 CUDNN_NOT_PROPAGATE_NAN, 0,
                                                 2, 0, 0, 1, 1),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnDestroyPoolingDescriptor(pd));
    free(x);
    DNN_OK(cudnnDestroy(h));
}

/* ---- Softmax ------------------------------------------------------------- */

/* Reference softmax over groups: INSTANCE (C H W per image) or CHANNEL
 * (C per pixel), on row-major N x C x S data. */
static void
ref_softmax(int log_algo, int channel, int n, int c, int s, const float *x,
            const float *dy, double *y, double *dx)
{
    int groups = channel ? n * s : n, inner = channel ? c : c * s;

    for (int g = 0; g < groups; g++) {
        double m = -INFINITY, sum = 0.0, dot = 0.0;
        int idx[64];

        for (int e = 0; e < inner; e++) {
            idx[e] = channel ? (g / s) * c * s + e * s + g % s
                             : g * inner + e;
            m = fmax(m, x[idx[e]]);
        }
        for (int e = 0; e < inner; e++)
            sum += exp(x[idx[e]] - m);
        for (int e = 0; e < inner; e++) {
            int i = idx[e];
            y[i] = log_algo ? x[i] - m - log(sum) : exp(x[i] - m) / sum;
            dot += log_algo ? dy[i] : dy[i] * y[i];
        }
        for (int e = 0; e < inner; e++) {
            int i = idx[e];
            dx[i] = log_algo ? dy[i] - exp(y[i]) * dot
                             : y[i] * (dy[i] - dot);
        }
    }
}

static void
test_softmax(void **state)
{
    cudnnHandle_t h = handle_new();
    int dim[4] = { 2, 5, 2, 3 };
    float *x = randoms(60), *dy = randoms(60);
    float y[60], dx[60], alpha = 1.0f, beta = 0.0f;
    double ry[60], rdx[60];

    (void)state;
    for (int algo = CUDNN_SOFTMAX_FAST; algo <= CUDNN_SOFTMAX_LOG; algo++)
    for (int mode = 0; mode < 2; mode++)
    for (int f = 0; f < 2; f++) {
        cudnnTensorDescriptor_t t = tensor_new(
            f ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 4,
            dim);
        void *xd = tensor_upload(t, x, 0.0f), *yd = tensor_upload(t, x, 0.0f);
        void *dyd = tensor_upload(t, dy, 0.0f), *dxd = tensor_upload(t, x, 0.0f);
        void *ryd;
        float ryf[60];

        DNN_OK(cudnnSoftmaxForward(h, (cudnnSoftmaxAlgorithm_t)algo,
                                   (cudnnSoftmaxMode_t)mode, &alpha, t, xd,
                                   &beta, t, yd));
        ref_softmax(algo == CUDNN_SOFTMAX_LOG, mode, 2, 5, 6, x, dy, ry, rdx);
        tensor_download(t, yd, y);
        for (int i = 0; i < 60; i++)
            assert_near(y[i], ry[i], 1e-6);
        /* Backward from the reference y, so that only dx is checked. */
        for (int i = 0; i < 60; i++)
            ryf[i] = (float)ry[i];
        ryd = tensor_upload(t, ryf, 0.0f);
        DNN_OK(cudnnSoftmaxBackward(h, (cudnnSoftmaxAlgorithm_t)algo,
                                    (cudnnSoftmaxMode_t)mode, &alpha, t, ryd,
                                    t, dyd, &beta, t, dxd));
        tensor_download(t, dxd, dx);
        for (int i = 0; i < 60; i++)
            assert_near(dx[i], rdx[i], 1e-5);
        assert_int_equal(cudnnSoftmaxForward(h, (cudnnSoftmaxAlgorithm_t)3,
                                             (cudnnSoftmaxMode_t)mode, &alpha,
                                             t, xd, &beta, t, yd),
                         CUDNN_STATUS_BAD_PARAM);
        DNN_OK(cudnnDestroyTensorDescriptor(t));
        dev_free(xd), dev_free(yd), dev_free(dyd), dev_free(dxd);
        dev_free(ryd);
    }
    free(x), free(dy);
    DNN_OK(cudnnDestroy(h));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handle_versions_errors),
        cmocka_unit_test(test_tensor_descriptors),
        cmocka_unit_test(test_filter_descriptors),
        cmocka_unit_test(test_convolution_descriptors),
        cmocka_unit_test(test_add_tensor),
        cmocka_unit_test(test_set_scale_tensor),
        cmocka_unit_test(test_activation),
        cmocka_unit_test(test_pooling),
        cmocka_unit_test(test_softmax),
    };

    unsetenv("AMPSHIM_EMU_FAIL");
    return cmocka_run_group_tests_name("emu_cudnn", tests, NULL, NULL);
}
