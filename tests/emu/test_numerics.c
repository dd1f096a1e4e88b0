/* The emulator's FP16, BF16 and TF32 conversions against a naive reference
 * written here, and its GPU model (named GPUs, roofline durations). */
#include "emu.h"

#include <dlfcn.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- A naive reference: a table of every value, searched ------------------ */

/*
 * A binary format with `mant_bits` stored mantissa bits and exponent bias
 * `bias`. Encoding i (sign bit clear) is finite for i < n; its value is
 * value[i]. value[n] is what the encoding n (infinity) would be worth with
 * an unbounded exponent, so rounding to it means overflow. The encodings
 * are ordered like their values, and an even encoding has an even last
 * mantissa bit, which is what ties-to-even picks.
 */
struct ref_fmt {
    const char *name;
    int mant_bits;
    int bias;
    uint32_t n;
    double *value;
};

static struct ref_fmt ref_f16 = { "f16", 10, 15, 31u << 10, NULL };
static struct ref_fmt ref_bf16 = { "bf16", 7, 127, 255u << 7, NULL };
static struct ref_fmt ref_tf32 = { "tf32", 10, 127, 255u << 10, NULL };

/* The value of a non-negative encoding, from its fields. */
static double
ref_decode(const struct ref_fmt *fmt, uint32_t i)
{
    uint32_t e = i >> fmt->mant_bits;
    uint32_t m = i & ((1u << fmt->mant_bits) - 1u);

    if (e == 0)
        return ldexp((double)m, 1 - fmt->bias - fmt->mant_bits);
    return ldexp((double)(m | (1u << fmt->mant_bits)),
                 (int)e - fmt->bias - fmt->mant_bits);
}

static void
ref_fmt_build(struct ref_fmt *fmt)
{
    uint32_t i;

    if (fmt->value)
        return;
    fmt->value = malloc(((size_t)fmt->n + 1) * sizeof(double));
    assert_non_null(fmt->value);
    for (i = 0; i <= fmt->n; i++)
        fmt->value[i] = ref_decode(fmt, i);
}

/* The encoding nearest to ax (finite, >= 0), ties to the even encoding;
 * n means infinity. */
static uint32_t
ref_round(const struct ref_fmt *fmt, double ax)
{
    uint32_t lo = 0, hi = fmt->n;
    double mid;

    if (ax >= fmt->value[fmt->n])
        return fmt->n;
    while (hi - lo > 1) {       /* value[lo] <= ax < value[hi] */
        uint32_t m = lo + (hi - lo) / 2;

        if (fmt->value[m] <= ax)
            lo = m;
        else
            hi = m;
    }
    if (fmt->value[lo] == ax)
        return lo;
    /* Two neighbours need at most mant_bits + 2 bits: exact in double. */
    mid = (fmt->value[lo] + fmt->value[hi]) / 2.0;
    if (ax < mid)
        return lo;
    if (ax > mid)
        return hi;
    return (lo & 1u) == 0 ? lo : hi;
}

static uint32_t
bits_of(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static float
float_of(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Reference conversions of a non-NaN float. */
static uint16_t
ref_to_f16(float f)
{
    uint16_t sign = signbit(f) ? 0x8000u : 0u;

    if (isinf(f))
        return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | ref_round(&ref_f16, fabs((double)f)));
}

static uint16_t
ref_to_bf16(float f)
{
    uint16_t sign = signbit(f) ? 0x8000u : 0u;

    if (isinf(f))
        return (uint16_t)(sign | 0x7f80u);
    return (uint16_t)(sign | ref_round(&ref_bf16, fabs((double)f)));
}

static uint32_t
ref_to_tf32_bits(float f)
{
    uint32_t sign = signbit(f) ? 0x80000000u : 0u;

    if (isinf(f))
        return bits_of(f);
    /* TF32 keeps FP32's layout with the low 13 mantissa bits zero. */
    return sign | (ref_round(&ref_tf32, fabs((double)f)) << 13);
}

static int
is_f16_nan(uint16_t h)
{
    return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0;
}

static int
is_bf16_nan(uint16_t h)
{
    return (h & 0x7f80u) == 0x7f80u && (h & 0x007fu) != 0;
}

/* ---- Checking many floats ------------------------------------------------- */

static unsigned long check_fails;
static unsigned long check_count;

static void
check_report(const char *what, float f, uint32_t got, uint32_t want)
{
    if (check_fails++ < 20)
        print_error("%s(%a = 0x%08x): got 0x%x, want 0x%x\n", what,
                    (double)f, bits_of(f), got, want);
}

/* All three conversions of f against the reference. */
static void
check_float(float f)
{
    uint16_t h = emu_f32_to_f16(f);
    uint16_t b = emu_f32_to_bf16(f);
    uint32_t t = bits_of(emu_round_tf32(f));

    check_count++;
    /* The convolutions' inline store, NaN included: the same bits. */
    if (emu_f32_to_bf16_inline(f) != b)
        check_report("emu_f32_to_bf16_inline", f, emu_f32_to_bf16_inline(f),
                     b);
    if (isnan(f)) {
        /* NaN stays a quiet NaN. */
        if (!is_f16_nan(h) || !(h & 0x0200u))
            check_report("emu_f32_to_f16", f, h, 0x7e00u);
        if (!is_bf16_nan(b) || !(b & 0x0040u))
            check_report("emu_f32_to_bf16", f, b, 0x7fc0u);
        if (!isnan(float_of(t)))
            check_report("emu_round_tf32", f, t, 0x7fc00000u);
        return;
    }
    if (h != ref_to_f16(f))
        check_report("emu_f32_to_f16", f, h, ref_to_f16(f));
    if (b != ref_to_bf16(f))
        check_report("emu_f32_to_bf16", f, b, ref_to_bf16(f));
    if (t != ref_to_tf32_bits(f))
        check_report("emu_round_tf32", f, t, ref_to_tf32_bits(f));
}

static void
check_float_both_signs(float f)
{
    check_float(f);
    check_float(-f);
}

static int
setup_tables(void **state)
{
    ref_fmt_build(&ref_f16);
    ref_fmt_build(&ref_bf16);
    ref_fmt_build(&ref_tf32);
    check_fails = 0;
    check_count = 0;
    return 0;
}

/* ---- Round trips of every 16-bit pattern ---------------------------------- */

static void
test_f16_round_trip_all(void **state)
{
    uint32_t h;

    for (h = 0; h <= 0xffffu; h++) {
        float f = emu_f16_to_f32((uint16_t)h);
        uint16_t back = emu_f32_to_f16(f);

        if (is_f16_nan((uint16_t)h)) {
            assert_true(isnan(f));
            assert_true(is_f16_nan(back));
            continue;
        }
        if ((h & 0x7fffu) == 0x7c00u) {
            assert_true(isinf(f));
        } else {
            double want = ref_decode(&ref_f16, h & 0x7fffu);

            assert_true(fabs((double)f) == want);
        }
        assert_int_equal(!!signbit(f), !!(h & 0x8000u));
        assert_int_equal(back, h);
    }
}

static void
test_bf16_round_trip_all(void **state)
{
    uint32_t h;

    for (h = 0; h <= 0xffffu; h++) {
        float f = emu_bf16_to_f32((uint16_t)h);
        uint16_t back = emu_f32_to_bf16(f);

        if (is_bf16_nan((uint16_t)h)) {
            assert_true(isnan(f));
            assert_true(is_bf16_nan(back));
            continue;
        }
        if ((h & 0x7fffu) == 0x7f80u) {
            assert_true(isinf(f));
        } else {
            double want = ref_decode(&ref_bf16, h & 0x7fffu);

            assert_true(fabs((double)f) == want);
        }
        assert_int_equal(!!signbit(f), !!(h & 0x8000u));
        assert_int_equal(back, h);
    }
}

/* ---- Cases worked out by hand -------------------------------------------- */

static void
test_f16_named_cases(void **state)
{
    static const struct {
        float in;
        uint16_t want;
    } cases[] = {
        { 0.0f, 0x0000 },
        { -0.0f, 0x8000 },
        { 1.0f, 0x3c00 },
        { -2.0f, 0xc000 },
        { 0.1f, 0x2e66 },                       /* 0.0999755859375 */
        { 1.0f + 0x1p-11f, 0x3c00 },            /* tie: down to even */
        { 1.0f + 0x1p-11f + 0x1p-23f, 0x3c01 }, /* just above the tie */
        { 1.0f + 0x3p-11f, 0x3c02 },            /* tie: up to even */
        { 2049.0f, 0x6800 },                    /* tie between 2048 and 2050 */
        { 2051.0f, 0x6802 },                    /* tie between 2050 and 2052 */
        { 65504.0f, 0x7bff },                   /* largest finite */
        { 65519.99609375f, 0x7bff },            /* just below the overflow tie */
        { 65520.0f, 0x7c00 },                   /* the tie overflows */
        { 65536.0f, 0x7c00 },
        { -65520.0f, 0xfc00 },
        { 1e10f, 0x7c00 },
        { FLT_MAX, 0x7c00 },
        { 0x1p-14f, 0x0400 },                   /* smallest normal */
        { 0x1p-14f - 0x1p-25f, 0x0400 },        /* tie: up to even normal */
        { 0x1p-14f - 0x1p-24f, 0x03ff },        /* largest subnormal */
        { 0x1p-24f, 0x0001 },                   /* smallest subnormal */
        { -0x1p-24f, 0x8001 },
        { 0x1p-25f, 0x0000 },                   /* tie: down to zero */
        { -0x1p-25f, 0x8000 },
        { 0x1p-25f + 0x1p-48f, 0x0001 },        /* just above the tie */
        { 0x3p-26f, 0x0001 },                   /* 0.75 steps */
        { 0x3p-25f, 0x0002 },                   /* 1.5 steps: tie up to 2 */
        { 0x5p-25f, 0x0002 },                   /* 2.5 steps: tie down to 2 */
        { FLT_MIN, 0x0000 },
        { FLT_TRUE_MIN, 0x0000 },
        { -FLT_TRUE_MIN, 0x8000 },
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint16_t got = emu_f32_to_f16(cases[i].in);

        if (got != cases[i].want)
            print_error("f16(%a): got 0x%04x want 0x%04x\n",
                        (double)cases[i].in, got, cases[i].want);
        assert_int_equal(got, cases[i].want);
        /* The reference agrees with the hand-worked answer. */
        assert_int_equal(ref_to_f16(cases[i].in), cases[i].want);
    }
    assert_true(isinf(emu_f16_to_f32(0x7c00)));
    assert_true(emu_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(emu_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(emu_f16_to_f32(0x3555) == 0x1.554p-2f);
}

static void
test_bf16_named_cases(void **state)
{
    static const struct {
        float in;
        uint16_t want;
    } cases[] = {
        { 0.0f, 0x0000 },
        { -0.0f, 0x8000 },
        { 1.0f, 0x3f80 },
        { -1.0f, 0xbf80 },
        { 3.14159265f, 0x4049 },
        { 1.0f + 0x1p-8f, 0x3f80 },             /* tie: down to even */
        { 1.0f + 0x1p-8f + 0x1p-23f, 0x3f81 },
        { 1.0f + 0x3p-8f, 0x3f82 },             /* tie: up to even */
        { 0x1.fep127f, 0x7f7f },                /* largest finite */
        { 0x1.ffp127f, 0x7f80 },                /* the tie overflows */
        { 0x1.fefffep127f, 0x7f7f },            /* just below it */
        { FLT_MAX, 0x7f80 },
        { -FLT_MAX, 0xff80 },
        { FLT_MIN, 0x0080 },                    /* smallest normal */
        { 0x1p-133f, 0x0001 },                  /* smallest subnormal */
        { 0x1p-134f, 0x0000 },                  /* tie: down to zero */
        { 0x3p-134f, 0x0002 },                  /* 1.5 steps: up to 2 */
        { FLT_TRUE_MIN, 0x0000 },
        { -FLT_TRUE_MIN, 0x8000 },
        { 0x1.fcp-127f, 0x007f },               /* largest subnormal */
        { 0x1.fep-127f, 0x0080 },               /* tie: up to even normal */
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint16_t got = emu_f32_to_bf16(cases[i].in);

        if (got != cases[i].want)
            print_error("bf16(%a): got 0x%04x want 0x%04x\n",
                        (double)cases[i].in, got, cases[i].want);
        assert_int_equal(got, cases[i].want);
        assert_int_equal(ref_to_bf16(cases[i].in), cases[i].want);
    }
    assert_true(emu_bf16_to_f32(0x3f80) == 1.0f);
    assert_true(emu_bf16_to_f32(0x0001) == 0x1p-133f);
    assert_true(isinf(emu_bf16_to_f32(0xff80)) &&
                signbit(emu_bf16_to_f32(0xff80)));
}

static void
test_tf32_named_cases(void **state)
{
    static const struct {
        float in;
        float want;
    } cases[] = {
        { 1.0f, 1.0f },
        { -1.0f, -1.0f },
        { 1.0f + 0x1p-10f, 1.0f + 0x1p-10f },   /* exactly representable */
        { 1.0f + 0x1p-11f, 1.0f },              /* tie: down to even */
        { 1.0f + 0x1p-11f + 0x1p-23f, 1.0f + 0x1p-10f },
        { 1.0f + 0x3p-11f, 1.0f + 0x1p-9f },    /* tie: up to even */
        { -(1.0f + 0x3p-11f), -(1.0f + 0x1p-9f) },
        { 0.1f, 0x1.998p-4f },
        { 0x1.ffcp127f, 0x1.ffcp127f },         /* largest finite */
        { FLT_MAX, INFINITY },                  /* above the overflow tie */
        { 0x1.ffdffep127f, 0x1.ffcp127f },      /* just below the tie */
        { 0x1p-136f, 0x1p-136f },               /* smallest subnormal */
        { 0x1p-137f, 0.0f },                    /* tie: down to zero */
        { FLT_TRUE_MIN, 0.0f },
        { -FLT_TRUE_MIN, -0.0f },
        { FLT_MIN, FLT_MIN },
        { INFINITY, INFINITY },
        { -INFINITY, -INFINITY },
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        float got = emu_round_tf32(cases[i].in);

        if (bits_of(got) != bits_of(cases[i].want))
            print_error("tf32(%a): got %a want %a\n", (double)cases[i].in,
                        (double)got, (double)cases[i].want);
        assert_int_equal(bits_of(got), bits_of(cases[i].want));
        assert_int_equal(ref_to_tf32_bits(cases[i].in),
                         bits_of(cases[i].want));
    }
}

static void
test_nan_and_inf(void **state)
{
    static const uint32_t nans[] = {
        0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fbfffffu,
        0x7fffffffu, 0x7f802000u, 0x7f800100u,
    };
    size_t i;

    for (i = 0; i < sizeof(nans) / sizeof(nans[0]); i++) {
        float f = float_of(nans[i]);
        uint16_t h = emu_f32_to_f16(f);
        uint16_t b = emu_f32_to_bf16(f);

        assert_true(is_f16_nan(h));
        assert_true(h & 0x0200u);               /* quiet */
        assert_true(is_bf16_nan(b));
        assert_true(b & 0x0040u);
        assert_true(isnan(emu_round_tf32(f)));
        assert_true(isnan(emu_f16_to_f32(h)));
        assert_true(isnan(emu_bf16_to_f32(b)));
    }
    /* Signalling half and bfloat16 NaNs widen to NaN too. */
    assert_true(isnan(emu_f16_to_f32(0x7c01)));
    assert_true(isnan(emu_f16_to_f32(0xfd00)));
    assert_true(isnan(emu_bf16_to_f32(0x7f81)));
    assert_int_equal(emu_f32_to_f16(INFINITY), 0x7c00);
    assert_int_equal(emu_f32_to_f16(-INFINITY), 0xfc00);
    assert_int_equal(emu_f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(emu_f32_to_bf16(-INFINITY), 0xff80);
}

/* ---- Every rounding boundary of every format ------------------------------- */

/* For each finite value of fmt: the value, the midpoint to the next one
 * (the last midpoint is the overflow threshold) and the floats on either
 * side of that midpoint, both signs, through all three conversions. */
static void
check_boundaries_of(const struct ref_fmt *fmt)
{
    uint32_t i;

    for (i = 0; i < fmt->n; i++) {
        double v = fmt->value[i], w = fmt->value[i + 1];
        float mid = (float)((v + w) / 2.0);

        /* The midpoint has mant_bits + 2 significant bits: exact. */
        assert_true((double)mid == (v + w) / 2.0);
        check_float_both_signs((float)v);
        check_float_both_signs(mid);
        check_float_both_signs(nextafterf(mid, 0.0f));
        check_float_both_signs(nextafterf(mid, INFINITY));
    }
}

static void
test_rounding_boundaries(void **state)
{
    check_boundaries_of(&ref_f16);
    check_boundaries_of(&ref_bf16);
    check_boundaries_of(&ref_tf32);
    print_message("rounding boundaries: %lu floats checked\n", check_count);
    assert_int_equal(check_fails, 0);
}

/* A stride through all 2^32 float patterns (both signs, NaNs, subnormals)
 * and random patterns. */
static void
test_float_sweep(void **state)
{
    uint64_t u, x = 0x9e3779b97f4a7c15ull;
    int i;

    for (u = 0; u <= 0xffffffffull; u += 1021)
        check_float(float_of((uint32_t)u));
    for (i = 0; i < 1000000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        check_float(float_of((uint32_t)(x >> 16)));
    }
    /* Every float in two whole binades where half rounds: around 1 and in
     * half's subnormal range. */
    for (u = 0x3f800000u; u < 0x40000000u; u++)
        check_float(float_of((uint32_t)u));
    for (u = 0x33000000u; u < 0x33800000u; u++)
        check_float(float_of((uint32_t)u));
    print_message("sweep: %lu floats checked\n", check_count);
    assert_int_equal(check_fails, 0);
}

/* ---- The GPU model --------------------------------------------------------- */

/* NVIDIA's published dense peaks (TFLOP/s) and bandwidth (TB/s), and the
 * shares of each peak the model delivers (tests/emu/model.c names their
 * sources). */
struct want_gpu {
    const char *key;
    const char *name_part;
    int cc_major, cc_minor;
    int sm_count;
    double mem_gib;
    double fp32, tf32, fp16, fp64, bw;
    double e32, etf, e16, e64;
    double launch_us;
};

static const struct want_gpu want_gpus[] = {
    { "h100", "H100", 9, 0, 132, 80, 66.9, 494.7, 989.4, 66.9, 3.35,
      0.65, 0.65, 0.80, 0.8, 1.2 },
    { "h200", "H200", 9, 0, 132, 141, 66.9, 494.7, 989.4, 66.9, 4.8,
      0.77, 0.85, 0.63, 0.8, 1.2 },
    { "b200", "B200", 10, 0, 148, 180, 75.0, 1100.0, 2250.0, 37.0, 7.7,
      0.65, 0.65, 0.80, 0.8, 1.2 },
    { "a100", "A100", 8, 0, 108, 80, 19.5, 156.0, 312.0, 19.5, 2.04,
      0.8, 0.8, 0.8, 0.8, 3.0 },
    { "l4", "L4", 8, 9, 58, 24, 30.3, 60.0, 121.0, 0.47, 0.30,
      0.8, 0.8, 0.8, 0.8, 3.0 },
    { "rtx4090", "RTX 4090", 8, 9, 128, 24, 82.6, 82.6, 165.2, 1.29, 1.01,
      0.8, 0.8, 0.8, 0.8, 3.0 },
    /* No TF32: a TF32 request runs at the FP32 rate. */
    { "v100", "V100", 7, 0, 80, 32, 15.7, 0.0, 125.0, 7.8, 0.9,
      0.8, 0.8, 0.8, 0.8, 3.0 },
    { "t4", "T4", 7, 5, 40, 16, 8.1, 0.0, 65.0, 0.25, 0.32,
      0.8, 0.8, 0.8, 0.8, 3.0 },
};

static const struct want_gpu *
want_gpu_named(const char *key)
{
    size_t i;

    for (i = 0; i < sizeof(want_gpus) / sizeof(want_gpus[0]); i++)
        if (strcmp(want_gpus[i].key, key) == 0)
            return &want_gpus[i];
    return NULL;
}

/* |got - want| <= rel * |want|, with both numbers in the message. */
static void
assert_close(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want))) {
        print_error("got %.17g, want %.17g\n", got, want);
        fail();
    }
}

static double
model_latency_ns(void)
{
    return emu_model_ns(0.0, EMU_PREC_NONE, 0.0);
}

/*
 * In a child re-executed with AMPSHIM_EMU_GPU set: checks that the model is
 * the GPU `key` names with its published numbers and shares, that the
 * choice is made once, and that a compute-bound GEMM's FP32/FP16 (and
 * TF32, FP64) time ratio is the ratio of the achievable rates, peak times
 * share. Returns the exit status: 0, or the number of the check that
 * failed.
 */
static int
child_check_gpu(const char *key)
{
    const struct want_gpu *w = want_gpu_named(key);
    const struct emu_gpu *g = emu_gpu();
    double flops = 2.0 * 8192.0 * 8192.0 * 8192.0, lat, t32, t16, tt;
    double t64, r32, r16, rtf, r64;

    if (!w || !g)
        return 1;
    if (strcmp(g->key, w->key) != 0) {
        fprintf(stderr, "model is %s, want %s\n", g->key, w->key);
        return 2;
    }
    if (!strstr(g->name, w->name_part))
        return 3;
    if (g->cc_major != w->cc_major || g->cc_minor != w->cc_minor)
        return 4;
    if (g->fp32_tflops != w->fp32 || g->tf32_tflops != w->tf32 ||
        g->fp16_tflops != w->fp16 || g->fp64_tflops != w->fp64 ||
        g->bandwidth_tbs != w->bw)
        return 5;
    if (g->sm_count != w->sm_count ||
        g->total_mem != (size_t)(w->mem_gib * 1024 * 1024 * 1024))
        return 6;
    if (g->fp32_efficiency != w->e32 || g->tf32_efficiency != w->etf ||
        g->fp16_efficiency != w->e16 || g->fp64_efficiency != w->e64 ||
        g->launch_latency_us != w->launch_us)
        return 11;
    r32 = w->fp32 * w->e32;
    r16 = w->fp16 * w->e16;
    rtf = w->tf32 > 0.0 ? w->tf32 * w->etf : r32;
    r64 = w->fp64 * w->e64;
    if (emu_model_tflops(EMU_PREC_FP32) != r32 ||
        emu_model_tflops(EMU_PREC_TF32) != rtf ||
        emu_model_tflops(EMU_PREC_FP16) != r16 ||
        emu_model_tflops(EMU_PREC_FP64) != r64 ||
        emu_model_tflops(EMU_PREC_NONE) != 0.0)
        return 12;
    lat = model_latency_ns();
    t32 = emu_model_ns(flops, EMU_PREC_FP32, 0.0) - lat;
    t16 = emu_model_ns(flops, EMU_PREC_FP16, 0.0) - lat;
    tt = emu_model_ns(flops, EMU_PREC_TF32, 0.0) - lat;
    t64 = emu_model_ns(flops, EMU_PREC_FP64, 0.0) - lat;
    if (fabs(t32 / t16 - r16 / r32) > 1e-9 * (r16 / r32))
        return 7;
    if (fabs(t32 / tt - rtf / r32) > 1e-9 * (rtf / r32))
        return 8;
    if (fabs(t32 / t64 - r64 / r32) > 1e-9 * (r64 / r32))
        return 10;
    /* Read once: a later change of the variable changes nothing. */
    setenv("AMPSHIM_EMU_GPU", strcmp(key, "a100") == 0 ? "l4" : "a100", 1);
    if (emu_gpu() != g)
        return 9;
    return 0;
}

/* In a child re-executed with AMPSHIM_EMU_GPU set: prints on stderr, as
 * exact hexadecimal floats, the modelled nanoseconds of fixed work (an
 * 8192^3 GEMM at each precision, 1 GB moved, nothing) for the parent to
 * compare models. */
static int
child_times(void)
{
    double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;

    fprintf(stderr, "times %a %a %a %a %a %a\n",
            emu_model_ns(flops, EMU_PREC_FP32, 0.0),
            emu_model_ns(flops, EMU_PREC_TF32, 0.0),
            emu_model_ns(flops, EMU_PREC_FP16, 0.0),
            emu_model_ns(flops, EMU_PREC_FP64, 0.0),
            emu_model_ns(0.0, EMU_PREC_NONE, 1e9),
            emu_model_ns(0.0, EMU_PREC_NONE, 0.0));
    return 0;
}

/* Runs this program again as `self MODE ARG` with AMPSHIM_EMU_GPU = env
 * (unset if NULL); returns its exit status and what it wrote on stderr. */
static int
run_model_child(const char *env, const char *mode, const char *arg,
                char *err, size_t errsz)
{
    int fds[2], status = -1;
    size_t got = 0;
    ssize_t r;
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        if (env)
            setenv("AMPSHIM_EMU_GPU", env, 1);
        else
            unsetenv("AMPSHIM_EMU_GPU");
        execl("/proc/self/exe", "test_emu_numerics", mode, arg,
              (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    while (got + 1 < errsz &&
           ((r = read(fds[0], err + got, errsz - 1 - got)) > 0 ||
            (r < 0 && errno == EINTR)))
        if (r > 0)
            got += (size_t)r;
    err[got] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* Runs this program again with AMPSHIM_EMU_GPU = env (unset if NULL) as a
 * child checking for GPU `want`; returns its exit status and what it wrote
 * on stderr. */
static int
run_gpu_child(const char *env, const char *want, char *err, size_t errsz)
{
    return run_model_child(env, "--gpu-child", want, err, errsz);
}

static void
test_gpu_selection(void **state)
{
    static const struct {
        const char *env;
        const char *want;
        int warns;
    } cases[] = {
        { NULL, "h100", 0 },
        { "", "h100", 0 },
        { "h100", "h100", 0 },
        { "h200", "h200", 0 },
        { "b200", "b200", 0 },
        { "a100", "a100", 0 },
        { "l4", "l4", 0 },
        { "rtx4090", "rtx4090", 0 },
        { "v100", "v100", 0 },
        { "t4", "t4", 0 },
        { "p100", "h100", 1 },          /* unknown: one warning, default */
    };
    char err[4096];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = run_gpu_child(cases[i].env, cases[i].want, err, sizeof(err));

        if (rc != 0)
            print_error("AMPSHIM_EMU_GPU=%s: child check %d failed: %s\n",
                        cases[i].env ? cases[i].env : "(unset)", rc, err);
        assert_int_equal(rc, 0);
        if (cases[i].warns) {
            assert_non_null(strstr(err, "AMPSHIM_EMU_GPU"));
            assert_non_null(strstr(err, cases[i].env));
        } else {
            assert_string_equal(err, "");
        }
    }
}

static void
test_model_latency(void **state)
{
    const struct emu_gpu *g = emu_gpu();
    double lat = model_latency_ns();

    /* A launch costs a microsecond or a few, whatever it does. */
    assert_true(lat >= 1000.0 && lat <= 10000.0);
    assert_true(lat == g->launch_latency_us * 1e3);
    /* Memory-only work ignores flops. */
    assert_true(emu_model_ns(1e15, EMU_PREC_NONE, 0.0) == lat);
    assert_true(emu_model_ns(0.0, EMU_PREC_FP16, 0.0) == lat);
    /* Achievable shares of peak, as model.c states them: cuBLAS reaches
     * 0.6 to 0.85 of a peak at large sizes, streaming kernels 80-90 % of
     * bandwidth. */
    assert_true(g->fp32_efficiency >= 0.6 && g->fp32_efficiency <= 0.85);
    assert_true(g->tf32_efficiency >= 0.6 && g->tf32_efficiency <= 0.85);
    assert_true(g->fp16_efficiency >= 0.6 && g->fp16_efficiency <= 0.85);
    assert_true(g->fp64_efficiency >= 0.6 && g->fp64_efficiency <= 0.85);
    assert_true(g->mem_efficiency >= 0.8 && g->mem_efficiency <= 0.9);
}

/* Each side of the roofline alone: work over the achievable rate. */
static void
test_model_rates(void **state)
{
    const struct emu_gpu *g = emu_gpu();
    double lat = model_latency_ns();
    double flops = 1e12, bytes = 1e9;
    double want_copy = bytes / (g->bandwidth_tbs * 1e12 * g->mem_efficiency);
    double want32 = flops / (g->fp32_tflops * 1e12 * g->fp32_efficiency);
    double want16 = flops / (g->fp16_tflops * 1e12 * g->fp16_efficiency);
    double wanttf = flops / (g->tf32_tflops * 1e12 * g->tf32_efficiency);
    double want64 = flops / (g->fp64_tflops * 1e12 * g->fp64_efficiency);

    /* Seconds to nanoseconds. */
    assert_close(emu_model_ns(0.0, EMU_PREC_NONE, bytes) - lat,
                 want_copy * 1e9, 1e-12);
    assert_close(emu_model_ns(flops, EMU_PREC_FP32, 0.0) - lat,
                 want32 * 1e9, 1e-12);
    assert_close(emu_model_ns(flops, EMU_PREC_FP16, 0.0) - lat,
                 want16 * 1e9, 1e-12);
    assert_close(emu_model_ns(flops, EMU_PREC_TF32, 0.0) - lat,
                 wanttf * 1e9, 1e-12);
    assert_close(emu_model_ns(flops, EMU_PREC_FP64, 0.0) - lat,
                 want64 * 1e9, 1e-12);
    /* Double the work, double the time (latency aside). */
    assert_close(emu_model_ns(2 * flops, EMU_PREC_FP32, 0.0) - lat,
                 2 * want32 * 1e9, 1e-12);
    assert_close(emu_model_ns(0.0, EMU_PREC_NONE, 2 * bytes) - lat,
                 2 * want_copy * 1e9, 1e-12);
}

/* Both sides at once: the slower one counts, they do not add up. */
static void
test_model_roofline_max(void **state)
{
    static const enum emu_prec precs[] = {
        EMU_PREC_FP32, EMU_PREC_TF32, EMU_PREC_FP16, EMU_PREC_FP64,
    };
    double lat = model_latency_ns();
    size_t p;
    int fe, be;

    for (p = 0; p < sizeof(precs) / sizeof(precs[0]); p++) {
        for (fe = 3; fe <= 15; fe += 2) {
            for (be = 2; be <= 12; be += 2) {
                double f = pow(10.0, fe), b = pow(10.0, be);
                double math = emu_model_ns(f, precs[p], 0.0) - lat;
                double mem = emu_model_ns(0.0, precs[p], b) - lat;
                double both = emu_model_ns(f, precs[p], b) - lat;

                assert_true(both == (math > mem ? math : mem));
            }
        }
    }
    {
        /* A 4096^3 FP32 GEMM is compute-bound, a 1 GB copy memory-bound. */
        double n = 4096.0;
        double gemm_f = 2 * n * n * n, gemm_b = 3 * n * n * 4;
        double t = emu_model_ns(gemm_f, EMU_PREC_FP32, gemm_b);

        assert_true(t == emu_model_ns(gemm_f, EMU_PREC_FP32, 0.0));
        assert_true(t > emu_model_ns(0.0, EMU_PREC_NONE, gemm_b));
    }
}

/* The modelled times of child_times under AMPSHIM_EMU_GPU = key: an
 * 8192^3 GEMM in FP32, TF32, FP16 and FP64, 1 GB moved, and nothing (the
 * launch latency), in nanoseconds. */
struct model_times {
    double fp32, tf32, fp16, fp64, mem, lat;
};

static struct model_times
times_of(const char *key)
{
    struct model_times t;
    char err[512];

    assert_int_equal(run_model_child(key, "--times-child", key, err,
                                     sizeof(err)), 0);
    if (sscanf(err, "times %la %la %la %la %la %la", &t.fp32, &t.tf32,
               &t.fp16, &t.fp64, &t.mem, &t.lat) != 6) {
        print_error("AMPSHIM_EMU_GPU=%s: %s\n", key, err);
        fail();
    }
    return t;
}

/* The H200 is an H100 with more bandwidth and its own measured shares:
 * compute-bound work takes the H100's time scaled by the shares' ratio
 * (FP64 the same), memory-bound work 3.35/4.8 of it. The B200's times
 * follow its peaks and bandwidth at the H100's shares. Launches cost
 * 1.2 us on all three. */
static void
test_model_hopper_and_blackwell(void **state)
{
    struct model_times h100 = times_of("h100"), h200 = times_of("h200");
    struct model_times b200 = times_of("b200");

    (void)state;
    assert_true(h100.lat == 1200.0 && h200.lat == 1200.0 &&
                b200.lat == 1200.0);
    assert_close((h200.fp32 - h200.lat) / (h100.fp32 - h100.lat),
                 0.65 / 0.77, 1e-12);
    assert_close((h200.tf32 - h200.lat) / (h100.tf32 - h100.lat),
                 0.65 / 0.85, 1e-12);
    assert_close((h200.fp16 - h200.lat) / (h100.fp16 - h100.lat),
                 0.80 / 0.63, 1e-12);
    assert_true(h200.fp64 == h100.fp64);
    assert_close((h100.mem - h100.lat) / (h200.mem - h200.lat), 4.8 / 3.35,
                 1e-12);
    /* An 8192^3 FP32 GEMM on the H100: 1.1e12 flops at 0.65 of 66.9. */
    assert_close(h100.fp32 - h100.lat,
                 2.0 * 8192.0 * 8192.0 * 8192.0 / (66.9 * 0.65) * 1e-3,
                 1e-12);
    assert_close((h100.fp16 - h100.lat) / (b200.fp16 - b200.lat),
                 2250.0 / 989.4, 1e-12);
    assert_close((h100.tf32 - h100.lat) / (b200.tf32 - b200.lat),
                 1100.0 / 494.7, 1e-12);
    assert_close((h100.fp32 - h100.lat) / (b200.fp32 - b200.lat),
                 75.0 / 66.9, 1e-12);
    assert_close((h100.fp64 - h100.lat) / (b200.fp64 - b200.lat),
                 37.0 / 66.9, 1e-12);
    assert_close((h100.mem - h100.lat) / (b200.mem - b200.lat), 7.7 / 3.35,
                 1e-12);
}

/* Tensor Cores are at least as fast as CUDA cores on every model. */
static void
test_model_precision_order(void **state)
{
    double f = 1e13;
    double t32 = emu_model_ns(f, EMU_PREC_FP32, 0.0);
    double ttf = emu_model_ns(f, EMU_PREC_TF32, 0.0);
    double t16 = emu_model_ns(f, EMU_PREC_FP16, 0.0);

    assert_true(ttf <= t32);
    assert_true(t16 < ttf);
}

/* The emulator's products run on one OpenBLAS kernel family, Haswell's,
 * whatever the CPU and whatever core type OpenBLAS chose when it loaded
 * (meson also runs this test with OPENBLAS_CORETYPE=Sandybridge), so
 * that their last bits are the same on every x86-64 machine with AVX2
 * and FMA; the program's OPENBLAS_CORETYPE is left as it was. */
static void
test_one_blas_kernel_family(void **state)
{
    void *sym = dlsym(RTLD_DEFAULT, "openblas_get_corename");
    const char *(*corename)(void);
    const char *env = getenv("OPENBLAS_CORETYPE");
    char *before = env ? strdup(env) : NULL;

    (void)state;
    assert_non_null(sym);
    memcpy(&corename, &sym, sizeof(corename));
    emu_cpu_threads();          /* what the first product sets up */
    if (dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init") == NULL ||
        !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        free(before);
        skip();
    }
    assert_int_equal(strcasecmp(corename(), "Haswell"), 0);
    env = getenv("OPENBLAS_CORETYPE");
    if (before == NULL)
        assert_null(env);
    else
        assert_string_equal(env, before);
    free(before);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_f16_round_trip_all, setup_tables),
        cmocka_unit_test_setup(test_bf16_round_trip_all, setup_tables),
        cmocka_unit_test_setup(test_f16_named_cases, setup_tables),
        cmocka_unit_test_setup(test_bf16_named_cases, setup_tables),
        cmocka_unit_test_setup(test_tf32_named_cases, setup_tables),
        cmocka_unit_test_setup(test_nan_and_inf, setup_tables),
        cmocka_unit_test_setup(test_rounding_boundaries, setup_tables),
        cmocka_unit_test_setup(test_float_sweep, setup_tables),
        cmocka_unit_test(test_gpu_selection),
        cmocka_unit_test(test_model_latency),
        cmocka_unit_test(test_model_rates),
        cmocka_unit_test(test_model_roofline_max),
        cmocka_unit_test(test_model_precision_order),
        cmocka_unit_test(test_model_hopper_and_blackwell),
        cmocka_unit_test(test_one_blas_kernel_family),
    };

    if (argc == 3 && strcmp(argv[1], "--gpu-child") == 0)
        return child_check_gpu(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--times-child") == 0)
        return child_times();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
