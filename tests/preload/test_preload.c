/* Preload tests: the unmodified FP32 program sgemm_check under
 * LD_PRELOAD=libampshim.so, on the CPU device emulator and on the real
 * NVIDIA libraries, judged by its results, hashes and the shim's exit
 * summary.
 *
 * usage: test_preload GROUP SGEMM_CHECK LIBAMPSHIM EMU_DIR
 * GROUP: converted | disable | faults | env | real */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cublas_symbols.h"
#include "harness.h"

/* Generous: the emulator runs every GEMM on one CPU core. */
#define RUN_TIMEOUT_S 240

/* The API every sgemm_check call goes through. */
#define SGEMM_API "cublasSgemm_v2"

static const char *sgemm_check_path;
static const char *libampshim_path;
static const char *emu_dir;

/* sgemm_check on the emulator without the shim, --tol fp32: the FP32
 * truth every other run is compared with. */
static struct amp_test_run plain_run;
static struct amp_test_check plain;

#define HOOKED_NAME(ret, name, params) #name,
static const char *const hooked_apis[] = { AMP_CUBLAS_HOOKED(HOOKED_NAME) };
#define N_HOOKED ((int)(sizeof(hooked_apis) / sizeof(hooked_apis[0])))

struct setting {
    const char *name, *value;
};

enum where {
    ON_EMULATOR,      /* LD_LIBRARY_PATH to the emulator */
    ON_REAL_LIBS,     /* whatever the loader finds: NVIDIA's libraries */
};

/* Runs sgemm_check --tol tol, with the shim preloaded if preload, plus the
 * given settings (terminated by a NULL name). */
static void
run_sgemm_check(const char *tol, int preload, enum where where,
                const struct setting *extra, struct amp_test_run *run)
{
    char *argv[] = { (char *)sgemm_check_path, (char *)"--tol",
                     (char *)tol, NULL };
    struct amp_test_env env;

    amp_test_env_init(&env);
    if (where == ON_EMULATOR)
        amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (preload)
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
    for (; extra && extra->name; extra++)
        amp_test_env_set(&env, extra->name, extra->value);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", sgemm_check_path,
                 strerror(errno));
    amp_test_env_free(&env);
}

/* ---- Assertions with the child's output in the log on failure ---------- */

static void
expect_exit(const struct amp_test_run *run, int code, const char *what)
{
    if (run->exited && run->code == code && !run->timed_out)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: expected exit status %d", what, code);
}

/* Parses sgemm_check's stdout; every case ran with CUBLAS_STATUS_SUCCESS,
 * and passed its tolerance if must_pass. */
static void
expect_cases(const struct amp_test_run *run, int must_pass, const char *what,
             struct amp_test_check *check)
{
    if (amp_test_parse_check(run->out, check) != 0 || check->count == 0 ||
        !check->have_result) {
        amp_test_run_dump(what, run);
        fail_msg("%s: sgemm_check's output does not parse", what);
    }
    for (int i = 0; i < check->count; i++) {
        const struct amp_test_case *c = &check->cases[i];

        if (c->status == 0 && (c->ok || !must_pass))
            continue;
        amp_test_run_dump(what, run);
        fail_msg("%s: case %s: status %d, %s", what, c->name, c->status,
                 c->ok ? "ok" : "outside the tolerance");
    }
}

/* Same cases as the plain run, in the same order. */
static void
expect_same_cases(const struct amp_test_check *check, const char *what)
{
    assert_int_equal(check->count, plain.count);
    for (int i = 0; i < check->count; i++) {
        const struct amp_test_case *a = &check->cases[i];
        const struct amp_test_case *b = &plain.cases[i];

        if (strcmp(a->name, b->name) != 0 || a->m != b->m || a->n != b->n ||
            a->k != b->k)
            fail_msg("%s: case %d is %s, plain run has %s", what, i,
                     a->name, b->name);
    }
}

/* Number of cases whose result hash differs from the plain FP32 run. */
static int
count_hash_differences(const struct amp_test_check *check)
{
    int n = 0;

    for (int i = 0; i < check->count; i++)
        n += strcmp(check->cases[i].hash, plain.cases[i].hash) != 0;
    return n;
}

/* The stdout of run is byte for byte the plain FP32 run's. */
static void
expect_plain_stdout(const struct amp_test_run *run, const char *what)
{
    if (run->out_len == plain_run.out_len &&
        memcmp(run->out, plain_run.out, run->out_len) == 0)
        return;
    amp_test_run_dump("plain FP32 run", &plain_run);
    amp_test_run_dump(what, run);
    fail_msg("%s: output differs from the plain FP32 run", what);
}

/* The summary in text (stderr or a log file) of the process run: one line
 * per hooked API, all naming run's pid, SGEMM_API with these counters and
 * every other hooked API with none. */
static void
expect_summary_in(const char *text, const struct amp_test_run *run,
                  long calls, long converted, long fp32, long fallback,
                  const char *what)
{
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;

    amp_test_parse_summary(text, &sum);
    if (sum.malformed != 0 || sum.count != N_HOOKED) {
        amp_test_run_dump(what, run);
        fail_msg("%s: %d malformed summary lines, %d APIs summarised, "
                 "%d hooked", what, sum.malformed, sum.count, N_HOOKED);
    }
    for (int i = 0; i < N_HOOKED; i++) {
        l = amp_test_summary_find(&sum, hooked_apis[i]);
        if (!l || l->seen != 1 || l->pid != (int)run->pid) {
            amp_test_run_dump(what, run);
            fail_msg("%s: no single summary line of pid %d for %s", what,
                     (int)run->pid, hooked_apis[i]);
        }
        if (strcmp(hooked_apis[i], SGEMM_API) == 0)
            continue;
        assert_int_equal(l->calls, 0);
    }
    l = amp_test_summary_find(&sum, SGEMM_API);
    if (l->calls == calls && l->converted == converted && l->fp32 == fp32 &&
        l->fallback == fallback)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: summary calls=%ld converted=%ld fp32=%ld fallback=%ld, "
             "expected calls=%ld converted=%ld fp32=%ld fallback=%ld", what,
             l->calls, l->converted, l->fp32, l->fallback, calls, converted,
             fp32, fallback);
}

static void
expect_summary(const struct amp_test_run *run, long calls, long converted,
               long fp32, long fallback, const char *what)
{
    expect_summary_in(run->err, run, calls, converted, fp32, fallback, what);
}

/* Every line on stderr is the shim's, starting "ampshim[<pid>]", and
 * the ones in summary_only mode are all summary lines. */
static void
expect_only_shim_lines(const struct amp_test_run *run, int summary_only,
                       const char *what)
{
    char prefix[64];
    const char *line = run->err;

    snprintf(prefix, sizeof(prefix), summary_only ? "ampshim[%d]: summary "
             : "ampshim[%d]", (int)run->pid);
    while (line && *line) {
        const char *next = strchr(line, '\n');

        if (strncmp(line, prefix, strlen(prefix)) != 0 && *line != '\n') {
            amp_test_run_dump(what, run);
            fail_msg("%s: stderr line not starting '%s'", what, prefix);
        }
        line = next ? next + 1 : NULL;
    }
}

/* ---- Group set-up: the plain FP32 run ------------------------------------ */

static int
plain_setup(void **state)
{
    run_sgemm_check("fp32", 0, ON_EMULATOR, NULL, &plain_run);
    if (!plain_run.exited || plain_run.code != 0 ||
        amp_test_parse_check(plain_run.out, &plain) != 0 ||
        plain.count == 0) {
        amp_test_run_dump("plain FP32 run on the emulator", &plain_run);
        fprintf(stderr, "sgemm_check does not pass on the emulator without "
                "the shim: nothing to compare with\n");
        return -1;
    }
    return 0;
}

static int
plain_teardown(void **state)
{
    amp_test_run_free(&plain_run);
    return 0;
}

/* ---- (a) converted ------------------------------------------------------- */

/* The plain FP32 run itself: every case is within k 2^-23 and there are
 * cases for the shim to convert and at least one it must not. */
static void
test_plain_fp32_passes(void **state)
{
    struct amp_test_check check;

    expect_exit(&plain_run, 0, "plain FP32 run");
    expect_cases(&plain_run, 1, "plain FP32 run", &check);
    assert_true(amp_test_count_eligible(&plain) >= 2);
    assert_true(amp_test_count_eligible(&plain) < plain.count);
}

/* Under the shim every case passes the FP16 bound, the converted results
 * differ from FP32, the trivial ones do not, and the counters agree. */
static void
test_converted_within_fp16_bound(void **state)
{
    struct amp_test_run run;
    struct amp_test_check check;
    int eligible = amp_test_count_eligible(&plain);

    run_sgemm_check("fp16", 1, ON_EMULATOR, NULL, &run);
    expect_exit(&run, 0, "shim, fp16");
    expect_cases(&run, 1, "shim, fp16", &check);
    expect_same_cases(&check, "shim, fp16");
    if (count_hash_differences(&check) == 0) {
        amp_test_run_dump("shim, fp16", &run);
        fail_msg("every result is bit-identical to FP32: nothing converted");
    }
    for (int i = 0; i < check.count; i++)
        if (!amp_test_eligible(&check.cases[i]))
            assert_string_equal(check.cases[i].hash, plain.cases[i].hash);
    expect_summary(&run, plain.count, eligible, plain.count - eligible, 0,
                   "shim, fp16");
    expect_only_shim_lines(&run, 1, "shim, fp16");
    amp_test_run_free(&run);
}

/* The converted results are measurably FP16: the FP32 bound rejects at
 * least one, with exit status 1 and every call still successful. */
static void
test_converted_exceeds_fp32_bound(void **state)
{
    struct amp_test_run run;
    struct amp_test_check check;
    int failing = 0;

    run_sgemm_check("fp32", 1, ON_EMULATOR, NULL, &run);
    expect_exit(&run, 1, "shim, checked with the FP32 bound");
    expect_cases(&run, 0, "shim, checked with the FP32 bound", &check);
    for (int i = 0; i < check.count; i++)
        failing += !check.cases[i].ok;
    assert_true(failing >= 1);
    amp_test_run_free(&run);
}

/* ---- (b) disabled, and mode fp32 ----------------------------------------- */

static void
test_disable_is_bit_exact_and_silent(void **state)
{
    static const struct setting disable[] = {
        { "AMPSHIM_DISABLE", "1" }, { NULL, NULL } };
    struct amp_test_run run;

    run_sgemm_check("fp32", 1, ON_EMULATOR, disable, &run);
    expect_exit(&run, 0, "AMPSHIM_DISABLE=1");
    expect_plain_stdout(&run, "AMPSHIM_DISABLE=1");
    if (run.err_len != 0) {
        amp_test_run_dump("AMPSHIM_DISABLE=1", &run);
        fail_msg("AMPSHIM_DISABLE=1 printed on stderr");
    }
    amp_test_run_free(&run);
}

static void
test_mode_fp32_is_bit_exact(void **state)
{
    static const struct setting mode[] = {
        { "AMPSHIM_MODE", "fp32" }, { NULL, NULL } };
    struct amp_test_run run;

    run_sgemm_check("fp32", 1, ON_EMULATOR, mode, &run);
    expect_exit(&run, 0, "AMPSHIM_MODE=fp32");
    expect_plain_stdout(&run, "AMPSHIM_MODE=fp32");
    expect_summary(&run, plain.count, 0, plain.count, 0,
                   "AMPSHIM_MODE=fp32");
    amp_test_run_free(&run);
}

/* ---- (c) injected faults ------------------------------------------------- */

/* Faults that make every conversion fail (N+ = the Nth occurrence and
 * every later one): the run must be FP32, bit for bit. */
static const char *const fatal_faults[] = {
    "alloc-async:1+",
    "module:1+",
    "launch:1+",
    "launch:2+",
    "launch:3+",
    "cublasGemmEx:1+",
    "cublasGemmEx:1+:15",
};

static void
test_fault_falls_back_to_fp32(void **state)
{
    const char *fault = *state;
    const struct setting inject[] = {
        { "AMPSHIM_EMU_FAIL", fault }, { NULL, NULL } };
    int eligible = amp_test_count_eligible(&plain);
    struct amp_test_run run;
    char what[96];

    snprintf(what, sizeof(what), "AMPSHIM_EMU_FAIL=%s", fault);
    run_sgemm_check("fp32", 1, ON_EMULATOR, inject, &run);
    expect_exit(&run, 0, what);
    expect_plain_stdout(&run, what);
    expect_summary(&run, plain.count, 0, plain.count - eligible, eligible,
                   what);
    expect_only_shim_lines(&run, 0, what);
    amp_test_run_free(&run);
}

/* One failed cublasGemmEx (the second converted call): that call alone
 * falls back, bit-exact, and the others stay converted. */
static void
test_single_fault_falls_back_once(void **state)
{
    const char *fault = *state;
    const struct setting inject[] = {
        { "AMPSHIM_EMU_FAIL", fault }, { NULL, NULL } };
    int eligible = amp_test_count_eligible(&plain), seen = 0, second = -1;
    struct amp_test_run run;
    struct amp_test_check check;
    char what[96];

    snprintf(what, sizeof(what), "AMPSHIM_EMU_FAIL=%s", fault);
    run_sgemm_check("fp16", 1, ON_EMULATOR, inject, &run);
    expect_exit(&run, 0, what);
    expect_cases(&run, 1, what, &check);
    expect_same_cases(&check, what);
    for (int i = 0; i < check.count && second < 0; i++)
        if (amp_test_eligible(&check.cases[i]) && ++seen == 2)
            second = i;
    assert_true(second >= 0);
    assert_string_equal(check.cases[second].hash, plain.cases[second].hash);
    assert_true(count_hash_differences(&check) >= 1);
    expect_summary(&run, plain.count, eligible - 1, plain.count - eligible,
                   1, what);
    amp_test_run_free(&run);
}

/* ---- Environment variables ----------------------------------------------- */

static void
test_summary_off(void **state)
{
    static const struct setting off[] = {
        { "AMPSHIM_SUMMARY", "0" }, { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary sum;

    run_sgemm_check("fp16", 1, ON_EMULATOR, off, &run);
    expect_exit(&run, 0, "AMPSHIM_SUMMARY=0");
    expect_cases(&run, 1, "AMPSHIM_SUMMARY=0", &check);
    assert_true(count_hash_differences(&check) >= 1);
    amp_test_parse_summary(run.err, &sum);
    if (sum.summary_lines != 0) {
        amp_test_run_dump("AMPSHIM_SUMMARY=0", &run);
        fail_msg("AMPSHIM_SUMMARY=0 still printed a summary");
    }
    amp_test_run_free(&run);
}

/* AMPSHIM_LOG_FILE with %p: the summary goes to the file named with the
 * process's pid, and nothing to stderr. */
static void
test_log_file(void **state)
{
    char dir[] = "/tmp/amp-preload-XXXXXX";
    char *pattern, *path, *text;
    struct amp_test_run run;
    struct amp_test_summary sum;
    int eligible = amp_test_count_eligible(&plain);

    assert_non_null(mkdtemp(dir));
    assert_true(asprintf(&pattern, "%s/shim-%%p.log", dir) > 0);
    {
        const struct setting log[] = {
            { "AMPSHIM_LOG_FILE", pattern }, { NULL, NULL } };

        run_sgemm_check("fp16", 1, ON_EMULATOR, log, &run);
    }
    expect_exit(&run, 0, "AMPSHIM_LOG_FILE");
    amp_test_parse_summary(run.err, &sum);
    assert_int_equal(sum.summary_lines, 0);
    assert_int_equal(amp_test_count_lines_with(run.err, "ampshim["), 0);
    assert_true(asprintf(&path, "%s/shim-%d.log", dir, (int)run.pid) > 0);
    text = amp_test_read_file(path);
    if (!text) {
        amp_test_run_dump("AMPSHIM_LOG_FILE", &run);
        fail_msg("no log file %s", path);
    }
    expect_summary_in(text, &run, plain.count, eligible,
                      plain.count - eligible, 0, "AMPSHIM_LOG_FILE");
    unlink(path);
    rmdir(dir);
    free(text);
    free(path);
    free(pattern);
    amp_test_run_free(&run);
}

/* A bad value gets one warning naming the variable; the program runs. */
static void
test_bad_mode_warns_once(void **state)
{
    static const struct setting bad[] = {
        { "AMPSHIM_MODE", "fp8" }, { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;

    run_sgemm_check("fp16", 1, ON_EMULATOR, bad, &run);
    expect_exit(&run, 0, "AMPSHIM_MODE=fp8");
    expect_cases(&run, 1, "AMPSHIM_MODE=fp8", &check);
    if (amp_test_count_lines_with(run.err, "AMPSHIM_MODE") != 1) {
        amp_test_run_dump("AMPSHIM_MODE=fp8", &run);
        fail_msg("expected one warning naming AMPSHIM_MODE");
    }
    amp_test_run_free(&run);
}

/* With logging off, a fallback leaves only the summary on stderr. */
static void
test_log_level_off(void **state)
{
    static const struct setting quiet[] = {
        { "AMPSHIM_LOG_LEVEL", "off" },
        { "AMPSHIM_EMU_FAIL", "cublasGemmEx:1+" }, { NULL, NULL } };
    struct amp_test_run run;

    run_sgemm_check("fp32", 1, ON_EMULATOR, quiet, &run);
    expect_exit(&run, 0, "AMPSHIM_LOG_LEVEL=off");
    expect_plain_stdout(&run, "AMPSHIM_LOG_LEVEL=off");
    expect_only_shim_lines(&run, 1, "AMPSHIM_LOG_LEVEL=off");
    amp_test_run_free(&run);
}

/* ---- (d) the real NVIDIA libraries --------------------------------------- */

/* On this GPU-less machine: the same output and exit status with and
 * without the shim, no signal. With a GPU, the same statuses. */
static void
test_real_libraries_same_status(void **state)
{
    struct amp_test_run bare, shim;
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;

    run_sgemm_check("fp16", 0, ON_REAL_LIBS, NULL, &bare);
    run_sgemm_check("fp16", 1, ON_REAL_LIBS, NULL, &shim);
    if (!bare.exited || !shim.exited || bare.code != shim.code) {
        amp_test_run_dump("real libraries, no shim", &bare);
        amp_test_run_dump("real libraries, shim", &shim);
        fail_msg("exit statuses differ, or a run was killed");
    }
    if (bare.code == 0) {
        /* A GPU: the results may differ, the statuses may not. */
        struct amp_test_check a, b;

        expect_cases(&bare, 1, "real libraries, no shim", &a);
        expect_cases(&shim, 1, "real libraries, shim", &b);
        assert_int_equal(a.count, b.count);
        goto out;
    }
    if (strstr(bare.out, "cublasCreate_v2 status=") == NULL ||
        strstr(bare.out, "cublasSgemm_v2 handle=NULL status=") == NULL) {
        amp_test_run_dump("real libraries, no shim", &bare);
        fail_msg("expected the failed cublasCreate_v2 and the NULL-handle "
                 "call on a machine without a GPU");
    }
    if (bare.out_len != shim.out_len ||
        memcmp(bare.out, shim.out, bare.out_len) != 0) {
        amp_test_run_dump("real libraries, no shim", &bare);
        amp_test_run_dump("real libraries, shim", &shim);
        fail_msg("stdout differs with the shim");
    }
    /* The NULL-handle call was seen and passed through. */
    amp_test_parse_summary(shim.err, &sum);
    l = amp_test_summary_find(&sum, SGEMM_API);
    if (!l || l->calls != 1 || l->converted != 0 ||
        l->fp32 + l->fallback != 1) {
        amp_test_run_dump("real libraries, shim", &shim);
        fail_msg("expected a summary of one unconverted call");
    }
out:
    amp_test_run_free(&bare);
    amp_test_run_free(&shim);
}

/* ---- main ---------------------------------------------------------------- */

#define N_FATAL (sizeof(fatal_faults) / sizeof(fatal_faults[0]))

static int
run_faults(void)
{
    static const char *const single[] = { "cublasGemmEx:2",
                                          "cublasGemmEx:2:15" };
    struct CMUnitTest tests[N_FATAL + 2];
    char names[N_FATAL + 2][64];
    size_t n = 0;

    for (size_t i = 0; i < N_FATAL; i++, n++) {
        snprintf(names[n], sizeof(names[n]), "fault %s", fatal_faults[i]);
        tests[n] = (struct CMUnitTest){
            .name = names[n],
            .test_func = test_fault_falls_back_to_fp32,
            .initial_state = (void *)fatal_faults[i],
        };
    }
    for (size_t i = 0; i < 2; i++, n++) {
        snprintf(names[n], sizeof(names[n]), "fault %s", single[i]);
        tests[n] = (struct CMUnitTest){
            .name = names[n],
            .test_func = test_single_fault_falls_back_once,
            .initial_state = (void *)single[i],
        };
    }
    return _cmocka_run_group_tests("faults", tests, n, plain_setup,
                                   plain_teardown);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest converted[] = {
        cmocka_unit_test(test_plain_fp32_passes),
        cmocka_unit_test(test_converted_within_fp16_bound),
        cmocka_unit_test(test_converted_exceeds_fp32_bound),
    };
    const struct CMUnitTest disable[] = {
        cmocka_unit_test(test_disable_is_bit_exact_and_silent),
        cmocka_unit_test(test_mode_fp32_is_bit_exact),
    };
    const struct CMUnitTest env[] = {
        cmocka_unit_test(test_summary_off),
        cmocka_unit_test(test_log_file),
        cmocka_unit_test(test_bad_mode_warns_once),
        cmocka_unit_test(test_log_level_off),
    };
    const struct CMUnitTest real[] = {
        cmocka_unit_test(test_real_libraries_same_status),
    };
    const char *group;

    if (argc != 5) {
        fprintf(stderr, "usage: %s converted|disable|faults|env|real "
                "SGEMM_CHECK LIBAMPSHIM EMU_DIR\n", argv[0]);
        return 2;
    }
    group = argv[1];
    sgemm_check_path = argv[2];
    libampshim_path = argv[3];
    emu_dir = argv[4];
    if (access(sgemm_check_path, X_OK) != 0 ||
        access(libampshim_path, R_OK) != 0) {
        fprintf(stderr, "%s: missing %s or %s\n", argv[0], sgemm_check_path,
                libampshim_path);
        return 1;
    }
    if (strcmp(group, "converted") == 0)
        return cmocka_run_group_tests_name("converted", converted,
                                           plain_setup, plain_teardown);
    if (strcmp(group, "disable") == 0)
        return cmocka_run_group_tests_name("disable", disable, plain_setup,
                                           plain_teardown);
    if (strcmp(group, "faults") == 0)
        return run_faults();
    if (strcmp(group, "env") == 0)
        return cmocka_run_group_tests_name("env", env, plain_setup,
                                           plain_teardown);
    if (strcmp(group, "real") == 0)
        return cmocka_run_group_tests_name("real", real, NULL, NULL);
    fprintf(stderr, "%s: unknown group '%s'\n", argv[0], group);
    return 2;
}
