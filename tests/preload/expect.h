/* Assertions on a child's run that the CMocka preload tests share: on
 * failure, the child's output goes to the test's log. Include after
 * cmocka.h and harness.h. */
#ifndef AMP_TEST_EXPECT_H
#define AMP_TEST_EXPECT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The run exited by itself with status code. */
static inline void
amp_test_expect_exit(const struct amp_test_run *run, int code,
                     const char *what)
{
    if (run->exited && run->code == code && !run->timed_out)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: expected exit status %d", what, code);
}

/* The run's stdout is byte for byte plain's (the run without the
 * shim). */
static inline void
amp_test_expect_plain_stdout(const struct amp_test_run *run,
                             const struct amp_test_run *plain,
                             const char *what)
{
    if (run->out_len == plain->out_len &&
        memcmp(run->out, plain->out, run->out_len) == 0)
        return;
    amp_test_run_dump("without the shim", plain);
    amp_test_run_dump(what, run);
    fail_msg("%s: output differs from the run without the shim", what);
}

/* Parses the run's cases into check: plain's cases, in its order, each
 * with plain's status and within the bound the run's command line
 * named. */
static inline void
amp_test_expect_cases_pass(const struct amp_test_run *run,
                           const struct amp_test_check *plain,
                           const char *what, struct amp_test_check *check)
{
    if (amp_test_parse_check(run->out, check) != 0 || !check->have_result ||
        check->count != plain->count) {
        amp_test_run_dump(what, run);
        fail_msg("%s: %d cases parsed, the plain run has %d", what,
                 check->count, plain->count);
    }
    for (int i = 0; i < check->count; i++) {
        const struct amp_test_case *c = &check->cases[i];
        const struct amp_test_case *p = &plain->cases[i];

        if (strcmp(c->name, p->name) == 0 && c->status == p->status && c->ok)
            continue;
        amp_test_run_dump(what, run);
        fail_msg("%s: case %s: status %d (plain %d), %s", what, c->name,
                 c->status, p->status, c->ok ? "ok" : "outside its bound");
    }
}

/* A convolution program's run in tf32x3 with --tol fp32 (FP32's own
 * bound) against plain (its run without the shim, whose hashes count)
 * and plain32 (the same with --tol fp32): every convolution of one group
 * within the bound, every grouped one (its name starts "groups": tf32x3
 * takes one group only) the plain run's bytes. Returns the convolutions
 * of one group; *plain_failed: how many of them plain32 had outside the
 * bound. */
static inline int
amp_test_expect_tf32x3_accuracy(const struct amp_test_run *run,
                                const struct amp_test_check *plain,
                                const struct amp_test_run *plain32,
                                int *plain_failed)
{
    static struct amp_test_check check, check32;
    int converted = 0;

    *plain_failed = 0;
    assert_int_equal(amp_test_parse_check(plain32->out, &check32), 0);
    assert_int_equal(amp_test_parse_check(run->out, &check), 0);
    assert_int_equal(check.count, plain->count);
    assert_int_equal(check32.count, plain->count);
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];
        int grouped = strncmp(c->name, "groups", 6) == 0;

        if (strcmp(c->cls, "conv") != 0)
            continue;
        if (grouped ? strcmp(c->hash, plain->cases[i].hash) == 0 : c->ok) {
            converted += !grouped;
            *plain_failed += !grouped && !check32.cases[i].ok;
            continue;
        }
        amp_test_run_dump("tf32x3", run);
        fail_msg("tf32x3: case %s (%s) %s", c->name, c->cls,
                 grouped ? "is not the plain run's bytes"
                         : "is not within FP32's bound");
    }
    return converted;
}

#define AMP_TEST_MAX_PARAMS 16

/* Runs func once per element of params (count elements of size bytes) as
 * the group's tests, named prefix + label(element), between setup and
 * teardown; the number that failed. */
static inline int
amp_test_run_parametrized(const char *group, CMUnitTestFunction func,
                          const void *params, size_t size, size_t count,
                          const char *prefix,
                          const char *(*label)(const void *),
                          CMFixtureFunction setup,
                          CMFixtureFunction teardown)
{
    struct CMUnitTest tests[AMP_TEST_MAX_PARAMS];
    static char names[AMP_TEST_MAX_PARAMS][128];

    assert_true(count <= AMP_TEST_MAX_PARAMS);
    for (size_t i = 0; i < count; i++) {
        const void *p = (const char *)params + i * size;

        snprintf(names[i], sizeof(names[i]), "%s %s", prefix, label(p));
        tests[i] = (struct CMUnitTest){
            .name = names[i], .test_func = func,
            .initial_state = (void *)(uintptr_t)p,
        };
    }
    return _cmocka_run_group_tests(group, tests, count, setup, teardown);
}

#endif
