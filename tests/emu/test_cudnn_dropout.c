/* Tests for the emulated cuDNN dropout: the sizes, the descriptor (set,
 * restore, get), forward and backward with the mask kept in the reserve
 * space, the rate, reproducibility from the seed, layouts and types, and
 * the documented statuses. */
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

#include "cudnn_test.h"

struct dropout_run {
    cudnnHandle_t h;
    cudnnDropoutDescriptor_t d;
    cudnnTensorDescriptor_t xt, yt;
    void *xd, *yd, *reserve;
    size_t n, reserve_size;
};

/* x (no zeros) in one layout of `type`, y in another. */
static void
run_new(struct dropout_run *r, cudnnHandle_t h, cudnnDataType_t type,
        enum layout xl, enum layout yl, const int *dim, const double *x)
{
    r->h = h;
    r->xt = tensor_layout(xl, type, 4, dim);
    r->yt = tensor_layout(yl, type, 4, dim);
    r->n = tensor_count(r->xt);
    r->xd = tensor_upload_d(r->xt, x, 0.0);
    r->yd = dev_alloc(tensor_span(r->yt) * elem_size(type));
    DNN_OK(cudnnDropoutGetReserveSpaceSize(r->xt, &r->reserve_size));
    assert_true(r->reserve_size >= r->n);
    r->reserve = dev_alloc(r->reserve_size);
    DNN_OK(cudnnCreateDropoutDescriptor(&r->d));
}

static void
run_free(struct dropout_run *r)
{
    DNN_OK(cudnnDestroyDropoutDescriptor(r->d));
    DNN_OK(cudnnDestroyTensorDescriptor(r->xt));
    DNN_OK(cudnnDestroyTensorDescriptor(r->yt));
    dev_free(r->xd), dev_free(r->yd), dev_free(r->reserve);
}

static void
forward(struct dropout_run *r, double *y)
{
    DNN_OK(cudnnDropoutForward(r->h, r->d, r->xt, r->xd, r->yt, r->yd,
                               r->reserve, r->reserve_size));
    tensor_download_d(r->yt, r->yd, y);
}

/* Every y is 0 or x / (1 - p); returns how many were dropped. */
static size_t
check_dropped(const double *x, const double *y, size_t n, float p,
              double tol)
{
    size_t dropped = 0;

    for (size_t i = 0; i < n; i++) {
        if (y[i] == 0.0)
            dropped++;
        else
            assert_close(y[i], x[i] / (1.0 - p), tol, "y", i);
    }
    return dropped;
}

static void
test_dropout(void **state)
{
    static const struct {
        cudnnDataType_t type;
        enum layout xl, yl;
        float p;
    } runs[] = {
        { CUDNN_DATA_FLOAT, LAYOUT_NCHW, LAYOUT_NCHW, 0.3f },
        { CUDNN_DATA_FLOAT, LAYOUT_NHWC, LAYOUT_PADDED, 0.5f },
        { CUDNN_DATA_DOUBLE, LAYOUT_PADDED, LAYOUT_NCHW, 0.1f },
        { CUDNN_DATA_HALF, LAYOUT_NCHW, LAYOUT_NHWC, 0.75f },
        { CUDNN_DATA_BFLOAT16, LAYOUT_NHWC, LAYOUT_NCHW, 0.25f },
    };
    int dim[4] = { 4, 8, 16, 8 };       /* 4096 elements */
    cudnnHandle_t h = handle_new();
    size_t states_size;
    void *states;

    (void)state;
    DNN_OK(cudnnDropoutGetStatesSize(h, &states_size));
    assert_true(states_size > 0);
    states = dev_alloc(states_size);
    for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        cudnnDataType_t type = runs[k].type;
        float p = runs[k].p, gp;
        size_t n = 4096, dropped;
        double *x = exact_values(n, type, 1.0), *y1 = malloc(n * 8);
        double *y2 = malloc(n * 8), *y3 = malloc(n * 8);
        double *dy = exact_values(n, type, 1.0), *dx = malloc(n * 8);
        double tol = tol_of(type) * 2, sd = sqrt(p * (1.0 - p) / n);
        struct dropout_run r;
        cudnnDropoutDescriptor_t restored;
        void *got_states, *dyd, *dxd;
        unsigned long long seed;

        for (size_t i = 0; i < n; i++)
            x[i] = x[i] == 0.0 ? 0.5 : x[i];
        run_new(&r, h, type, runs[k].xl, runs[k].yl, dim, x);
        DNN_OK(cudnnSetDropoutDescriptor(r.d, h, p, states, states_size,
                                         1234 + k));
        DNN_OK(cudnnGetDropoutDescriptor(r.d, h, &gp, &got_states, &seed));
        assert_true(gp == p && got_states == states && seed == 1234 + k);

        /* The rate within 5 standard deviations; kept values scaled. */
        forward(&r, y1);
        dropped = check_dropped(x, y1, n, p, tol);
        assert_true(fabs((double)dropped / n - p) < 5 * sd);

        /* The next call draws another mask, */
        forward(&r, y2);
        assert_true(memcmp(y1, y2, n * 8) != 0);
        check_dropped(x, y2, n, p, tol);
        /* which backward applies from the reserve space: dy / (1 - p)
         * where y was kept, 0 where it was dropped. */
        dyd = tensor_upload_d(r.yt, dy, 0.0);
        dxd = dev_alloc(tensor_span(r.xt) * elem_size(type));
        DNN_OK(cudnnDropoutBackward(h, r.d, r.yt, dyd, r.xt, dxd, r.reserve,
                                    r.reserve_size));
        tensor_download_d(r.xt, dxd, dx);
        for (size_t i = 0; i < n; i++)
            assert_close(dx[i], y2[i] == 0.0 ? 0.0 : dy[i] / (1.0 - p), tol,
                         "dx", i);

        /* The same seed set again draws the first mask again; a
         * descriptor restored on the states continues where they are. */
        DNN_OK(cudnnSetDropoutDescriptor(r.d, h, p, states, states_size,
                                         1234 + k));
        forward(&r, y3);
        assert_memory_equal(y1, y3, n * 8);
        DNN_OK(cudnnCreateDropoutDescriptor(&restored));
        DNN_OK(cudnnRestoreDropoutDescriptor(restored, h, p, states,
                                             states_size, 1234 + k));
        DNN_OK(cudnnDropoutForward(h, restored, r.xt, r.xd, r.yt, r.yd,
                                   r.reserve, r.reserve_size));
        tensor_download_d(r.yt, r.yd, y3);
        assert_memory_equal(y2, y3, n * 8);
        DNN_OK(cudnnDestroyDropoutDescriptor(restored));

        /* Another seed, another mask. */
        DNN_OK(cudnnSetDropoutDescriptor(r.d, h, p, states, states_size,
                                         99));
        forward(&r, y3);
        assert_true(memcmp(y1, y3, n * 8) != 0);
        check_dropped(x, y3, n, p, tol);
        free(x), free(y1), free(y2), free(y3), free(dy), free(dx);
        dev_free(dyd), dev_free(dxd);
        run_free(&r);
    }
    dev_free(states);
    DNN_OK(cudnnDestroy(h));
}

/* 0 keeps everything as it is, 1 drops everything; in place. */
static void
test_dropout_bounds(void **state)
{
    int dim[4] = { 2, 3, 4, 5 };
    cudnnHandle_t h = handle_new();
    double *x = exact_values(120, CUDNN_DATA_FLOAT, 1.0), y[120];
    struct dropout_run r;
    size_t states_size;
    void *states;

    (void)state;
    DNN_OK(cudnnDropoutGetStatesSize(h, &states_size));
    states = dev_alloc(states_size);
    run_new(&r, h, CUDNN_DATA_FLOAT, LAYOUT_NHWC, LAYOUT_NHWC, dim, x);
    DNN_OK(cudnnSetDropoutDescriptor(r.d, h, 0.0f, states, states_size, 1));
    DNN_OK(cudnnDropoutForward(h, r.d, r.xt, r.xd, r.xt, r.xd, r.reserve,
                               r.reserve_size));
    tensor_download_d(r.xt, r.xd, y);
    assert_memory_equal(x, y, sizeof(y));
    DNN_OK(cudnnSetDropoutDescriptor(r.d, h, 1.0f, states, states_size, 1));
    forward(&r, y);
    for (int i = 0; i < 120; i++)
        assert_true(y[i] == 0.0);
    free(x);
    dev_free(states);
    run_free(&r);
    DNN_OK(cudnnDestroy(h));
}

static void
test_dropout_statuses(void **state)
{
    int dim[4] = { 2, 3, 4, 5 }, same_count[4] = { 1, 6, 5, 4 };
    int other[4] = { 2, 3, 4, 4 };
    cudnnHandle_t h = handle_new();
    double *x = exact_values(120, CUDNN_DATA_FLOAT, 1.0);
    cudnnTensorDescriptor_t flat = tensor_new(CUDNN_TENSOR_NCHW,
                                              CUDNN_DATA_FLOAT, 4,
                                              same_count);
    cudnnTensorDescriptor_t fewer = tensor_new(CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 4, other);
    cudnnTensorDescriptor_t half = tensor_new(CUDNN_TENSOR_NCHW,
                                              CUDNN_DATA_HALF, 4, dim);
    cudnnTensorDescriptor_t i8 = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_INT8, 4, dim);
    cudnnTensorDescriptor_t nhwc = tensor_new(CUDNN_TENSOR_NHWC,
                                              CUDNN_DATA_FLOAT, 4, dim);
    struct dropout_run r;
    size_t states_size, size;
    unsigned long long seed;
    void *states, *got_states;
    float p;

    (void)state;
    DNN_OK(cudnnDropoutGetStatesSize(h, &states_size));
    states = dev_alloc(states_size);
    run_new(&r, h, CUDNN_DATA_FLOAT, LAYOUT_NCHW, LAYOUT_NCHW, dim, x);
    assert_int_equal(cudnnDropoutGetStatesSize(NULL, &size),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnDropoutGetStatesSize(h, NULL),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudnnDropoutGetReserveSpaceSize(NULL, &size),
                     CUDNN_STATUS_BAD_PARAM);

    /* Without states the descriptor is set, and dropout refuses it. */
    DNN_OK(cudnnSetDropoutDescriptor(r.d, h, 0.5f, NULL, 0, 3));
    DNN_OK(cudnnGetDropoutDescriptor(r.d, h, &p, &got_states, &seed));
    assert_true(p == 0.5f && got_states == NULL && seed == 3);
    assert_int_equal(cudnnDropoutForward(h, r.d, r.xt, r.xd, r.yt, r.yd,
                                         r.reserve, r.reserve_size),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetDropoutDescriptor(r.d, h, 1.5f, states,
                                               states_size, 3),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetDropoutDescriptor(r.d, h, -0.1f, states,
                                               states_size, 3),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetDropoutDescriptor(r.d, h, 0.5f, states,
                                               states_size - 1, 3),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetDropoutDescriptor(r.d, NULL, 0.5f, states,
                                               states_size, 3),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnGetDropoutDescriptor(r.d, h, &p, NULL, &seed),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);

    DNN_OK(cudnnSetDropoutDescriptor(r.d, h, 0.5f, states, states_size, 3));
    /* The same number of elements in another shape is allowed. */
    DNN_OK(cudnnDropoutForward(h, r.d, r.xt, r.xd, flat, r.yd, r.reserve,
                               r.reserve_size));
    assert_int_equal(cudnnDropoutForward(h, r.d, r.xt, r.xd, fewer, r.yd,
                                         r.reserve, r.reserve_size),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnDropoutForward(h, r.d, r.xt, r.xd, half, r.yd,
                                         r.reserve, r.reserve_size),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnDropoutForward(h, r.d, r.xt, r.xd, nhwc, r.xd,
                                         r.reserve, r.reserve_size),
                     CUDNN_STATUS_BAD_PARAM);   /* in place, NHWC */
    assert_int_equal(cudnnDropoutForward(h, r.d, r.xt, r.xd, r.yt, r.yd,
                                         r.reserve, 100),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnDropoutBackward(h, r.d, r.yt, r.yd, r.xt, r.xd,
                                          r.reserve, 100),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnDropoutForward(h, r.d, r.xt, NULL, r.yt, r.yd,
                                         r.reserve, r.reserve_size),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudnnDropoutForward(h, r.d, r.xt, r.xd, r.yt, r.yd,
                                         NULL, r.reserve_size),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudnnDropoutForward(h, r.d, i8, r.xd, i8, r.yd,
                                         r.reserve, r.reserve_size),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    free(x);
    dev_free(states);
    run_free(&r);
    DNN_OK(cudnnDestroyTensorDescriptor(flat));
    DNN_OK(cudnnDestroyTensorDescriptor(fewer));
    DNN_OK(cudnnDestroyTensorDescriptor(half));
    DNN_OK(cudnnDestroyTensorDescriptor(i8));
    DNN_OK(cudnnDestroyTensorDescriptor(nhwc));
    DNN_OK(cudnnDestroy(h));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_dropout_bounds),
        cmocka_unit_test(test_dropout_statuses),
    };

    unsetenv("AMPSHIM_EMU_FAIL");
    return cmocka_run_group_tests_name("emu_cudnn_dropout", tests, NULL,
                                       NULL);
}
