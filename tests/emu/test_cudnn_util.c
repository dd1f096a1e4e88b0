/* Helpers shared by the emulated cuDNN tests: random data, reference
 * roundings, device copies and descriptors, the operations' cases, their
 * comparisons and the central-difference gradient check. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_test.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t
rng_next(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 40;     /* 24 bits */
}

float
rnd(void)
{
    return (float)((double)rng_next() / 8388608.0 - 1.0);
}

float
rnd_grid(void)
{
    return (float)((double)(rng_next() % 256) / 64.0 - 2.0);
}

double
ref_round(double x, int mant, int emin, double maxv)
{
    double q, r;
    int e;

    if (isnan(x) || isinf(x) || x == 0.0)
        return x;
    (void)frexp(x, &e);         /* |x| in [2^(e-1), 2^e) */
    e = e - 1 < emin ? emin : e - 1;
    q = ldexp(1.0, e - mant);
    r = nearbyint(x / q) * q;   /* default rounding: ties to even */
    return fabs(r) > maxv ? copysign(INFINITY, x) : r;
}

double
ref_f16(double x)
{
    return ref_round(x, 10, -14, 65504.0);
}

double
ref_bf16(double x)
{
    return ref_round(x, 7, -126, 0x1.fep127);
}

double
ref_tf32(double x)
{
    return ref_round(x, 10, -126, 0x1.ffcp127);
}

uint16_t
f16_bits(float v)
{
    uint16_t sign = signbit(v) ? 0x8000u : 0u;
    double a = fabs((double)v);
    int e;

    if (isnan(v))
        return 0x7e00u;
    if (isinf(v))
        return sign | 0x7c00u;
    if (a < 0x1p-14)
        return sign | (uint16_t)(a * 0x1p24);
    (void)frexp(a, &e);
    e -= 1;
    return sign | (uint16_t)((e + 15) << 10) |
           (uint16_t)((a / ldexp(1.0, e) - 1.0) * 1024.0);
}

uint16_t
bf16_bits(float v)
{
    uint32_t u;

    memcpy(&u, &v, 4);
    return (uint16_t)(u >> 16);
}

static float
f16_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;

    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return (float)((h & 0x8000u) ? -v : v);
}

size_t
elem_size(cudnnDataType_t t)
{
    return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_FLOAT ? 4 : 2;
}

void *
encode_d(cudnnDataType_t t, const double *val, size_t n)
{
    char *out = malloc(n * elem_size(t) + 1);

    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        float f = (float)val[i];
        uint16_t h = t == CUDNN_DATA_HALF ? f16_bits(f) : bf16_bits(f);

        if (t == CUDNN_DATA_DOUBLE)
            memcpy(out + 8 * i, &val[i], 8);
        else if (t == CUDNN_DATA_FLOAT)
            memcpy(out + 4 * i, &f, 4);
        else
            memcpy(out + 2 * i, &h, 2);
    }
    return out;
}

void
decode_d(cudnnDataType_t t, const void *in, size_t n, double *val)
{
    const char *p = in;
    uint32_t u;
    uint16_t h;
    float f;

    for (size_t i = 0; i < n; i++) {
        if (t == CUDNN_DATA_DOUBLE) {
            memcpy(&val[i], p + 8 * i, 8);
            continue;
        }
        if (t == CUDNN_DATA_FLOAT) {
            memcpy(&f, p + 4 * i, 4);
            val[i] = f;
            continue;
        }
        memcpy(&h, p + 2 * i, 2);
        u = (uint32_t)h << 16;
        memcpy(&f, &u, 4);
        val[i] = t == CUDNN_DATA_HALF ? f16_value(h) : f;
    }
}

static double *
to_double(const float *val, size_t n)
{
    double *d = malloc(n * sizeof(double) + 1);

    assert_non_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = val[i];
    return d;
}

void *
encode(cudnnDataType_t t, const float *val, size_t n)
{
    double *d = to_double(val, n);
    void *out = encode_d(t, d, n);

    free(d);
    return out;
}

void
decode(cudnnDataType_t t, const void *in, size_t n, float *val)
{
    double *d = malloc(n * sizeof(double) + 1);

    assert_non_null(d);
    decode_d(t, in, n, d);
    for (size_t i = 0; i < n; i++)
        val[i] = (float)d[i];
    free(d);
}

void *
dev_alloc(size_t bytes)
{
    void *d = NULL;

    assert_int_equal(cudaMalloc(&d, bytes), cudaSuccess);
    return d;
}

void *
dev_upload(const void *host, size_t bytes)
{
    void *d = dev_alloc(bytes);

    assert_int_equal(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice),
                     cudaSuccess);
    return d;
}

void
dev_download(void *host, const void *dev, size_t bytes)
{
    assert_int_equal(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost),
                     cudaSuccess);
}

void
dev_free(void *d)
{
    assert_int_equal(cudaFree(d), cudaSuccess);
}

cudnnHandle_t
handle_new(void)
{
    cudnnHandle_t h = NULL;

    DNN_OK(cudnnCreate(&h));
    assert_non_null(h);
    return h;
}

cudnnTensorDescriptor_t
tensor_new(cudnnTensorFormat_t format, cudnnDataType_t type, int nb,
           const int *dim)
{
    cudnnTensorDescriptor_t t;

    DNN_OK(cudnnCreateTensorDescriptor(&t));
    DNN_OK(cudnnSetTensorNdDescriptorEx(t, format, type, nb, dim));
    return t;
}

static void
tensor_shape(cudnnTensorDescriptor_t t, cudnnDataType_t *type, int *nb,
             int dim[CUDNN_DIM_MAX], int stride[CUDNN_DIM_MAX])
{
    DNN_OK(cudnnGetTensorNdDescriptor(t, CUDNN_DIM_MAX, type, nb, dim,
                                      stride));
}

int64_t
tensor_offset(cudnnTensorDescriptor_t t, size_t lin)
{
    int dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], nb;
    cudnnDataType_t type;
    int64_t off = 0;

    tensor_shape(t, &type, &nb, dim, stride);
    for (int i = nb - 1; i >= 0; i--) {
        off += (int64_t)(lin % (size_t)dim[i]) * stride[i];
        lin /= (size_t)dim[i];
    }
    return off;
}

size_t
tensor_span(cudnnTensorDescriptor_t t)
{
    size_t bytes;
    cudnnDataType_t type;
    int dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], nb;

    tensor_shape(t, &type, &nb, dim, stride);
    DNN_OK(cudnnGetTensorSizeInBytes(t, &bytes));
    return bytes / elem_size(type);
}

void *
tensor_upload_d(cudnnTensorDescriptor_t t, const double *val, double fill)
{
    int dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], nb;
    cudnnDataType_t type;
    size_t span = tensor_span(t), n = tensor_count(t);
    double *host = malloc(span * sizeof(double));
    void *enc, *d;

    tensor_shape(t, &type, &nb, dim, stride);
    assert_non_null(host);
    for (size_t i = 0; i < span; i++)
        host[i] = fill;
    for (size_t i = 0; i < n; i++)
        host[tensor_offset(t, i)] = val[i];
    enc = encode_d(type, host, span);
    d = dev_upload(enc, span * elem_size(type));
    free(enc);
    free(host);
    return d;
}

void
tensor_download_d(cudnnTensorDescriptor_t t, const void *dev, double *val)
{
    int dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], nb;
    cudnnDataType_t type;
    size_t span = tensor_span(t), n = tensor_count(t);
    void *enc;
    double *host = malloc(span * sizeof(double));

    tensor_shape(t, &type, &nb, dim, stride);
    enc = malloc(span * elem_size(type));
    assert_true(host != NULL && enc != NULL);
    dev_download(enc, dev, span * elem_size(type));
    decode_d(type, enc, span, host);
    for (size_t i = 0; i < n; i++)
        val[i] = host[tensor_offset(t, i)];
    free(enc);
    free(host);
}

void *
tensor_upload(cudnnTensorDescriptor_t t, const float *val, float fill)
{
    size_t n = tensor_count(t);
    double *d = to_double(val, n);
    void *dev = tensor_upload_d(t, d, fill);

    free(d);
    return dev;
}

void
tensor_download(cudnnTensorDescriptor_t t, const void *dev, float *val)
{
    size_t n = tensor_count(t);
    double *d = malloc(n * sizeof(double) + 1);

    assert_non_null(d);
    tensor_download_d(t, dev, d);
    for (size_t i = 0; i < n; i++)
        val[i] = (float)d[i];
    free(d);
}

size_t
tensor_count(cudnnTensorDescriptor_t t)
{
    int dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], nb;
    cudnnDataType_t type;
    size_t n = 1;

    tensor_shape(t, &type, &nb, dim, stride);
    for (int i = 0; i < nb; i++)
        n *= (size_t)dim[i];
    return n;
}

cudnnTensorDescriptor_t
tensor_layout(enum layout layout, cudnnDataType_t type, int nb,
              const int *dim)
{
    cudnnTensorDescriptor_t t;
    int stride[CUDNN_DIM_MAX], order[CUDNN_DIM_MAX], s = 1;

    if (layout != LAYOUT_PADDED)
        return tensor_new(layout == LAYOUT_NHWC ? CUDNN_TENSOR_NHWC
                                                : CUDNN_TENSOR_NCHW,
                          type, nb, dim);
    /* C innermost, then the spatial dimensions, then N, each with a gap
     * of one element after it. */
    order[0] = 1;
    for (int i = 1; i < nb - 1; i++)
        order[i] = nb - i;
    order[nb - 1] = 0;
    for (int i = 0; i < nb; i++) {
        stride[order[i]] = s;
        s = s * dim[order[i]] + 1;
    }
    DNN_OK(cudnnCreateTensorDescriptor(&t));
    DNN_OK(cudnnSetTensorNdDescriptor(t, type, nb, dim, stride));
    return t;
}

/* ---- Cases, values, comparisons ------------------------------------------ */

const struct ew_case ew_cases[] = {
    { CUDNN_DATA_FLOAT, LAYOUT_NCHW, 1.0, 0.0 },
    { CUDNN_DATA_FLOAT, LAYOUT_NHWC, 0.5, 0.25 },
    { CUDNN_DATA_FLOAT, LAYOUT_PADDED, 2.0, -1.0 },
    { CUDNN_DATA_DOUBLE, LAYOUT_NCHW, 1.5, 0.0 },
    { CUDNN_DATA_DOUBLE, LAYOUT_PADDED, 0.75, 0.5 },
    { CUDNN_DATA_HALF, LAYOUT_NHWC, 1.0, 0.5 },
    { CUDNN_DATA_BFLOAT16, LAYOUT_PADDED, 0.5, 0.0 },
};
const size_t ew_case_count = sizeof(ew_cases) / sizeof(ew_cases[0]);

/* A host scaling factor as cuDNN reads it for tensors of type t. */
const void *
scalar(union scalar *s, cudnnDataType_t t, double v)
{
    if (t == CUDNN_DATA_DOUBLE)
        s->d = v;
    else
        s->f = (float)v;
    return s;
}

/* n values exact in the type: multiples of 1/64 for HALF and BFLOAT16,
 * 24-bit values otherwise, times `scale`. */
double *
exact_values(size_t n, cudnnDataType_t t, double scale)
{
    double *v = malloc(n * sizeof(double) + 1);

    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = scale * (t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16
                            ? rnd_grid()
                            : rnd());
    return v;
}

double *
nans(size_t n)
{
    double *v = malloc(n * sizeof(double) + 1);

    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = NAN;
    return v;
}

/* The output's old values: NaN when beta is 0, else values. */
double *
old_values(size_t n, const struct ew_case *c)
{
    return c->beta == 0.0 ? nans(n) : exact_values(n, c->type, 1.0);
}

/* Relative error allowed in a result of type t computed from exact
 * inputs: the type's rounding, and FP32 arithmetic for FLOAT. */
double
tol_of(cudnnDataType_t t)
{
    switch (t) {
    case CUDNN_DATA_DOUBLE:
        return 1e-12;
    case CUDNN_DATA_HALF:
        return 1.0 / 1024;
    case CUDNN_DATA_BFLOAT16:
        return 1.0 / 128;
    default:
        return 2e-6;
    }
}

void
assert_close(double got, double want, double tol, const char *what,
             size_t i)
{
    if (isnan(want) && isnan(got))
        return;
    if (!(fabs(got - want) <= tol * (1.0 + fabs(want))))
        fail_msg("%s[%zu]: got %.12g, want %.12g", what, i, got, want);
}

size_t
count_of(int nb, const int *dim)
{
    size_t n = 1;

    for (int i = 0; i < nb; i++)
        n *= (size_t)dim[i];
    return n;
}

/* Writes host values into an existing device tensor. */
void
tensor_put_d(cudnnTensorDescriptor_t t, void *dev, const double *val)
{
    size_t span = tensor_span(t), n = tensor_count(t);
    double *host = calloc(span, sizeof(double));
    cudnnDataType_t type;
    int nb, dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX];
    void *enc;

    assert_non_null(host);
    DNN_OK(cudnnGetTensorNdDescriptor(t, CUDNN_DIM_MAX, &type, &nb, dim,
                                      stride));
    for (size_t i = 0; i < n; i++)
        host[tensor_offset(t, i)] = val[i];
    enc = encode_d(type, host, span);
    assert_int_equal(cudaMemcpy(dev, enc, span * elem_size(type),
                                cudaMemcpyHostToDevice),
                     cudaSuccess);
    free(enc);
    free(host);
}

/* ---- Central differences ------------------------------------------------- */

/* dx (of the loss sum_i dy[i] y[i]) against its central difference in
 * each x[j]; forward runs in DOUBLE, so the difference is good to about
 * 1e-9. */
void
check_gradient(forward_fn forward, void *ctx, size_t nx, size_t ny,
               const double *x, const double *dy, const double *dx)
{
    double *xs = malloc(nx * sizeof(double)), *yp = malloc(ny * 8);
    double *ym = malloc(ny * sizeof(double));

    assert_true(xs != NULL && yp != NULL && ym != NULL);
    memcpy(xs, x, nx * sizeof(double));
    for (size_t j = 0; j < nx; j++) {
        double h = 1e-5 * (1.0 + fabs(x[j])), num = 0.0;

        xs[j] = x[j] + h;
        forward(ctx, xs, yp);
        xs[j] = x[j] - h;
        forward(ctx, xs, ym);
        xs[j] = x[j];
        for (size_t i = 0; i < ny; i++)
            num += dy[i] * (yp[i] - ym[i]);
        assert_close(dx[j], num / (2.0 * h), 1e-6, "dx vs difference", j);
    }
    forward(ctx, x, yp);    /* the device inputs as they were */
    free(xs);
    free(yp);
    free(ym);
}
