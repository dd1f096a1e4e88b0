/* Tests for the emulated cuDNN tensor operations (transform, add with
 * every broadcast, the bias gradient, op tensor, set and scale),
 * activations, pooling and softmax: FLOAT, DOUBLE, HALF and BFLOAT16 in
 * packed NCHW, packed NHWC and strided layouts, 4-d and 5-d, each against
 * a double-precision reference written here, the backward passes also
 * against central differences of the forward pass (in DOUBLE), alpha and
 * beta blending (beta 0 over NaN), the documented statuses and injected
 * faults; the transforms of a transform descriptor (padding, folding,
 * unfolding, tensors and filters) against a reference of the fold as
 * measured on a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fault_test.h"

#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_test.h"

/* Row-major index in a tensor of sizes `src` (each the same as dst's or
 * 1) of row-major element `lin` of a tensor of sizes `dst`. */
static size_t
broadcast_index(int nb, const int *src, const int *dst, size_t lin)
{
    size_t idx = 0, scale = 1;

    for (int d = nb - 1; d >= 0; d--) {
        size_t i = lin % (size_t)dst[d];
        lin /= (size_t)dst[d];
        if (src[d] != 1)
            idx += i * scale;
        scale *= (size_t)src[d];
    }
    return idx;
}

/* ---- Transform ----------------------------------------------------------- */

static void
test_transform_tensor(void **state)
{
    static const int dims[2][5] = { { 2, 3, 4, 5 }, { 2, 3, 2, 3, 4 } };
    cudnnHandle_t h = handle_new();
    union scalar sa, sb;

    (void)state;
    for (size_t k = 0; k < ew_case_count; k++)
    for (int r = 0; r < 2; r++) {
        const struct ew_case *c = &ew_cases[k];
        int nb = 4 + r;
        size_t n = count_of(nb, dims[r]);
        enum layout other = (enum layout)((c->layout + 1) % LAYOUT_COUNT);
        cudnnTensorDescriptor_t xt = tensor_layout(c->layout, c->type, nb,
                                                   dims[r]);
        cudnnTensorDescriptor_t yt = tensor_layout(other, c->type, nb,
                                                   dims[r]);
        double *x = exact_values(n, c->type, 1.0), *old = old_values(n, c);
        double *got = malloc(n * sizeof(double));
        void *xd = tensor_upload_d(xt, x, 0.0);
        void *yd = tensor_upload_d(yt, old, 7.0);

        DNN_OK(cudnnTransformTensor(h, scalar(&sa, c->type, c->alpha), xt,
                                    xd, scalar(&sb, c->type, c->beta), yt,
                                    yd));
        tensor_download_d(yt, yd, got);
        for (size_t i = 0; i < n; i++)
            assert_close(got[i],
                         c->alpha * x[i] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol_of(c->type), "y", i);
        free(x), free(old), free(got);
        dev_free(xd), dev_free(yd);
        DNN_OK(cudnnDestroyTensorDescriptor(xt));
        DNN_OK(cudnnDestroyTensorDescriptor(yt));
    }

    /* Sizes or types that differ, NULL data, integer data. */
    {
        int d4[4] = { 2, 3, 4, 5 }, d4b[4] = { 2, 3, 5, 4 };
        cudnnTensorDescriptor_t a = tensor_new(CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 4, d4);
        cudnnTensorDescriptor_t b = tensor_new(CUDNN_TENSOR_NHWC,
                                               CUDNN_DATA_FLOAT, 4, d4b);
        cudnnTensorDescriptor_t i8 = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_INT8, 4, d4);
        void *d = dev_alloc(120 * 8), *e = dev_alloc(120 * 8);
        float one = 1.0f, zero = 0.0f;

        assert_int_equal(cudnnTransformTensor(h, &one, a, d, &zero, b, e),
                         CUDNN_STATUS_BAD_PARAM);
        /* Of other types, the sizes must still agree. */
        DNN_OK(cudnnSetTensor4dDescriptor(b, CUDNN_TENSOR_NHWC,
                                          CUDNN_DATA_HALF, 2, 3, 5, 4));
        assert_int_equal(cudnnTransformTensor(h, &one, a, d, &zero, b, e),
                         CUDNN_STATUS_BAD_PARAM);
        assert_int_equal(cudnnTransformTensor(h, &one, a, NULL, &zero, a, e),
                         CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
        assert_int_equal(cudnnTransformTensor(h, NULL, a, d, &zero, a, e),
                         CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
        assert_int_equal(cudnnTransformTensor(h, &one, i8, d, &zero, i8, e),
                         CUDNN_STATUS_NOT_SUPPORTED);
        assert_int_equal(cudnnTransformTensor(NULL, &one, a, d, &zero, a, e),
                         CUDNN_STATUS_BAD_PARAM);
        dev_free(d), dev_free(e);
        DNN_OK(cudnnDestroyTensorDescriptor(a));
        DNN_OK(cudnnDestroyTensorDescriptor(b));
        DNN_OK(cudnnDestroyTensorDescriptor(i8));
    }
    DNN_OK(cudnnDestroy(h));
}

/* Between data types of the same sizes, as NVIDIA's mnistCUDNN sample
 * converts its FP32 weights to FP16 on the device (a 1 x size x 1 x 1
 * FLOAT tensor into a HALF one, alpha 1, beta 0) and TensorFlow's
 * stream executor converts between types: each element loaded exactly,
 * scaled, and rounded once to y's type; alpha and beta are of y's kind
 * (doubles for a DOUBLE y). Every pair of FLOAT, DOUBLE, HALF and
 * BFLOAT16, packed and between layouts. In place, a change of type is
 * refused. */
static void
test_transform_tensor_between_types(void **state)
{
    static const cudnnDataType_t types[] = {
        CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF,
        CUDNN_DATA_BFLOAT16,
    };
    static const int dims[4] = { 2, 3, 4, 5 };
    const size_t nt = sizeof(types) / sizeof(types[0]);
    cudnnHandle_t h = handle_new();
    union scalar sa, sb;

    (void)state;
    /* mnistCUDNN's call: 500 weights, FLOAT to HALF. */
    {
        const int size = 500;
        cudnnTensorDescriptor_t src, dst;
        float *w = malloc((size_t)size * sizeof(float)), one = 1.0f,
              zero = 0.0f;
        float *got = malloc((size_t)size * sizeof(float));
        void *wd, *hd = dev_alloc((size_t)size * 2);

        for (int i = 0; i < size; i++)
            w[i] = rnd();
        wd = dev_upload(w, (size_t)size * sizeof(float));
        DNN_OK(cudnnCreateTensorDescriptor(&src));
        DNN_OK(cudnnCreateTensorDescriptor(&dst));
        DNN_OK(cudnnSetTensor4dDescriptorEx(src, CUDNN_DATA_FLOAT, 1, size, 1,
                                            1, size, 1, 1, 1));
        DNN_OK(cudnnSetTensor4dDescriptorEx(dst, CUDNN_DATA_HALF, 1, size, 1,
                                            1, size, 1, 1, 1));
        DNN_OK(cudnnTransformTensor(h, &one, src, wd, &zero, dst, hd));
        tensor_download(dst, hd, got);
        for (int i = 0; i < size; i++)
            assert_true(got[i] == (float)ref_f16(w[i]));
        DNN_OK(cudnnDestroyTensorDescriptor(src));
        DNN_OK(cudnnDestroyTensorDescriptor(dst));
        dev_free(wd), dev_free(hd);
        free(w), free(got);
    }
    for (size_t a = 0; a < nt; a++)
    for (size_t b = 0; b < nt; b++)
    for (int l = 0; l < 2; l++) {
        cudnnDataType_t xt_type = types[a], yt_type = types[b];
        double alpha = 0.5, beta = l ? 0.25 : 0.0;
        cudnnTensorDescriptor_t xt = tensor_layout(LAYOUT_NCHW, xt_type, 4, dims);
        cudnnTensorDescriptor_t yt = tensor_layout(l ? LAYOUT_NHWC : LAYOUT_NCHW,
                                                   yt_type, 4, dims);
        size_t n = count_of(4, dims);
        double *x = exact_values(n, xt_type, 1.0);
        double *old = exact_values(n, yt_type, 2.0);
        double *got = malloc(n * sizeof(double));
        void *xd = tensor_upload_d(xt, x, 0.0);
        void *yd = tensor_upload_d(yt, old, 7.0);

        DNN_OK(cudnnTransformTensor(h, scalar(&sa, yt_type, alpha), xt, xd,
                                    scalar(&sb, yt_type, beta), yt, yd));
        tensor_download_d(yt, yd, got);
        for (size_t i = 0; i < n; i++)
            assert_close(got[i], alpha * x[i] + beta * old[i],
                         tol_of(yt_type), "y", i);
        free(x), free(old), free(got);
        dev_free(xd), dev_free(yd);
        DNN_OK(cudnnDestroyTensorDescriptor(xt));
        DNN_OK(cudnnDestroyTensorDescriptor(yt));
    }
    /* In place with another type: refused, nothing written. */
    {
        cudnnTensorDescriptor_t f = tensor_layout(LAYOUT_NCHW, CUDNN_DATA_FLOAT, 4,
                                                  dims);
        cudnnTensorDescriptor_t hf = tensor_layout(LAYOUT_NCHW, CUDNN_DATA_HALF,
                                                   4, dims);
        void *d = dev_alloc(count_of(4, dims) * 4);
        float one = 1.0f, zero = 0.0f;

        assert_int_equal(cudnnTransformTensor(h, &one, f, d, &zero, hf, d),
                         CUDNN_STATUS_BAD_PARAM);
        dev_free(d);
        DNN_OK(cudnnDestroyTensorDescriptor(f));
        DNN_OK(cudnnDestroyTensorDescriptor(hf));
    }
    DNN_OK(cudnnDestroy(h));
}

/* ---- Transform with a transform descriptor -------------------------------- */

/* The padded, folded image of a 4-d NCHW tensor, as measured on a GPU
 * (cudnn_transform.c): each source element lands at batch n + pb[0],
 * channel pb[1] + ((h' % fh) * fw + w' % fw) * C + c, position
 * (h' / fh, w' / fw), where h' = h + pb[2] and w' = w + pb[3]; zero
 * elsewhere. Returns the destination's sizes in out_dim. */
static float *
fold_reference(const float *src, const int dim[4], const int pb[4],
               const int pa[4], int fh, int fw, int out_dim[4])
{
    int n_ = dim[0], c_ = dim[1], h_ = dim[2], w_ = dim[3];
    int hp = h_ + pb[2] + pa[2], wp = w_ + pb[3] + pa[3];
    int co, ho = (hp + fh - 1) / fh, wo = (wp + fw - 1) / fw;
    float *out;

    co = (c_ + pb[1] + pa[1]) * fh * fw;
    out_dim[0] = n_ + pb[0] + pa[0], out_dim[1] = co;
    out_dim[2] = ho, out_dim[3] = wo;
    out = calloc(count_of(4, out_dim), sizeof(float));
    for (int n = 0; n < n_; n++)
    for (int c = 0; c < c_; c++)
    for (int h = 0; h < h_; h++)
    for (int w = 0; w < w_; w++) {
        int y = h + pb[2], x = w + pb[3];
        int k = pb[1] + ((y % fh) * fw + x % fw) * c_ + c;
        size_t at = (((size_t)(n + pb[0]) * co + k) * ho + y / fh) * wo +
                    x / fw;

        out[at] = src[(((size_t)n * c_ + c) * h_ + h) * w_ + w];
    }
    return out;
}

static float *
ramp(size_t n, float scale, float shift)
{
    float *v = malloc(n * sizeof(float));

    for (size_t i = 0; i < n; i++)
        v[i] = scale * (float)i + shift;
    return v;
}

static void
test_transform_tensor_ex(void **state)
{
    static const int dim[4] = { 1, 2, 5, 6 };
    static const int32_t pb[4] = { 0, 1, 1, 0 }, pa[4] = { 0, 1, 0, 1 };
    static const int32_t zero4[4] = { 0 };
    static const uint32_t f23[2] = { 2, 3 };
    cudnnHandle_t h = handle_new();
    cudnnTensorTransformDescriptor_t t, u;
    cudnnTensorDescriptor_t sd = tensor_new(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                            4, dim);
    cudnnTensorDescriptor_t dd, ud;
    float one = 1.0f, two = 2.0f, zero = 0.0f, half = 0.5f;
    size_t n = count_of(4, dim), bytes = 0;
    float *src = ramp(n, 1.0f, 1.0f);
    void *s = dev_upload(src, n * sizeof(float));
    int want_dim[4], got_dim[8], got_stride[8], nb;
    cudnnDataType_t type;
    float *want = fold_reference(src, dim, pb, pa, 2, 3, want_dim);
    size_t nw = count_of(4, want_dim);
    float *got = malloc(nw * sizeof(float));
    void *d;

    (void)state;
    DNN_OK(cudnnCreateTensorTransformDescriptor(&t));
    DNN_OK(cudnnCreateTensorTransformDescriptor(&u));
    DNN_OK(cudnnCreateTensorDescriptor(&dd));
    DNN_OK(cudnnCreateTensorDescriptor(&ud));
    DNN_OK(cudnnSetTensorTransformDescriptor(t, 4, CUDNN_TENSOR_NCHW, pb, pa,
                                             f23, CUDNN_TRANSFORM_FOLD));
    {
        cudnnTensorFormat_t fmt;
        int32_t gb[4], ga[4];
        uint32_t gf[2];
        cudnnFoldingDirection_t dir;

        DNN_OK(cudnnGetTensorTransformDescriptor(t, 4, &fmt, gb, ga, gf, &dir));
        assert_int_equal(fmt, CUDNN_TENSOR_NCHW);
        assert_int_equal(dir, CUDNN_TRANSFORM_FOLD);
        assert_memory_equal(gb, pb, sizeof(gb));
        assert_memory_equal(ga, pa, sizeof(ga));
        assert_memory_equal(gf, f23, sizeof(gf));
        assert_int_equal(cudnnGetTensorTransformDescriptor(t, 5, &fmt, gb, ga,
                                                           gf, &dir),
                         CUDNN_STATUS_BAD_PARAM);
    }
    /* The destination: padded and folded, packed, FLOAT. */
    DNN_OK(cudnnInitTransformDest(t, sd, dd, &bytes));
    DNN_OK(cudnnGetTensorNdDescriptor(dd, 8, &type, &nb, got_dim, got_stride));
    assert_int_equal(nb, 4);
    assert_int_equal(type, CUDNN_DATA_FLOAT);
    assert_memory_equal(got_dim, want_dim, sizeof(want_dim));
    assert_int_equal(want_dim[1], 24);
    assert_int_equal(got_stride[3], 1);
    assert_int_equal(bytes, nw * sizeof(float));
    /* Pad and fold with alpha 2; every element written, the rest zero. */
    {
        float *old = ramp(nw, -0.25f, 3.0f);

        d = dev_upload(old, nw * sizeof(float));
        DNN_OK(cudnnTransformTensorEx(h, t, &two, sd, s, &zero, dd, d));
        dev_download(got, d, nw * sizeof(float));
        for (size_t i = 0; i < nw; i++)
            assert_true(got[i] == 2.0f * want[i]);
        /* Folding with beta != 0: NOT_SUPPORTED, nothing written. */
        dev_free(d);
        d = dev_upload(old, nw * sizeof(float));
        assert_int_equal(cudnnTransformTensorEx(h, t, &one, sd, s, &half, dd,
                                                d),
                         CUDNN_STATUS_NOT_SUPPORTED);
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        dev_download(got, d, nw * sizeof(float));
        assert_memory_equal(got, old, nw * sizeof(float));
        dev_free(d);
        free(old);
    }
    /* A destination of other sizes, in place, or unfolding with padding. */
    d = dev_alloc(nw * sizeof(float));
    assert_int_equal(cudnnTransformTensorEx(h, t, &one, sd, s, &zero, sd, d),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnTransformTensorEx(h, t, &one, dd, d, &zero, dd, d),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnSetTensorTransformDescriptor(u, 4, CUDNN_TENSOR_NCHW, pb, pa,
                                             f23, CUDNN_TRANSFORM_UNFOLD));
    assert_int_equal(cudnnInitTransformDest(u, dd, ud, &bytes),
                     CUDNN_STATUS_NOT_SUPPORTED);
    dev_free(d);
    /* Fold then unfold is the identity; unfolding takes alpha and beta. */
    {
        static const int dim2[4] = { 2, 3, 4, 6 };
        cudnnTensorDescriptor_t s2 = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, 4, dim2);
        size_t n2 = count_of(4, dim2);
        float *v = ramp(n2, 0.5f, -7.0f), *prior = ramp(n2, 0.0f, 4.0f);
        float *back = malloc(n2 * sizeof(float));
        void *a = dev_upload(v, n2 * sizeof(float));
        void *f = dev_alloc(n2 * sizeof(float));
        void *b = dev_upload(prior, n2 * sizeof(float));

        DNN_OK(cudnnSetTensorTransformDescriptor(t, 4, CUDNN_TENSOR_NCHW,
                                                 zero4, zero4, f23,
                                                 CUDNN_TRANSFORM_FOLD));
        DNN_OK(cudnnInitTransformDest(t, s2, dd, &bytes));
        assert_int_equal(bytes, n2 * sizeof(float));
        DNN_OK(cudnnTransformTensorEx(h, t, &one, s2, a, &zero, dd, f));
        DNN_OK(cudnnSetTensorTransformDescriptor(u, 4, CUDNN_TENSOR_NCHW,
                                                 zero4, zero4, f23,
                                                 CUDNN_TRANSFORM_UNFOLD));
        DNN_OK(cudnnInitTransformDest(u, dd, ud, &bytes));
        DNN_OK(cudnnGetTensorNdDescriptor(ud, 8, &type, &nb, got_dim,
                                          got_stride));
        assert_memory_equal(got_dim, dim2, sizeof(dim2));
        DNN_OK(cudnnTransformTensorEx(h, u, &two, dd, f, &half, ud, b));
        dev_download(back, b, n2 * sizeof(float));
        for (size_t i = 0; i < n2; i++)
            assert_true(back[i] == 2.0f * v[i] + 0.5f * prior[i]);
        DNN_OK(cudnnDestroyTensorDescriptor(s2));
        dev_free(a), dev_free(f), dev_free(b);
        free(v), free(prior), free(back);
    }
    /* No padding or folding: a layout and type change (FLOAT NCHW to HALF
     * NHWC) with alpha and beta. */
    {
        cudnnTensorDescriptor_t nh = tensor_new(CUDNN_TENSOR_NHWC,
                                                CUDNN_DATA_HALF, 4, dim);
        float *prior = ramp(n, 0.0f, -2.0f), *out = malloc(n * sizeof(float));
        void *o = tensor_upload(nh, prior, 0.0f);

        DNN_OK(cudnnSetTensorTransformDescriptor(t, 4, CUDNN_TENSOR_NHWC,
                                                 NULL, NULL, NULL,
                                                 CUDNN_TRANSFORM_FOLD));
        DNN_OK(cudnnTransformTensorEx(h, t, &two, sd, s, &half, nh, o));
        tensor_download(nh, o, out);
        for (size_t i = 0; i < n; i++)
            assert_true(out[i] == (float)ref_f16(2.0 * src[i] - 1.0));
        DNN_OK(cudnnDestroyTensorDescriptor(nh));
        dev_free(o);
        free(prior), free(out);
    }
    /* Filters fold the same way, K padded like a batch. */
    {
        static const int fdim[4] = { 2, 3, 3, 3 };
        static const int32_t fb[4] = { 0, 0, 1, 1 }, fa[4] = { 2, 1, 0, 0 };
        static const uint32_t f22[2] = { 2, 2 };
        cudnnFilterDescriptor_t fs, fd;
        float *wv = ramp(54, 1.0f, 1.0f), *fw, *wout;
        int fw_dim[4];
        void *w0 = dev_upload(wv, 54 * sizeof(float)), *w1;

        fw = fold_reference(wv, fdim, fb, fa, 2, 2, fw_dim);
        assert_int_equal(fw_dim[0], 4);
        assert_int_equal(fw_dim[1], 16);
        DNN_OK(cudnnCreateFilterDescriptor(&fs));
        DNN_OK(cudnnCreateFilterDescriptor(&fd));
        DNN_OK(cudnnSetFilter4dDescriptor(fs, CUDNN_DATA_FLOAT,
                                          CUDNN_TENSOR_NCHW, 2, 3, 3, 3));
        DNN_OK(cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_FLOAT,
                                          CUDNN_TENSOR_NCHW, fw_dim[0],
                                          fw_dim[1], fw_dim[2], fw_dim[3]));
        DNN_OK(cudnnSetTensorTransformDescriptor(t, 4, CUDNN_TENSOR_NCHW, fb,
                                                 fa, f22,
                                                 CUDNN_TRANSFORM_FOLD));
        w1 = dev_alloc(count_of(4, fw_dim) * sizeof(float));
        DNN_OK(cudnnTransformFilter(h, t, &one, fs, w0, &zero, fd, w1));
        wout = malloc(count_of(4, fw_dim) * sizeof(float));
        dev_download(wout, w1, count_of(4, fw_dim) * sizeof(float));
        assert_memory_equal(wout, fw, count_of(4, fw_dim) * sizeof(float));
        DNN_OK(cudnnDestroyFilterDescriptor(fs));
        DNN_OK(cudnnDestroyFilterDescriptor(fd));
        dev_free(w0), dev_free(w1);
        free(wv), free(fw), free(wout);
    }
    /* The descriptor's statuses. */
    assert_int_equal(cudnnSetTensorTransformDescriptor(t, 2, CUDNN_TENSOR_NCHW,
                                                       NULL, NULL, NULL,
                                                       CUDNN_TRANSFORM_FOLD),
                     CUDNN_STATUS_BAD_PARAM);
    {
        static const int32_t neg[4] = { 0, -1, 0, 0 };

        assert_int_equal(cudnnSetTensorTransformDescriptor(
                             t, 4, CUDNN_TENSOR_NCHW, neg, NULL, NULL,
                             CUDNN_TRANSFORM_FOLD),
                         CUDNN_STATUS_BAD_PARAM);
    }
    assert_int_equal(cudnnSetTensorTransformDescriptor(
                         NULL, 4, CUDNN_TENSOR_NCHW, NULL, NULL, NULL,
                         CUDNN_TRANSFORM_FOLD),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetTensorTransformDescriptor(
                         t, 4, CUDNN_TENSOR_NCHW, NULL, NULL, NULL,
                         (cudnnFoldingDirection_t)2),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnDestroyTensorTransformDescriptor(t));
    DNN_OK(cudnnDestroyTensorTransformDescriptor(u));
    DNN_OK(cudnnDestroyTensorDescriptor(sd));
    DNN_OK(cudnnDestroyTensorDescriptor(dd));
    DNN_OK(cudnnDestroyTensorDescriptor(ud));
    dev_free(s);
    free(src), free(want), free(got);
    DNN_OK(cudnnDestroy(h));
}

/* ---- Add, with every broadcast ------------------------------------------- */

/* The sizes of A against C: per channel, scalar, per image plane, per
 * sample, full, one dimension, and the 5-d ones. */
static const struct {
    int nb;
    int c[5], a[5];
} add_shapes[] = {
    { 4, { 2, 3, 4, 5 }, { 1, 3, 1, 1 } },
    { 4, { 2, 3, 4, 5 }, { 1, 1, 1, 1 } },
    { 4, { 2, 3, 4, 5 }, { 2, 1, 4, 5 } },
    { 4, { 2, 3, 4, 5 }, { 1, 3, 4, 5 } },
    { 4, { 2, 3, 4, 5 }, { 2, 3, 4, 5 } },
    { 4, { 2, 3, 4, 5 }, { 1, 1, 4, 1 } },
    { 5, { 2, 3, 2, 3, 4 }, { 1, 3, 1, 1, 1 } },
    { 5, { 2, 3, 2, 3, 4 }, { 2, 1, 2, 3, 4 } },
    { 5, { 2, 3, 2, 3, 4 }, { 1, 1, 1, 1, 1 } },
};

static void
test_add_tensor_broadcast(void **state)
{
    cudnnHandle_t h = handle_new();
    union scalar sa, sb;

    (void)state;
    for (size_t k = 0; k < ew_case_count; k++)
    for (size_t s = 0; s < sizeof(add_shapes) / sizeof(add_shapes[0]); s++) {
        const struct ew_case *c = &ew_cases[k];
        int nb = add_shapes[s].nb;
        const int *cdim = add_shapes[s].c, *adim = add_shapes[s].a;
        size_t n = count_of(nb, cdim), na = count_of(nb, adim);
        cudnnTensorDescriptor_t at = tensor_layout(c->layout, c->type, nb,
                                                   adim);
        cudnnTensorDescriptor_t ct = tensor_layout(c->layout, c->type, nb,
                                                   cdim);
        double *a = exact_values(na, c->type, 1.0), *old = old_values(n, c);
        double *got = malloc(n * sizeof(double));
        void *ad = tensor_upload_d(at, a, 0.0);
        void *cd = tensor_upload_d(ct, old, 0.0);

        DNN_OK(cudnnAddTensor(h, scalar(&sa, c->type, c->alpha), at, ad,
                              scalar(&sb, c->type, c->beta), ct, cd));
        tensor_download_d(ct, cd, got);
        for (size_t i = 0; i < n; i++)
            assert_close(got[i],
                         c->alpha * a[broadcast_index(nb, adim, cdim, i)] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol_of(c->type), "C", i);
        free(a), free(old), free(got);
        dev_free(ad), dev_free(cd);
        DNN_OK(cudnnDestroyTensorDescriptor(at));
        DNN_OK(cudnnDestroyTensorDescriptor(ct));
    }

    /* More than 5 dimensions: NOT_SUPPORTED; other ranks: BAD_PARAM. */
    {
        int d6[6] = { 1, 2, 1, 2, 1, 2 }, d4[4] = { 1, 2, 1, 2 };
        cudnnTensorDescriptor_t t6 = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, 6, d6);
        cudnnTensorDescriptor_t t4 = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, 4, d4);
        void *d = dev_alloc(64), *e = dev_alloc(64);
        float one = 1.0f;

        assert_int_equal(cudnnAddTensor(h, &one, t6, d, &one, t6, e),
                         CUDNN_STATUS_NOT_SUPPORTED);
        assert_int_equal(cudnnAddTensor(h, &one, t4, d, &one, t6, e),
                         CUDNN_STATUS_BAD_PARAM);
        assert_int_equal(cudnnAddTensor(h, &one, t4, NULL, &one, t4, e),
                         CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
        dev_free(d), dev_free(e);
        DNN_OK(cudnnDestroyTensorDescriptor(t6));
        DNN_OK(cudnnDestroyTensorDescriptor(t4));
    }
    DNN_OK(cudnnDestroy(h));
}

/* ---- Backward bias ------------------------------------------------------- */

/* The forward pass whose gradient backward bias is: C = A broadcast. */
struct bias_fd {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t bt, yt;
    void *bd, *yd;
};

static void
bias_forward_fd(void *ctx, const double *b, double *y)
{
    struct bias_fd *c = ctx;
    double one = 1.0, zero = 0.0;

    tensor_put_d(c->bt, c->bd, b);
    DNN_OK(cudnnAddTensor(c->h, &one, c->bt, c->bd, &zero, c->yt, c->yd));
    tensor_download_d(c->yt, c->yd, y);
}

/* db = alpha * (dy summed over all but C) + beta * db, 4-d and 5-d, in
 * every case; in DOUBLE also against differences of cudnnAddTensor. */
static void
test_backward_bias(void **state)
{
    static const int dims[2][5] = { { 3, 5, 4, 6 }, { 2, 4, 3, 2, 3 } };
    cudnnHandle_t h = handle_new();
    union scalar sa, sb;

    (void)state;
    for (size_t k = 0; k < ew_case_count; k++)
    for (int r = 0; r < 2; r++) {
        const struct ew_case *c = &ew_cases[k];
        int nb = 4 + r, bdim[5] = { 1, dims[r][1], 1, 1, 1 };
        size_t n = count_of(nb, dims[r]), kc = (size_t)dims[r][1];
        size_t sp = n / ((size_t)dims[r][0] * kc);
        cudnnTensorDescriptor_t yt = tensor_layout(c->layout, c->type, nb,
                                                   dims[r]);
        cudnnTensorDescriptor_t bt = tensor_layout(c->layout, c->type, nb,
                                                   bdim);
        double *dy = exact_values(n, c->type, 1.0), *old = old_values(kc, c);
        double got[5];
        void *dyd = tensor_upload_d(yt, dy, 0.0);
        void *bd = tensor_upload_d(bt, old, 0.0);

        DNN_OK(cudnnConvolutionBackwardBias(h, scalar(&sa, c->type, c->alpha),
                                            yt, dyd,
                                            scalar(&sb, c->type, c->beta),
                                            bt, bd));
        tensor_download_d(bt, bd, got);
        for (size_t ch = 0; ch < kc; ch++) {
            double sum = 0.0;

            for (size_t i = 0; i < n; i++)
                sum += (i / sp) % kc == ch ? dy[i] : 0.0;
            assert_close(got[ch],
                         c->alpha * sum +
                             (c->beta != 0.0 ? c->beta * old[ch] : 0.0),
                         tol_of(c->type) * 4, "db", ch);
        }
        if (c->type == CUDNN_DATA_DOUBLE && c->beta == 0.0) {
            struct bias_fd fd = { h, bt, yt, bd, dev_alloc(n * 8) };
            double one = 1.0, zero = 0.0, *b = exact_values(kc, c->type, 1.0);

            tensor_put_d(bt, bd, b);
            DNN_OK(cudnnConvolutionBackwardBias(h, &one, yt, dyd, &zero, bt,
                                                bd));
            tensor_download_d(bt, bd, got);
            check_gradient(bias_forward_fd, &fd, kc, n, b, dy, got);
            dev_free(fd.yd);
            free(b);
        }
        free(dy), free(old);
        dev_free(dyd), dev_free(bd);
        DNN_OK(cudnnDestroyTensorDescriptor(yt));
        DNN_OK(cudnnDestroyTensorDescriptor(bt));
    }

    /* db not 1 x K x 1 x 1, of another type; NULLs; integer data. */
    {
        int d4[4] = { 2, 3, 4, 5 }, b4[4] = { 1, 3, 1, 1 };
        int wrong[4] = { 1, 3, 4, 1 };
        cudnnTensorDescriptor_t y = tensor_new(CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 4, d4);
        cudnnTensorDescriptor_t b = tensor_new(CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 4, b4);
        cudnnTensorDescriptor_t w = tensor_new(CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 4, wrong);
        cudnnTensorDescriptor_t bh = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_HALF, 4, b4);
        cudnnTensorDescriptor_t y8 = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_INT8, 4, d4);
        cudnnTensorDescriptor_t b8 = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_INT8, 4, b4);
        void *yd = dev_alloc(480), *bd = dev_alloc(64);
        float one = 1.0f;

        assert_int_equal(cudnnConvolutionBackwardBias(h, &one, y, yd, &one,
                                                      w, bd),
                         CUDNN_STATUS_BAD_PARAM);
        assert_int_equal(cudnnConvolutionBackwardBias(h, &one, y, yd, &one,
                                                      bh, bd),
                         CUDNN_STATUS_BAD_PARAM);
        assert_int_equal(cudnnConvolutionBackwardBias(h, &one, y, NULL, &one,
                                                      b, bd),
                         CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
        assert_int_equal(cudnnConvolutionBackwardBias(h, &one, y8, yd, &one,
                                                      b8, bd),
                         CUDNN_STATUS_NOT_SUPPORTED);
        dev_free(yd), dev_free(bd);
        DNN_OK(cudnnDestroyTensorDescriptor(y));
        DNN_OK(cudnnDestroyTensorDescriptor(b));
        DNN_OK(cudnnDestroyTensorDescriptor(w));
        DNN_OK(cudnnDestroyTensorDescriptor(bh));
        DNN_OK(cudnnDestroyTensorDescriptor(y8));
        DNN_OK(cudnnDestroyTensorDescriptor(b8));
    }
    DNN_OK(cudnnDestroy(h));
}

/* ---- Op tensor ----------------------------------------------------------- */

static double
ref_op(cudnnOpTensorOp_t op, int propagate, double a, double b)
{
    switch (op) {
    case CUDNN_OP_TENSOR_ADD:
        return a + b;
    case CUDNN_OP_TENSOR_MUL:
        return a * b;
    case CUDNN_OP_TENSOR_MIN:
        return propagate && (isnan(a) || isnan(b)) ? NAN : fmin(a, b);
    case CUDNN_OP_TENSOR_MAX:
        return propagate && (isnan(a) || isnan(b)) ? NAN : fmax(a, b);
    case CUDNN_OP_TENSOR_SQRT:
        return sqrt(a);
    default:
        return a != 0.0 ? 0.0 : 1.0;    /* NOT, on 0 and 1 */
    }
}

/* Data types A and B, C, compute. */
static const struct {
    cudnnDataType_t ab, c, comp;
} op_types[] = {
    { CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT },
    { CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT },
    { CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_FLOAT },
    { CUDNN_DATA_BFLOAT16, CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT },
    { CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE },
};

/* C = op(alpha1 A, alpha2 B) + beta C for every operation, B full or
 * per channel, every configuration of types, alternating layouts. */
static void
test_op_tensor(void **state)
{
    int cdim[4] = { 2, 3, 4, 5 }, bdims[2][4] = { { 2, 3, 4, 5 },
                                                  { 1, 3, 1, 1 } };
    cudnnHandle_t h = handle_new();
    cudnnOpTensorDescriptor_t od;
    union scalar s1, s2, sb;
    cudnnOpTensorOp_t gop;
    cudnnDataType_t gtype;
    cudnnNanPropagation_t gnan;
    size_t n = 120;

    (void)state;
    DNN_OK(cudnnCreateOpTensorDescriptor(&od));
    for (int op = CUDNN_OP_TENSOR_ADD; op <= CUDNN_OP_TENSOR_NOT; op++)
    for (size_t ty = 0; ty < sizeof(op_types) / sizeof(op_types[0]); ty++)
    for (int bc = 0; bc < 2; bc++) {
        cudnnDataType_t ab = op_types[ty].ab, ct_type = op_types[ty].c;
        enum layout lay = (enum layout)((op + ty + bc) % LAYOUT_COUNT);
        double alpha1 = op == CUDNN_OP_TENSOR_NOT ? 1.0 : 1.5;
        double alpha2 = -0.5, beta = bc ? 0.0 : 0.25;
        struct ew_case oc = { ct_type, lay, 1.0, beta };
        size_t nb = count_of(4, bdims[bc]);
        cudnnTensorDescriptor_t at = tensor_layout(lay, ab, 4, cdim);
        cudnnTensorDescriptor_t bt = tensor_layout(lay, ab, 4, bdims[bc]);
        cudnnTensorDescriptor_t ct = tensor_layout(
            (enum layout)((lay + 1) % LAYOUT_COUNT), ct_type, 4, cdim);
        double *a = exact_values(n, ab, 1.0), *b = exact_values(nb, ab, 1.0);
        double *old = old_values(n, &oc), *got = malloc(n * 8);
        void *ad, *bd, *cd;

        for (size_t i = 0; i < n; i++) {
            if (op == CUDNN_OP_TENSOR_SQRT)
                a[i] = fabs(a[i]);
            if (op == CUDNN_OP_TENSOR_NOT)
                a[i] = (double)(i % 2);
        }
        ad = tensor_upload_d(at, a, 0.0);
        bd = tensor_upload_d(bt, b, 0.0);
        cd = tensor_upload_d(ct, old, 0.0);
        DNN_OK(cudnnSetOpTensorDescriptor(od, (cudnnOpTensorOp_t)op,
                                          op_types[ty].comp,
                                          CUDNN_NOT_PROPAGATE_NAN));
        DNN_OK(cudnnGetOpTensorDescriptor(od, &gop, &gtype, &gnan));
        assert_true(gop == (cudnnOpTensorOp_t)op &&
                    gtype == op_types[ty].comp &&
                    gnan == CUDNN_NOT_PROPAGATE_NAN);
        DNN_OK(cudnnOpTensor(h, od, scalar(&s1, ct_type, alpha1), at, ad,
                             scalar(&s2, ct_type, alpha2), bt, bd,
                             scalar(&sb, ct_type, beta), ct, cd));
        tensor_download_d(ct, cd, got);
        for (size_t i = 0; i < n; i++) {
            double want = ref_op((cudnnOpTensorOp_t)op, 0, alpha1 * a[i],
                                 alpha2 * b[broadcast_index(4, bdims[bc],
                                                            cdim, i)]);
            if (beta != 0.0)
                want += beta * old[i];
            assert_close(got[i], want,
                         fmax(tol_of(ab), tol_of(ct_type)), "C", i);
        }
        free(a), free(b), free(old), free(got);
        dev_free(ad), dev_free(bd), dev_free(cd);
        DNN_OK(cudnnDestroyTensorDescriptor(at));
        DNN_OK(cudnnDestroyTensorDescriptor(bt));
        DNN_OK(cudnnDestroyTensorDescriptor(ct));
    }

    /* NaN through MIN and MAX: dropped or propagated as asked; SQRT in
     * place with B absent. */
    {
        cudnnTensorDescriptor_t t = tensor_new(CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 4, cdim);
        double *a = exact_values(n, CUDNN_DATA_FLOAT, 1.0);
        double *b = exact_values(n, CUDNN_DATA_FLOAT, 1.0), got[120];
        float one = 1.0f, zero = 0.0f;
        void *ad, *bd, *cd = dev_alloc(n * 4);

        for (size_t i = 0; i < n; i += 3)
            a[i] = NAN;
        ad = tensor_upload_d(t, a, 0.0);
        bd = tensor_upload_d(t, b, 0.0);
        for (int op = CUDNN_OP_TENSOR_MIN; op <= CUDNN_OP_TENSOR_MAX; op++)
        for (int p = 0; p < 2; p++) {
            DNN_OK(cudnnSetOpTensorDescriptor(od, (cudnnOpTensorOp_t)op,
                                              CUDNN_DATA_FLOAT,
                                              (cudnnNanPropagation_t)p));
            DNN_OK(cudnnOpTensor(h, od, &one, t, ad, &one, t, bd, &zero, t,
                                 cd));
            tensor_download_d(t, cd, got);
            for (size_t i = 0; i < n; i++)
                assert_close(got[i], ref_op((cudnnOpTensorOp_t)op, p, a[i],
                                            b[i]), 2e-7, "C", i);
        }
        for (size_t i = 0; i < n; i++)
            b[i] = fabs(b[i]);
        tensor_put_d(t, bd, b);
        DNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_SQRT,
                                          CUDNN_DATA_FLOAT,
                                          CUDNN_PROPAGATE_NAN));
        DNN_OK(cudnnOpTensor(h, od, &one, t, bd, NULL, NULL, NULL, &zero, t,
                             bd));
        tensor_download_d(t, bd, got);
        for (size_t i = 0; i < n; i++)
            assert_close(got[i], sqrt(b[i]), 2e-7, "sqrt", i);
        free(a), free(b);
        dev_free(ad), dev_free(bd), dev_free(cd);
        DNN_OK(cudnnDestroyTensorDescriptor(t));
    }

    /* The statuses. */
    {
        static const int d6[6] = { 1, 2, 1, 2, 1, 2 };
        int bad_b[4] = { 2, 2, 4, 5 };
        cudnnOpTensorDescriptor_t unset;
        cudnnTensorDescriptor_t f = tensor_new(CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 4, cdim);
        cudnnTensorDescriptor_t hf = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_HALF, 4, cdim);
        cudnnTensorDescriptor_t bf = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_BFLOAT16, 4, cdim);
        cudnnTensorDescriptor_t db = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_DOUBLE, 4, cdim);
        cudnnTensorDescriptor_t wb = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, 4, bad_b);
        cudnnTensorDescriptor_t t6 = tensor_new(CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, 6, d6);
        void *d = dev_alloc(120 * 8), *e = dev_alloc(120 * 8);
        float one = 1.0f;
        static const struct {
            cudnnDataType_t comp;
            int a, b, c;        /* 0 FLOAT, 1 HALF, 2 BF16, 3 DOUBLE */
        } bad_types[] = {
            { CUDNN_DATA_HALF, 0, 0, 0 },   /* compute type */
            { CUDNN_DATA_FLOAT, 0, 1, 0 },  /* A and B differ */
            { CUDNN_DATA_FLOAT, 1, 1, 2 },  /* HALF to BFLOAT16 */
            { CUDNN_DATA_FLOAT, 3, 3, 3 },  /* DOUBLE data, FLOAT compute */
            { CUDNN_DATA_DOUBLE, 0, 0, 0 }, /* FLOAT data, DOUBLE compute */
        };
        cudnnTensorDescriptor_t by_type[4] = { f, hf, bf, db };

        for (size_t i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]);
             i++) {
            DNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_ADD,
                                              bad_types[i].comp,
                                              CUDNN_NOT_PROPAGATE_NAN));
            assert_int_equal(cudnnOpTensor(h, od, &one,
                                           by_type[bad_types[i].a], d, &one,
                                           by_type[bad_types[i].b], d, &one,
                                           by_type[bad_types[i].c], e),
                             CUDNN_STATUS_BAD_PARAM);
        }
        DNN_OK(cudnnSetOpTensorDescriptor(od, CUDNN_OP_TENSOR_MUL,
                                          CUDNN_DATA_FLOAT,
                                          CUDNN_NOT_PROPAGATE_NAN));
        assert_int_equal(cudnnOpTensor(h, od, &one, f, d, &one, wb, d, &one,
                                       f, e),
                         CUDNN_STATUS_BAD_PARAM);       /* B's sizes */
        assert_int_equal(cudnnOpTensor(h, od, &one, wb, d, &one, f, d, &one,
                                       f, e),
                         CUDNN_STATUS_BAD_PARAM);       /* A's sizes */
        assert_int_equal(cudnnOpTensor(h, od, &one, t6, d, &one, t6, d,
                                       &one, t6, e),
                         CUDNN_STATUS_BAD_PARAM);       /* 6-d */
        assert_int_equal(cudnnOpTensor(h, od, &one, f, d, &one, f, NULL,
                                       &one, f, e),
                         CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
        assert_int_equal(cudnnOpTensor(h, od, &one, f, d, NULL, f, d, &one,
                                       f, e),
                         CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
        DNN_OK(cudnnCreateOpTensorDescriptor(&unset));
        assert_int_equal(cudnnOpTensor(h, unset, &one, f, d, &one, f, d,
                                       &one, f, e),
                         CUDNN_STATUS_BAD_PARAM);
        assert_int_equal(cudnnGetOpTensorDescriptor(unset, &gop, &gtype,
                                                    &gnan),
                         CUDNN_STATUS_BAD_PARAM);
        assert_int_equal(cudnnSetOpTensorDescriptor(unset,
                                                    (cudnnOpTensorOp_t)6,
                                                    CUDNN_DATA_FLOAT,
                                                    CUDNN_PROPAGATE_NAN),
                         CUDNN_STATUS_BAD_PARAM);
        DNN_OK(cudnnDestroyOpTensorDescriptor(unset));
        dev_free(d), dev_free(e);
        for (int i = 0; i < 4; i++)
            DNN_OK(cudnnDestroyTensorDescriptor(by_type[i]));
        DNN_OK(cudnnDestroyTensorDescriptor(wb));
        DNN_OK(cudnnDestroyTensorDescriptor(t6));
    }
    DNN_OK(cudnnDestroyOpTensorDescriptor(od));
    DNN_OK(cudnnDestroy(h));
}

/* ---- Set and scale in DOUBLE --------------------------------------------- */

static void
test_set_scale_double(void **state)
{
    int dim[5] = { 2, 3, 2, 2, 3 };
    cudnnHandle_t h = handle_new();
    cudnnTensorDescriptor_t t = tensor_layout(LAYOUT_PADDED,
                                              CUDNN_DATA_DOUBLE, 5, dim);
    double *v = exact_values(72, CUDNN_DATA_DOUBLE, 1.0), got[72];
    double third = 1.0 / 3.0, raw;
    void *d = tensor_upload_d(t, v, -9.0);

    (void)state;
    DNN_OK(cudnnScaleTensor(h, t, d, &third));
    tensor_download_d(t, d, got);
    for (int i = 0; i < 72; i++)
        assert_true(got[i] == v[i] * third);
    DNN_OK(cudnnSetTensor(h, t, d, &third));
    tensor_download_d(t, d, got);
    for (int i = 0; i < 72; i++)
        assert_true(got[i] == third);
    dev_download(&raw, (const char *)d + 3 * 8, 8);
    assert_true(raw == -9.0);   /* the gap after C is kept */
    assert_int_equal(cudnnScaleTensor(h, t, NULL, &third),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    free(v);
    dev_free(d);
    DNN_OK(cudnnDestroyTensorDescriptor(t));
    DNN_OK(cudnnDestroy(h));
}

/* ---- Activations --------------------------------------------------------- */

static const struct {
    cudnnActivationMode_t mode;
    double coef, swish_beta;
} act_modes[] = {
    { CUDNN_ACTIVATION_SIGMOID, 0.0, 1.0 },
    { CUDNN_ACTIVATION_RELU, 0.0, 1.0 },
    { CUDNN_ACTIVATION_TANH, 0.0, 1.0 },
    { CUDNN_ACTIVATION_CLIPPED_RELU, 0.75, 1.0 },
    { CUDNN_ACTIVATION_ELU, 0.5, 1.0 },
    { CUDNN_ACTIVATION_SWISH, 0.0, 1.5 },
};
#define NACT (sizeof(act_modes) / sizeof(act_modes[0]))

static double
ref_act(int m, double x)
{
    double c = act_modes[m].coef, b = act_modes[m].swish_beta;

    switch (act_modes[m].mode) {
    case CUDNN_ACTIVATION_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case CUDNN_ACTIVATION_RELU:
        return fmax(x, 0.0);
    case CUDNN_ACTIVATION_TANH:
        return tanh(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        return fmin(fmax(x, 0.0), c);
    case CUDNN_ACTIVATION_ELU:
        return x > 0 ? x : c * (exp(x) - 1.0);
    default:
        return x / (1.0 + exp(-b * x));
    }
}

/* f'(x), written from the definitions (not from y). */
static double
ref_act_grad(int m, double x)
{
    double c = act_modes[m].coef, b = act_modes[m].swish_beta, s;

    switch (act_modes[m].mode) {
    case CUDNN_ACTIVATION_SIGMOID:
        s = 1.0 / (1.0 + exp(-x));
        return s * (1.0 - s);
    case CUDNN_ACTIVATION_RELU:
        return x > 0;
    case CUDNN_ACTIVATION_TANH:
        return 1.0 / (cosh(x) * cosh(x));
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        return x > 0 && x < c;
    case CUDNN_ACTIVATION_ELU:
        return x > 0 ? 1.0 : c * exp(x);
    default:
        s = 1.0 / (1.0 + exp(-b * x));
        return s + b * x * s * (1.0 - s);
    }
}

static cudnnActivationDescriptor_t
act_new(int m)
{
    cudnnActivationDescriptor_t a;

    DNN_OK(cudnnCreateActivationDescriptor(&a));
    DNN_OK(cudnnSetActivationDescriptor(a, act_modes[m].mode,
                                        CUDNN_NOT_PROPAGATE_NAN,
                                        act_modes[m].coef));
    DNN_OK(cudnnSetActivationDescriptorSwishBeta(a,
                                                 act_modes[m].swish_beta));
    return a;
}

/* A DOUBLE forward pass for the central differences. */
struct act_fd {
    cudnnHandle_t h;
    cudnnActivationDescriptor_t act;
    cudnnTensorDescriptor_t t;
    void *xd, *yd;
};

static void
act_forward_fd(void *ctx, const double *x, double *y)
{
    struct act_fd *c = ctx;
    double one = 1.0, zero = 0.0;

    tensor_put_d(c->t, c->xd, x);
    DNN_OK(cudnnActivationForward(c->h, c->act, &one, c->t, c->xd, &zero,
                                  c->t, c->yd));
    tensor_download_d(c->t, c->yd, y);
}

static void
test_activation_modes(void **state)
{
    int dim[2][5] = { { 2, 3, 4, 5 }, { 1, 2, 3, 2, 5 } };
    cudnnHandle_t h = handle_new();
    union scalar sa, sb;

    (void)state;
    for (size_t m = 0; m < NACT; m++)
    for (size_t k = 0; k < ew_case_count; k++) {
        const struct ew_case *c = &ew_cases[k];
        int nb = 4 + (int)(k % 2);
        size_t n = count_of(nb, dim[k % 2]);
        cudnnActivationDescriptor_t act = act_new((int)m);
        cudnnTensorDescriptor_t t = tensor_layout(c->layout, c->type, nb,
                                                  dim[k % 2]);
        double *x = exact_values(n, c->type, 2.0);
        double *dy = exact_values(n, c->type, 1.0);
        double *old = old_values(n, c), *yref = malloc(n * 8);
        double *got = malloc(n * 8);
        void *xd = tensor_upload_d(t, x, 0.0);
        void *dyd = tensor_upload_d(t, dy, 0.0);
        void *yd = tensor_upload_d(t, old, 0.0);
        void *dxd = tensor_upload_d(t, old, 0.0);
        void *yrd;
        double tol = tol_of(c->type) * 4;

        DNN_OK(cudnnActivationForward(h, act, scalar(&sa, c->type, c->alpha),
                                      t, xd, scalar(&sb, c->type, c->beta),
                                      t, yd));
        tensor_download_d(t, yd, got);
        for (size_t i = 0; i < n; i++) {
            yref[i] = ref_act((int)m, x[i]);
            assert_close(got[i],
                         c->alpha * yref[i] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol, "y", i);
        }
        /* Backward from the reference y (in the tensor's type). */
        yrd = tensor_upload_d(t, yref, 0.0);
        tensor_download_d(t, yrd, yref);
        DNN_OK(cudnnActivationBackward(h, act,
                                       scalar(&sa, c->type, c->alpha), t,
                                       yrd, t, dyd, t, xd,
                                       scalar(&sb, c->type, c->beta), t,
                                       dxd));
        tensor_download_d(t, dxd, got);
        for (size_t i = 0; i < n; i++) {
            double g = ref_act_grad((int)m, x[i]);
            /* SIGMOID, TANH, ELU: cuDNN's formulas in y, rounded. */
            if (c->type != CUDNN_DATA_DOUBLE &&
                act_modes[m].mode == CUDNN_ACTIVATION_SIGMOID)
                g = yref[i] * (1.0 - yref[i]);
            if (c->type != CUDNN_DATA_DOUBLE &&
                act_modes[m].mode == CUDNN_ACTIVATION_TANH)
                g = 1.0 - yref[i] * yref[i];
            if (c->type != CUDNN_DATA_DOUBLE &&
                act_modes[m].mode == CUDNN_ACTIVATION_ELU && x[i] <= 0)
                g = yref[i] + act_modes[m].coef;
            assert_close(got[i],
                         c->alpha * g * dy[i] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         c->type == CUDNN_DATA_DOUBLE ? 1e-12 : tol, "dx",
                         i);
        }
        /* DOUBLE: the backward pass against differences of the forward. */
        if (c->type == CUDNN_DATA_DOUBLE && c->beta == 0.0) {
            struct act_fd fd = { h, act, t, xd, yd };
            double one = 1.0, zero = 0.0;

            DNN_OK(cudnnActivationForward(h, act, &one, t, xd, &zero, t,
                                          yd));
            DNN_OK(cudnnActivationBackward(h, act, &one, t, yd, t, dyd, t,
                                           xd, &zero, t, dxd));
            tensor_download_d(t, dxd, got);
            check_gradient(act_forward_fd, &fd, n, n, x, dy, got);
        }
        free(x), free(dy), free(old), free(yref), free(got);
        dev_free(xd), dev_free(dyd), dev_free(yd), dev_free(dxd);
        dev_free(yrd);
        DNN_OK(cudnnDestroyTensorDescriptor(t));
        DNN_OK(cudnnDestroyActivationDescriptor(act));
    }
    DNN_OK(cudnnDestroy(h));
}

/* The documented statuses: IDENTITY is for the fused convolution only;
 * forward mismatches are BAD_PARAM, backward ones NOT_SUPPORTED, dx in
 * place of dy with other strides BAD_PARAM. */
static void
test_activation_statuses(void **state)
{
    int dim[4] = { 2, 3, 4, 5 }, other[4] = { 2, 3, 5, 4 };
    cudnnHandle_t h = handle_new();
    cudnnActivationDescriptor_t act = act_new(1);
    cudnnTensorDescriptor_t a = tensor_new(CUDNN_TENSOR_NCHW,
                                           CUDNN_DATA_FLOAT, 4, dim);
    cudnnTensorDescriptor_t b = tensor_new(CUDNN_TENSOR_NHWC,
                                           CUDNN_DATA_FLOAT, 4, dim);
    cudnnTensorDescriptor_t o = tensor_new(CUDNN_TENSOR_NCHW,
                                           CUDNN_DATA_FLOAT, 4, other);
    cudnnTensorDescriptor_t hf = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_HALF, 4, dim);
    void *x = dev_alloc(480), *y = dev_alloc(480), *dy = dev_alloc(480);
    void *dx = dev_alloc(480);
    float one = 1.0f, zero = 0.0f;

    (void)state;
    assert_int_equal(cudnnActivationForward(h, act, &one, a, x, &zero, o, y),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnActivationForward(h, act, &one, a, x, &zero, hf,
                                            y),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnActivationForward(h, act, &one, a, x, &zero, b, x),
                     CUDNN_STATUS_BAD_PARAM);      /* in place, NHWC */
    assert_int_equal(cudnnActivationForward(h, act, &one, a, NULL, &zero, a,
                                            y),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudnnActivationForward(h, NULL, &one, a, x, &zero, a,
                                            y),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnActivationForward(h, act, &one, a, x, &zero, b, y));

    /* Backward: y, dy, x, dx. */
    assert_int_equal(cudnnActivationBackward(h, act, &one, a, y, a, dy, a, x,
                                             &zero, o, dx),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnActivationBackward(h, act, &one, a, y, a, dy, a, x,
                                             &zero, b, dx),
                     CUDNN_STATUS_NOT_SUPPORTED);  /* x and dx strides */
    assert_int_equal(cudnnActivationBackward(h, act, &one, a, y, b, dy, b, x,
                                             &zero, b, dx),
                     CUDNN_STATUS_NOT_SUPPORTED);  /* y and dy strides */
    assert_int_equal(cudnnActivationBackward(h, act, &one, a, y, a, dy, b, x,
                                             &zero, b, dy),
                     CUDNN_STATUS_BAD_PARAM);      /* dx is dy, NHWC */
    DNN_OK(cudnnActivationBackward(h, act, &one, a, y, a, dy, b, x, &zero, b,
                                   dx));
    DNN_OK(cudnnActivationBackward(h, act, &one, a, y, a, dy, a, x, &zero, a,
                                   dy));           /* in place */

    DNN_OK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_IDENTITY,
                                        CUDNN_NOT_PROPAGATE_NAN, 0.0));
    assert_int_equal(cudnnActivationForward(h, act, &one, a, x, &zero, a, y),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnActivationBackward(h, act, &one, a, y, a, dy, a, x,
                                             &zero, a, dx),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetActivationDescriptor(act,
                                                  (cudnnActivationMode_t)7,
                                                  CUDNN_NOT_PROPAGATE_NAN,
                                                  0.0),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_free(x), dev_free(y), dev_free(dy), dev_free(dx);
    DNN_OK(cudnnDestroyTensorDescriptor(a));
    DNN_OK(cudnnDestroyTensorDescriptor(b));
    DNN_OK(cudnnDestroyTensorDescriptor(o));
    DNN_OK(cudnnDestroyTensorDescriptor(hf));
    DNN_OK(cudnnDestroyActivationDescriptor(act));
    DNN_OK(cudnnDestroy(h));
}

/* ---- Pooling ------------------------------------------------------------- */

/* A pooling problem: x's sizes, the window, padding and stride per
 * spatial dimension. */
struct pool_shape {
    int nb;
    int x[5], win[3], pad[3], str[3];
};

static const struct pool_shape pool_shapes[] = {
    { 4, { 2, 3, 7, 6 }, { 3, 2 }, { 1, 1 }, { 2, 2 } },
    { 4, { 1, 2, 5, 5 }, { 2, 3 }, { 0, 1 }, { 1, 1 } },
    { 5, { 2, 2, 4, 5, 3 }, { 2, 3, 2 }, { 1, 0, 1 }, { 2, 1, 2 } },
};

static const cudnnPoolingMode_t pool_modes[] = {
    CUDNN_POOLING_MAX, CUDNN_POOLING_MAX_DETERMINISTIC,
    CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
    CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
};

static void
pool_out_dims(const struct pool_shape *s, int *out)
{
    out[0] = s->x[0];
    out[1] = s->x[1];
    for (int d = 0; d < s->nb - 2; d++)
        out[2 + d] = 1 + (s->x[2 + d] + 2 * s->pad[d] - s->win[d]) /
                             s->str[d];
}

/* Reference pooling on row-major data of any rank: y and dx (+=) for dy.
 * MAX's gradient goes to the first maximum in row-major window order. */
static void
ref_pool(const struct pool_shape *s, cudnnPoolingMode_t mode,
         const double *x, const double *dy, double *y, double *dx)
{
    int ns = s->nb - 2, od[5], wsize = 1, o[3], k[3];
    size_t xplane = 1, yplane = 1;

    pool_out_dims(s, od);
    for (int d = 0; d < ns; d++) {
        wsize *= s->win[d];
        xplane *= (size_t)s->x[2 + d];
        yplane *= (size_t)od[2 + d];
    }
    for (size_t p = 0; p < (size_t)s->x[0] * s->x[1]; p++)
    for (size_t yo = 0; yo < yplane; yo++) {
        size_t rest = yo, yi = p * yplane + yo, idx[64];
        double best = -INFINITY, sum = 0.0;
        int inside = 0, arg = -1;

        for (int d = ns - 1; d >= 0; d--) {
            o[d] = (int)(rest % (size_t)od[2 + d]);
            rest /= (size_t)od[2 + d];
        }
        for (int w = 0; w < wsize; w++) {
            int r = w, ok = 1;
            size_t xi = 0;

            for (int d = ns - 1; d >= 0; d--) {
                k[d] = r % s->win[d];
                r /= s->win[d];
            }
            for (int d = 0; d < ns; d++) {
                int i = o[d] * s->str[d] - s->pad[d] + k[d];
                ok = ok && i >= 0 && i < s->x[2 + d];
                xi = xi * (size_t)s->x[2 + d] + (size_t)i;
            }
            if (!ok)
                continue;
            xi += p * xplane;
            idx[inside++] = xi;
            sum += x[xi];
            if (x[xi] > best)
                best = x[xi], arg = (int)xi;
        }
        if (mode == CUDNN_POOLING_MAX ||
            mode == CUDNN_POOLING_MAX_DETERMINISTIC) {
            y[yi] = best;
            dx[arg] += dy[yi];
            continue;
        }
        {
            int cnt = mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                          ? wsize : inside;
            y[yi] = sum / cnt;
            for (int i = 0; i < inside; i++)
                dx[idx[i]] += dy[yi] / cnt;
        }
    }
}

static cudnnPoolingDescriptor_t
pool_new(const struct pool_shape *s, cudnnPoolingMode_t mode)
{
    cudnnPoolingDescriptor_t p;

    DNN_OK(cudnnCreatePoolingDescriptor(&p));
    DNN_OK(cudnnSetPoolingNdDescriptor(p, mode, CUDNN_NOT_PROPAGATE_NAN,
                                       s->nb - 2, s->win, s->pad, s->str));
    return p;
}

struct pool_fd {
    cudnnHandle_t h;
    cudnnPoolingDescriptor_t p;
    cudnnTensorDescriptor_t xt, yt;
    void *xd, *yd;
};

static void
pool_forward_fd(void *ctx, const double *x, double *y)
{
    struct pool_fd *c = ctx;
    double one = 1.0, zero = 0.0;

    tensor_put_d(c->xt, c->xd, x);
    DNN_OK(cudnnPoolingForward(c->h, c->p, &one, c->xt, c->xd, &zero, c->yt,
                               c->yd));
    tensor_download_d(c->yt, c->yd, y);
}

static void
test_pooling_modes(void **state)
{
    cudnnHandle_t h = handle_new();
    union scalar sa, sb;

    (void)state;
    for (size_t s = 0; s < sizeof(pool_shapes) / sizeof(pool_shapes[0]); s++)
    for (int m = 0; m < 4; m++)
    for (size_t k = 0; k < ew_case_count; k++) {
        const struct pool_shape *ps = &pool_shapes[s];
        const struct ew_case *c = &ew_cases[k];
        cudnnPoolingDescriptor_t p = pool_new(ps, pool_modes[m]);
        int od[5], god[5];
        cudnnTensorDescriptor_t xt = tensor_layout(c->layout, c->type,
                                                   ps->nb, ps->x), yt;
        size_t nx = count_of(ps->nb, ps->x), ny;
        double *x = exact_values(nx, c->type, 1.0), *ry, *rdx, *dy, *old, *got;
        void *xd = tensor_upload_d(xt, x, 0.0), *yd, *dyd, *dxd;

        pool_out_dims(ps, od);
        DNN_OK(cudnnGetPoolingNdForwardOutputDim(p, xt, ps->nb, god));
        assert_memory_equal(god, od, (size_t)ps->nb * sizeof(int));
        ny = count_of(ps->nb, od);
        yt = tensor_layout((enum layout)((c->layout + s) % LAYOUT_COUNT),
                           c->type, ps->nb, od);
        dy = exact_values(ny, c->type, 1.0);
        old = old_values(nx > ny ? nx : ny, c);
        ry = calloc(ny, sizeof(double));
        rdx = calloc(nx, sizeof(double));
        got = malloc((nx > ny ? nx : ny) * sizeof(double));
        yd = tensor_upload_d(yt, old, 0.0);
        dyd = tensor_upload_d(yt, dy, 0.0);
        dxd = tensor_upload_d(xt, old, 0.0);
        ref_pool(ps, pool_modes[m], x, dy, ry, rdx);

        DNN_OK(cudnnPoolingForward(h, p, scalar(&sa, c->type, c->alpha), xt,
                                   xd, scalar(&sb, c->type, c->beta), yt,
                                   yd));
        tensor_download_d(yt, yd, got);
        for (size_t i = 0; i < ny; i++)
            assert_close(got[i],
                         c->alpha * ry[i] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol_of(c->type), "y", i);
        DNN_OK(cudnnPoolingBackward(h, p, scalar(&sa, c->type, c->alpha), yt,
                                    yd, yt, dyd, xt, xd,
                                    scalar(&sb, c->type, c->beta), xt, dxd));
        tensor_download_d(xt, dxd, got);
        for (size_t i = 0; i < nx; i++)
            assert_close(got[i],
                         c->alpha * rdx[i] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol_of(c->type) * 4, "dx", i);

        /* DOUBLE averages: the backward pass against differences. */
        if (c->type == CUDNN_DATA_DOUBLE && c->beta == 0.0 && m >= 2) {
            struct pool_fd fd = { h, p, xt, yt, xd, yd };
            double one = 1.0, zero = 0.0;

            DNN_OK(cudnnPoolingBackward(h, p, &one, yt, yd, yt, dyd, xt, xd,
                                        &zero, xt, dxd));
            tensor_download_d(xt, dxd, got);
            check_gradient(pool_forward_fd, &fd, nx, ny, x, dy, got);
        }
        free(x), free(ry), free(rdx), free(dy), free(old), free(got);
        dev_free(xd), dev_free(yd), dev_free(dyd), dev_free(dxd);
        DNN_OK(cudnnDestroyTensorDescriptor(xt));
        DNN_OK(cudnnDestroyTensorDescriptor(yt));
        DNN_OK(cudnnDestroyPoolingDescriptor(p));
    }
    DNN_OK(cudnnDestroy(h));
}

/* Backward: y and dy, x and dx of the same sizes and strides; forward: y
 * of the pooled sizes and x's type. */
static void
test_pooling_statuses(void **state)
{
    const struct pool_shape *s = &pool_shapes[0];
    cudnnHandle_t h = handle_new();
    cudnnPoolingDescriptor_t p = pool_new(s, CUDNN_POOLING_MAX);
    int od[4], pnb, win[3], pad[3], str[3];
    cudnnTensorDescriptor_t x, xn, y, yn, yh;
    void *xd = dev_alloc(252 * 4), *dxd = dev_alloc(252 * 4);
    void *yd = dev_alloc(96 * 4), *dyd = dev_alloc(96 * 4);
    float one = 1.0f, zero = 0.0f;
    cudnnPoolingMode_t mode;
    cudnnNanPropagation_t nan_opt;

    (void)state;
    pool_out_dims(s, od);
    x = tensor_new(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 4, s->x);
    xn = tensor_new(CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 4, s->x);
    y = tensor_new(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 4, od);
    yn = tensor_new(CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 4, od);
    yh = tensor_new(CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 4, od);
    DNN_OK(cudnnPoolingForward(h, p, &one, xn, xd, &zero, y, yd));
    assert_int_equal(cudnnPoolingForward(h, p, &one, x, xd, &zero, x, yd),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnPoolingForward(h, p, &one, x, xd, &zero, yh, yd),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnPoolingForward(h, p, &one, x, NULL, &zero, y, yd),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    DNN_OK(cudnnPoolingBackward(h, p, &one, yn, yd, yn, dyd, x, xd, &zero, x,
                                dxd));
    assert_int_equal(cudnnPoolingBackward(h, p, &one, y, yd, yn, dyd, x, xd,
                                          &zero, x, dxd),
                     CUDNN_STATUS_BAD_PARAM);      /* y, dy strides */
    assert_int_equal(cudnnPoolingBackward(h, p, &one, y, yd, y, dyd, x, xd,
                                          &zero, xn, dxd),
                     CUDNN_STATUS_BAD_PARAM);      /* x, dx strides */
    assert_int_equal(cudnnPoolingBackward(h, p, &one, y, yd, yh, dyd, x, xd,
                                          &zero, x, dxd),
                     CUDNN_STATUS_BAD_PARAM);      /* types */
    assert_int_equal(cudnnPoolingBackward(h, p, &one, y, yd, y, dyd, x, xd,
                                          &zero, y, dxd),
                     CUDNN_STATUS_BAD_PARAM);      /* dx's sizes */
    assert_int_equal(cudnnPoolingBackward(h, p, &one, y, yd, y, NULL, x, xd,
                                          &zero, x, dxd),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);

    /* The descriptor: N-d round trip, 2-d getter refused, window beyond
     * the padded input refused. */
    DNN_OK(cudnnGetPoolingNdDescriptor(p, 3, &mode, &nan_opt, &pnb, win, pad,
                                       str));
    assert_true(pnb == 2 && win[0] == 3 && pad[1] == 1 && str[0] == 2);
    DNN_OK(cudnnSetPoolingNdDescriptor(p, CUDNN_POOLING_MAX_DETERMINISTIC,
                                       CUDNN_PROPAGATE_NAN, 3,
                                       pool_shapes[2].win, pool_shapes[2].pad,
                                       pool_shapes[2].str));
    assert_int_equal(cudnnGetPooling2dDescriptor(p, &mode, &nan_opt, win,
                                                 win, win, win, win, win),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnGetPoolingNdForwardOutputDim(p, x, 4, od),
                     CUDNN_STATUS_BAD_PARAM);      /* 3-d pooling, 4-d x */
    assert_int_equal(cudnnSetPooling2dDescriptor(p, CUDNN_POOLING_MAX,
                                                 CUDNN_PROPAGATE_NAN, 2, 2,
                                                 -1, 0, 1, 1),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetPooling2dDescriptor(p, (cudnnPoolingMode_t)9,
                                                 CUDNN_PROPAGATE_NAN, 2, 2,
                                                 0, 0, 1, 1),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnSetPooling2dDescriptor(p, CUDNN_POOLING_MAX,
                                       CUDNN_PROPAGATE_NAN, 9, 2, 0, 0, 1,
                                       1));
    assert_int_equal(cudnnGetPooling2dForwardOutputDim(p, x, &od[0], &od[1],
                                                       &od[2], &od[3]),
                     CUDNN_STATUS_BAD_PARAM);      /* 9 > 7 rows */
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_free(xd), dev_free(dxd), dev_free(yd), dev_free(dyd);
    DNN_OK(cudnnDestroyTensorDescriptor(x));
    DNN_OK(cudnnDestroyTensorDescriptor(xn));
    DNN_OK(cudnnDestroyTensorDescriptor(y));
    DNN_OK(cudnnDestroyTensorDescriptor(yn));
    DNN_OK(cudnnDestroyTensorDescriptor(yh));
    DNN_OK(cudnnDestroyPoolingDescriptor(p));
    DNN_OK(cudnnDestroy(h));
}

/* Max pooling and NaN: ignored, or the result, as the descriptor says. */
static void
test_pooling_nan(void **state)
{
    static const int dim[4] = { 1, 1, 2, 4 };
    int win[2] = { 2, 2 }, pad[2] = { 0, 0 }, str[2] = { 2, 2 };
    int od[4] = { 1, 1, 1, 2 };
    cudnnHandle_t h = handle_new();
    cudnnTensorDescriptor_t xt = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 4, dim);
    cudnnTensorDescriptor_t yt = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 4, od);
    double x[8] = { 1, NAN, 3, 4, 2, 0.5, -1, 5 }, got[2];
    void *xd = tensor_upload_d(xt, x, 0.0), *yd = dev_alloc(8);
    float one = 1.0f, zero = 0.0f;
    cudnnPoolingDescriptor_t p;

    (void)state;
    DNN_OK(cudnnCreatePoolingDescriptor(&p));
    for (int prop = 0; prop < 2; prop++) {
        DNN_OK(cudnnSetPoolingNdDescriptor(p, CUDNN_POOLING_MAX,
                                           (cudnnNanPropagation_t)prop, 2,
                                           win, pad, str));
        DNN_OK(cudnnPoolingForward(h, p, &one, xt, xd, &zero, yt, yd));
        tensor_download_d(yt, yd, got);
        assert_true(prop ? isnan(got[0]) : got[0] == 2.0);
        assert_true(got[1] == 5.0);
    }
    dev_free(xd), dev_free(yd);
    DNN_OK(cudnnDestroyTensorDescriptor(xt));
    DNN_OK(cudnnDestroyTensorDescriptor(yt));
    DNN_OK(cudnnDestroyPoolingDescriptor(p));
    DNN_OK(cudnnDestroy(h));
}

/* ---- Softmax ------------------------------------------------------------- */

/* Reference softmax over row-major N x C x S: INSTANCE groups all of C
 * and S per image, CHANNEL all of C per pixel; element e of group g. */
struct sm_ref {
    int log_algo, channel, n, c, s;
};

static int
sm_groups(const struct sm_ref *r)
{
    return r->channel ? r->n * r->s : r->n;
}

static int
sm_inner(const struct sm_ref *r)
{
    return r->channel ? r->c : r->c * r->s;
}

static int
sm_at(const struct sm_ref *r, int g, int e)
{
    return r->channel ? (g / r->s) * r->c * r->s + e * r->s + g % r->s
                      : g * sm_inner(r) + e;
}

static void
ref_softmax_forward(const struct sm_ref *r, const double *x, double *y)
{
    for (int g = 0; g < sm_groups(r); g++) {
        double m = -INFINITY, sum = 0.0;

        for (int e = 0; e < sm_inner(r); e++)
            m = fmax(m, x[sm_at(r, g, e)]);
        for (int e = 0; e < sm_inner(r); e++)
            sum += exp(x[sm_at(r, g, e)] - m);
        for (int e = 0; e < sm_inner(r); e++) {
            int i = sm_at(r, g, e);
            y[i] = r->log_algo ? x[i] - m - log(sum) : exp(x[i] - m) / sum;
        }
    }
}

/* dx from y and dy: y (dy - sum(dy y)), or dy - exp(y) sum(dy) for LOG. */
static void
ref_softmax_backward(const struct sm_ref *r, const double *y,
                     const double *dy, double *dx)
{
    for (int g = 0; g < sm_groups(r); g++) {
        double dot = 0.0;

        for (int e = 0; e < sm_inner(r); e++) {
            int i = sm_at(r, g, e);
            dot += r->log_algo ? dy[i] : dy[i] * y[i];
        }
        for (int e = 0; e < sm_inner(r); e++) {
            int i = sm_at(r, g, e);
            dx[i] = r->log_algo ? dy[i] - exp(y[i]) * dot
                                : y[i] * (dy[i] - dot);
        }
    }
}

struct softmax_fd {
    cudnnHandle_t h;
    int algo, mode;
    cudnnTensorDescriptor_t t;
    void *xd, *yd;
};

static void
softmax_forward_fd(void *ctx, const double *x, double *y)
{
    struct softmax_fd *c = ctx;
    double one = 1.0, zero = 0.0;

    tensor_put_d(c->t, c->xd, x);
    DNN_OK(cudnnSoftmaxForward(c->h, (cudnnSoftmaxAlgorithm_t)c->algo,
                               (cudnnSoftmaxMode_t)c->mode, &one, c->t,
                               c->xd, &zero, c->t, c->yd));
    tensor_download_d(c->t, c->yd, y);
}

static void
test_softmax_modes(void **state)
{
    int dims[2][5] = { { 2, 5, 2, 3 }, { 2, 3, 2, 2, 2 } };
    cudnnHandle_t h = handle_new();
    union scalar sa, sb;

    (void)state;
    for (int algo = CUDNN_SOFTMAX_FAST; algo <= CUDNN_SOFTMAX_LOG; algo++)
    for (int mode = 0; mode < 2; mode++)
    for (size_t k = 0; k < ew_case_count; k++) {
        const struct ew_case *c = &ew_cases[k];
        int nb = 4 + (int)((k + mode) % 2), *dim = dims[(k + mode) % 2];
        size_t n = count_of(nb, dim);
        struct sm_ref r = { algo == CUDNN_SOFTMAX_LOG, mode, dim[0], dim[1],
                            (int)(n / ((size_t)dim[0] * dim[1])) };
        cudnnTensorDescriptor_t t = tensor_layout(c->layout, c->type, nb,
                                                  dim);
        double *x = exact_values(n, c->type, 2.0);
        double *dy = exact_values(n, c->type, 1.0);
        double *old = old_values(n, c), *ry = malloc(n * 8);
        double *rdx = malloc(n * 8), *got = malloc(n * 8);
        void *xd = tensor_upload_d(t, x, 0.0);
        void *yd = tensor_upload_d(t, old, 0.0);
        void *dyd = tensor_upload_d(t, dy, 0.0);
        void *dxd = tensor_upload_d(t, old, 0.0);
        void *ryd;
        double tol = tol_of(c->type) * 4;

        ref_softmax_forward(&r, x, ry);
        DNN_OK(cudnnSoftmaxForward(h, (cudnnSoftmaxAlgorithm_t)algo,
                                   (cudnnSoftmaxMode_t)mode,
                                   scalar(&sa, c->type, c->alpha), t, xd,
                                   scalar(&sb, c->type, c->beta), t, yd));
        tensor_download_d(t, yd, got);
        for (size_t i = 0; i < n; i++)
            assert_close(got[i],
                         c->alpha * ry[i] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol, "y", i);
        /* Backward from y as stored in the type, the reference too. */
        ryd = tensor_upload_d(t, ry, 0.0);
        tensor_download_d(t, ryd, ry);
        ref_softmax_backward(&r, ry, dy, rdx);
        DNN_OK(cudnnSoftmaxBackward(h, (cudnnSoftmaxAlgorithm_t)algo,
                                    (cudnnSoftmaxMode_t)mode,
                                    scalar(&sa, c->type, c->alpha), t, ryd,
                                    t, dyd, scalar(&sb, c->type, c->beta), t,
                                    dxd));
        tensor_download_d(t, dxd, got);
        for (size_t i = 0; i < n; i++)
            assert_close(got[i],
                         c->alpha * rdx[i] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol, "dx", i);

        if (c->type == CUDNN_DATA_DOUBLE && c->beta == 0.0) {
            struct softmax_fd fd = { h, algo, mode, t, xd, yd };
            double one = 1.0, zero = 0.0;

            DNN_OK(cudnnSoftmaxForward(h, (cudnnSoftmaxAlgorithm_t)algo,
                                       (cudnnSoftmaxMode_t)mode, &one, t, xd,
                                       &zero, t, yd));
            DNN_OK(cudnnSoftmaxBackward(h, (cudnnSoftmaxAlgorithm_t)algo,
                                        (cudnnSoftmaxMode_t)mode, &one, t,
                                        yd, t, dyd, &zero, t, dxd));
            tensor_download_d(t, dxd, got);
            check_gradient(softmax_forward_fd, &fd, n, n, x, dy, got);
        }
        free(x), free(dy), free(old), free(ry), free(rdx), free(got);
        dev_free(xd), dev_free(yd), dev_free(dyd), dev_free(dxd);
        dev_free(ryd);
        DNN_OK(cudnnDestroyTensorDescriptor(t));
    }
    DNN_OK(cudnnDestroy(h));
}

#define ST(call, want) assert_int_equal((call), (want))

/* ---- cudnnReduceTensor ------------------------------------------------------ */

/* The reduction of the elements of A that element `lin` of C stands for,
 * in double, and the flattened index (row-major over the reduced
 * dimensions) of the first minimum or maximum. */
static double
reduce_ref(cudnnReduceTensorOp_t op, int nb, const int *adim,
           const int *cdim, const double *a, size_t lin, uint32_t *index)
{
    int coord[8], rd[8], nr = 0;
    size_t n = 1, rest = lin;
    double acc = op == CUDNN_REDUCE_TENSOR_MUL ? 1.0 : 0.0, best = 0.0;

    for (int d = nb - 1; d >= 0; d--) {
        coord[d] = (int)(rest % (size_t)cdim[d]);
        rest /= (size_t)cdim[d];
    }
    for (int d = 0; d < nb; d++) {
        if (cdim[d] != adim[d]) {
            rd[nr++] = d;
            n *= (size_t)adim[d];
        }
    }
    *index = 0;
    for (size_t r = 0; r < n; r++) {
        size_t rr = r, at = 0;
        double v;

        for (int k = nr - 1; k >= 0; k--) {
            coord[rd[k]] = (int)(rr % (size_t)adim[rd[k]]);
            rr /= (size_t)adim[rd[k]];
        }
        for (int d = 0; d < nb; d++)
            at = at * (size_t)adim[d] + (size_t)coord[d];
        v = a[at];
        switch (op) {
        case CUDNN_REDUCE_TENSOR_ADD: case CUDNN_REDUCE_TENSOR_AVG:
            acc += v;
            break;
        case CUDNN_REDUCE_TENSOR_MUL:
            acc *= v;
            break;
        case CUDNN_REDUCE_TENSOR_NORM1:
            acc += fabs(v);
            break;
        case CUDNN_REDUCE_TENSOR_NORM2:
            acc += v * v;
            break;
        default:
            if (op == CUDNN_REDUCE_TENSOR_AMAX)
                v = fabs(v);
            if (r == 0 || (op == CUDNN_REDUCE_TENSOR_MIN ? v < best
                                                         : v > best)) {
                best = v;
                *index = (uint32_t)r;
            }
            break;
        }
    }
    switch (op) {
    case CUDNN_REDUCE_TENSOR_AVG:
        return acc / (double)n;
    case CUDNN_REDUCE_TENSOR_NORM2:
        return sqrt(acc);
    case CUDNN_REDUCE_TENSOR_MIN: case CUDNN_REDUCE_TENSOR_MAX:
    case CUDNN_REDUCE_TENSOR_AMAX:
        return best;
    default:
        return acc;
    }
}

/* Every operation of cudnnReduceTensor, FLOAT and DOUBLE, packed and
 * strided, two sets of reduced dimensions, alpha and beta (beta 0 over
 * NaN), indices of MIN, MAX and AMAX, against the double reference. */
static void
test_reduce_tensor(void **state)
{
    static const int adim[4] = { 2, 3, 4, 5 };
    static const int cdims[2][4] = { { 2, 1, 4, 1 }, { 1, 3, 1, 1 } };
    static const cudnnReduceTensorOp_t ops[] = {
        CUDNN_REDUCE_TENSOR_ADD, CUDNN_REDUCE_TENSOR_MUL,
        CUDNN_REDUCE_TENSOR_MIN, CUDNN_REDUCE_TENSOR_MAX,
        CUDNN_REDUCE_TENSOR_AMAX, CUDNN_REDUCE_TENSOR_AVG,
        CUDNN_REDUCE_TENSOR_NORM1, CUDNN_REDUCE_TENSOR_NORM2,
    };
    static const cudnnDataType_t types[] = { CUDNN_DATA_FLOAT,
                                             CUDNN_DATA_DOUBLE };
    cudnnHandle_t h = handle_new();
    cudnnReduceTensorDescriptor_t rd;
    size_t na = count_of(4, adim);

    (void)state;
    DNN_OK(cudnnCreateReduceTensorDescriptor(&rd));
    for (size_t ti = 0; ti < 2; ti++)
    for (int lay = 0; lay < 2; lay++)
    for (int ci = 0; ci < 2; ci++)
    for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++)
    for (int bi = 0; bi < 2; bi++) {
        cudnnDataType_t t = types[ti];
        enum layout l = lay ? LAYOUT_PADDED : LAYOUT_NCHW;
        cudnnTensorDescriptor_t ad = tensor_layout(l, t, 4, adim);
        cudnnTensorDescriptor_t cd = tensor_layout(l, t, 4, cdims[ci]);
        size_t nc = count_of(4, cdims[ci]), isz = 0, wsz = 0;
        int with_idx = ops[oi] >= CUDNN_REDUCE_TENSOR_MIN &&
                       ops[oi] <= CUDNN_REDUCE_TENSOR_AMAX;
        double alpha = 0.5, beta = bi ? 0.25 : 0.0;
        double *a = exact_values(na, t, 1.0);
        double *old = bi ? exact_values(nc, t, 2.0) : nans(nc);
        double *got = malloc(nc * sizeof(double));
        uint32_t *idx = malloc(nc * sizeof(uint32_t));
        void *adev, *cdev, *idev = NULL, *wdev = NULL;
        union scalar sa, sb;

        /* MUL over up to 30 values: away from 0, both signs. */
        if (ops[oi] == CUDNN_REDUCE_TENSOR_MUL) {
            for (size_t i = 0; i < na; i++)
                a[i] = (i % 3 == 0 ? -1.0 : 1.0) * (1.0 + a[i] / 8.0);
        }
        adev = tensor_upload_d(ad, a, 0.0);
        cdev = tensor_upload_d(cd, old, 0.0);
        DNN_OK(cudnnSetReduceTensorDescriptor(
            rd, ops[oi], t, CUDNN_NOT_PROPAGATE_NAN,
            with_idx ? CUDNN_REDUCE_TENSOR_FLATTENED_INDICES
                     : CUDNN_REDUCE_TENSOR_NO_INDICES,
            CUDNN_32BIT_INDICES));
        DNN_OK(cudnnGetReductionIndicesSize(h, rd, ad, cd, &isz));
        DNN_OK(cudnnGetReductionWorkspaceSize(h, rd, ad, cd, &wsz));
        assert_int_equal(isz, with_idx ? nc * sizeof(uint32_t) : 0);
        if (isz > 0)
            idev = dev_alloc(isz);
        if (wsz > 0)
            wdev = dev_alloc(wsz);
        DNN_OK(cudnnReduceTensor(h, rd, idev, isz, wdev, wsz,
                                 scalar(&sa, t, alpha), ad, adev,
                                 scalar(&sb, t, beta), cd, cdev));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        tensor_download_d(cd, cdev, got);
        if (idev != NULL)
            dev_download(idx, idev, isz);
        for (size_t j = 0; j < nc; j++) {
            uint32_t want_idx;
            double r = reduce_ref(ops[oi], 4, adim, cdims[ci], a, j,
                                  &want_idx);
            double want = alpha * r + (bi ? beta * old[j] : 0.0);

            assert_close(got[j], want, tol_of(t), "C", j);
            if (with_idx && idx[j] != want_idx)
                fail_msg("op %d: index %u of C[%zu], %u expected",
                         (int)ops[oi], idx[j], j, want_idx);
        }
        free(a), free(old), free(got), free(idx);
        dev_free(adev), dev_free(cdev);
        if (idev != NULL)
            dev_free(idev);
        if (wdev != NULL)
            dev_free(wdev);
        DNN_OK(cudnnDestroyTensorDescriptor(ad));
        DNN_OK(cudnnDestroyTensorDescriptor(cd));
    }
    DNN_OK(cudnnDestroyReduceTensorDescriptor(rd));
    DNN_OK(cudnnDestroy(h));
}

/* The descriptors' round trip and the documented statuses. */
static void
test_reduce_tensor_statuses(void **state)
{
    static const int adim[4] = { 2, 3, 4, 5 }, cdim[4] = { 2, 1, 4, 1 };
    static const int bad[4] = { 2, 2, 4, 1 };
    cudnnHandle_t h = handle_new();
    cudnnReduceTensorDescriptor_t rd;
    cudnnReduceTensorOp_t op;
    cudnnDataType_t comp;
    cudnnNanPropagation_t nan_opt;
    cudnnReduceTensorIndices_t ind;
    cudnnIndicesType_t itype;
    cudnnTensorDescriptor_t ad = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 4, adim);
    cudnnTensorDescriptor_t cd = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 4, cdim);
    cudnnTensorDescriptor_t bd = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 4, bad);
    cudnnTensorDescriptor_t hd = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_HALF, 4, cdim);
    size_t sz = 0, ws = 0;
    void *adev = dev_alloc(count_of(4, adim) * 4);
    void *cdev = dev_alloc(count_of(4, cdim) * 4), *wdev, *idev;
    float one = 1.0f, zero = 0.0f;

    (void)state;
    ST(cudnnCreateReduceTensorDescriptor(NULL), CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnCreateReduceTensorDescriptor(&rd));
    /* Not set yet; values outside their enumerations. */
    ST(cudnnGetReductionWorkspaceSize(h, rd, ad, cd, &sz),
       CUDNN_STATUS_BAD_PARAM);
    ST(cudnnSetReduceTensorDescriptor(rd, (cudnnReduceTensorOp_t)99,
                                      CUDNN_DATA_FLOAT,
                                      CUDNN_NOT_PROPAGATE_NAN,
                                      CUDNN_REDUCE_TENSOR_NO_INDICES,
                                      CUDNN_32BIT_INDICES),
       CUDNN_STATUS_BAD_PARAM);
    ST(cudnnSetReduceTensorDescriptor(NULL, CUDNN_REDUCE_TENSOR_ADD,
                                      CUDNN_DATA_FLOAT,
                                      CUDNN_NOT_PROPAGATE_NAN,
                                      CUDNN_REDUCE_TENSOR_NO_INDICES,
                                      CUDNN_32BIT_INDICES),
       CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnSetReduceTensorDescriptor(rd, CUDNN_REDUCE_TENSOR_MAX,
                                          CUDNN_DATA_FLOAT,
                                          CUDNN_PROPAGATE_NAN,
                                          CUDNN_REDUCE_TENSOR_FLATTENED_INDICES,
                                          CUDNN_32BIT_INDICES));
    DNN_OK(cudnnGetReduceTensorDescriptor(rd, &op, &comp, &nan_opt, &ind,
                                          &itype));
    assert_int_equal(op, CUDNN_REDUCE_TENSOR_MAX);
    assert_int_equal(comp, CUDNN_DATA_FLOAT);
    assert_int_equal(nan_opt, CUDNN_PROPAGATE_NAN);
    assert_int_equal(ind, CUDNN_REDUCE_TENSOR_FLATTENED_INDICES);
    assert_int_equal(itype, CUDNN_32BIT_INDICES);
    /* C's sizes neither A's nor 1; nothing reduced; HALF. */
    ST(cudnnGetReductionWorkspaceSize(h, rd, ad, bd, &sz),
       CUDNN_STATUS_BAD_PARAM);
    ST(cudnnGetReductionWorkspaceSize(h, rd, ad, ad, &sz),
       CUDNN_STATUS_BAD_PARAM);
    ST(cudnnGetReductionWorkspaceSize(h, rd, ad, hd, &sz),
       CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnGetReductionWorkspaceSize(h, rd, ad, cd, &ws));
    DNN_OK(cudnnGetReductionIndicesSize(h, rd, ad, cd, &sz));
    assert_int_equal(sz, count_of(4, cdim) * sizeof(uint32_t));
    wdev = dev_alloc(ws + 1);
    idev = dev_alloc(sz);
    /* Allocations smaller than asked for. */
    ST(cudnnReduceTensor(h, rd, idev, sz - 4, wdev, ws, &one, ad, adev,
                         &zero, cd, cdev),
       CUDNN_STATUS_INVALID_VALUE);
    if (ws > 0)
        ST(cudnnReduceTensor(h, rd, idev, sz, wdev, ws - 1, &one, ad, adev,
                             &zero, cd, cdev),
           CUDNN_STATUS_INVALID_VALUE);
    ST(cudnnReduceTensor(h, rd, idev, sz, wdev, ws, NULL, ad, adev, &zero,
                         cd, cdev),
       CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    DNN_OK(cudnnReduceTensor(h, rd, idev, sz, wdev, ws, &one, ad, adev,
                             &zero, cd, cdev));
    /* Indices of an operation other than MIN, MAX, AMAX; 64-bit ones;
     * FLOAT tensors with a DOUBLE compute type. */
    DNN_OK(cudnnSetReduceTensorDescriptor(rd, CUDNN_REDUCE_TENSOR_ADD,
                                          CUDNN_DATA_FLOAT,
                                          CUDNN_NOT_PROPAGATE_NAN,
                                          CUDNN_REDUCE_TENSOR_FLATTENED_INDICES,
                                          CUDNN_32BIT_INDICES));
    ST(cudnnGetReductionIndicesSize(h, rd, ad, cd, &sz),
       CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnSetReduceTensorDescriptor(rd, CUDNN_REDUCE_TENSOR_MIN,
                                          CUDNN_DATA_FLOAT,
                                          CUDNN_NOT_PROPAGATE_NAN,
                                          CUDNN_REDUCE_TENSOR_FLATTENED_INDICES,
                                          CUDNN_64BIT_INDICES));
    ST(cudnnGetReductionIndicesSize(h, rd, ad, cd, &sz),
       CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnSetReduceTensorDescriptor(rd, CUDNN_REDUCE_TENSOR_ADD,
                                          CUDNN_DATA_DOUBLE,
                                          CUDNN_NOT_PROPAGATE_NAN,
                                          CUDNN_REDUCE_TENSOR_NO_INDICES,
                                          CUDNN_32BIT_INDICES));
    ST(cudnnGetReductionWorkspaceSize(h, rd, ad, cd, &sz),
       CUDNN_STATUS_BAD_PARAM);
    ST(cudnnGetReductionWorkspaceSize(NULL, rd, ad, cd, &sz),
       CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_free(adev), dev_free(cdev), dev_free(wdev), dev_free(idev);
    DNN_OK(cudnnDestroyReduceTensorDescriptor(rd));
    DNN_OK(cudnnDestroyReduceTensorDescriptor(NULL));
    DNN_OK(cudnnDestroyTensorDescriptor(ad));
    DNN_OK(cudnnDestroyTensorDescriptor(cd));
    DNN_OK(cudnnDestroyTensorDescriptor(bd));
    DNN_OK(cudnnDestroyTensorDescriptor(hd));
    DNN_OK(cudnnDestroy(h));
}

/* MAX with NaN: skipped when not propagated, the result when it is. */
static void
test_reduce_tensor_nan(void **state)
{
    static const int adim[4] = { 1, 4, 1, 1 }, cdim[4] = { 1, 1, 1, 1 };
    float a[4] = { 1.0f, NAN, 3.0f, 2.0f }, c = 0.0f, one = 1.0f,
          zero = 0.0f;
    cudnnHandle_t h = handle_new();
    cudnnReduceTensorDescriptor_t rd;
    cudnnTensorDescriptor_t ad = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 4, adim);
    cudnnTensorDescriptor_t cd = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 4, cdim);
    void *adev = dev_upload(a, sizeof(a)), *cdev = dev_alloc(4);
    void *idev = dev_alloc(4), *wdev = dev_alloc(256);
    uint32_t idx = 99;

    (void)state;
    DNN_OK(cudnnCreateReduceTensorDescriptor(&rd));
    for (int propagate = 0; propagate < 2; propagate++) {
        DNN_OK(cudnnSetReduceTensorDescriptor(
            rd, CUDNN_REDUCE_TENSOR_MAX, CUDNN_DATA_FLOAT,
            propagate ? CUDNN_PROPAGATE_NAN : CUDNN_NOT_PROPAGATE_NAN,
            CUDNN_REDUCE_TENSOR_FLATTENED_INDICES, CUDNN_32BIT_INDICES));
        DNN_OK(cudnnReduceTensor(h, rd, idev, 4, wdev, 256, &one, ad, adev,
                                 &zero, cd, cdev));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        dev_download(&c, cdev, 4);
        dev_download(&idx, idev, 4);
        if (propagate) {
            assert_true(isnan(c));
            assert_int_equal(idx, 1);
        } else {
            assert_true(c == 3.0f);
            assert_int_equal(idx, 2);
        }
    }
    dev_free(adev), dev_free(cdev), dev_free(idev), dev_free(wdev);
    DNN_OK(cudnnDestroyReduceTensorDescriptor(rd));
    DNN_OK(cudnnDestroyTensorDescriptor(ad));
    DNN_OK(cudnnDestroyTensorDescriptor(cd));
    DNN_OK(cudnnDestroy(h));
}

static void
test_softmax_statuses(void **state)
{
    int dim[4] = { 2, 5, 2, 3 }, other[4] = { 2, 5, 3, 2 };
    cudnnHandle_t h = handle_new();
    cudnnTensorDescriptor_t a = tensor_new(CUDNN_TENSOR_NCHW,
                                           CUDNN_DATA_FLOAT, 4, dim);
    cudnnTensorDescriptor_t b = tensor_new(CUDNN_TENSOR_NHWC,
                                           CUDNN_DATA_FLOAT, 4, dim);
    cudnnTensorDescriptor_t o = tensor_new(CUDNN_TENSOR_NCHW,
                                           CUDNN_DATA_FLOAT, 4, other);
    void *y = dev_alloc(240), *dy = dev_alloc(240), *dx = dev_alloc(240);
    float one = 1.0f, zero = 0.0f;
    const cudnnSoftmaxAlgorithm_t acc = CUDNN_SOFTMAX_ACCURATE;
    const cudnnSoftmaxMode_t inst = CUDNN_SOFTMAX_MODE_INSTANCE;

    (void)state;
    assert_int_equal(cudnnSoftmaxForward(h, acc, inst, &one, a, y, &zero, o,
                                         dx),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSoftmaxForward(h, acc, (cudnnSoftmaxMode_t)2, &one,
                                         a, y, &zero, a, dx),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSoftmaxBackward(h, acc, inst, &one, a, y, b, dy,
                                          &zero, a, dx),
                     CUDNN_STATUS_BAD_PARAM);      /* y, dy strides */
    assert_int_equal(cudnnSoftmaxBackward(h, acc, inst, &one, a, y, a, dy,
                                          &zero, o, dx),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSoftmaxBackward(h, acc, inst, &one, a, y, a, dy,
                                          &zero, b, dy),
                     CUDNN_STATUS_BAD_PARAM);      /* in place, NHWC */
    assert_int_equal(cudnnSoftmaxBackward(h, acc, inst, &one, a, y, a, dy,
                                          NULL, a, dx),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    DNN_OK(cudnnSoftmaxBackward(h, acc, inst, &one, a, y, a, dy, &zero, b,
                                dx));
    DNN_OK(cudnnSoftmaxBackward(h, acc, inst, &one, a, y, a, dy, &zero, a,
                                dy));              /* in place */
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_free(y), dev_free(dy), dev_free(dx);
    DNN_OK(cudnnDestroyTensorDescriptor(a));
    DNN_OK(cudnnDestroyTensorDescriptor(b));
    DNN_OK(cudnnDestroyTensorDescriptor(o));
    DNN_OK(cudnnDestroy(h));
}

/* ---- Fault injection (in a child with AMPSHIM_EMU_FAIL set) ------------ */

#define FAULT_ARG "--fault-child"
#define FAULT_SPEC "cudnnAddTensor:2,cudnnActivationForward:1"

/* The element-wise calls are fault points by name (the shim's steps after
 * a fused forward's convolution are): the second cudnnAddTensor and the
 * first cudnnActivationForward return EXECUTION_FAILED and leave their
 * output as it was; the calls around them run. */
static void
test_fault_child(void **state)
{
    int dims[4] = { 1, 2, 3, 4 };
    cudnnHandle_t h = handle_new();
    cudnnTensorDescriptor_t t = tensor_new(CUDNN_TENSOR_NCHW,
                                           CUDNN_DATA_FLOAT, 4, dims);
    cudnnActivationDescriptor_t act;
    float a[24], c[24], got[24], one = 1.0f, zero = 0.0f;
    void *ad, *cd;

    (void)state;
    for (int i = 0; i < 24; i++) {
        a[i] = (float)(i - 12);
        c[i] = (float)(100 + i);
    }
    DNN_OK(cudnnCreateActivationDescriptor(&act));
    DNN_OK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU,
                                        CUDNN_NOT_PROPAGATE_NAN, 0.0));
    ad = dev_upload(a, sizeof(a));
    cd = dev_upload(c, sizeof(c));
    DNN_OK(cudnnAddTensor(h, &one, t, ad, &one, t, cd));
    assert_int_equal(cudnnAddTensor(h, &one, t, ad, &one, t, cd),
                     CUDNN_STATUS_EXECUTION_FAILED);
    assert_int_equal(cudnnActivationForward(h, act, &one, t, ad, &zero, t,
                                            cd),
                     CUDNN_STATUS_EXECUTION_FAILED);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(got, cd, sizeof(got));
    for (int i = 0; i < 24; i++)
        assert_true(got[i] == a[i] + c[i]);
    DNN_OK(cudnnActivationForward(h, act, &one, t, ad, &zero, t, cd));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(got, cd, sizeof(got));
    for (int i = 0; i < 24; i++)
        assert_true(got[i] == (a[i] > 0.0f ? a[i] : 0.0f));
    dev_free(ad), dev_free(cd);
    DNN_OK(cudnnDestroyActivationDescriptor(act));
    DNN_OK(cudnnDestroyTensorDescriptor(t));
    DNN_OK(cudnnDestroy(h));
}

/* The variable is read once per process: run the checks in a fresh one. */
static void
test_fault_injection(void **state)
{
    (void)state;
    emu_test_rerun_with_faults("test_emu_cudnn_ops", FAULT_SPEC, FAULT_ARG);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest fault_tests[] = {
        cmocka_unit_test(test_fault_child),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transform_tensor),
        cmocka_unit_test(test_transform_tensor_between_types),
        cmocka_unit_test(test_transform_tensor_ex),
        cmocka_unit_test(test_add_tensor_broadcast),
        cmocka_unit_test(test_backward_bias),
        cmocka_unit_test(test_op_tensor),
        cmocka_unit_test(test_set_scale_double),
        cmocka_unit_test(test_activation_modes),
        cmocka_unit_test(test_activation_statuses),
        cmocka_unit_test(test_pooling_modes),
        cmocka_unit_test(test_pooling_statuses),
        cmocka_unit_test(test_pooling_nan),
        cmocka_unit_test(test_softmax_modes),
        cmocka_unit_test(test_softmax_statuses),
        cmocka_unit_test(test_reduce_tensor),
        cmocka_unit_test(test_reduce_tensor_statuses),
        cmocka_unit_test(test_reduce_tensor_nan),
        cmocka_unit_test(test_fault_injection),
    };

    if (argc > 1 && strcmp(argv[1], FAULT_ARG) == 0)
        return cmocka_run_group_tests_name("emu_cudnn_ops_faults",
                                           fault_tests, NULL, NULL);
    unsetenv("AMPSHIM_EMU_FAIL");
    return cmocka_run_group_tests_name("emu_cudnn_ops", tests, NULL, NULL);
}
