/* Unit tests of the FP16 preparation of a GEMM on the emulated driver:
 * the scratch holds the scales, compensated scalars and casts the math
 * implies, on the caller's stream, and failures leave nothing behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "amp_math.h"
#include "emu_child.h"
#include "gemm.h"

#include <cuda.h>
#include <math.h>
#include <string.h>

#define M 5
#define N 3
#define K 7
#define LDA 9 /* A is op T: stored K x M in LDA */
#define LDB 7 /* B is op N: stored K x N */

static float host_a[LDA * M], host_b[LDB * N];
static CUdeviceptr dev_a, dev_b, dev_scalars;
static CUstream stream;

static int
setup(void **state)
{
    CUcontext ctx;
    CUdevice dev;
    int i;

    for (i = 0; i < LDA * M; i++)
        host_a[i] = (float)((i * 37) % 23 - 11) * 1e-3f; /* max 0.011 */
    for (i = 0; i < LDB * N; i++)
        host_b[i] = (float)((i * 11) % 19 - 9) * 300.0f; /* max 2700 */
    host_a[2] = -0.5f; /* the maximum sits in a used element */
    if (cuInit(0) || cuDeviceGet(&dev, 0) ||
        cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
        cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) ||
        cuMemAlloc(&dev_a, sizeof host_a) || cuMemAlloc(&dev_b, sizeof host_b) ||
        cuMemAlloc(&dev_scalars, 2 * sizeof(float)) ||
        cuMemcpyHtoD(dev_a, host_a, sizeof host_a) ||
        cuMemcpyHtoD(dev_b, host_b, sizeof host_b))
        return -1;
    return 0;
}

static struct amp_gemm_desc
desc(const float *alpha, const float *beta, int on_device)
{
    struct amp_gemm_desc d = {
        .transa = AMP_OP_T, .transb = AMP_OP_N, .ops_valid = 1,
        .m = M, .n = N, .k = K, .lda = LDA, .ldb = LDB, .ldc = M,
        .a = dev_a, .b = dev_b, .alpha = alpha, .beta = beta,
        .scalars_on_device = on_device, .stream = stream,
    };
    return d;
}

/* Largest |x| over the used K x cols part of a matrix. */
static float
absmax(const float *x, int ld, int rows, int cols)
{
    float best = 0.0f;
    int r, c;

    for (c = 0; c < cols; c++)
        for (r = 0; r < rows; r++)
            if (fabsf(x[c * ld + r]) > best)
                best = fabsf(x[c * ld + r]);
    return best;
}

static void
check_prepared(const struct amp_gemm_f16 *f16, float alpha, float beta)
{
    struct amp_gemm_scalars s;
    uint16_t a16[8 * M], b16[8 * N];
    float dev_alpha, dev_beta;
    int ea = 14 - (int)floorf(log2f(absmax(host_a, LDA, K, M)));
    int eb = 14 - (int)floorf(log2f(absmax(host_b, LDB, K, N)));
    int r, c;

    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(&s, f16->scratch, sizeof s), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(a16, f16->a16, sizeof a16), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(b16, f16->b16, sizeof b16), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(&dev_alpha, f16->alpha, 4), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(&dev_beta, f16->beta, 4), CUDA_SUCCESS);

    assert_int_equal(f16->lda16, 8);
    assert_int_equal(f16->ldb16, 8);
    assert_int_equal(f16->a16 % 16, 0);
    assert_int_equal(f16->b16 % 16, 0);
    assert_int_equal(s.exp_a, ea);
    assert_int_equal(s.exp_b, eb);
    assert_true(dev_alpha == ldexpf(alpha, -(ea + eb)));
    assert_true(dev_beta == beta);
    for (c = 0; c < M; c++)
        for (r = 0; r < K; r++)
            assert_int_equal(a16[c * 8 + r],
                             amp_f32_to_f16(ldexpf(host_a[c * LDA + r], ea)));
    for (c = 0; c < N; c++)
        for (r = 0; r < K; r++)
            assert_int_equal(b16[c * 8 + r],
                             amp_f32_to_f16(ldexpf(host_b[c * LDB + r], eb)));
}

static void
test_host_scalars(void **state)
{
    const float alpha = 1.5f, beta = -0.25f;
    struct amp_gemm_desc d = desc(&alpha, &beta, 0);
    struct amp_gemm_f16 f16 = {0};
    struct amp_dev *dev = amp_dev_current();

    assert_non_null(dev);
    assert_int_equal(amp_gemm_prepare_f16(dev, &d, 1 << 20, &f16), AMP_OK);
    check_prepared(&f16, alpha, beta);
    amp_gemm_release_f16(&f16);
    assert_true(f16.scratch == 0);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
}

/* Device pointer mode: alpha and beta are read on the device by the
 * queued work; the host never dereferences them (it would fault). */
static void
test_device_scalars(void **state)
{
    const float values[2] = {-3.0f, 0.0f};
    const float *alpha = (const float *)(uintptr_t)dev_scalars;
    const float *beta = (const float *)(uintptr_t)(dev_scalars + 4);
    struct amp_gemm_desc d = desc(alpha, beta, 1);
    struct amp_gemm_f16 f16 = {0};
    struct amp_dev *dev = amp_dev_current();

    assert_int_equal(cuMemcpyHtoD(dev_scalars, values, sizeof values),
                     CUDA_SUCCESS);
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16), AMP_GEMM_CONVERT);
    assert_int_equal(amp_gemm_prepare_f16(dev, &d, 1 << 20, &f16), AMP_OK);
    check_prepared(&f16, values[0], values[1]);
    amp_gemm_release_f16(&f16);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
}

/* Work is queued, not done: before the stream is synchronised the
 * scratch does not hold the casts yet. */
static void
test_work_is_stream_ordered(void **state)
{
    const float alpha = 1.0f, beta = 0.0f;
    struct amp_gemm_desc d = desc(&alpha, &beta, 0);
    struct amp_gemm_f16 f16 = {0};
    uint16_t first;

    assert_int_equal(amp_gemm_prepare_f16(amp_dev_current(), &d, 1 << 20,
                                          &f16),
                     AMP_OK);
    assert_int_equal(cuMemcpyDtoH(&first, f16.a16, 2), CUDA_SUCCESS);
    assert_int_not_equal(first, amp_f32_to_f16(ldexpf(host_a[0], 14 + 1)));
    check_prepared(&f16, alpha, beta);
    amp_gemm_release_f16(&f16);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
}

static void
test_scratch_cap(void **state)
{
    const float alpha = 1.0f, beta = 0.0f;
    struct amp_gemm_desc d = desc(&alpha, &beta, 0);
    struct amp_gemm_plan p;
    struct amp_gemm_f16 f16 = {0};

    amp_gemm_plan(&d, &p);
    assert_int_equal(amp_gemm_prepare_f16(amp_dev_current(), &d,
                                          p.bytes - 1, &f16),
                     AMP_ERR_TOO_BIG);
    assert_true(f16.scratch == 0);
}

/* A failure at any step frees the scratch: free memory is back where it
 * was once the stream has run. Exits 0 when it held. */
static int
child(const char *scenario)
{
    const float alpha = 1.0f, beta = 0.0f;
    struct amp_gemm_desc d;
    struct amp_gemm_f16 f16 = {0};
    size_t free_before, free_after, total;

    if (setup(NULL) != 0)
        return 10;
    d = desc(&alpha, &beta, 0);
    if (cuStreamSynchronize(stream) || cuMemGetInfo(&free_before, &total))
        return 11;
    if (amp_gemm_prepare_f16(amp_dev_current(), &d, 1 << 20, &f16) !=
        AMP_ERR_DRIVER)
        return 1;
    if (cuStreamSynchronize(stream) || cuMemGetInfo(&free_after, &total))
        return 12;
    (void)scenario;
    return free_after == free_before ? 0 : 2;
}

static void
test_failures_leave_nothing(void **state)
{
    static const char *const faults[] = {
        "alloc-async:1", "launch:1", "launch:2", "launch:3", "launch:4",
        "launch:5",
    };
    size_t i;

    for (i = 0; i < sizeof faults / sizeof *faults; i++)
        assert_int_equal(amp_test_run_child("fault", faults[i]), 0);
    /* Five launches per call: a sixth fault never fires. */
    assert_int_equal(amp_test_run_child("fault", "launch:6"), 1);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_scalars),
        cmocka_unit_test(test_device_scalars),
        cmocka_unit_test(test_work_is_stream_ordered),
        cmocka_unit_test(test_scratch_cap),
        cmocka_unit_test(test_failures_leave_nothing),
    };

    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child(argv[2]);
    return cmocka_run_group_tests(tests, setup, NULL);
}
