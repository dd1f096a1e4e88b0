/* Unit tests of the GEMM decision and scratch plan (no device). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "gemm.h"

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
    d.pedantic = 1;
    assert_int_equal(amp_gemm_decide(&d, AMP_MODE_FP16),
                     AMP_GEMM_SKIP_PEDANTIC);
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

/* Leading dimensions padded to multiples of 8, parts 256-byte aligned. */
static void
test_plan(void **state)
{
    struct amp_gemm_desc d = desc(AMP_OP_T, AMP_OP_N, 30, 17, 13, 13, 20, 30);
    struct amp_gemm_plan p;

    amp_gemm_plan(&d, &p);
    assert_int_equal(p.rows_a, 13);
    assert_int_equal(p.cols_a, 30);
    assert_int_equal(p.ld_a16, 16);
    assert_int_equal(p.rows_b, 13);
    assert_int_equal(p.cols_b, 17);
    assert_int_equal(p.ld_b16, 16);
    assert_int_equal(p.off_a, 256);
    assert_int_equal(p.off_a % 256, 0);
    /* A: 16 * 30 halves = 960 bytes -> 1024. */
    assert_int_equal(p.off_b, 256 + 1024);
    /* B: 16 * 17 halves = 544 bytes -> 768. */
    assert_int_equal(p.bytes, 256 + 1024 + 768);

    d = desc(AMP_OP_N, AMP_OP_T, 8, 8, 8, 8, 8, 8);
    amp_gemm_plan(&d, &p);
    assert_int_equal(p.ld_a16, 8);
    assert_int_equal(p.ld_b16, 8);
    assert_int_equal(p.bytes, 256 + 256 + 256);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argument_rules),
        cmocka_unit_test(test_decision),
        cmocka_unit_test(test_plan),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
