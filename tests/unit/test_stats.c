/* Unit tests of the per-API counters and the summary lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "log.h"
#include "stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct amp_api_stats gemm = AMP_API_STATS_INIT("gemmA");
static struct amp_api_stats conv = AMP_API_STATS_INIT("convB");
static struct amp_api_stats unused = AMP_API_STATS_INIT("never");

/* The summary as text, through a log file. */
static void
summary_text(char *buf, size_t size)
{
    char path[] = "/tmp/amp-test-stats-XXXXXX";
    int fd = mkstemp(path);
    ssize_t n;

    assert_true(fd >= 0);
    amp_log_open(AMP_LOG_WARN, path);
    amp_stats_summary();
    amp_log_close();
    n = read(fd, buf, size - 1);
    assert_true(n >= 0);
    buf[n] = '\0';
    close(fd);
    unlink(path);
}

static void *
count_many(void *arg)
{
    int i;

    for (i = 0; i < 10000; i++)
        amp_stats_count(&gemm, (enum amp_outcome)(i % 3));
    return arg;
}

static void
test_counts_and_summary(void **state)
{
    char text[1024], expect[512];
    pthread_t threads[4];
    int i;

    for (i = 0; i < 4; i++)
        pthread_create(&threads[i], NULL, count_many, NULL);
    for (i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    amp_stats_count(&conv, AMP_OUTCOME_FALLBACK);

    summary_text(text, sizeof text);
    /* 40000 calls: i % 3 gives 3334, 3333, 3333 per thread. */
    snprintf(expect, sizeof expect,
             "ampshim[%ld]: summary gemmA calls=40000 converted=13336 "
             "fp32=13332 fallback=13332\n"
             "ampshim[%ld]: summary convB calls=1 converted=0 fp32=0 "
             "fallback=1\n",
             (long)getpid(), (long)getpid());
    assert_string_equal(text, expect);
    assert_null(strstr(text, "never"));
    (void)unused;
}

static void
test_reset(void **state)
{
    char text[1024];

    amp_stats_reset();
    summary_text(text, sizeof text);
    assert_non_null(strstr(text, "summary gemmA calls=0 converted=0 fp32=0 "
                                 "fallback=0"));
    amp_stats_count(&gemm, AMP_OUTCOME_CONVERTED);
    summary_text(text, sizeof text);
    assert_non_null(strstr(text, "summary gemmA calls=1 converted=1 fp32=0 "
                                 "fallback=0"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_summary),
        cmocka_unit_test(test_reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
