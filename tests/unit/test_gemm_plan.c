/* Unit tests of the GEMM decision and scratch plan (no device). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "run/gemm.h"

static const float one = 1.0f, zero = 0.0f;

static struct amp_gemm_desc
desc(enum amp_op ta, enum amp_op tb, int64_t m, int64_t n, int64_t k,
     int64_t lda, int64_t ldb, int64_t ldc)
{
    struct amp_gemm_desc d = {
        .transa = ta, .transb = tb, .ops_valid = 1, .m = m, .n = n, .k = k,
        .lda = lda, .ldb = ldb, .ldc = ldc, .alpha = &one, .beta = &zero,
    };
    return d;
}

/* cuBLAS's rules: lda >= max(1, rows of A as stored), and so on. */
static void
test_argument_rules(void **state)
{
    struct amp_gemm_desc d = desc(AMP_OP_N, AMP_OP_N, 4, 5, 6, 4, 6, 4);

    assert_true(amp_gemm_args_valid(&d));
    d.lda = 3;
    assert_false(amp_gemm_args_valid(&d));
    d = desc(AMP_OP_T, AMP_OP_N, 4, 5, 6, 6, 6, 4); /* A stored 6 x 4 */
    assert_true(amp_gemm_args_valid(&d));
    d.lda = 5;
    assert_false(amp_gemm_args_valid(&d));
    d = desc(AMP_OP_N, AMP_OP_T, 4, 5, 6, 4, 5, 4); /* B stored 5 x 6 */
    assert_true(amp_gemm_args_valid(&d));
    d.ldb = 4;
    assert_false(amp_gemm_args_valid(&d));
    d = desc(AMP_OP_N, AMP_OP_N, 4, 5, 6, 4, 6, 3);
    assert_false(amp_gemm_args_valid(&d));
    d = desc(AMP_OP_N, AMP_OP_N, 0, 0, 0, 1, 1, 1);
    assert_true(amp_gemm_args_valid(&d));
    d.lda = 0;
    assert_false(amp_gemm_args_valid(&d));
    d = desc(AMP_OP_N, AMP_OP_N, -1, 5, 6, 4, 6, 4);
    assert_false(amp_gemm_args_valid(&d));
    d = desc(AMP_OP_N, AMP_OP_N, 4, 5, -6, 4, 6, 4);
    assert_false(amp_gemm_args_valid(&d));
    d = desc(AMP_OP_N, AMP_OP_N, 4, 5, 6, 4, 6, 4);
    d.ops_valid = 0;
    assert_false(amp_gemm_args_valid(&d));
}

static void
test_decision(void **state)
{
    static const float host_zero = 0.0f;
    struct amp_gemm_desc d = desc(AMP_OP_N, AMP_OP_N, 64, 64, 64, 64, 64, 64);

    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16), AMP_GEMM_CONVERT);
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP32), AMP_GEMM_SKIP_MODE);
    /* Pedantic math goes to the policy, which keeps it FP32 unless a
     * rule names `math` (test_policy). */
    d.pedantic = 1;
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16), AMP_GEMM_CONVERT);
    d.pedantic = 0;
    d.k = 0;
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16), AMP_GEMM_SKIP_EMPTY);
    d.k = 64;
    d.alpha = &host_zero;
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16), AMP_GEMM_SKIP_EMPTY);
    /* A device alpha is never read on the host. */
    d.alpha = (const float *)(uintptr_t)0x10;
    d.scalars_on_device = 1;
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16), AMP_GEMM_CONVERT);
    d.ldc = 1;
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16),
                     AMP_GEMM_SKIP_INVALID);
    assert_string_equal(amp_gemm_skip_reason(AMP_GEMM_SKIP_INVALID),
                        "invalid arguments");
}

/* Batched descriptors: cuBLAS refuses a negative batch count, and a batch
 * of 0 is an empty call; a single GEMM is one problem whatever its batch
 * field says. */
static void
test_batched_decision(void **state)
{
    struct amp_gemm_desc d = desc(AMP_OP_N, AMP_OP_T, 16, 8, 4, 16, 8, 16);

    d.batch_kind = AMP_BATCH_STRIDED;
    d.batch = 3;
    d.stride_a = 64;
    assert_true(amp_gemm_args_valid(&d));
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16X3), AMP_GEMM_CONVERT);
    d.batch = 0;
    assert_true(amp_gemm_args_valid(&d));
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_BF16), AMP_GEMM_SKIP_EMPTY);
    d.batch = -1;
    assert_false(amp_gemm_args_valid(&d));
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16),
                     AMP_GEMM_SKIP_INVALID);
    d.batch_kind = AMP_BATCH_ARRAY;
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_TF32),
                     AMP_GEMM_SKIP_INVALID);
    d.batch = 2;
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_SHADOW), AMP_GEMM_CONVERT);
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP32), AMP_GEMM_SKIP_MODE);
    d.batch_kind = AMP_BATCH_NONE;
    d.batch = 0;
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16), AMP_GEMM_CONVERT);
    d.batch = -5;
    assert_true(amp_gemm_args_valid(&d));
    assert_string_equal(amp_gemm_skip_reason(AMP_GEMM_SKIP_EMPTY),
                        "empty product");
    assert_string_equal(amp_gemm_skip_reason(AMP_GEMM_SKIP_COUNT), "?");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argument_rules),
        cmocka_unit_test(test_decision),
        cmocka_unit_test(test_batched_decision),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
