/* Preload tests of the cuDNN backend (graph) API hook: the unmodified FP32
 * program conv_graph (convolution graphs built with the raw backend
 * descriptors, forward, backward data and backward filter, each against
 * an FP64 reference) under LD_PRELOAD=libampshim.so on the CPU device
 * emulator, in every mode, with injected faults, judged by its results,
 * statuses, hashes and the shim's exit summary for cudnnBackendExecute.
 *
 * usage: test_graph GROUP CONV_GRAPH LIBAMPSHIM EMU_DIR
 * GROUP: modes | exact | faults | threads | repeat */
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

#include "harness.h"
#include "expect.h"

#define RUN_TIMEOUT_S 240
#define API "cudnnBackendExecute"

/* cudnn_graph.h of cuDNN 9. */
#define DNN_BAD_PARAM 2000
#define DNN_NOT_SUPPORTED 3000
#define DNN_EXECUTION_FAILED 5000   /* the emulator's injected default */

static const char *conv_graph_path;
static const char *libampshim_path;
static const char *emu_dir;

/* conv_graph without the shim: cuDNN's heuristics put FP32 graphs on
 * TF32 engines on the modelled H100, so the truth passes --tol tf32. */
static struct amp_test_run plain_run;
static struct amp_test_check plain;

/* The plain run's cases by class. */
static struct {
    long calls, conv, typed, strict, invalid;
} expected;

struct setting {
    const char *name, *value;
};

/* Runs conv_graph --tol tol on the emulator, with the shim preloaded if
 * preload (mode fp16 unless the settings say otherwise or name a policy
 * first, no report file), plus the settings (NULL-name terminated). */
static void
run_conv_graph_args(const char *tol, int preload, const struct setting *extra,
                    const char *more, const char *more_value,
                    struct amp_test_run *run)
{
    char *argv[] = { (char *)conv_graph_path, (char *)"--tol", (char *)tol,
                     (char *)more, (char *)more_value, NULL };
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (preload) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        if (!extra || strcmp(extra->name, "AMPSHIM_POLICY") != 0)
            amp_test_env_set(&env, "AMPSHIM_MODE", "fp16");
        amp_test_env_set(&env, "AMPSHIM_REPORT", "off");
    }
    for (; extra && extra->name; extra++)
        amp_test_env_set(&env, extra->name, extra->value);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", conv_graph_path, strerror(errno));
    amp_test_env_free(&env);
}

static void
run_conv_graph(const char *tol, int preload, const struct setting *extra,
               struct amp_test_run *run)
{
    run_conv_graph_args(tol, preload, extra, NULL, NULL, run);
}

/* ---- Assertions ------------------------------------------------------------ */

/* One summary line for cudnnBackendExecute, the run's pid: every call,
 * the FP32 convolutions converted (converting) or fallen back (failing),
 * FP16 data passed through, the strict and invalid calls FP32. */
static void
expect_summary(const struct amp_test_run *run, int converting, int failing,
               const char *what, struct amp_test_summary *sum)
{
    const struct amp_test_summary_line *l;
    long converted = converting && !failing ? expected.conv : 0;
    long fallback = converting && failing ? expected.conv : 0;
    long fp32 = expected.calls - expected.typed - converted - fallback;

    amp_test_parse_summary(run->err, sum);
    l = amp_test_summary_find(sum, API);
    if (sum->malformed != 0 || !l || l->seen != 1 ||
        l->pid != (int)run->pid) {
        amp_test_run_dump(what, run);
        fail_msg("%s: no single well-formed summary line of pid %d for %s",
                 what, (int)run->pid, API);
    }
    if (l->calls == expected.calls && l->converted == converted &&
        l->fp32 == fp32 && l->fallback == fallback &&
        l->passthrough == expected.typed)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: calls=%ld converted=%ld fp32=%ld fallback=%ld "
             "passthrough=%ld, expected %ld %ld %ld %ld %ld", what, l->calls,
             l->converted, l->fp32, l->fallback, l->passthrough,
             expected.calls, converted, fp32, fallback, expected.typed);
}

/* The run's three plans on engines without Tensor Cores are FP32 for a
 * reason of their own, not pedantic math (CUDNN_FMA_MATH's). */
static void
expect_no_tc_engine_reason(const struct amp_test_run *run, const char *what)
{
    if (amp_test_count_lines_with(run->err, "| FP32 calls by reason: "
                                            "no-tensor-core-engine 3") == 1)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: the plans on engines without Tensor Cores are not "
             "counted as no-tensor-core-engine", what);
}

/* ---- Set-up: the plain run and what its case list implies ---------------- */

static int
plain_setup(void **state)
{
    (void)state;
    run_conv_graph("tf32", 0, NULL, &plain_run);
    if (!plain_run.exited || plain_run.code != 0 ||
        amp_test_parse_check(plain_run.out, &plain) != 0 ||
        !plain.have_result) {
        amp_test_run_dump("conv_graph on the emulator, no shim", &plain_run);
        fprintf(stderr, "conv_graph does not pass without the shim: "
                "nothing to compare with\n");
        return -1;
    }
    memset(&expected, 0, sizeof(expected));
    for (int i = 0; i < plain.count; i++) {
        const struct amp_test_case *c = &plain.cases[i];

        if (strcmp(c->api, API) != 0) {
            fprintf(stderr, "case %s: api %s\n", c->name, c->api);
            return -1;
        }
        expected.calls++;
        if (strcmp(c->cls, "conv") == 0)
            expected.conv++;
        else if (strcmp(c->cls, "typed") == 0)
            expected.typed++;
        else if (strcmp(c->cls, "strict") == 0)
            expected.strict++;
        else if (strcmp(c->cls, "invalid") == 0)
            expected.invalid++;
        else {
            fprintf(stderr, "case %s: unknown class %s\n", c->name, c->cls);
            return -1;
        }
    }
    return 0;
}

static int
plain_teardown(void **state)
{
    (void)state;
    amp_test_run_free(&plain_run);
    return 0;
}

/* 8 FP32 convolution graphs in each direction, then in each direction an
 * FP16 graph, a plan on an engine without Tensor Cores and a variant pack
 * without the filter's pointer (cuDNN's BAD_PARAM). */
static void
test_plain_case_list(void **state)
{
    (void)state;
    assert_int_equal(plain.count, 33);
    assert_int_equal(expected.conv, 24);
    assert_int_equal(expected.typed, 3);
    assert_int_equal(expected.strict, 3);
    assert_int_equal(expected.invalid, 3);
    for (int i = 0; i < plain.count; i++) {
        const struct amp_test_case *c = &plain.cases[i];

        assert_int_equal(c->status, strcmp(c->cls, "invalid") == 0
                                        ? DNN_BAD_PARAM : 0);
        /* The converted calls are the run's first. */
        assert_true(i >= expected.conv || strcmp(c->cls, "conv") == 0);
    }
}

/* ---- modes: converted within each mode's bound ---------------------------- */

struct mode_case {
    const char *mode, *tol;
    int differs;      /* converted results differ from the plain run's */
};

/* fp16 and bf16 round to half: every converted result differs from TF32.
 * tf32's twin plan runs on the TF32 engine the program's own plan has:
 * the same bytes, told apart by the counters only. allow-conversion, a
 * math type the backend API does not have, runs as fp16. */
static const struct mode_case mode_cases[] = {
    { "fp16", "fp16", 1 }, { "bf16", "bf16", 1 },
    { "tf32", "tf32", 0 }, { "allow-conversion", "fp16", 1 },
};

static void
test_mode(void **state)
{
    const struct mode_case *m = *state;
    const struct setting mode[] = { { "AMPSHIM_MODE", m->mode },
                                    { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary sum;
    char what[64];

    snprintf(what, sizeof(what), "AMPSHIM_MODE=%s", m->mode);
    run_conv_graph(m->tol, 1, mode, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_cases_pass(&run, &plain, what, &check);
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];
        int conv = strcmp(c->cls, "conv") == 0;
        int same = strcmp(c->hash, plain.cases[i].hash) == 0;

        if (conv ? same == !m->differs : same)
            continue;
        amp_test_run_dump(what, &run);
        fail_msg("%s: case %s (%s) is%s bit-identical to the plain run",
                 what, c->name, c->cls, same ? "" : " not");
    }
    expect_summary(&run, 1, 0, what, &sum);
    /* The coverage meter counts every plan of one convolution: 24
     * converted, 3 on engines without Tensor Cores and 3 whose variant
     * pack cuDNN refuses (no FLOPs) kept FP32, 3 of FP16 data in other
     * precisions. */
    if (amp_test_count_lines_with(run.err, "of GEMM and convolution work "
                                           "in 33 calls, 90.3 % FP32 within "
                                           "the shim's reach (converted 85.8 "
                                           "%, kept FP32 4.4 %), 9.7 % in "
                                           "other precisions") != 1) {
        amp_test_run_dump(what, &run);
        fail_msg("%s: not the coverage line of the 33 plans", what);
    }
    expect_no_tc_engine_reason(&run, what);
    amp_test_run_free(&run);
}

/* Plans built from engines the program makes by global index (and
 * configurations of them, destroyed before the plans are finalized), as
 * cuDNN 9 gives a graph's operations back to no one: the shim knows each
 * plan's convolution from what the program set, and converts the same
 * plans as from the heuristics' configurations. */
static void
test_engine_by_index(void **state)
{
    const char *what = "fp16, --engine-by-index";
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary sum;

    (void)state;
    run_conv_graph_args("fp16", 1, NULL, "--engine-by-index", NULL, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_cases_pass(&run, &plain, what, &check);
    expect_summary(&run, 1, 0, what, &sum);
    expect_no_tc_engine_reason(&run, what);
    amp_test_run_free(&run);
}

/* A graph destroyed after the heuristics gave its configurations, and
 * another made at its address (the same tensors' convolution in another
 * direction) before the plans are finalized: each plan computes the first
 * graph's convolution, which the shim cannot read back from cuDNN 9.
 * Telling the two graphs apart by their generation, the shim runs those
 * plans as built (passed through), never as the newer graph's
 * convolution: every result within its bound. */
static void
test_graph_replaced(void **state)
{
    const char *what = "fp16, --graph-replaced";
    const char *line;
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;
    int at = -1, of = -1;
    const char *asan = getenv("ASAN_OPTIONS");
    char options[512];
    /* AddressSanitizer holds freed blocks back from reuse (its global and
     * per-thread quarantines): not in this run, so that a sanitized build
     * makes graphs at freed addresses as the C library does. */
    struct setting quarantine[] = { { "ASAN_OPTIONS", options },
                                    { NULL, NULL } };

    (void)state;
    snprintf(options, sizeof(options),
             "%s%squarantine_size_mb=0:thread_local_quarantine_size_kb=0",
             asan ? asan : "", asan && *asan ? ":" : "");
    run_conv_graph_args("fp16", 1, quarantine, "--graph-replaced", NULL,
                        &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_cases_pass(&run, &plain, what, &check);
    line = strstr(run.out, "graphs replaced at their address: ");
    if (!line || sscanf(line, "graphs replaced at their address: %d of %d",
                        &at, &of) != 2 || of != expected.calls) {
        amp_test_run_dump(what, &run);
        fail_msg("%s: no count of the graphs replaced at their address",
                 what);
    }
    if (at < 1) {
        amp_test_run_dump(what, &run);
        fail_msg("%s: no graph was made at a replaced graph's address "
                 "(0 of %d): the case was not produced", what, of);
    }
    amp_test_parse_summary(run.err, &sum);
    l = amp_test_summary_find(&sum, API);
    if (!l || l->calls != expected.calls || l->fallback != 0 ||
        l->passthrough < at || l->converted > expected.calls - at) {
        amp_test_run_dump(what, &run);
        fail_msg("%s: %d plans of replaced graphs, summary calls=%ld "
                 "converted=%ld fallback=%ld passthrough=%ld", what, at,
                 l ? l->calls : -1, l ? l->converted : -1,
                 l ? l->fallback : -1, l ? l->passthrough : -1);
    }
    print_message("%s: %d of %d graphs replaced at their address, %ld plans "
                  "passed through\n", what, at, of, l->passthrough);
    amp_test_run_free(&run);
}

/* tf32x3 holds plans to FP32's own bound (conv_graph --tol fp32) on the
 * modelled H100, where FP32 graphs compute in TF32 and the plain run
 * fails it: every convolution of one group passes under tf32x3; a
 * grouped one stays FP32, the plain run's bytes. */
static void
test_tf32x3_fp32_accuracy(void **state)
{
    static const struct setting mode[] = { { "AMPSHIM_MODE", "tf32x3" },
                                           { NULL, NULL } };
    struct amp_test_run run, plain32;
    int converted, plain_failed;

    (void)state;
    run_conv_graph("fp32", 0, NULL, &plain32);
    run_conv_graph("fp32", 1, mode, &run);
    converted = amp_test_expect_tf32x3_accuracy(&run, &plain, &plain32,
                                                &plain_failed);
    print_message("tf32x3: %d plans within FP32's bound, %d of them outside "
                  "it in the plain run (TF32)\n", converted, plain_failed);
    assert_true(converted >= 15 && plain_failed >= 3);
    amp_test_run_free(&run);
    amp_test_run_free(&plain32);
}

/* ---- repeat: each plan executed twice ------------------------------------ */

/* conv_graph --repeat 2: each plan executed twice in a row on the same
 * inputs (the output's old contents restored), so that every converted
 * plan's second execution takes what the first left (the plan's analysis,
 * the twin plan) and no baseline run. Both executions pass within the
 * mode's bound with the plain run's status, and every FP32 plan converts
 * both times. */
static void
test_repeated(void **state)
{
    const struct mode_case *m = *state;
    const struct setting mode[] = { { "AMPSHIM_MODE", m->mode },
                                    { NULL, NULL } };
    const struct amp_test_summary_line *l;
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary sum;
    char what[64];

    snprintf(what, sizeof(what), "AMPSHIM_MODE=%s, conv_graph --repeat 2",
             m->mode);
    run_conv_graph_args(m->tol, 1, mode, "--repeat", "2", &run);
    amp_test_expect_exit(&run, 0, what);
    if (amp_test_parse_check(run.out, &check) != 0 || !check.have_result ||
        check.count != 2 * plain.count) {
        amp_test_run_dump(what, &run);
        fail_msg("%s: %d cases parsed, want twice the plain run's %d", what,
                 check.count, plain.count);
    }
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];
        const struct amp_test_case *p = &plain.cases[i / 2];

        if (strcmp(c->name, p->name) == 0 && c->status == p->status && c->ok)
            continue;
        amp_test_run_dump(what, &run);
        fail_msg("%s: case %s, execution %d: status %d (plain %d), %s", what,
                 c->name, i % 2 + 1, c->status, p->status,
                 c->ok ? "ok" : "outside its bound");
    }
    amp_test_parse_summary(run.err, &sum);
    l = amp_test_summary_find(&sum, API);
    if (!l || l->calls != 2 * expected.calls ||
        l->converted != 2 * expected.conv || l->fallback != 0) {
        amp_test_run_dump(what, &run);
        fail_msg("%s: want the summary's %s calls=%ld converted=%ld "
                 "fallback=0", what, API, 2 * expected.calls,
                 2 * expected.conv);
    }
    amp_test_run_free(&run);
}

/* bf16 results are measurably coarser than the FP16 bound allows, every
 * call still successful (exit status 1: cases failed). */
static void
test_bf16_exceeds_fp16_bound(void **state)
{
    static const struct setting mode[] = { { "AMPSHIM_MODE", "bf16" },
                                           { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    int failing = 0;

    (void)state;
    run_conv_graph("fp16", 1, mode, &run);
    amp_test_expect_exit(&run, 1, "bf16 checked with the FP16 bound");
    assert_int_equal(amp_test_parse_check(run.out, &check), 0);
    assert_int_equal(check.count, plain.count);
    for (int i = 0; i < check.count; i++) {
        assert_int_equal(check.cases[i].status, plain.cases[i].status);
        failing += !check.cases[i].ok;
    }
    assert_true(failing >= 1);
    amp_test_run_free(&run);
}

/* Runs conv_graph under a policy file holding `text` (no AMPSHIM_MODE). */
static void
run_with_policy(const char *text, const char *tol, struct amp_test_run *run)
{
    char path[] = "/tmp/ampshim-graph-policy-XXXXXX";
    const struct setting policy[] = { { "AMPSHIM_POLICY", path },
                                      { NULL, NULL } };
    FILE *f;
    int fd;

    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    run_conv_graph(tol, 1, policy, run);
    unlink(path);
}

/* Policies name the graph API by its symbol: one keeps its convolutions
 * FP32 (the plain run's bytes), one converts them to bf16. */
static void
test_policy_symbol(void **state)
{
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary sum;
    const char *what = "policy: fp32 when symbol cudnnBackendExecute";

    (void)state;
    run_with_policy("rule fp32 when symbol cudnnBackendExecute\n"
                    "default fp16\n", "tf32", &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_plain_stdout(&run, &plain_run, what);
    expect_summary(&run, 0, 0, what, &sum);
    amp_test_run_free(&run);
    what = "policy: bf16 when conv and symbol cudnnBackend*";
    run_with_policy("rule bf16 when conv and symbol \"cudnnBackend*\"\n"
                    "default fp32\n", "bf16", &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_cases_pass(&run, &plain, what, &check);
    expect_summary(&run, 1, 0, what, &sum);
    amp_test_run_free(&run);
}

/* Eight threads build, execute and destroy their plans at once, each on
 * its own handle (descriptor addresses freed by one thread are reused by
 * another): every case passes within the FP16 bound and every FP32 graph
 * of every thread is converted. */
static void
test_threads(void **state)
{
    char *argv[] = { (char *)conv_graph_path, (char *)"--tol",
                     (char *)"fp16", (char *)"--threads", (char *)"8", NULL };
    const char *what = "fp16, 8 threads";
    const struct amp_test_summary_line *l;
    struct amp_test_summary sum;
    struct amp_test_run run;
    struct amp_test_env env;
    char result[64];

    (void)state;
    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
    amp_test_env_set(&env, "AMPSHIM_MODE", "fp16");
    amp_test_env_set(&env, "AMPSHIM_REPORT", "off");
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, &run) != 0)
        fail_msg("cannot start %s: %s", conv_graph_path, strerror(errno));
    amp_test_env_free(&env);
    amp_test_expect_exit(&run, 0, what);
    snprintf(result, sizeof(result), "result: %ld of %ld cases passed\n",
             8 * expected.calls, 8 * expected.calls);
    amp_test_parse_summary(run.err, &sum);
    l = amp_test_summary_find(&sum, API);
    if (strstr(run.out, result) && l && l->seen == 1 &&
        l->calls == 8 * expected.calls && l->converted == 8 * expected.conv &&
        l->passthrough == 8 * expected.typed && l->fallback == 0 &&
        l->fp32 == 8 * (expected.strict + expected.invalid)) {
        amp_test_run_free(&run);
        return;
    }
    amp_test_run_dump(what, &run);
    fail_msg("%s: not every case passed, or the counters are not 8 times "
             "the single thread's", what);
}

/* ---- exact: fp32, disabled and shadow are the plain run's bytes ---------- */

static void
test_mode_fp32_is_bit_exact(void **state)
{
    static const struct setting mode[] = { { "AMPSHIM_MODE", "fp32" },
                                           { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_summary sum;

    (void)state;
    run_conv_graph("tf32", 1, mode, &run);
    amp_test_expect_exit(&run, 0, "AMPSHIM_MODE=fp32");
    amp_test_expect_plain_stdout(&run, &plain_run, "AMPSHIM_MODE=fp32");
    expect_summary(&run, 0, 0, "AMPSHIM_MODE=fp32", &sum);
    amp_test_run_free(&run);
}

static void
test_disable_is_bit_exact_and_silent(void **state)
{
    static const struct setting disable[] = { { "AMPSHIM_DISABLE", "1" },
                                              { NULL, NULL } };
    struct amp_test_run run;

    (void)state;
    run_conv_graph("tf32", 1, disable, &run);
    amp_test_expect_exit(&run, 0, "AMPSHIM_DISABLE=1");
    amp_test_expect_plain_stdout(&run, &plain_run, "AMPSHIM_DISABLE=1");
    if (run.err_len != 0) {
        amp_test_run_dump("AMPSHIM_DISABLE=1", &run);
        fail_msg("AMPSHIM_DISABLE=1 printed on stderr");
    }
    amp_test_run_free(&run);
}

struct shadow_case {
    const char *mode;
    double max_rel;   /* largest max-norm relative error allowed */
    int exact;        /* the candidate is the FP32 plan's own math */
};

/* fp16 (and allow-conversion, run as fp16) rounds inputs and output to
 * 11 bits, bf16 to 8; tf32's twin runs the program's own TF32
 * arithmetic, so its error is exactly 0. */
static const struct shadow_case shadow_cases[] = {
    { "shadow", 0x1p-8, 0 }, { "shadow:bf16", 0x1p-5, 0 },
    { "shadow:tf32", 0.0, 1 }, { "shadow:allow-conversion", 0x1p-8, 0 },
};

static void
test_shadow(void **state)
{
    const struct shadow_case *s = *state;
    const struct setting mode[] = { { "AMPSHIM_MODE", s->mode },
                                    { NULL, NULL } };
    const struct amp_test_summary_line *l;
    struct amp_test_run run;
    struct amp_test_summary sum;
    char what[64];

    snprintf(what, sizeof(what), "AMPSHIM_MODE=%s", s->mode);
    run_conv_graph("tf32", 1, mode, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_plain_stdout(&run, &plain_run, what);
    expect_summary(&run, 1, 0, what, &sum);
    l = amp_test_summary_find(&sum, API);
    if (!(l->has_shadow && l->shadow == expected.conv && l->nonfinite == 0 &&
          l->max_rel_err <= s->max_rel &&
          (s->exact ? l->max_abs_err == 0.0
                    : l->max_abs_err > 0.0 && l->max_rel_err > 0.0))) {
        amp_test_run_dump(what, &run);
        fail_msg("%s: shadow=%ld nonfinite=%ld max_abs_err=%g "
                 "max_rel_err=%g, expected %ld measured, none non-finite, "
                 "relative error %s %g", what, l->shadow, l->nonfinite,
                 l->max_abs_err, l->max_rel_err, expected.conv,
                 s->exact ? "exactly" : "in (0,", s->max_rel);
    }
    amp_test_run_free(&run);
}

/* ---- faults: every failure gives the FP32 plan's bytes and status -------- */

struct fault_case {
    const char *spec;   /* AMPSHIM_EMU_FAIL; NULL: the shim's executions */
    const char *mode;
    const char *suffix; /* after each occurrence: ":3000", ":partial" */
};

/* Device faults: no conversion can start. The shim's twin execution
 * fails: under the shim a converted call is one twin execution, and a
 * failed one is followed by the program's own plan, so the shim's
 * executions are the odd occurrences 1, 3, ..., 2n - 1 (the converted
 * calls come first). A partial failure writes part of the twin's output
 * (tf32 with beta 0: the caller's own) before the program's plan runs. */
static const struct fault_case faults[] = {
    { "alloc-async:1+", "fp16", NULL }, { "launch:1+", "fp16", NULL },
    { "module:1+", "fp16", NULL },      { NULL, "fp16", "" },
    { NULL, "fp16", ":3000" },          { NULL, "fp16", ":partial" },
    { NULL, "tf32", ":partial" },
};

static void
odd_occurrences(const char *suffix, char *spec, size_t size)
{
    size_t len = 0;

    spec[0] = '\0';
    for (long i = 0; i < expected.conv; i++) {
        int w = snprintf(spec + len, size - len, "%s" API ":%ld%s",
                         i ? "," : "", 2 * i + 1, suffix);

        assert_true(w > 0 && (size_t)w < size - len);
        len += (size_t)w;
    }
}

static void
test_fault_bit_exact(void **state)
{
    const struct fault_case *f = *state;
    char spec[2048], what[96];
    const struct setting fault[] = { { "AMPSHIM_EMU_FAIL", spec },
                                     { "AMPSHIM_MODE", f->mode },
                                     { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary sum;

    if (f->spec)
        snprintf(spec, sizeof(spec), "%s", f->spec);
    else
        odd_occurrences(f->suffix, spec, sizeof(spec));
    snprintf(what, sizeof(what), "%s AMPSHIM_EMU_FAIL=%s", f->mode,
             f->spec ? f->spec : "the shim's executions");
    run_conv_graph("fp16", 1, fault, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_cases_pass(&run, &plain, what, &check);
    for (int i = 0; i < check.count; i++) {
        if (strcmp(check.cases[i].hash, plain.cases[i].hash) == 0)
            continue;
        amp_test_run_dump(what, &run);
        fail_msg("%s: case %s is not bit-identical to the run without the "
                 "shim", what, check.cases[i].name);
    }
    expect_summary(&run, 1, 1, what, &sum);
    amp_test_run_free(&run);
}

/* Every execution fails: the program's own plans fail as without the
 * shim, with the same statuses and bytes. */
static void
test_fault_every_execution(void **state)
{
    static const struct setting fault[] = {
        { "AMPSHIM_EMU_FAIL", API ":1+" }, { NULL, NULL } };
    struct amp_test_run run, base;
    struct amp_test_check check, base_check;
    struct amp_test_summary sum;
    const char *what = "AMPSHIM_EMU_FAIL=" API ":1+";

    (void)state;
    run_conv_graph("fp16", 0, fault, &base);
    run_conv_graph("fp16", 1, fault, &run);
    if (!run.exited || !base.exited || run.code != base.code ||
        amp_test_parse_check(run.out, &check) != 0 ||
        amp_test_parse_check(base.out, &base_check) != 0 ||
        check.count != plain.count || base_check.count != plain.count) {
        amp_test_run_dump("the fault without the shim", &base);
        amp_test_run_dump(what, &run);
        fail_msg("%s: exit status or cases differ from the run without "
                 "the shim", what);
    }
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];
        const struct amp_test_case *b = &base_check.cases[i];
        int want = strcmp(c->cls, "invalid") == 0 ? DNN_BAD_PARAM
                                                  : DNN_EXECUTION_FAILED;

        if (c->status == want && b->status == want &&
            strcmp(c->hash, b->hash) == 0)
            continue;
        amp_test_run_dump("the fault without the shim", &base);
        amp_test_run_dump(what, &run);
        fail_msg("%s: case %s: status %d (without the shim %d)", what,
                 c->name, c->status, b->status);
    }
    expect_summary(&run, 1, 1, what, &sum);
    amp_test_run_free(&base);
    amp_test_run_free(&run);
}

/* ---- main ------------------------------------------------------------------ */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *
mode_label(const void *p)
{
    return ((const struct mode_case *)p)->mode;
}

static const char *
shadow_label(const void *p)
{
    return ((const struct shadow_case *)p)->mode;
}

static const char *
fault_label(const void *p)
{
    const struct fault_case *f = p;
    static char label[96];

    snprintf(label, sizeof(label), "%s %s", f->mode,
             f->spec ? f->spec : *f->suffix ? f->suffix + 1 : "vendor");
    return label;
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest plain_tests[] = {
        cmocka_unit_test(test_plain_case_list),
        cmocka_unit_test(test_bf16_exceeds_fp16_bound),
        cmocka_unit_test(test_tf32x3_fp32_accuracy),
        cmocka_unit_test(test_policy_symbol),
        cmocka_unit_test(test_engine_by_index),
        cmocka_unit_test(test_graph_replaced),
    };
    const struct CMUnitTest threads[] = {
        cmocka_unit_test(test_threads),
    };
    const struct CMUnitTest exact[] = {
        cmocka_unit_test(test_mode_fp32_is_bit_exact),
        cmocka_unit_test(test_disable_is_bit_exact_and_silent),
    };
    const struct CMUnitTest every[] = {
        cmocka_unit_test(test_fault_every_execution),
    };
    const char *group;
    int failed = 0;

    if (argc != 5) {
        fprintf(stderr, "usage: %s modes|exact|faults|threads|repeat "
                "CONV_GRAPH LIBAMPSHIM EMU_DIR\n", argv[0]);
        return 2;
    }
    group = argv[1];
    conv_graph_path = argv[2];
    libampshim_path = argv[3];
    emu_dir = argv[4];
    if (access(conv_graph_path, X_OK) != 0 ||
        access(libampshim_path, R_OK) != 0) {
        fprintf(stderr, "%s: missing %s or %s\n", argv[0], conv_graph_path,
                libampshim_path);
        return 1;
    }
    if (strcmp(group, "modes") == 0) {
        failed += _cmocka_run_group_tests("plain", plain_tests,
                                          COUNT(plain_tests), plain_setup,
                                          plain_teardown);
        failed += amp_test_run_parametrized(
            "modes", test_mode, mode_cases, sizeof(mode_cases[0]),
            COUNT(mode_cases), "mode", mode_label, plain_setup,
            plain_teardown);
        return failed;
    }
    if (strcmp(group, "repeat") == 0)
        return amp_test_run_parametrized(
            "repeat", test_repeated, mode_cases, sizeof(mode_cases[0]),
            COUNT(mode_cases), "mode", mode_label, plain_setup,
            plain_teardown);
    if (strcmp(group, "exact") == 0) {
        failed += _cmocka_run_group_tests("exact", exact, COUNT(exact),
                                          plain_setup, plain_teardown);
        failed += amp_test_run_parametrized(
            "shadow", test_shadow, shadow_cases, sizeof(shadow_cases[0]),
            COUNT(shadow_cases), "mode", shadow_label, plain_setup,
            plain_teardown);
        return failed;
    }
    if (strcmp(group, "faults") == 0) {
        failed += amp_test_run_parametrized(
            "faults", test_fault_bit_exact, faults, sizeof(faults[0]),
            COUNT(faults), "fault", fault_label, plain_setup, plain_teardown);
        failed += _cmocka_run_group_tests("every execution", every,
                                          COUNT(every), plain_setup,
                                          plain_teardown);
        return failed;
    }
    if (strcmp(group, "threads") == 0)
        return _cmocka_run_group_tests("threads", threads, COUNT(threads),
                                       plain_setup, plain_teardown);
    fprintf(stderr, "%s: unknown group '%s'\n", argv[0], group);
    return 2;
}
