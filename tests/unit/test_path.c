/* Unit tests of the escapes in the paths a user names (AMPSHIM_REPORT,
 * AMPSHIM_TRACE, AMPSHIM_LOG_FILE, the tool's --report and --trace), and
 * of the reports' default directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef HOST_NAME_MAX
#define HOST_NAME_MAX 255
#endif

static char host[HOST_NAME_MAX + 1];

static int
setup(void **state)
{
    (void)state;
    return gethostname(host, sizeof host) == 0 && host[0] ? 0 : -1;
}

static void
expect(const char *pattern, long pid, const char *want)
{
    char out[512];

    assert_int_equal(amp_path_expand(pattern, pid, out, sizeof out), AMP_OK);
    assert_string_equal(out, want);
}

/* %p and %i (NVIDIA's spelling) are both the process id. */
static void
test_pid(void **state)
{
    (void)state;
    expect("/tmp/r-%p.json", 4242, "/tmp/r-4242.json");
    expect("/tmp/r-%i.json", 4242, "/tmp/r-4242.json");
    expect("%p%i", 7, "77");
    expect("%p/%p", 31, "31/31");
}

static void
test_host(void **state)
{
    char want[512];

    (void)state;
    snprintf(want, sizeof want, "/tmp/%s-9.json", host);
    expect("/tmp/%h-%p.json", 9, want);
}

/* %% is one percent sign; it never starts an escape. */
static void
test_percent(void **state)
{
    (void)state;
    expect("100%%.json", 1, "100%.json");
    expect("%%p", 5, "%p");
    expect("%%%p", 5, "%5");
    expect("%%%%", 5, "%%");
}

/* Any other '%' is kept as written, a final one too. */
static void
test_others_kept(void **state)
{
    (void)state;
    expect("a%xb", 1, "a%xb");
    expect("50%", 1, "50%");
    expect("%", 1, "%");
    expect("plain/path.json", 1, "plain/path.json");
    expect("", 1, "");
}

/* Too long once expanded: an error and an empty result, never a
 * truncated path; an exact fit is accepted. */
static void
test_too_long(void **state)
{
    char out[8];

    (void)state;
    assert_int_equal(amp_path_expand("abcdefg", 1, out, sizeof out), AMP_OK);
    assert_string_equal(out, "abcdefg");
    assert_int_equal(amp_path_expand("abcdefgh", 1, out, sizeof out),
                     AMP_ERR_TOO_BIG);
    assert_string_equal(out, "");
    assert_int_equal(amp_path_expand("ab-%p", 123456, out, sizeof out),
                     AMP_ERR_TOO_BIG);
    assert_string_equal(out, "");
    assert_int_equal(amp_path_expand("ab-%p", 1234, out, sizeof out), AMP_OK);
    assert_string_equal(out, "ab-1234");
    assert_int_equal(amp_path_expand("x", 1, out, 0), AMP_ERR_INVALID);
}

static void
test_has_pid(void **state)
{
    (void)state;
    assert_true(amp_path_has_pid("r-%p.json"));
    assert_true(amp_path_has_pid("r-%i.json"));
    assert_true(amp_path_has_pid("%x%p"));
    assert_false(amp_path_has_pid("r-%h.json"));
    assert_false(amp_path_has_pid("r-%%p.json"));
    assert_false(amp_path_has_pid("r.json%"));
    assert_false(amp_path_has_pid(""));
}

/* XDG_STATE_HOME when absolute, else HOME's .local/state; neither: an
 * error, never a relative directory. */
static void
test_state_dir(void **state)
{
    char out[64];

    (void)state;
    assert_int_equal(amp_state_dir("/x/state", "/home/u", out, sizeof out),
                     AMP_OK);
    assert_string_equal(out, "/x/state/ampshim");
    assert_int_equal(amp_state_dir(NULL, "/home/u", out, sizeof out), AMP_OK);
    assert_string_equal(out, "/home/u/.local/state/ampshim");
    assert_int_equal(amp_state_dir("", "/home/u", out, sizeof out), AMP_OK);
    assert_string_equal(out, "/home/u/.local/state/ampshim");
    assert_int_equal(amp_state_dir("rel", "/home/u", out, sizeof out), AMP_OK);
    assert_string_equal(out, "/home/u/.local/state/ampshim");
    assert_int_equal(amp_state_dir("rel", "", out, sizeof out),
                     AMP_ERR_INVALID);
    assert_string_equal(out, "");
    assert_int_equal(amp_state_dir(NULL, NULL, out, sizeof out),
                     AMP_ERR_INVALID);
    assert_int_equal(amp_state_dir("/a-long-directory-name/for/the/state",
                                   NULL, out, 20), AMP_ERR_TOO_BIG);
    assert_string_equal(out, "");
}

/* Makes every missing parent; an existing directory is fine; a file in
 * the way is an error. */
static void
test_make_dirs(void **state)
{
    char base[] = "/tmp/amp-path-XXXXXX", deep[128], file[128];
    struct stat st;
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(base));
    snprintf(deep, sizeof deep, "%s/a/b/c", base);
    assert_int_equal(amp_make_dirs(deep, 0700), 0);
    assert_int_equal(stat(deep, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(amp_make_dirs(deep, 0700), 0);
    snprintf(file, sizeof file, "%s/f", base);
    f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(deep, sizeof deep, "%s/f/x", base);
    assert_int_equal(amp_make_dirs(deep, 0700), -1);
    snprintf(deep, sizeof deep, "rm -rf %s", base);
    assert_int_equal(system(deep), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pid),
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_percent),
        cmocka_unit_test(test_others_kept),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_has_pid),
        cmocka_unit_test(test_state_dir),
        cmocka_unit_test(test_make_dirs),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
