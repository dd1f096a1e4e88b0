/* Unit tests of the profiler's sampling: which calls of a (site, shape)
 * are timed, and what the report counts for the others. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "measure/prof.h"

#include <math.h>
#include <string.h>

/* The calls of n, from 0, that the rule times, `taken` counting those
 * timed (each timed one succeeding when `succeed`; by_count: every call,
 * as the FP32 samples count); *count of them. */
static void
timed_calls(unsigned long long n, unsigned first, unsigned every,
            int succeed, int by_count, unsigned long long *out, size_t cap,
            size_t *count)
{
    unsigned long long i, taken = 0;

    *count = 0;
    for (i = 0; i < n; i++) {
        if (!amp_prof_sample_due(i, by_count ? i : taken, first, every))
            continue;
        taken += (unsigned long long)succeed;
        if (*count < cap)
            out[*count] = i;
        ++*count;
    }
}

/* A kept FP32 call: its first 3 calls timed, then 1 in 64. */
static void
test_fp32_rule(void **state)
{
    unsigned long long at[64];
    size_t n, i;

    (void)state;
    timed_calls(1000, AMP_PROF_FP32_FIRST, AMP_PROF_FP32_EVERY, 1, 1, at, 64,
                &n);
    assert_int_equal(n, 3 + 15); /* 0 1 2, then 64 128 ... 960 */
    assert_int_equal(at[0], 0);
    assert_int_equal(at[1], 1);
    assert_int_equal(at[2], 2);
    for (i = 3; i < n; i++)
        assert_int_equal(at[i], (i - 2) * 64);
}

/* A converted call: the first 8 timed, then 1 in 16. */
static void
test_converted_rule(void **state)
{
    unsigned long long at[128];
    size_t n, i;

    (void)state;
    timed_calls(1000, AMP_PROF_CONVERTED_FIRST, AMP_PROF_CONVERTED_EVERY, 1,
                0, at, 128, &n);
    assert_int_equal(n, 8 + 62); /* 0..7, then 16 32 ... 992 */
    for (i = 0; i < 8; i++)
        assert_int_equal(at[i], i);
    for (i = 8; i < n; i++)
        assert_int_equal(at[i], (i - 7) * 16);
}

/* A converted call whose timing failed (no record free) is not counted
 * as timed: the next call tries again. A kept FP32 call's sample goes by
 * the calls' count, taken or not: the same calls as when they are. */
static void
test_failed_samples(void **state)
{
    unsigned long long at[32];
    size_t n;

    (void)state;
    timed_calls(200, AMP_PROF_CONVERTED_FIRST, AMP_PROF_CONVERTED_EVERY, 0,
                0, at, 32, &n);
    assert_int_equal(n, 200);
    timed_calls(200, AMP_PROF_FP32_FIRST, AMP_PROF_FP32_EVERY, 0, 1, at, 32,
                &n);
    assert_int_equal(n, 3 + 3); /* 0 1 2 64 128 192 */
    assert_int_equal(at[5], 192);
}

static struct amp_prof_entry
entry(void)
{
    struct amp_prof_entry e;

    memset(&e, 0, sizeof e);
    e.flops = 1e6;
    return e;
}

/* Kept FP32 calls at their samples' mean: none untimed. */
static void
test_totals_fp32_sampled(void **state)
{
    struct amp_prof_entry e = entry();
    struct amp_prof_totals t;

    (void)state;
    e.calls = e.outcomes[AMP_OUTCOME_FP32] = 100;
    amp_prof_totals(&e, &t);
    assert_int_equal(t.device_untimed, 100); /* no sample yet */
    assert_true(t.device_ms == 0.0);
    e.fp32_sampled = 4;
    e.fp32_sampled_ms = 8.0;
    assert_true(amp_prof_baseline(&e) == 2.0);
    amp_prof_totals(&e, &t);
    assert_int_equal(t.device_untimed, 0);
    assert_true(fabs(t.device_ms - 200.0) < 1e-9);
    /* A shadow baseline, measured beside the candidate, comes first. */
    e.shadow_timed = 1;
    e.shadow_fp32_ms = 3.0;
    assert_true(amp_prof_baseline(&e) == 3.0);
}

/* Converted calls not timed by sampling: at the timed ones' mean, counted
 * estimated, never untimed. */
static void
test_totals_converted_sampled(void **state)
{
    struct amp_prof_entry e = entry();
    struct amp_prof_totals t;

    (void)state;
    e.calls = 101;
    e.outcomes[AMP_OUTCOME_CONVERTED] = 100;
    e.modes[AMP_MODE_TF32] = 99;
    e.modes[AMP_MODE_SHADOW] = 1;
    e.shadow_timed = 1; /* the delivering first call: baseline 2 ms */
    e.shadow_fp32_ms = 2.0;
    e.shadow_candidate_ms = 1.0;
    e.timed = 8;
    e.converted_ms = 8.0; /* 1 ms each */
    e.sampled_out = 91;
    e.outcomes[AMP_OUTCOME_FP32] = 1; /* at the baseline */
    amp_prof_totals(&e, &t);
    assert_int_equal(t.converted_estimated, 91);
    assert_true(fabs(t.converted_estimated_ms - 91.0) < 1e-9);
    assert_int_equal(t.estimated, 99);
    assert_int_equal(t.device_untimed, 0);
    assert_true(fabs(t.fp32_ms - (2.0 + 99 * 2.0)) < 1e-9);
    assert_true(fabs(t.actual_ms - (3.0 + 99 * 1.0)) < 1e-9);
    assert_true(fabs(t.saved_ms - (200.0 - 102.0)) < 1e-9);
    assert_true(fabs(t.device_ms - (3.0 + 99.0 + 2.0)) < 1e-9);
    assert_true(fabs(amp_prof_converted_total(&e) - 99.0) < 1e-9);
    /* None timed: nothing to estimate them at. */
    e.timed = 0;
    e.converted_ms = 0.0;
    amp_prof_totals(&e, &t);
    assert_int_equal(t.converted_estimated, 0);
    assert_int_equal(t.device_untimed, 91);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32_rule),
        cmocka_unit_test(test_converted_rule),
        cmocka_unit_test(test_failed_samples),
        cmocka_unit_test(test_totals_fp32_sampled),
        cmocka_unit_test(test_totals_converted_sampled),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
