/* Unit tests of the policy action auto's choice per (site, shape): the
 * order candidates are measured in, the fastest within the tolerance,
 * fp16x3 and tf32x3 only when nothing else is within it, FP32 when nothing
 * qualifies, sampled calls, a choice that drifts over the tolerance, and
 * candidates that cannot run or be timed; and of what it is per: sites
 * told apart by their call stack behind one wrapper, every (site, shape)
 * deciding alone, and a shape beyond the table FP32. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "decide/auto.h"

#include "base/config.h"
#include "base/log.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The policy's bound in these tests: 5e-3 in the max norm. */
static const struct amp_auto_bound tol = {5e-3, AMP_NORM_MAX};
#define TOL (&tol)

static int site_number;

/* A fresh site, and the slot of its one shape (key 42). */
static struct amp_site *
fresh_site(int *slot)
{
    static const char api[] = "cublasSgemm_v2";
    struct amp_site *site =
        amp_site_get(api, (const void *)(uintptr_t)(0x1000 + ++site_number));

    assert_non_null(site);
    amp_site_shape_count(site, 42, slot);
    assert_true(*slot >= 0 && *slot < AMP_SITE_SHAPE_TABLE);
    return site;
}

static void
decide(struct amp_site *site, enum amp_family family, int64_t count,
       int64_t period, struct amp_decision *out)
{
    int slot;

    memset(out, 0, sizeof *out);
    amp_site_shape_count(site, 42, &slot);
    amp_auto_decide(site, slot, family, 1, 0, count, period, out);
    assert_int_equal(out->automatic, 1);
}

/* Shadow calls of `mode`: its error, and AMP_AUTO_SAMPLES times beside
 * FP32's (one untimed call for a negative time). */
static void
measured(struct amp_site *site, int slot, enum amp_mode mode, double rel,
         double ms, double fp32_ms)
{
    struct amp_gemm_error e = {.max_abs = rel, .max_rel = rel,
                               .fro_rel = rel / 4};
    int i;

    amp_auto_error(site, slot, mode, &e, TOL);
    for (i = 0; i < (ms < 0 ? 1 : AMP_AUTO_SAMPLES); i++)
        amp_auto_time(site, slot, mode, ms, fp32_ms, 0, TOL);
}

/* Shadow calls of `mode`: its error, and one time beside FP32's for
 * each of n (candidate, FP32) pairs in ms. */
static void
sampled(struct amp_site *site, int slot, enum amp_mode mode, double rel,
        const double *ms, int n)
{
    struct amp_gemm_error e = {.max_abs = rel, .max_rel = rel,
                               .fro_rel = rel / 4};
    int i;

    amp_auto_error(site, slot, mode, &e, TOL);
    for (i = 0; i < n; i++)
        amp_auto_time(site, slot, mode, ms[2 * i], ms[2 * i + 1], 0, TOL);
}

/* A shadow call of `candidate`; returns its order (1: FP32 first). */
static int
expect_shadow(struct amp_site *site, enum amp_family family, int64_t count,
              enum amp_mode candidate)
{
    struct amp_decision d;

    decide(site, family, count, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_SHADOW);
    assert_int_equal(d.candidate, candidate);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    return d.fp32_first;
}

static void
expect_mode(struct amp_site *site, enum amp_family family, int64_t count,
            enum amp_mode mode)
{
    struct amp_decision d;

    decide(site, family, count, 0, &d);
    assert_int_equal(d.mode, mode);
    assert_int_equal(d.why, AMP_WHY_AUTO);
}

/* A GEMM shape's first three calls: fp16, bf16, tf32 in shadow. */
static void
expect_gemm_candidates(struct amp_site *site)
{
    /* Each candidate's first shadow call: the candidate first. */
    assert_int_equal(expect_shadow(site, AMP_FAMILY_GEMM, 1, AMP_MODE_FP16),
                     0);
    assert_int_equal(expect_shadow(site, AMP_FAMILY_GEMM, 2, AMP_MODE_BF16),
                     0);
    assert_int_equal(expect_shadow(site, AMP_FAMILY_GEMM, 3, AMP_MODE_TF32),
                     0);
}

static void
test_gemm_measures_then_takes_the_fastest(void **state)
{
    struct amp_auto_view v;
    struct amp_decision d;
    int slot;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    expect_gemm_candidates(site);
    /* No result yet: the candidates run again, least tried first; a
     * candidate's second shadow call runs the FP32 original first, its
     * first one runs the candidate first. */
    assert_int_equal(expect_shadow(site, AMP_FAMILY_GEMM, 4, AMP_MODE_FP16),
                     1);
    measured(site, slot, AMP_MODE_FP16, 3e-4, 1.0, 2.0);
    measured(site, slot, AMP_MODE_BF16, 2e-3, 0.8, 2.0);
    assert_int_equal(expect_shadow(site, AMP_FAMILY_GEMM, 5, AMP_MODE_TF32),
                     1);
    measured(site, slot, AMP_MODE_TF32, 3e-4, 0.5, 2.0);
    expect_mode(site, AMP_FAMILY_GEMM, 6, AMP_MODE_TF32);
    assert_int_equal(amp_auto_get(site, slot, &v), 0);
    assert_int_equal(v.state, AMP_AUTO_CHOSEN);
    assert_int_equal(v.ncandidates, 3); /* fp16x3 was never needed */
    assert_int_equal(v.c[v.choice].mode, AMP_MODE_TF32);
    assert_int_equal(v.c[0].issued, 2);
    assert_int_equal(v.c[2].issued, 2);
    /* shadow-rate: every 10th call of the shape is measured again. */
    decide(site, AMP_FAMILY_GEMM, 20, 10, &d);
    assert_int_equal(d.mode, AMP_MODE_SHADOW);
    assert_int_equal(d.candidate, AMP_MODE_TF32);
    assert_int_equal(d.why, AMP_WHY_SAMPLE);
    assert_int_equal(d.fp32_first, 1); /* the second sample */
    decide(site, AMP_FAMILY_GEMM, 21, 10, &d);
    assert_int_equal(d.mode, AMP_MODE_TF32);
    decide(site, AMP_FAMILY_GEMM, 30, 10, &d);
    assert_int_equal(d.mode, AMP_MODE_SHADOW);
    assert_int_equal(d.fp32_first, 0);
}

static void
test_drift_gives_way(void **state)
{
    struct amp_auto_view v;
    struct amp_gemm_error worse = {.max_rel = 1e-2};
    char why[96], log[64], text[2048];
    FILE *f;
    int slot;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    expect_gemm_candidates(site);
    measured(site, slot, AMP_MODE_FP16, 3e-4, 1.0, 2.0);
    measured(site, slot, AMP_MODE_BF16, 2e-3, 0.8, 2.0);
    measured(site, slot, AMP_MODE_TF32, 3e-4, 0.5, 2.0);
    expect_mode(site, AMP_FAMILY_GEMM, 4, AMP_MODE_TF32);
    /* A sampled tf32 call over the tolerance: the next fastest, bf16,
     * with one warning and, at debug level, the new choice's figures. */
    snprintf(log, sizeof log, "/tmp/ampshim-auto-log-%ld.txt",
             (long)getpid());
    amp_log_open(AMP_LOG_DEBUG, log, 1);
    amp_auto_error(site, slot, AMP_MODE_TF32, &worse, TOL);
    amp_log_close();
    expect_mode(site, AMP_FAMILY_GEMM, 5, AMP_MODE_BF16);
    f = fopen(log, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    unlink(log);
    assert_non_null(strstr(text, "warning: cublasSgemm_v2 called from "));
    assert_non_null(strstr(text, ": auto's tf32 now has error 0.01 over "
                                 "the tolerance 0.005; that shape now "
                                 "runs bf16\n"));
    assert_non_null(strstr(text, "debug: auto: cublasSgemm_v2 at "));
    assert_non_null(strstr(text, ": bf16 (fp16 2.00x 0.0003; bf16 2.50x "
                                 "0.002; tf32 4.00x 0.01: error 0.01 over "
                                 "the tolerance 0.005)\n"));
    amp_auto_get(site, slot, &v);
    assert_int_equal(v.changes, 1);
    assert_string_equal(amp_auto_rejects(&v.c[2], TOL, why, sizeof why),
                        "error 0.01 over the tolerance 0.005");
    /* Then bf16 and fp16: nothing within, so fp16x3 and tf32x3 are
     * measured, and the faster one taken. */
    amp_auto_error(site, slot, AMP_MODE_BF16, &worse, TOL);
    expect_mode(site, AMP_FAMILY_GEMM, 6, AMP_MODE_FP16);
    amp_auto_error(site, slot, AMP_MODE_FP16, &worse, TOL);
    expect_shadow(site, AMP_FAMILY_GEMM, 7, AMP_MODE_FP16X3);
    measured(site, slot, AMP_MODE_FP16X3, 1e-6, 1.5, 2.0);
    expect_shadow(site, AMP_FAMILY_GEMM, 8, AMP_MODE_TF32X3);
    measured(site, slot, AMP_MODE_TF32X3, 1e-7, 1.2, 2.0);
    expect_mode(site, AMP_FAMILY_GEMM, 9, AMP_MODE_TF32X3);
    amp_auto_get(site, slot, &v);
    assert_int_equal(v.ncandidates, 5);
    assert_int_equal(v.changes, 3);
}

static void
test_fp16x3_only_when_nothing_is_within(void **state)
{
    struct amp_auto_view v;
    int slot;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    expect_gemm_candidates(site);
    /* Over the tolerance: judged on the error alone, no time needed. */
    measured(site, slot, AMP_MODE_FP16, 2e-2, -1.0, -1.0);
    measured(site, slot, AMP_MODE_BF16, 2e-1, -1.0, -1.0);
    measured(site, slot, AMP_MODE_TF32, 2e-2, -1.0, -1.0);
    expect_shadow(site, AMP_FAMILY_GEMM, 4, AMP_MODE_FP16X3);
    expect_shadow(site, AMP_FAMILY_GEMM, 5, AMP_MODE_TF32X3);
    /* Both within the tolerance but slower than FP32: FP32. */
    measured(site, slot, AMP_MODE_FP16X3, 8e-6, 2.5, 2.0);
    measured(site, slot, AMP_MODE_TF32X3, 1e-7, 2.1, 2.0);
    expect_mode(site, AMP_FAMILY_GEMM, 6, AMP_MODE_FP32);
    amp_auto_get(site, slot, &v);
    assert_int_equal(v.state, AMP_AUTO_FP32);
    assert_int_equal(v.ncandidates, 5);
}

static void
test_conv_candidates(void **state)
{
    struct amp_auto_view v;
    int slot;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    expect_shadow(site, AMP_FAMILY_CONV, 1, AMP_MODE_ALLOW_CONVERSION);
    expect_shadow(site, AMP_FAMILY_CONV, 2, AMP_MODE_FP16);
    expect_shadow(site, AMP_FAMILY_CONV, 3, AMP_MODE_BF16);
    measured(site, slot, AMP_MODE_ALLOW_CONVERSION, 2e-2, 0.5, 1.0);
    measured(site, slot, AMP_MODE_FP16, 2e-2, 0.5, 1.0);
    measured(site, slot, AMP_MODE_BF16, 2e-1, 0.5, 1.0);
    /* No fp16x3 for a convolution: nothing within, FP32. */
    expect_mode(site, AMP_FAMILY_CONV, 4, AMP_MODE_FP32);
    amp_auto_get(site, slot, &v);
    assert_int_equal(v.ncandidates, 3);
}

/* A GEMM whose m, n or k is not a multiple of 8 measures tf32 alone (it
 * needs no half-precision copies), and converts with it when it gains;
 * fp16x3, on FP16 copies too, never joins, tf32x3 (FP32 copies) does; a
 * convolution fits whatever its channels (its copies pad them). */
static void
test_unaligned_shapes(void **state)
{
    struct amp_policy_call gemm = {.family = AMP_FAMILY_GEMM},
                           conv = {.family = AMP_FAMILY_CONV};
    struct amp_auto_view v;
    struct amp_decision d;
    char why[96];
    int slot, i;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    amp_policy_call_set(&gemm, AMP_FIELD_M, 2048);
    amp_policy_call_set(&gemm, AMP_FIELD_N, 2048);
    amp_policy_call_set(&gemm, AMP_FIELD_K, 256);
    assert_int_equal(amp_auto_half_fits(&gemm), 1);
    amp_policy_call_set(&gemm, AMP_FIELD_K, 250);
    assert_int_equal(amp_auto_half_fits(&gemm), 0);
    amp_policy_call_set(&conv, AMP_FIELD_CONV_C, 64);
    amp_policy_call_set(&conv, AMP_FIELD_CONV_K, 64);
    assert_int_equal(amp_auto_half_fits(&conv), 1);
    /* A convolution's copies pad its channels: 3 fits too. */
    amp_policy_call_set(&conv, AMP_FIELD_CONV_C, 3);
    assert_int_equal(amp_auto_half_fits(&conv), 1);

    /* tf32 is measured first, and chosen. */
    memset(&d, 0, sizeof d);
    amp_auto_decide(site, slot, AMP_FAMILY_GEMM, 0, 0, 1, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_SHADOW);
    assert_int_equal(d.candidate, AMP_MODE_TF32);
    measured(site, slot, AMP_MODE_TF32, 3e-4, 0.5, 2.0);
    amp_auto_decide(site, slot, AMP_FAMILY_GEMM, 0, 0, 2, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_TF32);
    assert_int_equal(amp_auto_get(site, slot, &v), 0);
    assert_int_equal(v.state, AMP_AUTO_CHOSEN);
    for (i = 0; i < 2; i++) {
        assert_int_equal(v.c[i].issued, 0);
        assert_string_equal(amp_auto_rejects(&v.c[i], TOL, why, sizeof why),
                            "its half-precision copies need dimensions "
                            "that are multiples of 8");
    }

    /* tf32 over the tolerance: tf32x3 is measured, without fp16x3, and
     * taken where it gains; FP32 where it does not. */
    site = fresh_site(&slot);
    amp_auto_decide(site, slot, AMP_FAMILY_GEMM, 0, 0, 1, 0, &d);
    measured(site, slot, AMP_MODE_TF32, 0.2, 0.5, 2.0);
    amp_auto_decide(site, slot, AMP_FAMILY_GEMM, 0, 0, 2, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_SHADOW);
    assert_int_equal(d.candidate, AMP_MODE_TF32X3);
    measured(site, slot, AMP_MODE_TF32X3, 1e-7, 1.5, 2.0);
    amp_auto_decide(site, slot, AMP_FAMILY_GEMM, 0, 0, 3, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_TF32X3);
    amp_auto_get(site, slot, &v);
    assert_int_equal(v.ncandidates, 4);
    assert_int_equal(v.c[3].mode, AMP_MODE_TF32X3);
    assert_int_equal(v.state, AMP_AUTO_CHOSEN);
    site = fresh_site(&slot);
    amp_auto_decide(site, slot, AMP_FAMILY_GEMM, 0, 0, 1, 0, &d);
    measured(site, slot, AMP_MODE_TF32, 0.2, 0.5, 2.0);
    amp_auto_decide(site, slot, AMP_FAMILY_GEMM, 0, 0, 2, 0, &d);
    measured(site, slot, AMP_MODE_TF32X3, 1e-7, 2.5, 2.0);
    amp_auto_decide(site, slot, AMP_FAMILY_GEMM, 0, 0, 3, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_FP32);
    amp_auto_get(site, slot, &v);
    assert_int_equal(v.state, AMP_AUTO_FP32);

    /* A call without fitting dimensions and no tf32 candidate (the
     * convolutions' list; a GEMM always has tf32): FP32 at once, every
     * candidate ruled out. */
    site = fresh_site(&slot);
    amp_auto_decide(site, slot, AMP_FAMILY_CONV, 0, 0, 1, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_FP32);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    assert_int_equal(d.auto_slot, slot);
    amp_auto_get(site, slot, &v);
    assert_int_equal(v.state, AMP_AUTO_FP32);
    for (i = 0; i < v.ncandidates; i++)
        assert_int_equal(v.c[i].unfit, 1);
}

static void
test_failures_rule_out(void **state)
{
    struct amp_auto_view v;
    struct amp_gemm_error nonfinite = {.max_rel = 1e-4, .nonfinite = 3};
    char why[96];
    int slot, i;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    expect_gemm_candidates(site);
    amp_auto_error(site, slot, AMP_MODE_FP16, &nonfinite, TOL);
    amp_auto_failed(site, slot, AMP_MODE_BF16, TOL);
    measured(site, slot, AMP_MODE_TF32, 3e-4, -1.0, -1.0);
    /* tf32 has its error but no time: it runs again until timed, or
     * until it has run untimed four times. */
    for (i = 0; i < 3; i++) {
        expect_shadow(site, AMP_FAMILY_GEMM, 4 + i, AMP_MODE_TF32);
        amp_auto_time(site, slot, AMP_MODE_TF32, -1.0, -1.0, 0, TOL);
    }
    /* Nothing within: fp16x3. */
    expect_shadow(site, AMP_FAMILY_GEMM, 7, AMP_MODE_FP16X3);
    amp_auto_get(site, slot, &v);
    assert_string_equal(amp_auto_rejects(&v.c[0], TOL, why, sizeof why),
                        "3 non-finite elements where FP32 had none");
    assert_string_equal(amp_auto_rejects(&v.c[1], TOL, why, sizeof why),
                        "the converted path could not run it");
    assert_string_equal(amp_auto_rejects(&v.c[2], TOL, why, sizeof why),
                        "no time measured");
    assert_string_equal(amp_auto_rejects(&v.c[3], TOL, why, sizeof why),
                        "not measured yet");
}

/* The first results at a new site: fp16 within the tolerance, timed by a
 * warm-up call at 0.9 ms (FP32 2.0), bf16 at 0.8, tf32 at 0.7. */
static struct amp_site *
warmed_up(int *slot)
{
    struct amp_gemm_error e = {.max_rel = 3e-4, .fro_rel = 1e-4};
    struct amp_site *site = fresh_site(slot);

    expect_gemm_candidates(site);
    amp_auto_error(site, *slot, AMP_MODE_FP16, &e, TOL);
    amp_auto_time(site, *slot, AMP_MODE_FP16, 0.9, 2.0, 1, TOL);
    measured(site, *slot, AMP_MODE_BF16, 2e-3, 0.8, 2.0);
    measured(site, *slot, AMP_MODE_TF32, 3e-4, 0.7, 2.0);
    return site;
}

/* fp16's first call at a shape takes two passes (delayed scaling's
 * first call): its time is not counted, and later shadow calls measure
 * the one-pass cost that decides, FP32 timed beside each. A second
 * two-pass time counts: the shape's calls then all take two. */
static void
test_warmup_time_measured_again(void **state)
{
    struct amp_auto_view v;
    int slot, t, i;
    /* Two passes: slower than tf32; one pass (below): faster. */
    struct amp_site *site = warmed_up(&slot);
    struct amp_site *thrash = warmed_up(&t);

    (void)state;
    for (i = 0; i < AMP_AUTO_SAMPLES; i++) {
        expect_shadow(site, AMP_FAMILY_GEMM, 4 + i, AMP_MODE_FP16);
        amp_auto_time(site, slot, AMP_MODE_FP16, 0.6, 2.0, 0, TOL);
    }
    expect_mode(site, AMP_FAMILY_GEMM, 7, AMP_MODE_FP16);
    amp_auto_get(site, slot, &v);
    assert_int_equal(v.c[0].issued, 1 + AMP_AUTO_SAMPLES);
    assert_int_equal(v.c[0].timed, AMP_AUTO_SAMPLES);
    assert_int_equal(v.c[0].warmups, 1);
    assert_true(v.c[0].candidate_ms == 0.6 * AMP_AUTO_SAMPLES);

    /* Every call two passes (its record never lasts): the later times
     * count, and tf32 stays the faster. */
    for (i = 0; i < AMP_AUTO_SAMPLES; i++) {
        expect_shadow(thrash, AMP_FAMILY_GEMM, 4 + i, AMP_MODE_FP16);
        amp_auto_time(thrash, t, AMP_MODE_FP16, 0.9, 2.0, 1, TOL);
    }
    expect_mode(thrash, AMP_FAMILY_GEMM, 7, AMP_MODE_TF32);
    amp_auto_get(thrash, t, &v);
    assert_int_equal(v.c[0].timed, AMP_AUTO_SAMPLES);
    assert_int_equal(v.c[0].warmups, 1 + AMP_AUTO_SAMPLES);
}

/* A choice rests on the median of AMP_AUTO_SAMPLES samples, each beside
 * its own FP32 time: one slow sample (the device busy for a while)
 * neither decides nor rules a candidate out; two samples are not enough;
 * a gain under 1 % is none; candidates within 1 % of each other are of
 * one speed, and the one with the least error is chosen, whichever
 * median noise put first. */
static void
test_median_of_samples(void **state)
{
    /* fp16: one sample 5x slow, FP32 beside it slow too. */
    static const double fp16[] = {1.0, 2.0, 5.0, 6.0, 1.05, 2.1};
    /* bf16: the least median, but within 1 % of fp16's; more error. */
    static const double bf16[] = {1.045, 2.0, 0.92, 2.0, 1.08, 2.0};
    /* tf32: equal to FP32 but for noise, gaining under 1 %. */
    static const double tf32[] = {0.5, 0.502, 0.5, 0.498, 0.5, 0.503};
    char why[96];
    struct amp_auto_view v;
    int slot;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    expect_gemm_candidates(site);
    sampled(site, slot, AMP_MODE_FP16, 3e-4, fp16, 2);
    sampled(site, slot, AMP_MODE_BF16, 2e-3, bf16, 3);
    sampled(site, slot, AMP_MODE_TF32, 3e-4, tf32, 3);
    amp_auto_get(site, slot, &v);
    assert_string_equal(amp_auto_rejects(&v.c[2], TOL, why, sizeof why),
                        "not faster than fp32");
    assert_string_equal(amp_auto_rejects(&v.c[0], TOL, why, sizeof why),
                        "not measured yet");
    expect_shadow(site, AMP_FAMILY_GEMM, 4, AMP_MODE_FP16);
    amp_auto_time(site, slot, AMP_MODE_FP16, fp16[4], fp16[5], 0, TOL);
    expect_mode(site, AMP_FAMILY_GEMM, 5, AMP_MODE_FP16);
    amp_auto_get(site, slot, &v);
    assert_null(amp_auto_rejects(&v.c[1], TOL, why, sizeof why));
    assert_int_equal(v.c[0].timed, 3);

    /* Clearly faster (ranges apart): the faster, whatever its error. */
    site = fresh_site(&slot);
    expect_gemm_candidates(site);
    sampled(site, slot, AMP_MODE_FP16, 3e-4, fp16, 3);
    measured(site, slot, AMP_MODE_BF16, 2e-3, 0.5, 2.0);
    measured(site, slot, AMP_MODE_TF32, 2e-2, 0.5, 2.0);
    expect_mode(site, AMP_FAMILY_GEMM, 4, AMP_MODE_BF16);
}

/* A fresh GEMM site whose fp16 and bf16 are slower than FP32, and whose
 * tf32 has the three samples `tf32` ((candidate, FP32) pairs); *v its
 * view after them. */
static struct amp_site *
site_with_tf32(const double *tf32, int *slot, struct amp_auto_view *v)
{
    static const double slow[] = {1.5, 1.0, 1.5, 1.0, 1.5, 1.0};
    struct amp_site *site = fresh_site(slot);

    expect_gemm_candidates(site);
    sampled(site, *slot, AMP_MODE_FP16, 3e-4, slow, 3);
    sampled(site, *slot, AMP_MODE_BF16, 3e-4, slow, 3);
    sampled(site, *slot, AMP_MODE_TF32, 3e-4, tf32, 3);
    amp_auto_get(site, *slot, v);
    return site;
}

/* A gain is taken only where the samples agree on it: a median 2 % under
 * FP32's time whose samples lie 2.5 % apart (timing noise, a recorded
 * event's cost varying beside a small call) stays FP32, with the reason;
 * the same median with samples 0.5 % apart converts. */
static void
test_gain_within_noise(void **state)
{
    /* ratios 0.98, 1.0, 0.975; then 0.98, 0.982, 0.977 */
    static const double noisy[] = {0.98, 1.0, 1.0, 1.0, 0.975, 1.0};
    static const double steady[] = {0.98, 1.0, 0.982, 1.0, 0.977, 1.0};
    char why[96];
    struct amp_auto_view v;
    int slot;
    struct amp_site *site;

    (void)state;
    site = site_with_tf32(noisy, &slot, &v);
    assert_string_equal(amp_auto_rejects(&v.c[2], TOL, why, sizeof why),
                        "faster than fp32 by less than its samples vary");
    expect_mode(site, AMP_FAMILY_GEMM, 4, AMP_MODE_FP32);
    site = site_with_tf32(steady, &slot, &v);
    assert_null(amp_auto_rejects(&v.c[2], TOL, why, sizeof why));
    expect_mode(site, AMP_FAMILY_GEMM, 4, AMP_MODE_TF32);
}

/* A host ahead of its device: once every candidate has as many shadow
 * calls out as it needs samples, the shape's calls run FP32 (reason
 * auto-wait: their results are on their way); one call in
 * AMP_AUTO_WAIT_MAX goes out in shadow anyway (a result lost on the way
 * does not stop the measuring); with the results back, the choice
 * converts. */
static void
test_host_ahead_waits(void **state)
{
    static const enum amp_mode order[] = {AMP_MODE_FP16, AMP_MODE_BF16,
                                          AMP_MODE_TF32};
    struct amp_decision d;
    int slot, i, n = 0;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    for (i = 0; i < 3 * AMP_AUTO_SAMPLES; i++)
        expect_shadow(site, AMP_FAMILY_GEMM, ++n, order[i % 3]);
    for (i = 0; i < AMP_AUTO_WAIT_MAX; i++) {
        decide(site, AMP_FAMILY_GEMM, ++n, 0, &d);
        assert_int_equal(d.mode, AMP_MODE_FP32);
        assert_int_equal(d.why, AMP_WHY_AUTO_WAIT);
    }
    expect_shadow(site, AMP_FAMILY_GEMM, ++n, AMP_MODE_FP16);
    decide(site, AMP_FAMILY_GEMM, ++n, 0, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO_WAIT);
    /* Two of fp16's results back: it needs one more, and has two out. */
    amp_auto_time(site, slot, AMP_MODE_FP16, 0.5, 2.0, 0, TOL);
    amp_auto_time(site, slot, AMP_MODE_FP16, 0.5, 2.0, 0, TOL);
    decide(site, AMP_FAMILY_GEMM, ++n, 0, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO_WAIT);
    measured(site, slot, AMP_MODE_FP16, 3e-4, 0.5, 2.0);
    measured(site, slot, AMP_MODE_BF16, 2e-3, 0.4, 2.0);
    measured(site, slot, AMP_MODE_TF32, 3e-4, 0.3, 2.0);
    expect_mode(site, AMP_FAMILY_GEMM, ++n, AMP_MODE_TF32);
}

/* A shadow call whose work was refused (memory full for a while) is
 * counted untimed, not against the candidate: its later samples decide.
 * Four such calls before any sample rule it out. */
static void
test_transient_failures(void **state)
{
    struct amp_auto_view v;
    char why[96];
    int slot, i;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    expect_gemm_candidates(site);
    for (i = 0; i < 3; i++)
        amp_auto_time(site, slot, AMP_MODE_FP16, -1.0, -1.0, 0, TOL);
    measured(site, slot, AMP_MODE_FP16, 3e-4, 0.5, 2.0);
    measured(site, slot, AMP_MODE_BF16, 2e-3, 1.0, 2.0);
    for (i = 0; i < 4; i++)
        amp_auto_time(site, slot, AMP_MODE_TF32, -1.0, -1.0, 0, TOL);
    expect_mode(site, AMP_FAMILY_GEMM, 4, AMP_MODE_FP16);
    amp_auto_get(site, slot, &v);
    assert_int_equal(v.c[0].untimed, 3);
    assert_string_equal(amp_auto_rejects(&v.c[2], TOL, why, sizeof why),
                        "no time measured");
}

/* A tolerance of FP32 accuracy in the Frobenius norm (1e-6:fro): the
 * 16-bit modes are over it, fp16x3 within it and chosen. */
static void
test_frobenius_bound(void **state)
{
    static const struct amp_auto_bound fro = {1e-6, AMP_NORM_FRO};
    struct amp_gemm_error e16 = {.max_rel = 4.6e-5, .fro_rel = 1.1e-5};
    struct amp_gemm_error e16x3 = {.max_rel = 3e-6, .fro_rel = 4e-7};
    struct amp_auto_view v;
    char why[96];
    int slot, i;
    struct amp_site *site = fresh_site(&slot);

    (void)state;
    expect_gemm_candidates(site);
    amp_auto_error(site, slot, AMP_MODE_FP16, &e16, &fro);
    amp_auto_error(site, slot, AMP_MODE_BF16, &e16, &fro);
    amp_auto_error(site, slot, AMP_MODE_TF32, &e16, &fro);
    expect_shadow(site, AMP_FAMILY_GEMM, 4, AMP_MODE_FP16X3);
    /* Over 1e-6 in the max norm, within it in the Frobenius norm. */
    amp_auto_error(site, slot, AMP_MODE_FP16X3, &e16x3, &fro);
    for (i = 0; i < AMP_AUTO_SAMPLES; i++)
        amp_auto_time(site, slot, AMP_MODE_FP16X3, 1.0, 2.0, 0, &fro);
    /* tf32x3 over it in both norms (a stand-in figure): fp16x3. */
    expect_shadow(site, AMP_FAMILY_GEMM, 5, AMP_MODE_TF32X3);
    amp_auto_error(site, slot, AMP_MODE_TF32X3, &e16, &fro);
    expect_mode(site, AMP_FAMILY_GEMM, 6, AMP_MODE_FP16X3);
    amp_auto_get(site, slot, &v);
    assert_string_equal(amp_auto_rejects(&v.c[0], &fro, why, sizeof why),
                        "error 1.1e-05 over the tolerance 1e-06 "
                        "(Frobenius norm)");
}

/* A stand-in for a hook: its site, from its return address. */
static __attribute__((noinline)) struct amp_site *
hook_stand_in(void)
{
    static const char api[] = "cublasSgemm_v2";
    struct amp_site *site = amp_site_get(api, __builtin_return_address(0));

    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return site;
}

/* The one function a framework's layers call for every GEMM. */
static __attribute__((noinline)) struct amp_site *
wrapper(void)
{
    struct amp_site *site = hook_stand_in();

    __asm__ volatile("" ::: "memory");
    return site;
}

/* Two layers, each different so that the compiler does not fold them
 * into one. */
static volatile int layer_seen;

static __attribute__((noinline)) struct amp_site *
layer_a(void)
{
    struct amp_site *site = wrapper();

    layer_seen += 1;
    return site;
}

static __attribute__((noinline)) struct amp_site *
layer_b(void)
{
    struct amp_site *site = wrapper();

    layer_seen += 2;
    return site;
}

static void
test_stacks_tell_sites_apart(void **state)
{
    struct amp_site *(*volatile layer[])(void) = {layer_a, layer_b, layer_a,
                                                  layer_b, layer_a, layer_b};
    struct amp_site *got[6], *a, *b;
    int i;

    (void)state;
    /* Every call from one place, the layers in turn: the stacks differ
     * only in the layer, and a stack kept from an earlier call is taken
     * only for its own layer. */
    for (i = 0; i < 6; i++)
        got[i] = layer[i]();
    a = got[0];
    b = got[1];
    assert_non_null(a);
    assert_non_null(b);
    for (i = 2; i < 6; i++)
        assert_ptr_equal(got[i], i % 2 ? b : a);
    assert_ptr_not_equal(a, b);
    /* The same return address (the wrapper's), other layers above it. */
    assert_ptr_equal(a->caller, b->caller);
    assert_true(a->depth >= 2 && b->depth >= 2);
    assert_ptr_not_equal(a->stack[1], b->stack[1]);
}

static void
test_shapes_decide_alone(void **state)
{
    static const char api[] = "cublasSgemm_v2";
    struct amp_site *site = amp_site_get(api, (const void *)(uintptr_t)0x7000);
    struct amp_decision d;
    struct amp_auto_view v;
    int slot[100], ill, i, j;

    (void)state;
    assert_non_null(site);
    for (i = 0; i < 100; i++) {
        assert_int_equal(amp_site_shape_count(site, 5000 + i, &slot[i]), 1);
        assert_true(slot[i] >= 0);
        for (j = 0; j < i; j++)
            assert_int_not_equal(slot[i], slot[j]);
    }
    /* Every shape counts its own calls. */
    assert_int_equal(amp_site_shape_count(site, 5000 + 77, &ill), 2);
    assert_int_equal(ill, slot[77]);
    /* Shape 40 chooses tf32; shape 77 (ill-conditioned) rules all three
     * out; shape 90 has measured nothing yet. */
    for (i = 0; i < 3; i++) {
        memset(&d, 0, sizeof d);
        amp_auto_decide(site, slot[40], AMP_FAMILY_GEMM, 1, 0, i + 1, 0, &d);
        amp_auto_decide(site, slot[77], AMP_FAMILY_GEMM, 1, 0, i + 1, 0, &d);
    }
    measured(site, slot[40], AMP_MODE_FP16, 3e-4, 1.0, 2.0);
    measured(site, slot[40], AMP_MODE_BF16, 2e-3, 0.8, 2.0);
    measured(site, slot[40], AMP_MODE_TF32, 3e-4, 0.5, 2.0);
    measured(site, slot[77], AMP_MODE_FP16, 0.2, 1.0, 2.0);
    measured(site, slot[77], AMP_MODE_BF16, 0.9, 0.8, 2.0);
    measured(site, slot[77], AMP_MODE_TF32, 0.2, 0.5, 2.0);
    amp_auto_decide(site, slot[40], AMP_FAMILY_GEMM, 1, 0, 4, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_TF32);
    assert_int_equal(d.auto_slot, slot[40]);
    amp_auto_decide(site, slot[77], AMP_FAMILY_GEMM, 1, 0, 4, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_SHADOW);
    assert_int_equal(d.candidate, AMP_MODE_FP16X3);
    amp_auto_decide(site, slot[90], AMP_FAMILY_GEMM, 1, 0, 1, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_SHADOW);
    assert_int_equal(d.candidate, AMP_MODE_FP16);
    assert_int_equal(d.auto_slot, slot[90]);
    /* A slot is its site's alone. */
    assert_int_equal(amp_auto_get(site, slot[77], &v), 0);
    assert_int_equal(amp_auto_get(hook_stand_in(), slot[77], &v), -1);
    /* A demoted shape leaves its site and its other shapes as they were. */
    amp_site_demote(site, slot[77], "test");
    assert_true(amp_site_shape_demoted(slot[77]));
    assert_false(amp_site_shape_demoted(slot[40]));
    assert_false(amp_site_demoted(site));
}

/* Last: it fills the (site, shape) table. */
static void
test_shapes_beyond_the_table(void **state)
{
    static const char api[] = "cublasSgemm_v2";
    struct amp_site *site = amp_site_get(api, (const void *)(uintptr_t)0x7100);
    struct amp_decision d;
    int first, slot = 0, made = 0;
    uint64_t key;

    (void)state;
    assert_non_null(site);
    amp_site_count(site);
    amp_site_shape_count(site, 1, &first);
    assert_true(first >= 0);
    for (key = 2; slot >= 0; key++, made++)
        amp_site_shape_count(site, key, &slot);
    assert_true(made > 1 && made <= AMP_SITE_SHAPE_MAX);
    /* Beyond the table: no entry, the site's count, and auto keeps it
     * FP32 with no state to share. */
    assert_int_equal(amp_site_shape_count(site, key, &slot), 1);
    assert_int_equal(slot, -1);
    memset(&d, 0, sizeof d);
    amp_auto_decide(site, slot, AMP_FAMILY_GEMM, 1, 0, 1, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_FP32);
    assert_int_equal(d.auto_slot, -1);
    assert_false(amp_site_shape_demoted(slot));
    /* A shape made before keeps its entry. */
    assert_int_equal(amp_site_shape_count(site, 1, &slot), 2);
    assert_int_equal(slot, first);
}

/* A (site, shape)'s first captured call is the one kept: a first capture
 * that ran FP32 keeps a converting decision of a later capture FP32
 * (amp_decision_captured_fp32), one that converted does not; shadow and
 * FP32 decisions are left as they are, and a slot of -1 has no record. */
static void
test_first_capture_kept(void **state)
{
    struct amp_decision dec = {.mode = AMP_MODE_FP16, .shape_slot = -1};
    int fp32_first, converted_first;

    (void)state;
    fresh_site(&fp32_first);
    fresh_site(&converted_first);
    dec.shape_slot = fp32_first;
    assert_false(amp_decision_captured_fp32(&dec));
    amp_site_shape_captured(fp32_first, 0);
    amp_site_shape_captured(fp32_first, 1);
    assert_true(amp_decision_captured_fp32(&dec));
    dec.mode = AMP_MODE_SHADOW;
    assert_false(amp_decision_captured_fp32(&dec));
    dec.mode = AMP_MODE_FP32;
    assert_false(amp_decision_captured_fp32(&dec));
    dec.mode = AMP_MODE_FP16;
    dec.shape_slot = converted_first;
    amp_site_shape_captured(converted_first, 1);
    amp_site_shape_captured(converted_first, 0);
    assert_false(amp_decision_captured_fp32(&dec));
    dec.shape_slot = -1;
    amp_site_shape_captured(-1, 0);
    assert_false(amp_decision_captured_fp32(&dec));
}

static void
test_no_site_is_fp32(void **state)
{
    struct amp_decision d;

    (void)state;
    decide(NULL, AMP_FAMILY_GEMM, 1, 0, &d);
    assert_int_equal(d.mode, AMP_MODE_FP32);
    assert_int_equal(d.auto_slot, -1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_measures_then_takes_the_fastest),
        cmocka_unit_test(test_drift_gives_way),
        cmocka_unit_test(test_fp16x3_only_when_nothing_is_within),
        cmocka_unit_test(test_conv_candidates),
        cmocka_unit_test(test_unaligned_shapes),
        cmocka_unit_test(test_failures_rule_out),
        cmocka_unit_test(test_warmup_time_measured_again),
        cmocka_unit_test(test_median_of_samples),
        cmocka_unit_test(test_gain_within_noise),
        cmocka_unit_test(test_host_ahead_waits),
        cmocka_unit_test(test_transient_failures),
        cmocka_unit_test(test_frobenius_bound),
        cmocka_unit_test(test_no_site_is_fp32),
        cmocka_unit_test(test_first_capture_kept),
        cmocka_unit_test(test_stacks_tell_sites_apart),
        cmocka_unit_test(test_shapes_decide_alone),
        cmocka_unit_test(test_shapes_beyond_the_table),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
