/* Preload tests: the unmodified FP32 programs sgemm_check (cublasSgemm_v2),
 * gemm_suite (every GEMM entry point of cublas_v2.h) and legacy_sgemm
 * (cublas.h) under LD_PRELOAD=libampshim.so, on the CPU device emulator
 * and on the real NVIDIA libraries, judged by their results, statuses,
 * hashes and the shim's exit summary; conv_check (cuDNN) on the real
 * libraries (test_conv.c runs it on the emulator).
 *
 * usage: test_preload GROUP SGEMM_CHECK GEMM_SUITE LEGACY_SGEMM CONV_CHECK
 *        LIBAMPSHIM EMU_DIR
 * GROUP: converted | disable | faults | env | real | suite | suite_faults
 *        | legacy */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Names only: cublas.h and cublas_v2.h refuse to meet in one file. */
#define AMP_SYMBOL_NAMES_ONLY
#include "cublas_legacy_symbols.h"
#include "cublas_symbols.h"
#include "harness.h"
#include "expect.h"

/* Generous: the emulator runs every GEMM on one CPU core. */
#define RUN_TIMEOUT_S 240

/* The API every sgemm_check call goes through. */
#define SGEMM_API "cublasSgemm_v2"

static const char *sgemm_check_path;
static const char *gemm_suite_path;
static const char *legacy_sgemm_path;
static const char *conv_check_path;
static const char *libampshim_path;
static const char *emu_dir;

/* sgemm_check on the emulator without the shim, --tol fp32: the FP32
 * truth every other run is compared with. */
static struct amp_test_run plain_run;
static struct amp_test_check plain;

#define HOOKED_NAME(ret, name, params) #name,
static const char *const hooked_apis[] = {
    AMP_CUBLAS_HOOKED(HOOKED_NAME) AMP_CUBLAS_LEGACY_HOOKED(HOOKED_NAME)
};
#define N_HOOKED ((int)(sizeof(hooked_apis) / sizeof(hooked_apis[0])))

struct setting {
    const char *name, *value;
};

enum where {
    ON_EMULATOR,      /* LD_LIBRARY_PATH to the emulator */
    ON_REAL_LIBS,     /* whatever the loader finds: NVIDIA's libraries */
};

/* Runs program --tol tol (gemm_suite with --capture too), with the shim
 * preloaded if preload, plus the given settings (terminated by a NULL
 * name). */
static void
run_program(const char *program, const char *tol, int preload,
            enum where where, const struct setting *extra,
            struct amp_test_run *run)
{
    char *argv[] = { (char *)program, (char *)"--tol", (char *)tol,
                     program == gemm_suite_path ? (char *)"--capture" : NULL,
                     NULL };
    struct amp_test_env env;

    amp_test_env_init(&env);
    if (where == ON_EMULATOR)
        amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (preload) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        /* These tests are about the modes: one for every call, not the
         * built-in policy's choice (test_policy tests that). */
        amp_test_env_set(&env, "AMPSHIM_MODE", "fp16");
    }
    for (; extra && extra->name; extra++)
        amp_test_env_set(&env, extra->name, extra->value);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", program, strerror(errno));
    amp_test_env_free(&env);
}

static void
run_sgemm_check(const char *tol, int preload, enum where where,
                const struct setting *extra, struct amp_test_run *run)
{
    run_program(sgemm_check_path, tol, preload, where, extra, run);
}

/* ---- Assertions with the child's output in the log on failure ---------- */

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

/* On a GPU: some calls converted and none fell back, so that a shim that
 * silently runs FP32 everywhere fails. */
static void
expect_converted_on_gpu(const struct amp_test_run *run, const char *what)
{
    struct amp_test_summary sum;
    long converted = 0, fallback = 0;

    amp_test_parse_summary(run->err, &sum);
    for (int i = 0; i < sum.count; i++) {
        converted += sum.lines[i].converted;
        fallback += sum.lines[i].fallback;
    }
    if (converted > 0 && fallback == 0)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: on a GPU, %ld calls converted and %ld fell back (expected "
             "some converted, none fallen back)", what, converted, fallback);
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

/* The summary in text (stderr or a log file) of the process run: one line
 * per API that saw a call, all naming run's pid: here SGEMM_API alone,
 * with these counters. */
static void
expect_summary_in(const char *text, const struct amp_test_run *run,
                  long calls, long converted, long fp32, long fallback,
                  const char *what)
{
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;

    amp_test_parse_summary(text, &sum);
    l = amp_test_summary_find(&sum, SGEMM_API);
    if (sum.malformed != 0 || sum.count != 1 || !l || l->seen != 1 ||
        l->pid != (int)run->pid) {
        amp_test_run_dump(what, run);
        fail_msg("%s: %d malformed summary lines, %d APIs summarised, "
                 "expected one line of pid %d for %s", what, sum.malformed,
                 sum.count, (int)run->pid, SGEMM_API);
    }
    if (l->calls == calls && l->converted == converted && l->fp32 == fp32 &&
        l->fallback == fallback && l->passthrough == 0)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: summary calls=%ld converted=%ld fp32=%ld fallback=%ld "
             "passthrough=%ld, expected calls=%ld converted=%ld fp32=%ld "
             "fallback=%ld passthrough=0", what, l->calls, l->converted,
             l->fp32, l->fallback, l->passthrough, calls, converted, fp32,
             fallback);
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
    char prefix[64], table[64], coverage[64], verdict[64], accuracy[80];
    char times[64];
    const char *line = run->err;

    snprintf(prefix, sizeof(prefix), summary_only ? "ampshim[%d]: summary "
             : "ampshim[%d]", (int)run->pid);
    /* The exit table's rows ("ampshim[pid]: | ..."), the coverage line,
     * the verdict and the line on the converted results' error belong to
     * the summary. */
    snprintf(table, sizeof(table), "ampshim[%d]: | ", (int)run->pid);
    snprintf(coverage, sizeof(coverage), "ampshim[%d]: coverage: ",
             (int)run->pid);
    /* The verdict: faster, slower, still measuring or nothing to gain. */
    snprintf(verdict, sizeof(verdict), "ampshim[%d]: verdict: ",
             (int)run->pid);
    /* The line on how far converted results differ from FP32. */
    snprintf(accuracy, sizeof(accuracy), "ampshim[%d]: converted results ",
             (int)run->pid);
    /* The device time of the intercepted calls. */
    snprintf(times, sizeof(times), "ampshim[%d]: time: ", (int)run->pid);
    while (line && *line) {
        const char *next = strchr(line, '\n');

        if (strncmp(line, prefix, strlen(prefix)) != 0 &&
            strncmp(line, table, strlen(table)) != 0 &&
            strncmp(line, coverage, strlen(coverage)) != 0 &&
            strncmp(line, verdict, strlen(verdict)) != 0 &&
            strncmp(line, accuracy, strlen(accuracy)) != 0 &&
            strncmp(line, times, strlen(times)) != 0 && *line != '\n') {
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

    amp_test_expect_exit(&plain_run, 0, "plain FP32 run");
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
    amp_test_expect_exit(&run, 0, "shim, fp16");
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
    amp_test_expect_exit(&run, 1, "shim, checked with the FP32 bound");
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
    amp_test_expect_exit(&run, 0, "AMPSHIM_DISABLE=1");
    amp_test_expect_plain_stdout(&run, &plain_run, "AMPSHIM_DISABLE=1");
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
    amp_test_expect_exit(&run, 0, "AMPSHIM_MODE=fp32");
    amp_test_expect_plain_stdout(&run, &plain_run, "AMPSHIM_MODE=fp32");
    expect_summary(&run, plain.count, 0, plain.count, 0,
                   "AMPSHIM_MODE=fp32");
    amp_test_run_free(&run);
}

/* ---- (c) injected faults ------------------------------------------------- */

/* Faults that make every conversion fail (N+ = the Nth occurrence and
 * every later one): the run must be FP32, bit for bit. */
static const char *const fatal_faults[] = {
    "alloc-async:1+,user-object:1+", /* scratch, outside and in capture */
    "module:1+",
    "launch:1+",   /* the maxima and scales of a converted call */
    "launch:2+",   /* its casts, after the scales were queued */
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
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_plain_stdout(&run, &plain_run, what);
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
    amp_test_expect_exit(&run, 0, what);
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
    amp_test_expect_exit(&run, 0, "AMPSHIM_SUMMARY=0");
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
    amp_test_expect_exit(&run, 0, "AMPSHIM_LOG_FILE");
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
    amp_test_expect_exit(&run, 0, "AMPSHIM_MODE=fp8");
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
    amp_test_expect_exit(&run, 0, "AMPSHIM_LOG_LEVEL=off");
    amp_test_expect_plain_stdout(&run, &plain_run, "AMPSHIM_LOG_LEVEL=off");
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
        expect_converted_on_gpu(&shim, "real libraries, shim");
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

/* ---- gemm_suite and legacy_sgemm: every entry point ---------------------- */

/* The plain FP32 run of the program under test (gemm_suite or
 * legacy_sgemm), set up per group. */
static const char *program_path;
static struct amp_test_run program_plain_run;
static struct amp_test_check program_plain;

static int
program_setup(void **state)
{
    run_program(program_path, "fp32", 0, ON_EMULATOR, NULL,
                &program_plain_run);
    if (!program_plain_run.exited || program_plain_run.code != 0 ||
        amp_test_parse_check(program_plain_run.out, &program_plain) != 0 ||
        program_plain.count == 0) {
        amp_test_run_dump("plain FP32 run on the emulator",
                          &program_plain_run);
        fprintf(stderr, "%s does not pass on the emulator without the "
                "shim: nothing to compare with\n", program_path);
        return -1;
    }
    return 0;
}

static int
program_teardown(void **state)
{
    amp_test_run_free(&program_plain_run);
    return 0;
}

/* What the shim is expected to do with every call of a run. */
enum expect_mode {
    EXPECT_CONVERT,   /* fp16, bf16, tf32, fp16x3 */
    EXPECT_SHADOW,    /* FP32 result, candidate measured; not in a graph */
    EXPECT_FP32,      /* mode fp32 */
};

/* The Ex GEMM a converted call of this API issues its steps with. */
static const char *
step_function(const char *api)
{
    if (strstr(api, "Strided"))
        return "cublasGemmStridedBatchedEx";
    if (strstr(api, "Batched"))
        return "cublasGemmBatchedEx"; /* batched and grouped */
    return "cublasGemmEx";
}

/* The summary counter a call lands in. */
enum expect_outcome {
    OUT_CONVERTED, OUT_FP32, OUT_FALLBACK, OUT_PASSTHROUGH,
};

/* The outcome of one case; a conversion whose step function fails by
 * injection (failing_step: a name, "*" for all, or NULL) falls back. */
static enum expect_outcome
expected_outcome(const struct amp_test_case *c, enum expect_mode mode,
                 const char *failing_step)
{
    if (strcmp(c->cls, "typed") == 0)
        return OUT_PASSTHROUGH;
    if (strcmp(c->cls, "gemm") != 0 || mode == EXPECT_FP32)
        return OUT_FP32;
    if (mode == EXPECT_SHADOW && strncmp(c->name, "capture_", 8) == 0)
        return OUT_FP32; /* no shadow work inside a graph */
    if (failing_step && (strcmp(failing_step, "*") == 0 ||
                         strcmp(failing_step, step_function(c->api)) == 0))
        return OUT_FALLBACK;
    return OUT_CONVERTED;
}

/* Calls that configure the legacy context: passed through, counted. */
static int
is_context_call(const char *api)
{
    return strcmp(api, "cublasInit") == 0 ||
           strcmp(api, "cublasShutdown") == 0 ||
           strcmp(api, "cublasSetKernelStream") == 0;
}

static int
is_hooked(const char *api)
{
    for (int i = 0; i < N_HOOKED; i++)
        if (strcmp(hooked_apis[i], api) == 0)
            return 1;
    return 0;
}

/* The exit summary of run agrees call for call with what the plain run's
 * cases predict in mode: one line per API with its counters, nothing
 * for APIs the program never called, context calls as passthrough.
 * Returns the number of converted calls. */
static long
expect_counters(const struct amp_test_run *run, enum expect_mode mode,
                const char *failing_step, const char *what)
{
    struct amp_test_summary sum;
    long total_converted = 0;

    amp_test_parse_summary(run->err, &sum);
    if (sum.malformed != 0) {
        amp_test_run_dump(what, run);
        fail_msg("%s: %d malformed summary lines", what, sum.malformed);
    }
    for (int i = 0; i < sum.count; i++) {
        const struct amp_test_summary_line *l = &sum.lines[i];
        long want[4] = { 0, 0, 0, 0 }, calls = 0;

        if (!is_hooked(l->api) || l->seen != 1 || l->pid != (int)run->pid) {
            amp_test_run_dump(what, run);
            fail_msg("%s: summary line for %s: not one hooked API of pid "
                     "%d", what, l->api, (int)run->pid);
        }
        for (int j = 0; j < program_plain.count; j++) {
            const struct amp_test_case *c = &program_plain.cases[j];

            if (strcmp(c->api, l->api) != 0)
                continue;
            want[expected_outcome(c, mode, failing_step)]++;
            calls++;
        }
        if (is_context_call(l->api)) {
            want[OUT_PASSTHROUGH] = calls = l->calls;
            assert_true(calls >= 1);
        }
        if (calls == 0 || l->calls != calls ||
            l->converted != want[OUT_CONVERTED] ||
            l->fp32 != want[OUT_FP32] || l->fallback != want[OUT_FALLBACK] ||
            l->passthrough != want[OUT_PASSTHROUGH]) {
            amp_test_run_dump(what, run);
            fail_msg("%s: %s calls=%ld converted=%ld fp32=%ld fallback=%ld "
                     "passthrough=%ld, expected calls=%ld converted=%ld "
                     "fp32=%ld fallback=%ld passthrough=%ld", what, l->api,
                     l->calls, l->converted, l->fp32, l->fallback,
                     l->passthrough, calls, want[OUT_CONVERTED],
                     want[OUT_FP32], want[OUT_FALLBACK],
                     want[OUT_PASSTHROUGH]);
        }
        total_converted += l->converted;
    }
    /* Every API the program called has its line. */
    for (int j = 0; j < program_plain.count; j++)
        if (!amp_test_summary_find(&sum, program_plain.cases[j].api))
            fail_msg("%s: no summary line for %s", what,
                     program_plain.cases[j].api);
    return total_converted;
}

/* Same cases as the plain run, with the same statuses. */
static void
expect_same_statuses(const struct amp_test_run *run,
                     const struct amp_test_check *check, const char *what)
{
    if (check->count != program_plain.count) {
        amp_test_run_dump(what, run);
        fail_msg("%s: %d cases, the plain run has %d", what, check->count,
                 program_plain.count);
    }
    for (int i = 0; i < check->count; i++) {
        const struct amp_test_case *a = &check->cases[i];
        const struct amp_test_case *b = &program_plain.cases[i];

        if (strcmp(a->name, b->name) == 0 && a->status == b->status)
            continue;
        amp_test_run_dump(what, run);
        fail_msg("%s: case %d is %s with status %d, plain run has %s with "
                 "status %d", what, i, a->name, a->status, b->name,
                 b->status);
    }
}

static void
expect_stdout_equal(const struct amp_test_run *run,
                    const struct amp_test_run *base, const char *what)
{
    if (run->out_len == base->out_len &&
        memcmp(run->out, base->out, run->out_len) == 0)
        return;
    amp_test_run_dump("baseline", base);
    amp_test_run_dump(what, run);
    fail_msg("%s: output differs from the baseline run", what);
}

/* The plain run itself: every case passes the FP32 bound, and there is
 * at least one case of every kind. */
static void
test_program_plain_passes(void **state)
{
    static const char *const classes[] = { "gemm", "trivial", "invalid" };

    for (size_t k = 0; k < sizeof(classes) / sizeof(classes[0]); k++) {
        int n = 0;

        for (int i = 0; i < program_plain.count; i++)
            n += strcmp(program_plain.cases[i].cls, classes[k]) == 0;
        if (n == 0)
            fail_msg("no case of class %s", classes[k]);
    }
    for (int i = 0; i < program_plain.count; i++) {
        const struct amp_test_case *c = &program_plain.cases[i];

        assert_true(c->ok);
        assert_true(is_hooked(c->api));
        if (strcmp(c->cls, "invalid") == 0)
            assert_int_not_equal(c->status, 0);
        else
            assert_int_equal(c->status, 0);
    }
}

/* A converting mode: every case within the mode's bound (tol), statuses
 * as without the shim, every call that is not an FP32 GEMM with work
 * bit-identical to FP32, the converted ones not all, and the counters
 * call for call. */
static void
test_program_mode(void **state)
{
    const char *const *mode = *state; /* { mode, tol } */
    const struct setting setting[] = {
        { "AMPSHIM_MODE", mode[0] }, { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    double worst = 0.0;
    int differ = 0, gemm = 0;
    char what[96];

    snprintf(what, sizeof(what), "AMPSHIM_MODE=%s, --tol %s", mode[0],
             mode[1]);
    run_program(program_path, mode[1], 1, ON_EMULATOR, setting, &run);
    amp_test_expect_exit(&run, 0, what);
    assert_int_equal(amp_test_parse_check(run.out, &check), 0);
    expect_same_statuses(&run, &check, what);
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];
        const struct amp_test_case *p = &program_plain.cases[i];

        assert_true(c->ok);
        if (strcmp(c->cls, "gemm") != 0) {
            if (strcmp(c->hash, p->hash) != 0) {
                amp_test_run_dump(what, &run);
                fail_msg("%s: %s (%s) is not bit-identical to FP32", what,
                         c->name, c->cls);
            }
            continue;
        }
        gemm++;
        differ += strcmp(c->hash, p->hash) != 0;
        if (c->ratio > worst)
            worst = c->ratio;
    }
    /* fp16x3 and tf32x3 may reproduce FP32 exactly; the others cannot. */
    if (strcmp(mode[0], "fp16x3") != 0 && strcmp(mode[0], "tf32x3") != 0)
        assert_true(differ >= gemm / 2);
    printf("# %s: %d converted cases, max err/bound %.3e, %d differ from "
           "FP32\n", what, gemm, worst, differ);
    assert_int_equal(expect_counters(&run, EXPECT_CONVERT, NULL, what),
                     gemm);
    expect_only_shim_lines(&run, 1, what);
    amp_test_run_free(&run);
}

/* Shadow: the output is the FP32 run's byte for byte, converted calls
 * are measured (one measurement per descriptor: a grouped call has one
 * per group), and calls inside a graph stay FP32 with no shadow work. */
static void
test_program_shadow(void **state)
{
    const char *mode = *(const char *const *)*state;
    const struct setting setting[] = {
        { "AMPSHIM_MODE", mode }, { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_summary sum;
    long shadow = 0, converted;
    char what[96];

    snprintf(what, sizeof(what), "AMPSHIM_MODE=%s", mode);
    run_program(program_path, "fp32", 1, ON_EMULATOR, setting, &run);
    amp_test_expect_exit(&run, 0, what);
    expect_stdout_equal(&run, &program_plain_run, what);
    converted = expect_counters(&run, EXPECT_SHADOW, NULL, what);
    amp_test_parse_summary(run.err, &sum);
    for (int i = 0; i < sum.count; i++) {
        const struct amp_test_summary_line *l = &sum.lines[i];

        if (l->converted == 0) {
            assert_false(l->has_shadow);
            continue;
        }
        if (!l->has_shadow || l->shadow < l->converted ||
            l->nonfinite != 0 || !(l->max_abs_err > 0.0)) {
            amp_test_run_dump(what, &run);
            fail_msg("%s: %s: %ld converted, shadow=%ld nonfinite=%ld "
                     "max_abs_err=%g", what, l->api, l->converted, l->shadow,
                     l->nonfinite, l->max_abs_err);
        }
        /* Grouped calls measure each group. */
        if (!strstr(l->api, "Grouped"))
            assert_int_equal(l->shadow, l->converted);
        shadow += l->shadow;
        printf("# %s: %s shadow=%ld max_abs_err=%g max_rel_err=%g\n", what,
               l->api, l->shadow, l->max_abs_err, l->max_rel_err);
    }
    assert_true(converted >= 1);
    assert_true(shadow >= converted);
    amp_test_run_free(&run);
}

/* A setting under which the output is the plain FP32 run's byte for byte:
 * the counters then follow expect (with failing_step for fallbacks). */
struct exact_setting {
    const char *name, *value;
    enum expect_mode expect;
    const char *failing_step;
};

static void
test_program_exact(void **state)
{
    const struct exact_setting *x = *state;
    const struct setting setting[] = {
        { x->name, x->value }, { NULL, NULL } };
    struct amp_test_run run;
    char what[96];

    snprintf(what, sizeof(what), "%s=%s", x->name, x->value);
    run_program(program_path, "fp32", 1, ON_EMULATOR, setting, &run);
    amp_test_expect_exit(&run, 0, what);
    expect_stdout_equal(&run, &program_plain_run, what);
    if (strcmp(x->name, "AMPSHIM_DISABLE") == 0) {
        if (run.err_len != 0) {
            amp_test_run_dump(what, &run);
            fail_msg("%s printed on stderr", what);
        }
    } else {
        expect_counters(&run, x->expect, x->failing_step, what);
    }
    amp_test_run_free(&run);
}

/* An injected fault that fails every conversion through one function
 * (or all, "*"): each call has the status it has under the same fault
 * without the shim (the program's own calls of that function fail there
 * too), every affected call falls back to a result bit-identical to that
 * run's, the others stay converted within the FP16 bound, and the
 * counters say which fell back. */
static void
test_program_fault(void **state)
{
    const struct exact_setting *x = *state;
    const struct setting setting[] = {
        { "AMPSHIM_EMU_FAIL", x->value }, { NULL, NULL } };
    struct amp_test_run run, base;
    struct amp_test_check check, base_check;
    char what[96];

    snprintf(what, sizeof(what), "AMPSHIM_EMU_FAIL=%s", x->value);
    run_program(program_path, "fp16", 0, ON_EMULATOR, setting, &base);
    run_program(program_path, "fp16", 1, ON_EMULATOR, setting, &run);
    if (!run.exited || !base.exited || run.code != base.code ||
        amp_test_parse_check(run.out, &check) != 0 ||
        amp_test_parse_check(base.out, &base_check) != 0 ||
        check.count != program_plain.count ||
        base_check.count != program_plain.count) {
        amp_test_run_dump("fault without the shim", &base);
        amp_test_run_dump(what, &run);
        fail_msg("%s: exit status or cases differ from the run without "
                 "the shim", what);
    }
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];
        const struct amp_test_case *b = &base_check.cases[i];
        int converted = expected_outcome(&program_plain.cases[i],
                                         EXPECT_CONVERT, x->failing_step) ==
                        OUT_CONVERTED;

        if (c->status == b->status &&
            (converted ? c->ok : strcmp(c->hash, b->hash) == 0))
            continue;
        amp_test_run_dump("fault without the shim", &base);
        amp_test_run_dump(what, &run);
        fail_msg("%s: case %s: status %d (without the shim %d), %s", what,
                 c->name, c->status, b->status,
                 converted ? "outside the FP16 bound"
                           : "not bit-identical to the run without the shim");
    }
    expect_counters(&run, EXPECT_CONVERT, x->failing_step, what);
    amp_test_run_free(&base);
    amp_test_run_free(&run);
}

/* The second group of the first grouped call fails: that group alone runs
 * its FP32 batched call, the first group stays converted, and the call
 * still succeeds within the FP16 bound. */
static void
test_grouped_group_fallback(void **state)
{
    static const struct setting fp16[] = {
        { "AMPSHIM_MODE", "fp16" }, { NULL, NULL } };
    struct amp_test_run run, conv;
    struct amp_test_check check, conv_check;
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;
    char fault[64];
    int before = 0, first = -1;

    /* In fp16 every converted call is one step; batched calls before the
     * first grouped one each issue one cublasGemmBatchedEx. */
    for (int i = 0; i < program_plain.count && first < 0; i++) {
        const struct amp_test_case *c = &program_plain.cases[i];

        if (strcmp(c->cls, "gemm") != 0 ||
            strcmp(step_function(c->api), "cublasGemmBatchedEx") != 0)
            continue;
        if (strstr(c->api, "Grouped"))
            first = i;
        else
            before++;
    }
    assert_true(first >= 0);
    snprintf(fault, sizeof(fault), "cublasGemmBatchedEx:%d", before + 2);
    {
        const struct setting setting[] = {
            { "AMPSHIM_EMU_FAIL", fault }, { NULL, NULL } };

        run_program(program_path, "fp16", 1, ON_EMULATOR, setting, &run);
    }
    run_program(program_path, "fp16", 1, ON_EMULATOR, fp16, &conv);
    amp_test_expect_exit(&run, 0, fault);
    amp_test_expect_exit(&conv, 0, "fp16");
    assert_int_equal(amp_test_parse_check(run.out, &check), 0);
    assert_int_equal(amp_test_parse_check(conv.out, &conv_check), 0);
    expect_same_statuses(&run, &check, fault);
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];

        assert_true(c->ok);
        if (i == first) {
            /* Neither all FP32 nor all FP16. */
            assert_string_not_equal(c->hash, program_plain.cases[i].hash);
            assert_string_not_equal(c->hash, conv_check.cases[i].hash);
        } else {
            assert_string_equal(c->hash, conv_check.cases[i].hash);
        }
    }
    amp_test_parse_summary(run.err, &sum);
    l = amp_test_summary_find(&sum, check.cases[first].api);
    assert_non_null(l);
    assert_int_equal(l->fallback, 1);
    amp_test_run_free(&run);
    amp_test_run_free(&conv);
}

/* ---- (d) the real NVIDIA libraries, every program ------------------------ */

/* Same exit status and, without a GPU, the same output (the statuses of
 * every entry point on the NULL handle, or the failed cublasInit); with a
 * GPU the same statuses. */
static void
test_real_program(void **state)
{
    const char *program = *state;
    struct amp_test_run bare, shim;
    struct amp_test_check a, b;

    run_program(program, "fp16", 0, ON_REAL_LIBS, NULL, &bare);
    run_program(program, "fp16", 1, ON_REAL_LIBS, NULL, &shim);
    if (!bare.exited || !shim.exited || bare.code != shim.code) {
        amp_test_run_dump("real libraries, no shim", &bare);
        amp_test_run_dump("real libraries, shim", &shim);
        fail_msg("exit statuses differ, or a run was killed");
    }
    assert_int_equal(amp_test_parse_check(bare.out, &a), 0);
    assert_int_equal(amp_test_parse_check(shim.out, &b), 0);
    assert_int_equal(a.count, b.count);
    for (int i = 0; i < a.count; i++)
        assert_int_equal(a.cases[i].status, b.cases[i].status);
    if (bare.code == 0) {
        /* A GPU: every case within the fp16 bound, and converted. */
        for (int i = 0; i < b.count; i++)
            if (!b.cases[i].ok) {
                amp_test_run_dump("real libraries, shim", &shim);
                fail_msg("real libraries, shim: case %s outside the fp16 "
                         "bound", b.cases[i].name);
            }
        expect_converted_on_gpu(&shim, "real libraries, shim");
    }
    if (bare.code != 0 && (bare.out_len != shim.out_len ||
                           memcmp(bare.out, shim.out, bare.out_len) != 0)) {
        amp_test_run_dump("real libraries, no shim", &bare);
        amp_test_run_dump("real libraries, shim", &shim);
        fail_msg("stdout differs with the shim");
    }
    if (program == gemm_suite_path && bare.code != 0)
        assert_int_equal(amp_test_count_lines_with(bare.out,
                                                   " handle=NULL status="),
                         18);
    /* The three convolutions on a NULL handle, after the failed
     * cudnnCreate. */
    if (program == conv_check_path && bare.code != 0) {
        assert_int_equal(amp_test_count_lines_with(bare.out,
                                                   " handle=NULL status="),
                         3);
        assert_int_equal(amp_test_count_lines_with(bare.out,
                                                   "cudnnCreate status="),
                         1);
    }
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

/* One test per setting, with the setting as its state. */
static int
run_settings(const char *group, const char *prefix,
             CMUnitTestFunction func, const void *settings, size_t size,
             size_t count, const char *(*label)(const void *))
{
    struct CMUnitTest tests[16];
    char names[16][96];

    assert_true(count <= 16);
    for (size_t i = 0; i < count; i++) {
        const void *setting = (const char *)settings + i * size;

        snprintf(names[i], sizeof(names[i]), "%s %s", prefix,
                 label(setting));
        tests[i] = (struct CMUnitTest){
            .name = names[i], .test_func = func,
            .initial_state = (void *)(uintptr_t)setting,
        };
    }
    return _cmocka_run_group_tests(group, tests, count, program_setup,
                                   program_teardown);
}

static const char *
mode_label(const void *setting)
{
    return *(const char *const *)setting;
}

static const char *
exact_label(const void *setting)
{
    return ((const struct exact_setting *)setting)->value;
}

static const char *const suite_modes[][2] = {
    { "fp16", "fp16" }, { "bf16", "bf16" }, { "tf32", "tf32" },
    { "fp16x3", "fp32" }, { "tf32x3", "fp32" },
};
static const char *const shadow_modes[] = { "shadow", "shadow:bf16" };
static const struct exact_setting exact_settings[] = {
    { "AMPSHIM_MODE", "fp32", EXPECT_FP32, NULL },
    { "AMPSHIM_DISABLE", "1", EXPECT_FP32, NULL },
    { "AMPSHIM_SCRATCH_MAX", "1K", EXPECT_CONVERT, "*" },
};
static const struct exact_setting program_faults[] = {
    { "AMPSHIM_EMU_FAIL", "alloc-async:1+,user-object:1+", EXPECT_CONVERT,
      "*" },
    { "AMPSHIM_EMU_FAIL", "launch:1+", EXPECT_CONVERT, "*" },
    { "AMPSHIM_EMU_FAIL", "module:1+", EXPECT_CONVERT, "*" },
    { "AMPSHIM_EMU_FAIL", "cublasGemmEx:1+", EXPECT_CONVERT,
      "cublasGemmEx" },
    { "AMPSHIM_EMU_FAIL", "cublasGemmStridedBatchedEx:1+", EXPECT_CONVERT,
      "cublasGemmStridedBatchedEx" },
    { "AMPSHIM_EMU_FAIL", "cublasGemmBatchedEx:1+", EXPECT_CONVERT,
      "cublasGemmBatchedEx" },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* gemm_suite (suite) or legacy_sgemm (legacy): plain, every mode, shadow,
 * the bit-exact settings; suite_faults: injected faults. */
static int
run_program_groups(const char *group)
{
    const struct CMUnitTest plain_tests[] = {
        cmocka_unit_test(test_program_plain_passes),
    };
    const struct CMUnitTest grouped[] = {
        cmocka_unit_test(test_grouped_group_fallback),
    };
    int failed = 0;

    if (strcmp(group, "suite_faults") == 0) {
        failed += run_settings("faults", "fault", test_program_fault,
                               program_faults, sizeof(program_faults[0]),
                               COUNT(program_faults), exact_label);
        return failed + _cmocka_run_group_tests("grouped", grouped, 1,
                                                program_setup,
                                                program_teardown);
    }
    failed += _cmocka_run_group_tests("plain", plain_tests, 1, program_setup,
                                      program_teardown);
    failed += run_settings("modes", "mode", test_program_mode, suite_modes,
                           sizeof(suite_modes[0]), COUNT(suite_modes),
                           mode_label);
    failed += run_settings("shadow", "mode", test_program_shadow,
                           shadow_modes, sizeof(shadow_modes[0]),
                           COUNT(shadow_modes), mode_label);
    failed += run_settings("exact", "setting", test_program_exact,
                           exact_settings, sizeof(exact_settings[0]),
                           COUNT(exact_settings), exact_label);
    if (strcmp(group, "legacy") == 0)
        failed += run_settings("faults", "fault", test_program_fault,
                               program_faults + 3, sizeof(program_faults[0]),
                               1, exact_label);
    return failed;
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
        cmocka_unit_test_prestate(test_real_program, NULL),
        cmocka_unit_test_prestate(test_real_program, NULL),
        cmocka_unit_test_prestate(test_real_program, NULL),
    };
    struct CMUnitTest real_tests[COUNT(real)];
    const char *group;

    if (argc != 8) {
        fprintf(stderr, "usage: %s converted|disable|faults|env|real|suite|"
                "suite_faults|legacy SGEMM_CHECK GEMM_SUITE LEGACY_SGEMM "
                "CONV_CHECK LIBAMPSHIM EMU_DIR\n", argv[0]);
        return 2;
    }
    group = argv[1];
    sgemm_check_path = argv[2];
    gemm_suite_path = argv[3];
    legacy_sgemm_path = argv[4];
    conv_check_path = argv[5];
    libampshim_path = argv[6];
    emu_dir = argv[7];
    if (access(sgemm_check_path, X_OK) != 0 ||
        access(gemm_suite_path, X_OK) != 0 ||
        access(legacy_sgemm_path, X_OK) != 0 ||
        access(conv_check_path, X_OK) != 0 ||
        access(libampshim_path, R_OK) != 0) {
        fprintf(stderr, "%s: missing a program or %s\n", argv[0],
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
    if (strcmp(group, "real") == 0) {
        memcpy(real_tests, real, sizeof(real));
        real_tests[1].name = "test_real_program gemm_suite";
        real_tests[1].initial_state = (void *)gemm_suite_path;
        real_tests[2].name = "test_real_program legacy_sgemm";
        real_tests[2].initial_state = (void *)legacy_sgemm_path;
        real_tests[3].name = "test_real_program conv_check";
        real_tests[3].initial_state = (void *)conv_check_path;
        return _cmocka_run_group_tests("real", real_tests, COUNT(real),
                                       NULL, NULL);
    }
    if (strcmp(group, "suite") == 0 || strcmp(group, "suite_faults") == 0)
        program_path = gemm_suite_path;
    else if (strcmp(group, "legacy") == 0)
        program_path = legacy_sgemm_path;
    else {
        fprintf(stderr, "%s: unknown group '%s'\n", argv[0], group);
        return 2;
    }
    return run_program_groups(group);
}
