/* Unit tests of the log and the exit summary's counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/amp-test-log-XXXXXX";

/* Reads the whole file at path into buf. */
static void
slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static int
setup(void **state)
{
    return mkdtemp(dir) ? 0 : -1;
}

static void
test_file_with_pid_and_levels(void **state)
{
    char pattern[256], path[256], text[4096], expect[256];

    snprintf(pattern, sizeof pattern, "%s/log-%%p.txt", dir);
    snprintf(path, sizeof path, "%s/log-%ld.txt", dir, (long)getpid());
    amp_log_open(AMP_LOG_INFO, pattern, 0);
    assert_true(amp_log_enabled(AMP_LOG_WARN));
    assert_true(amp_log_enabled(AMP_LOG_INFO));
    assert_false(amp_log_enabled(AMP_LOG_DEBUG));
    assert_false(amp_log_enabled(AMP_LOG_OFF));
    amp_log(AMP_LOG_WARN, "first %d", 1);
    amp_log(AMP_LOG_DEBUG, "hidden");
    amp_log(AMP_LOG_INFO, "second");
    amp_log_line("summary x calls=%d", 3);
    amp_log_close();

    slurp(path, text, sizeof text);
    snprintf(expect, sizeof expect,
             "ampshim[%ld]: warning: first 1\n"
             "ampshim[%ld]: info: second\n"
             "ampshim[%ld]: summary x calls=3\n",
             (long)getpid(), (long)getpid(), (long)getpid());
    assert_string_equal(text, expect);
    unlink(path);
}

/* Arguments are not evaluated below the level. */
static int evaluated;

static int
count_evaluation(void)
{
    return ++evaluated;
}

static void
test_arguments_not_evaluated_when_off(void **state)
{
    amp_log_open(AMP_LOG_ERROR, NULL, 0);
    evaluated = 0;
    amp_log(AMP_LOG_INFO, "%d", count_evaluation());
    assert_int_equal(evaluated, 0);
    amp_log_open(AMP_LOG_OFF, NULL, 0);
    amp_log(AMP_LOG_ERROR, "%d", count_evaluation());
    assert_int_equal(evaluated, 0);
}

/* An unopenable file: one warning on stderr, then lines go to stderr. */
static void
test_unopenable_file_falls_back_to_stderr(void **state)
{
    char capture[256], text[4096];
    int saved = dup(STDERR_FILENO);
    FILE *f;

    snprintf(capture, sizeof capture, "%s/stderr.txt", dir);
    f = fopen(capture, "w");
    assert_non_null(f);
    dup2(fileno(f), STDERR_FILENO);
    amp_log_open(AMP_LOG_WARN, "/nonexistent-dir/x.log", 0);
    amp_log(AMP_LOG_WARN, "after");
    dup2(saved, STDERR_FILENO);
    close(saved);
    fclose(f);

    slurp(capture, text, sizeof text);
    assert_non_null(strstr(text, "cannot open AMPSHIM_LOG_FILE "
                                 "/nonexistent-dir/x.log"));
    assert_non_null(strstr(text, "warning: after\n"));
    unlink(capture);
}

static void
test_long_line_truncated_with_newline(void **state)
{
    char path[256], text[8192];
    char big[5000];

    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(path, sizeof path, "%s/long.txt", dir);
    amp_log_open(AMP_LOG_WARN, path, 0);
    amp_log(AMP_LOG_WARN, "%s", big);
    amp_log_close();
    slurp(path, text, sizeof text);
    /* 2048 bytes a line, the newline included: room for a site label. */
    assert_int_equal(strlen(text), 2047);
    assert_int_equal(text[strlen(text) - 1], '\n');
    assert_non_null(strchr(text, 'y'));
    unlink(path);
}

/* Runs fn with stderr captured into buf. */
static void
capture_stderr(void (*fn)(void), char *buf, size_t size)
{
    char capture[256];
    int saved = dup(STDERR_FILENO);
    FILE *f;

    snprintf(capture, sizeof capture, "%s/stderr.txt", dir);
    f = fopen(capture, "w");
    assert_non_null(f);
    dup2(fileno(f), STDERR_FILENO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    fclose(f);
    slurp(capture, buf, size);
    unlink(capture);
}

static void
quiet_everything(void)
{
    amp_log_open(AMP_LOG_DEBUG, NULL, 1);
    amp_log(AMP_LOG_ERROR, "an error");
    amp_log(AMP_LOG_WARN, "a warning");
    amp_log_line("summary x calls=%d", 1);
    amp_log_close();
    /* A log file that cannot be opened says nothing either. */
    amp_log_open(AMP_LOG_DEBUG, "/nonexistent-dir/x.log", 1);
    amp_log(AMP_LOG_WARN, "after");
    amp_log_line("summary y calls=%d", 2);
    amp_log_open(AMP_LOG_WARN, NULL, 0);
}

/* AMPSHIM_QUIET: not a byte on stderr, whatever the level. */
static void
test_quiet_writes_nothing_to_stderr(void **state)
{
    char text[4096];

    capture_stderr(quiet_everything, text, sizeof text);
    assert_string_equal(text, "");
}

/* AMPSHIM_QUIET with a log file: the lines go to the file (its name's
 * %i is the pid, as %p). */
static void
test_quiet_with_file(void **state)
{
    char pattern[256], path[256], text[4096], expect[256];

    snprintf(pattern, sizeof pattern, "%s/quiet-%%i.txt", dir);
    snprintf(path, sizeof path, "%s/quiet-%ld.txt", dir, (long)getpid());
    amp_log_open(AMP_LOG_WARN, pattern, 1);
    amp_log(AMP_LOG_WARN, "kept");
    amp_log_line("summary z calls=%d", 4);
    amp_log_open(AMP_LOG_WARN, NULL, 0);
    slurp(path, text, sizeof text);
    snprintf(expect, sizeof expect,
             "ampshim[%ld]: warning: kept\n"
             "ampshim[%ld]: summary z calls=4\n",
             (long)getpid(), (long)getpid());
    assert_string_equal(text, expect);
    unlink(path);
}

static int
teardown(void **state)
{
    return rmdir(dir);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_with_pid_and_levels),
        cmocka_unit_test(test_arguments_not_evaluated_when_off),
        cmocka_unit_test(test_unopenable_file_falls_back_to_stderr),
        cmocka_unit_test(test_long_line_truncated_with_newline),
        cmocka_unit_test(test_quiet_writes_nothing_to_stderr),
        cmocka_unit_test(test_quiet_with_file),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
