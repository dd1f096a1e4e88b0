/* Preload tests of policies: sgemm_check and gemm_suite under
 * LD_PRELOAD=libampshim.so on the emulator with AMPSHIM_POLICY files and
 * a shared policy directory (XDG_CONFIG_DIRS) holding a broken file,
 * judged by the exit summary's counters, the results' hashes and the
 * warnings.
 *
 * usage: test_policy SGEMM_CHECK GEMM_SUITE LIBAMPSHIM EMU_DIR */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN_TIMEOUT_S 240

static const char *sgemm_check_path, *gemm_suite_path, *libampshim_path,
    *emu_dir;
static char policy_path[256];
static struct amp_test_run plain_run;
static struct amp_test_check plain;

static void
write_policy(const char *text)
{
    FILE *f = fopen(policy_path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Runs program --tol fp16 on the emulator, with the shim and the policy
 * file when `policy` is 1, with the shim alone (the policy directories
 * decide) when it is 2, plus NAME, VALUE pairs (NULL-terminated). */
static void
run(const char *program, int policy, struct amp_test_run *r, ...)
{
    char *argv[] = {(char *)program, (char *)"--tol", (char *)"fp16", NULL};
    struct amp_test_env env;
    const char *name;
    va_list ap;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (policy)
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
    if (policy == 1)
        amp_test_env_set(&env, "AMPSHIM_POLICY", policy_path);
    va_start(ap, r);
    while ((name = va_arg(ap, const char *)) != NULL)
        amp_test_env_set(&env, name, va_arg(ap, const char *));
    va_end(ap);
    assert_int_equal(amp_test_run(argv, &env, RUN_TIMEOUT_S, r), 0);
    amp_test_env_free(&env);
    if (!r->exited || r->code != 0) {
        amp_test_run_dump(program, r);
        fail_msg("%s: expected exit status 0", program);
    }
}

/* sgemm_check's summary line: calls, converted, fp32, fallback. */
static void
expect_sgemm(const struct amp_test_run *r, long converted, long fp32,
             const char *what)
{
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;

    amp_test_parse_summary(r->err, &sum);
    l = amp_test_summary_find(&sum, "cublasSgemm_v2");
    if (sum.malformed == 0 && l && l->calls == plain.count &&
        l->converted == converted && l->fp32 == fp32 && l->fallback == 0)
        return;
    amp_test_run_dump(what, r);
    fail_msg("%s: expected calls=%d converted=%ld fp32=%ld fallback=0", what,
             plain.count, converted, fp32);
}

static int
count_eligible_where_k_at_least(int64_t k)
{
    int i, n = 0;

    for (i = 0; i < plain.count; i++)
        n += amp_test_eligible(&plain.cases[i]) && plain.cases[i].k >= k;
    return n;
}

/* ---- Per-shape and per-API rules ------------------------------------------ */

static void
test_shape_rule(void **state)
{
    struct amp_test_run r;
    struct amp_test_check check;
    int converted = count_eligible_where_k_at_least(100);

    assert_true(converted >= 2 && converted < plain.count - 1);
    write_policy("# convert the long reductions only\n"
                 "rule fp16 when symbol cublasSgemm_v2 and k >= 100\n"
                 "default fp32\n");
    run(sgemm_check_path, 1, &r, NULL);
    expect_sgemm(&r, converted, plain.count - converted, "k >= 100");
    assert_int_equal(amp_test_parse_check(r.out, &check), 0);
    for (int i = 0; i < check.count; i++) {
        int conv = amp_test_eligible(&plain.cases[i]) &&
                   plain.cases[i].k >= 100;

        /* FP32 cases are bit-identical; converted ones are not. */
        assert_int_equal(strcmp(check.cases[i].hash, plain.cases[i].hash) != 0,
                         conv);
    }
    amp_test_run_free(&r);
}

static void
test_api_rule(void **state)
{
    struct amp_test_run r;
    struct amp_test_summary sum;
    const struct amp_test_summary_line *gemm_ex;
    int i;

    write_policy("rule tf32 when symbol cublasGemmEx\ndefault fp32\n");
    run(sgemm_check_path, 1, &r, NULL);
    expect_sgemm(&r, 0, plain.count, "only cublasGemmEx");
    amp_test_run_free(&r);
    run(gemm_suite_path, 1, &r, NULL);
    amp_test_parse_summary(r.err, &sum);
    gemm_ex = amp_test_summary_find(&sum, "cublasGemmEx");
    assert_non_null(gemm_ex);
    assert_true(gemm_ex->converted >= 1);
    for (i = 0; i < sum.count; i++) {
        if (strcmp(sum.lines[i].api, "cublasGemmEx") == 0)
            continue;
        if (sum.lines[i].converted != 0) {
            amp_test_run_dump("gemm_suite", &r);
            fail_msg("%s converted %ld calls", sum.lines[i].api,
                     sum.lines[i].converted);
        }
    }
    amp_test_run_free(&r);
}

/* Two rules match the long reductions: the first (fp32) decides them,
 * the second converts the rest, call after call (the cached decisions). */
static void
test_overlapping_rules(void **state)
{
    struct amp_test_run r;
    struct amp_test_check check;
    int eligible = amp_test_count_eligible(&plain);
    int converted = eligible - count_eligible_where_k_at_least(100);

    assert_true(converted >= 2 && converted < eligible);
    write_policy("rule fp32 when symbol cublasSgemm_v2 and k >= 100\n"
                 "rule fp16 when gemm\n"
                 "default fp32\n");
    run(sgemm_check_path, 1, &r, NULL);
    expect_sgemm(&r, converted, plain.count - converted, "first rule fp32");
    assert_int_equal(amp_test_parse_check(r.out, &check), 0);
    for (int i = 0; i < check.count; i++) {
        int conv = amp_test_eligible(&plain.cases[i]) &&
                   plain.cases[i].k < 100;

        assert_int_equal(strcmp(check.cases[i].hash, plain.cases[i].hash) != 0,
                         conv);
    }
    amp_test_run_free(&r);
}

/* caller and module rules resolve the call site with libelf. */
static void
test_site_rules(void **state)
{
    struct amp_test_run r;
    int eligible = amp_test_count_eligible(&plain);

    /* sgemm_check calls cuBLAS from main (its helpers are inlined). */
    write_policy("rule fp16 when module sgemm_check and caller \"ma*\"\n"
                 "default fp32\n");
    run(sgemm_check_path, 1, &r, NULL);
    expect_sgemm(&r, eligible, plain.count - eligible, "module sgemm_check");
    amp_test_run_free(&r);
    write_policy("rule fp16 when module libelsewhere.so\ndefault fp32\n");
    run(sgemm_check_path, 1, &r, NULL);
    expect_sgemm(&r, 0, plain.count, "module libelsewhere.so");
    amp_test_run_free(&r);
}

/* AMPSHIM_MODE overrides the policy. */
static void
test_env_mode_wins(void **state)
{
    struct amp_test_run r;
    int eligible = amp_test_count_eligible(&plain);

    write_policy("default fp32\n");
    run(sgemm_check_path, 1, &r, "AMPSHIM_MODE", "fp16", NULL);
    expect_sgemm(&r, eligible, plain.count - eligible, "AMPSHIM_MODE=fp16");
    amp_test_run_free(&r);
}

/* ---- A policy with an error ---------------------------------------------- */

static void
test_broken_policy_is_fp32(void **state)
{
    struct amp_test_run r;
    struct amp_test_check check;
    char where[300];

    write_policy("set tolerance 1e-3\nrule fp8 when gemm\ndefault fp16\n");
    run(sgemm_check_path, 1, &r, NULL);
    expect_sgemm(&r, 0, plain.count, "broken policy");
    assert_int_equal(amp_test_parse_check(r.out, &check), 0);
    for (int i = 0; i < check.count; i++)
        assert_string_equal(check.cases[i].hash, plain.cases[i].hash);
    snprintf(where, sizeof where, "%s:2:6: expected an action", policy_path);
    assert_int_equal(amp_test_count_lines_with(r.err, where), 1);
    assert_int_equal(amp_test_count_lines_with(r.err, "warn"), 1);
    amp_test_run_free(&r);
}

/* ---- A broken file in a shared policy directory ------------------------ */

static char shared_root[64], shared_dir[128];

static void
write_shared(const char *name, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", shared_dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Runs program with the shim, the shared directory as the only system
 * one and no user directory. */
static void
run_shared(const char *program, struct amp_test_run *r)
{
    char user[128];

    snprintf(user, sizeof user, "%s/no-user", shared_root);
    run(program, 2, r, "XDG_CONFIG_DIRS", shared_root, "XDG_CONFIG_HOME",
        user, NULL);
}

/* Every API of gemm_suite's summary converted nothing. */
static void
expect_nothing_converted(const struct amp_test_run *r, const char *what)
{
    struct amp_test_summary sum;
    int i;

    amp_test_parse_summary(r->err, &sum);
    assert_true(sum.count >= 3);
    for (i = 0; i < sum.count; i++) {
        if (sum.lines[i].converted != 0) {
            amp_test_run_dump(what, r);
            fail_msg("%s: %s converted %ld calls", what, sum.lines[i].api,
                     sum.lines[i].converted);
        }
    }
}

/* 10-suite.policy, with an error on line 3, is for gemm_suite: it runs
 * FP32 with the warning; sgemm_check skips it and 20-all.policy converts
 * its calls. */
static void
test_shared_broken_for_one_program(void **state)
{
    struct amp_test_run r;
    struct amp_test_check check;
    int eligible = amp_test_count_eligible(&plain);
    char warning[400];

    write_shared("10-suite.policy", "match exe gemm_suite\n"
                 "set tolerance 1e-2\nrule fp61 when gemm\ndefault fp16\n");
    write_shared("20-all.policy", "default fp16\n");
    run_shared(sgemm_check_path, &r);
    expect_sgemm(&r, eligible, plain.count - eligible,
                 "sgemm_check past a file for gemm_suite");
    assert_int_equal(amp_test_count_lines_with(r.err, "warn"), 0);
    amp_test_run_free(&r);

    run_shared(gemm_suite_path, &r);
    expect_nothing_converted(&r, "gemm_suite, its file broken");
    snprintf(warning, sizeof warning, "warning: policy %s/10-suite.policy:"
             "3:6: unknown action 'fp61'; did you mean 'fp16'?; nothing is "
             "converted", shared_dir);
    assert_int_equal(amp_test_count_lines_with(r.err, warning), 1);
    assert_int_equal(amp_test_count_lines_with(r.err, "warn"), 1);
    amp_test_run_free(&r);

    /* A file whose match lines cannot be read is for every program. */
    write_shared("10-suite.policy", "match exe gemm_suite\n"
                 "match build-id 12x4\ndefault fp16\n");
    run_shared(sgemm_check_path, &r);
    expect_sgemm(&r, 0, plain.count, "sgemm_check, match lines broken");
    assert_int_equal(amp_test_parse_check(r.out, &check), 0);
    for (int i = 0; i < check.count; i++)
        assert_string_equal(check.cases[i].hash, plain.cases[i].hash);
    snprintf(warning, sizeof warning, "warning: policy %s/10-suite.policy:"
             "2:18: expected a hex digit in the build-id, found 'x'; nothing "
             "is converted", shared_dir);
    assert_int_equal(amp_test_count_lines_with(r.err, warning), 1);
    amp_test_run_free(&r);
}

/* ---- Verification in shadow mode demotes a (site, shape) ---------------------- */

static void
test_verify_demotes_site(void **state)
{
    struct amp_test_run r;
    struct amp_test_summary sum;
    int eligible = amp_test_count_eligible(&plain), sites;

    /* sgemm_check's first call of each shape from each of its call
     * sites of cublasSgemm_v2 is eligible: it runs in shadow mode, its
     * error exceeds 1e-9, and every later call of that shape from that
     * site is FP32: one demotion per (site, shape). */
    assert_true(amp_test_eligible(&plain.cases[0]));
    write_policy("set tolerance 1e-9\nrule fp16 verify 1 when gemm\n"
                 "default fp32\n");
    run(sgemm_check_path, 1, &r, NULL);
    sites = amp_test_count_lines_with(r.err, "demoted cublasSgemm_v2 at ");
    assert_true(sites >= 1 && sites <= eligible);
    expect_sgemm(&r, sites, plain.count - sites, "tolerance 1e-9");
    amp_test_parse_summary(r.err, &sum);
    assert_int_equal(sum.lines[0].shadow, sites);
    /* The warning and the exit line name the site by its label. */
    assert_int_equal(amp_test_count_lines_with(r.err, " at main (sgemm_check+0x"),
                     sites);
    assert_int_equal(amp_test_count_lines_with(
                         r.err, "called from main (sgemm_check+0x"),
                     sites);
    assert_int_equal(amp_test_count_lines_with(
                         r.err, "exceeds the policy's tolerance 1e-09"),
                     2 * sites); /* the warning and the summary line */
    amp_test_run_free(&r);
    /* A tolerance the errors meet: the site stays converted. */
    write_policy("set tolerance 0.5\nrule fp16 verify 1 when gemm\n"
                 "default fp32\n");
    run(sgemm_check_path, 1, &r, NULL);
    expect_sgemm(&r, eligible, plain.count - eligible, "tolerance 0.5");
    assert_int_equal(amp_test_count_lines_with(r.err, "demoted "), 0);
    amp_test_run_free(&r);
}

static int
setup(void **state)
{
    snprintf(policy_path, sizeof policy_path, "/tmp/amp_policy_%d.policy",
             (int)getpid());
    snprintf(shared_root, sizeof shared_root, "/tmp/amp_shared_XXXXXX");
    if (!mkdtemp(shared_root))
        return -1;
    snprintf(shared_dir, sizeof shared_dir, "%s/ampshim", shared_root);
    mkdir(shared_dir, 0700);
    snprintf(shared_dir, sizeof shared_dir, "%s/ampshim/policies",
             shared_root);
    mkdir(shared_dir, 0700);
    run(sgemm_check_path, 0, &plain_run, NULL);
    return amp_test_parse_check(plain_run.out, &plain) == 0 &&
                   plain.count > 0
               ? 0
               : -1;
}

static int
teardown(void **state)
{
    char cmd[200];

    unlink(policy_path);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", shared_root);
    if (system(cmd) != 0)
        return -1;
    amp_test_run_free(&plain_run);
    return 0;
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_rule),
        cmocka_unit_test(test_api_rule),
        cmocka_unit_test(test_overlapping_rules),
        cmocka_unit_test(test_site_rules),
        cmocka_unit_test(test_env_mode_wins),
        cmocka_unit_test(test_broken_policy_is_fp32),
        cmocka_unit_test(test_shared_broken_for_one_program),
        cmocka_unit_test(test_verify_demotes_site),
    };

    if (argc != 5) {
        fprintf(stderr, "usage: %s SGEMM_CHECK GEMM_SUITE LIBAMPSHIM "
                "EMU_DIR\n", argv[0]);
        return 2;
    }
    sgemm_check_path = argv[1];
    gemm_suite_path = argv[2];
    libampshim_path = argv[3];
    emu_dir = argv[4];
    return cmocka_run_group_tests(tests, setup, teardown);
}
