/* Unit tests of the per-API counters and the summary lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/log.h"
#include "measure/stats.h"

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
    amp_log_open(AMP_LOG_WARN, path, 0);
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
             "fp32=13332 fallback=13332 passthrough=0\n"
             "ampshim[%ld]: summary convB calls=1 converted=0 fp32=0 "
             "fallback=1 passthrough=0\n",
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

/* Passthrough calls and shadow errors: maxima over calls, summed counts,
 * and the shadow fields only for APIs that measured something. */
static void
test_passthrough_and_shadow(void **state)
{
    static struct amp_api_stats lt = AMP_API_STATS_INIT("ltC");
    const struct amp_gemm_error e1 = {0.5, 1e-3, 2, 2e-4, 100},
                                e2 = {0.25, 4e-3, 1, 1e-4, 60},
                                none = {0.0, 0.0, 0, 0.0, 0};
    char text[1024], expect[256];

    amp_stats_reset();
    amp_stats_count(&lt, AMP_OUTCOME_PASSTHROUGH);
    amp_stats_count(&lt, AMP_OUTCOME_CONVERTED);
    amp_stats_shadow(&lt, &e1);
    amp_stats_shadow(&lt, &e2);
    summary_text(text, sizeof text);
    snprintf(expect, sizeof expect,
             "ampshim[%ld]: summary ltC calls=2 converted=1 fp32=0 "
             "fallback=0 passthrough=1 shadow=2 max_abs_err=0.5 "
             "max_rel_err=0.004 nonfinite=3 fro_rel_err=0.0002 "
             "compared=160\n", (long)getpid());
    assert_non_null(strstr(text, expect));
    /* A shadow call that compared no element measured no error. */
    amp_stats_reset();
    amp_stats_count(&lt, AMP_OUTCOME_CONVERTED);
    amp_stats_shadow(&lt, &none);
    summary_text(text, sizeof text);
    snprintf(expect, sizeof expect,
             "ampshim[%ld]: summary ltC calls=1 converted=1 fp32=0 "
             "fallback=0 passthrough=0 shadow=1 max_abs_err=- "
             "max_rel_err=- nonfinite=0 fro_rel_err=- compared=0\n",
             (long)getpid());
    assert_non_null(strstr(text, expect));
    assert_non_null(strstr(text, "summary gemmA calls=0 converted=0 fp32=0 "
                                 "fallback=0 passthrough=0\n"));
    amp_stats_reset();
    assert_int_equal(lt.shadow_calls, 0);
    assert_true(lt.shadow_max_abs == 0.0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_summary),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_passthrough_and_shadow),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
