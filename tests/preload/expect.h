/* Assertions on a child's run that the CMocka preload tests share: on
 * failure, the child's output goes to the test's log. Include after
 * cmocka.h and harness.h. */
#ifndef AMP_TEST_EXPECT_H
#define AMP_TEST_EXPECT_H

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

#endif
