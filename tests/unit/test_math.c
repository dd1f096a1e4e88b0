/* Unit tests of the kernels' element-wise math (kernels/amp_math.h), on
 * the host, against the emulator's independent conversions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "amp_math.h"
#include "emu.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static float
from_bits(uint32_t u)
{
    return amp_bits_f32(u);
}

/* A half NaN: exponent all ones, mantissa not zero. */
static int
f16_is_nan(uint16_t h)
{
    return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}

/* Every non-NaN half survives the round trip through float bit for bit
 * and agrees with the emulator. NaN payloads and signs are left open by
 * the hardware conversions, so a NaN need only come back as a NaN. */
static void
test_f16_round_trip_exhaustive(void **state)
{
    uint32_t h;

    for (h = 0; h <= 0xffff; h++) {
        float f = amp_f16_to_f32((uint16_t)h);

        if (f16_is_nan((uint16_t)h)) {
            assert_true(isnan(f));
            assert_true(isnan(emu_f16_to_f32((uint16_t)h)));
            assert_true(f16_is_nan(amp_f32_to_f16(f)));
            continue;
        }
        assert_int_equal(amp_f32_bits(f), amp_f32_bits(emu_f16_to_f32(
                                              (uint16_t)h)));
        assert_int_equal(amp_f32_to_f16(f), h);
    }
}

/* The shim's and the emulator's FP32 to FP16 agree: bit for bit, or both
 * NaN. */
static void
assert_f16_agree(uint32_t x)
{
    uint16_t mine = amp_f32_to_f16(from_bits(x));
    uint16_t theirs = emu_f32_to_f16(from_bits(x));

    if (f16_is_nan(mine) || f16_is_nan(theirs)) {
        assert_true(f16_is_nan(mine) && f16_is_nan(theirs));
        return;
    }
    assert_int_equal(mine, theirs);
}

/* FP32 to FP16 agrees with the emulator on every 97th bit pattern (44
 * million values covering every exponent) and around every half. */
static void
test_f16_matches_emulator(void **state)
{
    uint64_t u;
    uint32_t h;

    for (u = 0; u <= 0xffffffffull; u += 97)
        assert_f16_agree((uint32_t)u);
    for (h = 0; h < 0x7c00; h++) {
        uint32_t x = amp_f32_bits(amp_f16_to_f32((uint16_t)h));
        int d;
        for (d = -3; d <= 3; d++) {
            uint32_t y = x + (uint32_t)d + 0x1000u; /* near the midpoint up */
            assert_f16_agree(y);
            assert_f16_agree(y | 0x80000000u);
        }
    }
}

static void
test_f16_edges(void **state)
{
    assert_int_equal(amp_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(amp_f32_to_f16(65519.99f), 0x7bff);
    assert_int_equal(amp_f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(amp_f32_to_f16(-1e10f), 0xfc00);
    assert_int_equal(amp_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
    assert_int_equal(amp_f32_to_f16(ldexpf(1.0f, -25)), 0x0000);
    assert_int_equal(amp_f32_to_f16(ldexpf(1.5f, -25)), 0x0001);
    assert_int_equal(amp_f32_to_f16(ldexpf(1.0f, -14)), 0x0400);
    assert_int_equal(amp_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(amp_f32_to_f16(INFINITY), 0x7c00);
    assert_true((amp_f32_to_f16(NAN) & 0x7fff) > 0x7c00);
    assert_int_equal(amp_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    assert_int_equal(amp_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
}

static void
test_bf16_matches_emulator(void **state)
{
    uint64_t u;

    for (u = 0; u <= 0xffffffffull; u += 101)
        assert_int_equal(amp_f32_to_bf16(from_bits((uint32_t)u)),
                         emu_f32_to_bf16(from_bits((uint32_t)u)));
}

static void
test_scale_exponent(void **state)
{
    assert_int_equal(amp_f16_scale_exp(0.0f), 0);
    assert_int_equal(amp_f16_scale_exp(INFINITY), 0);
    assert_int_equal(amp_f16_scale_exp(NAN), 0);
    assert_int_equal(amp_f16_scale_exp(1.0f), 14);
    assert_int_equal(amp_f16_scale_exp(1.999f), 14);
    assert_int_equal(amp_f16_scale_exp(2.0f), 13);
    assert_int_equal(amp_f16_scale_exp(1e6f), 14 - 19);
    assert_int_equal(amp_f16_scale_exp(3.0e38f), -113);
    assert_int_equal(amp_f16_scale_exp(ldexpf(1.0f, -149)), 127);
    assert_int_equal(amp_f16_scale_exp(ldexpf(1.0f, -130)), 127);
    assert_int_equal(amp_f16_scale_exp(ldexpf(1.0f, -100)), 114);
}

/* Any finite maximum from 2^-113 up lands in [2^14, 2^15) after scaling
 * (below that the scale is clamped at 2^127). */
static void
test_scaled_maximum_fits(void **state)
{
    int e;

    for (e = -113; e <= 120; e++) {
        float absmax = ldexpf(1.37f, e);
        float scaled = absmax * amp_pow2f(amp_f16_scale_exp(absmax));
        assert_true(scaled >= 16384.0f && scaled < 32768.0f);
        assert_true(amp_f32_to_f16(scaled) < 0x7c00);
    }
}

static struct amp_gemm_scalars
scalars(float absmax_a, float absmax_b, float alpha, float beta)
{
    struct amp_gemm_scalars s = {.absmax_a = amp_f32_bits(absmax_a),
                                 .absmax_b = amp_f32_bits(absmax_b)};

    amp_gemm_scalars_finish(&s, alpha, beta);
    return s;
}

/* alpha' * 2^eA * 2^eB == alpha exactly. */
static void
test_alpha_compensation_exact(void **state)
{
    struct amp_gemm_scalars s = scalars(1000.0f, 0.001f, 0.7f, -2.5f);

    assert_int_equal(s.exp_a, 14 - 9);
    assert_int_equal(s.exp_b, 14 + 10);
    assert_true(s.scale_a == 32.0f);
    assert_true(s.scale_b == ldexpf(1.0f, 24));
    assert_true(s.alpha * s.scale_a * s.scale_b == 0.7f);
    assert_true(s.alpha == ldexpf(0.7f, -29));
    assert_true(s.beta == -2.5f);
}

/* Where the compensated alpha would leave the normal range, scaling is
 * dropped so that nothing is rounded. */
static void
test_alpha_compensation_never_inexact(void **state)
{
    struct amp_gemm_scalars tiny = scalars(1e-30f, 1e-30f, 1e-30f, 0.0f);
    struct amp_gemm_scalars huge = scalars(1e30f, 1e30f, 1e30f, 0.0f);
    struct amp_gemm_scalars zero = scalars(1e-30f, 1e-30f, 0.0f, 1.0f);
    struct amp_gemm_scalars nan = scalars(1.0f, 1.0f, NAN, 1.0f);

    /* 1e-30 * 2^-(113+113): far below FLT_MIN. */
    assert_int_equal(tiny.exp_a, 0);
    assert_int_equal(tiny.exp_b, 0);
    assert_true(tiny.alpha == 1e-30f);
    /* 1e30 * 2^(85+85): beyond FLT_MAX. */
    assert_int_equal(huge.exp_a, 0);
    assert_true(huge.alpha == 1e30f);
    /* A zero alpha keeps the scales: the product is zero anyway. */
    assert_int_equal(zero.exp_a, 14 + 100);
    assert_true(zero.alpha == 0.0f);
    assert_true(isnan(nan.alpha));
    assert_int_equal(nan.exp_a, 14);
}

/* A record whose previous call's maxima were prev_a and prev_b, finished
 * with this call's. */
static struct amp_gemm_record last_record;

static struct amp_gemm_delayed
delayed(float prev_a, float prev_b, float now_a, float now_b, float alpha)
{
    struct amp_gemm_record r = {.absmax_a = 7, .absmax_b = 7,
                                .blocks_done = 7,
                                .next_a = amp_f32_bits(prev_a),
                                .next_b = amp_f32_bits(prev_b), .valid = 1};
    struct amp_gemm_delayed c = {.redo_a = 7, .redo_b = 7};

    amp_gemm_delayed_finish(&c, &r, amp_f32_bits(now_a),
                            amp_f32_bits(now_b), alpha, 0.0f);
    last_record = r;
    return c;
}

/* The delayed exponent stands while the scaled maximum stays finite in
 * FP16 and at least 2^(14 - AMP_DELAYED_SLACK); otherwise the operand
 * takes the exact exponent and is flagged for the second pass. The next
 * call's maxima are this call's; the counters are left at 0. */
static void
test_delayed_window(void **state)
{
    struct amp_gemm_delayed same = delayed(1.0f, 100.0f, 1.0f, 100.0f, 1.0f);
    /* 2^-AMP_DELAYED_SLACK of the last maximum: the edge, kept. */
    struct amp_gemm_delayed edge =
        delayed(1.0f, 1.0f, ldexpf(1.0f, -AMP_DELAYED_SLACK), 1.0f, 1.0f);
    struct amp_gemm_delayed below = delayed(
        1.0f, 1.0f, ldexpf(1.0f, -AMP_DELAYED_SLACK - 1), 1.0f, 1.0f);
    /* 1.99 * 2^14 scaled is 32604 * 2 = 65208 < 65504: kept; 4x is not. */
    struct amp_gemm_delayed grew = delayed(1.0f, 1.0f, 1.99f, 1.0f, 1.0f);
    struct amp_gemm_delayed over = delayed(1.0f, 1.0f, 4.0f, 1.0f, 1.0f);
    struct amp_gemm_record over_record = last_record, none = {.valid = 7};
    struct amp_gemm_delayed first = {0};

    (void)state;
    assert_int_equal(same.s.exp_a, 14);
    assert_int_equal(same.s.exp_b, 14 - 6);
    assert_false(same.redo_a || same.redo_b);
    assert_true(same.s.alpha == ldexpf(1.0f, -14 - 8));
    assert_int_equal(edge.s.exp_a, 14);
    assert_false(edge.redo_a);
    assert_int_equal(below.s.exp_a, 14 + AMP_DELAYED_SLACK + 1);
    assert_true(below.redo_a);
    assert_false(below.redo_b);
    assert_int_equal(grew.s.exp_a, 14);
    assert_false(grew.redo_a);
    assert_int_equal(over.s.exp_a, 12);
    assert_true(over.redo_a);
    assert_true(over_record.next_a == amp_f32_bits(4.0f));
    assert_true(over_record.valid == 1);
    assert_true(over_record.absmax_a == 0 && over_record.absmax_b == 0 &&
                over_record.blocks_done == 0);
    /* No earlier call (valid is not 1): the cast used exponent 0; the
     * exact ones stand. */
    amp_gemm_delayed_finish(&first, &none, amp_f32_bits(1.0f),
                            amp_f32_bits(1.0f), 1.0f, 0.0f);
    assert_int_equal(first.s.exp_a, 14);
    assert_true(first.redo_a && first.redo_b);
}

/* A convolution's one-pass scalars: the record set by a call whose maxima
 * were prev_a and prev_b (the two-pass scales), finished with this call's
 * maxima, for a reduction of 2^log2_len terms. */
static struct amp_conv_record last_conv_record;

static struct amp_conv_scalars
conv_delayed(float prev_a, float prev_b, float now_a, float now_b,
             int32_t log2_len)
{
    struct amp_conv_scalars first = {.absmax_a = amp_f32_bits(prev_a),
                                     .absmax_b = amp_f32_bits(prev_b)};
    struct amp_conv_scalars s = {.absmax_a = amp_f32_bits(now_a),
                                 .absmax_b = amp_f32_bits(now_b),
                                 .redo_a = 7, .redo_b = 7};
    struct amp_conv_record r = {.valid = 7};

    amp_conv_scalars_finish(&first, log2_len, AMP_FORMAT_F16);
    amp_conv_record_set(&r, first.exp_a, first.exp_b);
    amp_conv_delayed_finish(&s, &r, log2_len, AMP_FORMAT_F16);
    last_conv_record = r;
    return s;
}

/* A convolution's delayed exponent stands when it is at most the exact
 * one (the output bound holds), at least the exact one less
 * AMP_DELAYED_SLACK, and the scaled maximum at
 * 2^AMP_CONV_F16_LEAST_MAX_EXP or above; otherwise the input takes the
 * exact exponent and is flagged for the second cast. The record keeps the
 * exact exponents. Reduction of 2^8 terms: a budget of 15 - 2 - 8 = 5,
 * exponents 2 and 3 for maxima of 1. */
static void
test_conv_delayed_window(void **state)
{
    struct amp_conv_scalars same = conv_delayed(1.0f, 1.0f, 1.0f, 1.0f, 8);
    struct amp_conv_record same_record = last_conv_record;
    struct amp_conv_scalars edge = conv_delayed(
        1.0f, 1.0f, ldexpf(1.0f, -AMP_DELAYED_SLACK), 1.0f, 8);
    struct amp_conv_record edge_record = last_conv_record;
    struct amp_conv_scalars below = conv_delayed(
        1.0f, 1.0f, ldexpf(1.0f, -AMP_DELAYED_SLACK - 1), 1.0f, 8);
    struct amp_conv_scalars grew = conv_delayed(1.0f, 1.0f, 1.0f, 2.0f, 8);
    /* 2^19 terms: both scaled maxima at 2^-3; half the maximum under the
     * old exponent would be 2^-4, below AMP_CONV_F16_LEAST_MAX_EXP. */
    struct amp_conv_scalars thin = conv_delayed(1.0f, 1.0f, 0.5f, 1.0f, 19);
    struct amp_conv_scalars bf16 = {.absmax_a = amp_f32_bits(1e6f),
                                    .absmax_b = amp_f32_bits(1e6f)};

    (void)state;
    assert_int_equal(AMP_CONV_F16_LEAST_MAX_EXP, -3);
    assert_int_equal(same.exp_a, 2);
    assert_int_equal(same.exp_b, 3);
    assert_false(same.redo_a || same.redo_b);
    assert_true(same_record.exp_a == 2 && same_record.exp_b == 3 &&
                same_record.valid == 1);
    assert_true(same.scale_a == 4.0f && same.unscale_b == 0.125f);
    /* Shrank by 2^SLACK: kept at 2, where the exact exponent is 6. */
    assert_int_equal(edge.exp_a, 2);
    assert_false(edge.redo_a || edge.redo_b);
    assert_true(edge.scale_a == 4.0f && edge.unscale_a == 0.25f);
    assert_int_equal(edge_record.exp_a, 2 + AMP_DELAYED_SLACK);
    assert_int_equal(below.exp_a, 2 + AMP_DELAYED_SLACK + 1);
    assert_true(below.redo_a);
    assert_false(below.redo_b);
    assert_true(below.unscale_a == ldexpf(1.0f, -2 - AMP_DELAYED_SLACK - 1));
    /* b doubled: its exact exponent is 2, the delayed 3 would break the
     * output bound. */
    assert_int_equal(grew.exp_b, 2);
    assert_true(grew.redo_b);
    assert_false(grew.redo_a);
    assert_int_equal(thin.exp_a, -3 + 1);
    assert_true(thin.redo_a);
    assert_false(thin.redo_b);
    /* BF16 has no record: unscaled, nothing cast again. */
    amp_conv_delayed_finish(&bf16, NULL, 8, AMP_FORMAT_BF16);
    assert_true(bf16.exp_a == 0 && bf16.exp_b == 0 && bf16.scale_a == 1.0f &&
                !bf16.redo_a && !bf16.redo_b);
}

/* An alpha whose compensation by the delayed exponents would not be exact
 * takes the two-pass path's scalars (here: scaling dropped) and both
 * operands are cast again. */
static void
test_delayed_alpha_exact(void **state)
{
    struct amp_gemm_delayed r = delayed(1e-30f, 1e-30f, 1e-30f, 1e-30f,
                                        1e-30f);
    struct amp_gemm_scalars s = scalars(1e-30f, 1e-30f, 1e-30f, 0.0f);

    (void)state;
    assert_int_equal(r.s.exp_a, s.exp_a);
    assert_int_equal(r.s.exp_b, s.exp_b);
    assert_true(r.s.alpha == s.alpha);
    assert_true(r.redo_a && r.redo_b);
}

/* The maximum ignores NaN and Inf; split over threads it reduces to the
 * same value. */
static void
test_absmax_threads(void **state)
{
    /* 3 x 2 matrix in a leading dimension of 4; row 3 is padding. */
    const float m[] = {1.0f, -7.5f, NAN, 1e30f, 2.0f, -INFINITY, 3.0f, 1e9f};
    uint32_t one = amp_absmax_thread(m, 4, 3, 2, 0, 1);
    uint32_t best = 0;
    int t;

    assert_true(amp_bits_f32(one) == 7.5f);
    for (t = 0; t < 4; t++) {
        uint32_t part = amp_absmax_thread(m, 4, 3, 2, t, 4);
        if (part > best)
            best = part;
    }
    assert_int_equal(best, one);
}

static void
test_cast_threads(void **state)
{
    const float src[] = {1.0f, -2.0f, 0.5f, 9.0f, INFINITY, NAN};
    uint16_t dst[8];
    int t;

    memset(dst, 0xab, sizeof dst);
    for (t = 0; t < 3; t++) /* 2 x 3 into leading dimension 3 */
        amp_cast_f16_thread(src, 2, dst, 3, 2, 3, 4.0f, t, 3);
    assert_int_equal(dst[0], amp_f32_to_f16(4.0f));
    assert_int_equal(dst[1], amp_f32_to_f16(-8.0f));
    assert_int_equal(dst[2], 0xabab); /* padding untouched */
    assert_int_equal(dst[3], amp_f32_to_f16(2.0f));
    assert_int_equal(dst[4], amp_f32_to_f16(36.0f));
    assert_int_equal(dst[5], 0xabab);
    assert_int_equal(dst[6], 0x7c00);
    assert_true((dst[7] & 0x7fff) > 0x7c00);
}

/* hi + lo * 2^-11 holds x to about 2^-22 relative; Inf and NaN stay in
 * hi with lo 0. */
static void
test_f16x3_split(void **state)
{
    const float xs[] = {1.0f / 3.0f, 20000.5f, -3.14159265f, 1e-3f};
    uint16_t hi, lo;
    size_t i;

    for (i = 0; i < sizeof xs / sizeof *xs; i++) {
        float back;

        amp_split_f16x3(xs[i], &hi, &lo);
        back = amp_f16_to_f32(hi) + ldexpf(amp_f16_to_f32(lo), -11);
        assert_true(fabsf(back - xs[i]) <= ldexpf(fabsf(xs[i]), -21));
        assert_true(fabsf(back - xs[i]) < fabsf(amp_f16_to_f32(hi) - xs[i]) ||
                    amp_f16_to_f32(hi) == xs[i]);
    }
    amp_split_f16x3(-INFINITY, &hi, &lo);
    assert_int_equal(hi, 0xfc00);
    assert_int_equal(lo, 0);
    amp_split_f16x3(NAN, &hi, &lo);
    assert_true((hi & 0x7fff) > 0x7c00);
    assert_int_equal(lo, 0);
    /* The sum keeps a non-finite hi product whatever the lo terms say. */
    assert_true(isinf(amp_f16x3_sum(-INFINITY, NAN)));
    assert_true(amp_f16x3_sum(2.0f, 0.5f) == 2.5f);
    /* beta 0 never reads C. */
    assert_true(amp_axpby(2.0f, 3.0f, 0.0f, NAN) == 6.0f);
    assert_true(isnan(amp_axpby(2.0f, 3.0f, 1.0f, NAN)));
}

/* tf32x3's split: hi is TF32 rounding to nearest even (the emulator's,
 * which is what a TF32 GEMM reads), except where that overflows; both
 * parts are TF32 values (the vendor's rounding leaves them alone); hi + lo
 * is within 2^-22 |x| over FP32's whole range down to 2^-115 (2.4e-35),
 * within 2^-137 below. */
static void
test_tf32x3_split(void **state)
{
    uint32_t u;
    float hi, lo;
    int n = 0;

    (void)state;
    for (u = 0; u < 0x7f800000u; u += 0x1357u) {
        for (int s = 0; s < 2; s++) {
            float x = from_bits(u | (s ? 0x80000000u : 0u));
            float want = emu_round_tf32(x);

            amp_split_tf32x3(x, &hi, &lo);
            assert_true(isfinite(hi) && isfinite(lo) && isfinite(hi + lo));
            if (isfinite(want))
                assert_int_equal(amp_f32_bits(hi), amp_f32_bits(want));
            else /* toward zero instead of to Inf */
                assert_int_equal(amp_f32_bits(hi),
                                 amp_f32_bits(x) & ~0x1fffu);
            assert_int_equal(amp_f32_bits(hi) & 0x1fffu, 0);
            assert_int_equal(amp_f32_bits(lo) & 0x1fffu, 0);
            assert_true(emu_round_tf32(lo) == lo);
            /* TF32's quantum among the subnormals is 2^-136: below
             * 2^-115 lo keeps x to 2^-137, no longer to 2^-22 |x|. */
            assert_true(fabs((double)x - ((double)hi + (double)lo)) <=
                        fmax(ldexp(fabs((double)x), -22), 0x1p-137));
            n++;
        }
    }
    assert_true(n > 400000);
    /* 1e30 and 1e-30: far outside FP16, kept to 22 bits. */
    amp_split_tf32x3(1e30f, &hi, &lo);
    assert_true(fabs(1e30 - ((double)hi + lo)) <= 1e30 * 0x1p-22);
    assert_true(lo != 0.0f);
    amp_split_tf32x3(-1.2345678e-30f, &hi, &lo);
    assert_true(fabs(-1.2345678e-30 - ((double)hi + lo)) <=
                1.2345678e-30 * 0x1p-22);
    amp_split_tf32x3(3.4028235e38f, &hi, &lo);
    assert_true(isfinite(hi) && isfinite(hi + lo));
    assert_true(3.4028235e38 - ((double)hi + lo) <= 3.4028235e38 * 0x1p-22);
    amp_split_tf32x3(-INFINITY, &hi, &lo);
    assert_true(isinf(hi) && hi < 0 && lo == 0.0f);
    amp_split_tf32x3(NAN, &hi, &lo);
    assert_true(isnan(hi) && lo == 0.0f);
    /* A TF32 value is its own hi, lo 0. */
    amp_split_tf32x3(1.5f, &hi, &lo);
    assert_true(hi == 1.5f && lo == 0.0f);
}

/* tf32x3's parts for its one product: hi' is hi where finite; an Inf or
 * NaN has hi' 0 and lo 0, so that it meets the other operand only in
 * hi hi (Inf times a lo of 0 would be NaN). */
static void
test_tf32x3_parts(void **state)
{
    float hi, lo, cross;

    (void)state;
    amp_tf32x3_parts(1.0f + 0x1p-20f, &hi, &lo, &cross);
    assert_true(hi == 1.0f && lo == 0x1p-20f && cross == hi);
    amp_tf32x3_parts(-3.0e38f, &hi, &lo, &cross);
    assert_true(isfinite(hi) && cross == hi);
    amp_tf32x3_parts(-INFINITY, &hi, &lo, &cross);
    assert_true(isinf(hi) && hi < 0 && lo == 0.0f && cross == 0.0f);
    amp_tf32x3_parts(NAN, &hi, &lo, &cross);
    assert_true(isnan(hi) && lo == 0.0f && cross == 0.0f);
}

/* Shadow errors: only elements finite in FP32 count; a non-finite
 * candidate there is counted; relative error only where FP32 != 0. */
static void
test_shadow_element(void **state)
{
    struct amp_shadow_error e = {0, 0, 0, 0.0, 0.0, 0};
    struct amp_shadow_error f = {0, 0, 0, 0.0, 0.0, 0};

    amp_shadow_element(&e, 1.5f, 1.0f);
    amp_shadow_element(&e, 0.25f, 0.0f);
    amp_shadow_element(&e, NAN, 2.0f);
    amp_shadow_element(&e, INFINITY, 2.0f);
    amp_shadow_element(&e, 1.0f, NAN);
    amp_shadow_element(&e, 1.0f, -INFINITY);
    assert_true(amp_bits_f32(e.max_abs) == 0.5f);
    /* Every finite FP32 element counts for the norm, even one whose
     * candidate is not finite. */
    assert_true(amp_bits_f32(e.max_ref) == 2.0f);
    assert_int_equal(e.nonfinite, 2);
    /* Compared: the four elements finite in FP32. */
    assert_int_equal(e.compared, 4);
    amp_shadow_element(&f, -4.0f, -1.0f);
    amp_shadow_merge(&e, &f);
    assert_true(amp_bits_f32(e.max_abs) == 3.0f);
    assert_true(amp_bits_f32(e.max_ref) == 2.0f);
    assert_true(amp_shadow_relative(3.0f, 2.0f) == 1.5);
    assert_true(amp_shadow_relative(0.0f, 0.0f) == 0.0);
    assert_true(isinf(amp_shadow_relative(1.0f, 0.0f)));
    assert_int_equal(e.nonfinite, 2);
    assert_int_equal(e.compared, 5);
    /* The Frobenius sums: squares of every finite FP32 element (1, 0, 4,
     * 4, then 1), of the differences where the candidate is finite too
     * (0.25, 0.0625, then 9). */
    assert_true(e.sq_ref == 10.0);
    assert_true(e.sq_diff == 9.3125);
    assert_true(amp_shadow_relative_sq(e.sq_diff, e.sq_ref) == 0.93125);
    assert_true(amp_shadow_relative_sq(0.0, 0.0) == 0.0);
    assert_true(isinf(amp_shadow_relative_sq(1.0, 0.0)));
}

/* The relative Frobenius error of a batch, from threads' shares merged as
 * the kernel's reduction merges them, against ||C - C_ref||_F /
 * ||C_ref||_F computed directly in double, as a program checks it. */
static void
test_shadow_frobenius(void **state)
{
    enum { ROWS = 37, COLS = 11, LD = 40, BATCH = 3 };
    static float ref[BATCH * LD * COLS], cand[BATCH * LD * COLS];
    double num = 0.0, den = 0.0, want, got;
    int64_t i, j, b, t;
    struct amp_shadow_error e = {0, 0, 0, 0.0, 0.0, 0};

    (void)state;
    for (i = 0; i < BATCH * LD * COLS; i++) {
        /* Values over six orders of magnitude, candidates off by about
         * fp16's rounding, and a padding the walk must skip. */
        ref[i] = (float)((i % 7) - 3) * powf(10.0f, (float)(i % 6) - 3);
        cand[i] = ref[i] * (1.0f + (float)((i % 5) - 2) * 2.4e-4f);
    }
    for (b = 0; b < BATCH; b++)
        for (j = 0; j < COLS; j++)
            for (i = 0; i < ROWS; i++) {
                int64_t off = b * LD * COLS + j * LD + i;
                double d = (double)cand[off] - (double)ref[off];

                num += d * d;
                den += (double)ref[off] * ref[off];
            }
    want = sqrt(num) / sqrt(den);
    for (t = 0; t < 5; t++) {
        struct amp_shadow_error part = amp_shadow_error_thread(
            cand, LD, LD * COLS, ref, NULL, LD, LD * COLS, BATCH, ROWS,
            COLS, t, 5);

        amp_shadow_merge(&e, &part);
    }
    got = sqrt(amp_shadow_relative_sq(e.sq_diff, e.sq_ref));
    assert_true(want > 1e-5 && want < 1e-3);
    assert_true(fabs(got - want) <= 1e-12 * want);
    assert_int_equal(e.compared, ROWS * COLS * BATCH);
    /* The max norm's error is larger than the Frobenius norm's here. */
    assert_true(amp_shadow_relative(amp_bits_f32(e.max_abs),
                                    amp_bits_f32(e.max_ref)) > got);
}

/* The batch forms split the index space over matrices given by stride or
 * by pointer array alike. */
static void
test_batch_threads(void **state)
{
    /* Two 2 x 2 matrices with ld 3, 7 elements apart. */
    const float base[] = {1, -2, 99, 3, 4, 99, 99, 5, 6, 99, -80, 7, 99, 99};
    const float *const array[] = {base + 7, base};
    uint16_t dst[2 * 8], hi[8], lo[8];
    uint32_t best = 0;
    float gathered[8];
    int t;

    for (t = 0; t < 3; t++) {
        uint32_t part = amp_absmax_batch_thread(base, NULL, 7, 2, 3, 2, 2, t,
                                                3);
        if (part > best)
            best = part;
    }
    assert_true(amp_bits_f32(best) == 80.0f);
    assert_true(amp_bits_f32(amp_absmax_batch_thread(NULL, array, 0, 1, 3, 2,
                                                     2, 0, 1)) == 80.0f);
    memset(dst, 0, sizeof dst);
    for (t = 0; t < 2; t++)
        amp_cast_batch_thread(NULL, array, 0, 2, 3, 2, 2, dst, 2, 8, 0.5f,
                              AMP_FORMAT_BF16, t, 2);
    assert_int_equal(dst[0], amp_f32_to_bf16(2.5f));
    assert_int_equal(dst[3], amp_f32_to_bf16(3.5f));
    assert_int_equal(dst[8], amp_f32_to_bf16(0.5f));
    assert_int_equal(dst[11], amp_f32_to_bf16(2.0f));
    for (t = 0; t < 4; t++)
        amp_gather_batch_thread(base, NULL, 7, 2, 3, 2, 2, gathered, 2, 4, t,
                                4);
    assert_true(gathered[2] == 3.0f && gathered[4] == 5.0f &&
                gathered[7] == 7.0f);
    amp_split_batch_thread(base, NULL, 7, 1, 3, 2, 2, hi, lo, 2, 4, 1.0f, 0,
                           1);
    assert_int_equal(hi[1], amp_f32_to_f16(-2.0f));
    assert_int_equal(lo[1], 0);
}

/* ---- Element loops against the index arithmetic they replace ---------- */

/* Thread counts of the walks: fewer threads than elements, not dividing
 * them, more than a matrix or than the whole index space. */
static const int64_t walk_threads[] = {1, 2, 3, 5, 7, 13, 64, 1000};
#define NWALK_THREADS (sizeof walk_threads / sizeof *walk_threads)

/* Every thread count, every shape of a small batch: the copy of a batch
 * (strided or by pointer array) lands where column-major indexing puts
 * it, and nothing else is written. */
static void
test_batch_walk_shapes(void **state)
{
    static const int64_t sizes[] = {1, 2, 3, 5};
    float src[4 * 8 * 7], dst[4 * 8 * 7];
    const float *array[4];
    size_t ri, ci, ti;
    int64_t batch, i;

    for (i = 0; i < (int64_t)(sizeof src / sizeof *src); i++)
        src[i] = (float)i;
    for (ri = 0; ri < 4; ri++)
        for (ci = 0; ci < 4; ci++)
            for (batch = 1; batch <= 3; batch++)
                for (ti = 0; ti < NWALK_THREADS; ti++) {
                    int64_t rows = sizes[ri], cols = sizes[ci];
                    int64_t ld_src = rows + 2, stride = ld_src * cols + 1;
                    int64_t ld_dst = rows + 1, stride_dst = ld_dst * cols;
                    int64_t nt = walk_threads[ti], t, b, c, r;
                    int use_array = (int)(ti & 1);

                    for (b = 0; b < batch; b++) /* matrices in reverse */
                        array[b] = src + (batch - 1 - b) * stride;
                    for (i = 0; i < (int64_t)(sizeof dst / sizeof *dst); i++)
                        dst[i] = -1.0f;
                    for (t = 0; t < nt; t++)
                        amp_gather_batch_thread(
                            use_array ? NULL : src,
                            use_array ? array : NULL, stride, batch, ld_src,
                            rows, cols, dst, ld_dst, stride_dst, t, nt);
                    for (b = 0; b < batch; b++)
                        for (c = 0; c < cols; c++)
                            for (r = 0; r < ld_dst; r++) {
                                const float *m = use_array ? array[b]
                                                           : src + b * stride;
                                float want = r < rows ? m[c * ld_src + r]
                                                      : -1.0f;

                                assert_true(dst[b * stride_dst + c * ld_dst +
                                                r] == want);
                            }
                }
}

/* The fp16x3 fold reads alpha per row of the result: stored rows, or
 * stored columns when the result is row-major. */
static void
test_fold_walk_rows(void **state)
{
    const float alpha[] = {1, 2, 4, 8, 16, 32};
    float s[2 * 3 * 2];
    size_t ti;
    int row_major;

    for (row_major = 0; row_major < 2; row_major++)
        for (ti = 0; ti < NWALK_THREADS; ti++) {
            struct amp_row_scalars v = {alpha, NULL, 3, row_major};
            int64_t nt = walk_threads[ti], t, b, c, r;

            for (t = 0; t < 12; t++)
                s[t] = 1.0f;
            /* Two 2 x 3 matrices; alpha's vectors 3 apart. */
            for (t = 0; t < nt; t++)
                amp_f16x3_fold_thread(s, 2, 6, NULL, 2, 6, 2, 2, 3, 1.0f,
                                      0.0f, v, t, nt);
            for (b = 0; b < 2; b++)
                for (c = 0; c < 3; c++)
                    for (r = 0; r < 2; r++)
                        assert_true(s[b * 6 + c * 2 + r] ==
                                    alpha[b * 3 + (row_major ? c : r)]);
        }
}

/* A reference layout: sizes (N or K, C per group, spatial) with strides
 * in the given order of dims, innermost first. */
static struct amp_conv_layout
walk_layout(int nb_dims, const int64_t *dim, const int *order, int64_t per0,
            int64_t per_pad0, int64_t per1, int64_t per_pad1)
{
    struct amp_conv_layout l;
    int64_t stride = 1;
    int i;

    memset(&l, 0, sizeof l);
    l.nb_dims = nb_dims;
    for (i = 0; i < nb_dims; i++)
        l.dim[i] = dim[i];
    for (i = 0; i < nb_dims; i++) {
        l.stride[order[i]] = stride;
        stride *= dim[order[i]] + (order[i] == 1); /* a gap after C */
    }
    l.per[0] = per0;
    l.per_pad[0] = per_pad0;
    l.per[1] = per1;
    l.per_pad[1] = per_pad1;
    return l;
}

/* Coordinates of element g of l counted channels last, over the tensor's
 * sizes or (packed) its packed copy's, as the kernels did with division. */
static void
walk_coords(const struct amp_conv_layout *l, int packed, int64_t g,
            int64_t *at)
{
    int d;

    at[1] = g % amp_conv_packed_dim(l, 1);
    if (!packed)
        at[1] = g % l->dim[1];
    g /= packed ? amp_conv_packed_dim(l, 1) : l->dim[1];
    for (d = (int)l->nb_dims - 1; d >= 2; d--) {
        at[d] = g % l->dim[d];
        g /= l->dim[d];
    }
    at[0] = g;
}

/* The packed copy's offset of real coordinates. */
static int64_t
walk_packed_offset(const struct amp_conv_layout *l, const int64_t *at)
{
    int64_t off = at[0] / l->per[0] * l->per_pad[0] + at[0] % l->per[0];
    int d;

    for (d = 2; d < l->nb_dims; d++)
        off = off * l->dim[d] + at[d];
    return off * amp_conv_packed_dim(l, 1) + at[1] / l->per[1] * l->per_pad[1] +
           at[1] % l->per[1];
}

/* Real coordinates of packed ones; 0 in the padding. */
static int
walk_unpad(const struct amp_conv_layout *l, int64_t *at)
{
    int d;

    for (d = 0; d < 2; d++) {
        int64_t r = at[d] % l->per_pad[d];

        if (r >= l->per[d])
            return 0;
        at[d] = at[d] / l->per_pad[d] * l->per[d] + r;
    }
    return 1;
}

/* The convolution kernels' loops over 1-d to 3-d tensors with groups and
 * padded channels, in several stride orders and thread counts, against
 * the coordinates computed by division: the packed copy (padding zero),
 * the output from a packed result, the maximum and the errors. */
static void
test_conv_walk_layouts(void **state)
{
    static const int64_t dims[3][5] = {
        {2, 6, 5, 0, 0}, {4, 3, 2, 3, 0}, {3, 4, 2, 1, 3}};
    static const int orders[3][5] = {
        {2, 1, 0}, {1, 3, 2, 0}, {4, 3, 2, 1, 0}};
    static const int64_t pers[3][4] = {
        {1, 2, 3, 4}, {2, 3, 3, 8}, {1, 3, 2, 4}};
    static float src[4096], out[4096], packed_f32[4096];
    static uint16_t packed[4096];
    int shape, variant;

    for (shape = 0; shape < 3; shape++)
        for (variant = 0; variant < 2; variant++) {
            const int64_t *p = pers[shape];
            int nb = shape + 3;
            int channels_last[5] = {1, 0, 0, 0, 0};
            struct amp_conv_layout l, lp;
            struct amp_conv_scalars sc;
            int64_t at[AMP_CONV_MAX_DIMS], n, np, g;
            uint32_t best = 0, want_best = 0;
            size_t ti;
            int i;

            for (i = 1; i < nb - 1; i++)
                channels_last[i] = nb - i;
            channels_last[nb - 1] = 0;
            l = walk_layout(nb, dims[shape],
                            variant ? channels_last : orders[shape], p[0],
                            variant ? p[0] : p[1], p[2], p[3]);
            lp = l;
            n = amp_conv_count(&l, 0);
            np = amp_conv_count(&l, 1);
            assert_true(np <= 4096 && n * 2 <= 4096);
            for (g = 0; g < 4096; g++)
                src[g] = (float)(g % 97) - 48.0f;
            for (g = 0; g < n; g++) {
                uint32_t mag;

                walk_coords(&l, 0, g, at);
                mag = amp_f32_bits(src[amp_conv_offset(&l, at)]) &
                      0x7fffffffu;
                if (mag > want_best)
                    want_best = mag;
            }
            memset(&sc, 0, sizeof sc);
            sc.unscale_a = 0.5f;
            sc.unscale_b = 1.0f;
            for (ti = 0; ti < NWALK_THREADS; ti++) {
                int64_t nt = walk_threads[ti], t;
                uint32_t bad = 0;
                struct amp_shadow_error e = {0, 0, 0, 0.0, 0.0, 0};

                memset(packed, 0xff, sizeof packed);
                for (t = 0; t < nt; t++) {
                    uint32_t part = amp_conv_absmax_thread(src, &l, &bad, t,
                                                           nt);

                    best = part > best ? part : best;
                    amp_conv_cast_thread(src, &l, packed, 2.0f,
                                         AMP_FORMAT_BF16, t, nt);
                }
                assert_int_equal(best, want_best);
                assert_int_equal(bad, 0);
                for (g = 0; g < np; g++) {
                    float want = 0.0f;

                    walk_coords(&l, 1, g, at);
                    if (walk_unpad(&l, at))
                        want = src[amp_conv_offset(&l, at)] * 2.0f;
                    assert_int_equal(packed[g], amp_f32_to_bf16(want));
                }
                assert_int_equal(packed[np], 0xffff);
                /* Back: out = 3 * packed / 2, from the packed result as
                 * FP32, laid out by l's strides. */
                for (g = 0; g < np; g++)
                    packed_f32[g] = (float)g;
                for (g = 0; g < 4096; g++)
                    out[g] = -7.0f;
                for (t = 0; t < nt; t++)
                    amp_conv_output_thread(packed_f32, AMP_FORMAT_F32, &lp,
                                           out, &l, NULL, &l, &sc, 3.0f,
                                           0.0f, t, nt);
                for (g = 0; g < n; g++) {
                    walk_coords(&l, 0, g, at);
                    assert_true(out[amp_conv_offset(&l, at)] ==
                                (float)walk_packed_offset(&l, at) * 1.5f);
                }
                /* Again from a result packed by its real sizes (a
                 * delivered FP32 candidate: channel groups of 2 or 3, a
                 * channel a thread). */
                {
                    struct amp_conv_layout lu = l;

                    lu.per_pad[0] = lu.per[0];
                    lu.per_pad[1] = lu.per[1];
                    assert_int_equal(amp_conv_output_width(&lu), 1);
                    for (g = 0; g < 4096; g++)
                        out[g] = -7.0f;
                    for (t = 0; t < nt; t++)
                        amp_conv_output_thread(packed_f32, AMP_FORMAT_F32,
                                               &lu, out, &l, NULL, &l, &sc,
                                               3.0f, 0.0f, t, nt);
                    for (g = 0; g < n; g++) {
                        walk_coords(&l, 0, g, at);
                        assert_true(out[amp_conv_offset(&l, at)] ==
                                    (float)walk_packed_offset(&lu, at) *
                                        1.5f);
                    }
                }
                /* The errors of out, packed channels last by its real
                 * sizes, against src: largest |difference|. */
                for (g = 0; g < n; g++) {
                    walk_coords(&l, 0, g, at);
                    packed_f32[g] = out[amp_conv_offset(&l, at)];
                }
                for (t = 0; t < nt; t++) {
                    struct amp_shadow_error part =
                        amp_conv_error_thread(packed_f32, src, &l, t, nt);

                    amp_shadow_merge(&e, &part);
                }
                {
                    struct amp_shadow_error want = {0, 0, 0, 0.0, 0.0, 0};

                    for (g = 0; g < n; g++) {
                        int64_t off;

                        walk_coords(&l, 0, g, at);
                        off = amp_conv_offset(&l, at);
                        amp_shadow_element(&want, out[off], src[off]);
                    }
                    assert_int_equal(e.max_abs, want.max_abs);
                    assert_int_equal(e.max_ref, want.max_ref);
                    assert_true(fabs(e.sq_diff - want.sq_diff) <=
                                1e-12 * want.sq_diff);
                    assert_true(fabs(e.sq_ref - want.sq_ref) <=
                                1e-12 * want.sq_ref);
                }
            }
        }
}

/* The alpha vectors' check and scaling walk members given by stride. */
static void
test_alpha_walk(void **state)
{
    /* Three vectors of 2, 3 apart; the last element subnormal. */
    const float alpha[] = {1, 2, 99, 3, 4, 99, 5, 1e-39f};
    float out[6];
    size_t ti;

    for (ti = 0; ti < NWALK_THREADS; ti++) {
        int64_t nt = walk_threads[ti], t;
        uint32_t two = 0, inexact = 0;

        for (t = 0; t < nt; t++) {
            two |= amp_alpha_inexact_thread(alpha, 3, 2, 2, 0.5f, t, nt);
            inexact |= amp_alpha_inexact_thread(alpha, 3, 3, 2, 0.5f, t, nt);
            amp_alpha_scale_thread(alpha, 3, 3, 2, 0.5f, out, t, nt);
        }
        assert_int_equal(two, 0);
        assert_int_equal(inexact, 1);
        assert_true(out[0] == 0.5f && out[1] == 1.0f && out[2] == 1.5f &&
                    out[3] == 2.0f && out[4] == 2.5f);
    }
}

/* The walks keep the moves of their carries in 32 bits: a tensor whose
 * elements lie 2^31 or more apart, even across a dim of size 1, is
 * refused; one just below is walked. */
static void
test_conv_walks_fit(void **state)
{
    static const int64_t dims[4] = {2, 16, 4, 4};
    static const int order[4] = {1, 3, 2, 0};
    struct amp_conv_layout l = walk_layout(4, dims, order, 2, 2, 16, 16);

    (void)state;
    assert_true(amp_conv_walks_fit(&l));
    l.stride[0] = ((int64_t)1 << 31) - 1024;
    assert_true(amp_conv_walks_fit(&l));
    l.stride[0] = (int64_t)1 << 31;
    assert_false(amp_conv_walks_fit(&l));
    l = walk_layout(4, dims, order, 2, 2, 16, 16);
    l.dim[0] = 1;
    l.per[0] = l.per_pad[0] = 1;
    l.stride[0] = (int64_t)1 << 40;
    assert_false(amp_conv_walks_fit(&l));
    /* A packed copy of 2^31 elements and more. */
    l = walk_layout(4, dims, order, 2, 2, 16, 16);
    l.dim[0] = l.per[0] = l.per_pad[0] = (int64_t)1 << 28;
    assert_false(amp_conv_walks_fit(&l));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_round_trip_exhaustive),
        cmocka_unit_test(test_f16_matches_emulator),
        cmocka_unit_test(test_f16_edges),
        cmocka_unit_test(test_bf16_matches_emulator),
        cmocka_unit_test(test_scale_exponent),
        cmocka_unit_test(test_delayed_window),
        cmocka_unit_test(test_delayed_alpha_exact),
        cmocka_unit_test(test_conv_delayed_window),
        cmocka_unit_test(test_scaled_maximum_fits),
        cmocka_unit_test(test_alpha_compensation_exact),
        cmocka_unit_test(test_alpha_compensation_never_inexact),
        cmocka_unit_test(test_absmax_threads),
        cmocka_unit_test(test_cast_threads),
        cmocka_unit_test(test_f16x3_split),
        cmocka_unit_test(test_tf32x3_split),
        cmocka_unit_test(test_tf32x3_parts),
        cmocka_unit_test(test_shadow_element),
        cmocka_unit_test(test_shadow_frobenius),
        cmocka_unit_test(test_batch_threads),
        cmocka_unit_test(test_batch_walk_shapes),
        cmocka_unit_test(test_fold_walk_rows),
        cmocka_unit_test(test_conv_walk_layouts),
        cmocka_unit_test(test_conv_walks_fit),
        cmocka_unit_test(test_alpha_walk),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
