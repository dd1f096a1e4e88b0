/* Unit tests of the memo of settled calls (measure/settled.h): a call
 * like an earlier one kept FP32 for good is counted where that one was,
 * exactly as the whole path would count it, and told when it is due to
 * be timed by sample; a key that differs, a moved epoch and a reset table
 * take the whole path. Runs on the emulator's driver (a stream's capture
 * state). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "decide/policy.h"
#include "measure/settled.h"

#include <cuda.h>

#include <stdlib.h>
#include <string.h>

static const char amp_test_api[] = "cublasSgemm_v2";

/* The key and profiler view of a 64x64xK call from stack `frames`. */
static void
call_of(int64_t k, const void *frame, struct amp_settled_key *key,
        struct amp_prof_what *w)
{
    memset(key, 0, sizeof *key);
    key->api = amp_test_api;
    key->frames[0] = frame;
    key->frames[1] = (const void *)0x1000;
    key->depth = 2;
    key->device = 0;
    key->shape.family = AMP_FAMILY_GEMM;
    key->shape.v[0] = 64;
    key->shape.v[1] = 64;
    key->shape.v[2] = k;
    key->shape.v[3] = 1;
    memset(w, 0, sizeof *w);
    w->api = amp_test_api;
    w->site = amp_site_get_stack(amp_test_api, key->frames, key->depth);
    w->shape = key->shape;
    w->flops = 2.0 * 64 * 64 * (double)k;
    w->mode = AMP_MODE_FP32;
    w->device = 0;
}

/* One call as a hook makes it: the memo, else the whole path (counted
 * and kept). WHOLE when it took the whole path, else the memo's answer
 * (MEMO, or MEMO_SAMPLED: due to be timed by sample). */
enum { WHOLE = -1, MEMO = 1, MEMO_SAMPLED = 2 };

static int
one_call(const struct amp_settled_key *key, const struct amp_prof_what *w)
{
    struct amp_settled s;
    struct amp_prof_span span = {0};
    int cover = -1, counted;

    if ((counted = amp_settled_count(key, NULL, &span, &cover)) != 0) {
        assert_int_equal(cover, 7);
        amp_prof_fp32_end(&span, 1);
        return counted;
    }
    memset(&s, 0, sizeof s);
    s.epoch = amp_decision_epoch();
    amp_prof_fp32_placed(w, AMP_KEPT_RULE, &s.place);
    s.site = w->site;
    s.shape_slot = -1;
    s.site_counted = 1;
    s.cover = 7;
    s.timed = 1;
    s.what = *w;
    amp_site_count_again(w->site, -1, 1); /* as the policy counted it */
    amp_settled_keep(key, &s, NULL);
    return WHOLE;
}

/* The profiler's entry of w: its calls and its calls kept by rule. */
static void
entry_counts(const struct amp_prof_what *w, unsigned long long *calls,
             unsigned long long *kept)
{
    size_t n, i;
    struct amp_prof_entry *e = amp_prof_snapshot(&n);

    *calls = *kept = 0;
    for (i = 0; i < n; i++) {
        if (e[i].site == w->site && e[i].shape.v[2] == w->shape.v[2]) {
            *calls = e[i].calls;
            *kept = e[i].kept[AMP_KEPT_RULE];
        }
    }
    free(e);
}

/* 200 calls: counted 200 times, by their reason; the whole path taken by
 * the first alone, the rest counted by the memo, which tells exactly the
 * calls due to be timed by sample (1, 2, 64, 128, 192; the first was
 * sampled on the whole path); the site's count moved at each. */
static void
test_counts_as_whole_path(void **state)
{
    struct amp_settled_key key;
    struct amp_prof_what w;
    unsigned long long calls, kept, site_calls;
    int i, whole = 0, sampled[8], nsampled = 0, answer;

    (void)state;
    call_of(32, (const void *)0x4000, &key, &w);
    site_calls = atomic_load(&w.site->calls);
    for (i = 0; i < 200; i++) {
        answer = one_call(&key, &w);
        if (answer == WHOLE)
            assert_int_equal(i, whole++);
        else if (answer == MEMO_SAMPLED && nsampled < 8)
            sampled[nsampled++] = i;
    }
    assert_int_equal(whole, 1);
    assert_int_equal(nsampled, 5);
    assert_int_equal(sampled[0], 1);
    assert_int_equal(sampled[1], 2);
    assert_int_equal(sampled[2], 64);
    assert_int_equal(sampled[3], 128);
    assert_int_equal(sampled[4], 192);
    entry_counts(&w, &calls, &kept);
    assert_int_equal(calls, 200);
    assert_int_equal(kept, 200);
    assert_int_equal(atomic_load(&w.site->calls) - site_calls, 200);
}

/* Another shape or another stack is another key; a moved epoch (a
 * demotion) and a reset table (a forked child) make every memo stale. */
static void
test_stale(void **state)
{
    struct amp_settled_key key, other;
    struct amp_prof_what w, w_other;
    struct amp_prof_span span = {0};
    int i, cover;

    (void)state;
    call_of(48, (const void *)0x5000, &key, &w);
    assert_int_equal(one_call(&key, &w), WHOLE);
    for (i = 1; i < 3; i++)
        assert_int_equal(one_call(&key, &w), MEMO_SAMPLED);
    assert_int_equal(one_call(&key, &w), MEMO);
    call_of(40, (const void *)0x5000, &other, &w_other);
    assert_int_equal(amp_settled_count(&other, NULL, &span, &cover), 0);
    call_of(48, (const void *)0x5008, &other, &w_other);
    assert_int_equal(amp_settled_count(&other, NULL, &span, &cover), 0);

    amp_decision_epoch_next();
    assert_int_equal(one_call(&key, &w), WHOLE);
    assert_int_equal(one_call(&key, &w), MEMO);

    amp_prof_forget();
    assert_int_equal(amp_settled_count(&key, NULL, &span, &cover), 0);
}

int
main(void)
{
    CUdevice dev;
    CUcontext ctx;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_as_whole_path),
        cmocka_unit_test(test_stale),
    };

    /* A current context, as a program's hooked call has. */
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
