/* Preload tests of the cuDNN convolution hooks: the unmodified FP32
 * program conv_check (37 convolutions forward, backward data and backward
 * filter, each against a double-precision reference) under
 * LD_PRELOAD=libampshim.so on the CPU device emulator, in every mode, with
 * every injected fault, judged by its results, statuses, hashes and the
 * shim's exit summary per API.
 *
 * usage: test_conv GROUP CONV_CHECK LIBAMPSHIM EMU_DIR
 * GROUP: modes | exact | faults | repeat */
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

#define AMP_SYMBOL_NAMES_ONLY
#include "cudnn_symbols.h"
#include "harness.h"
#include "expect.h"

#define RUN_TIMEOUT_S 240

/* cudnn_graph.h of cuDNN 9: CUDNN_STATUS_BAD_PARAM and
 * CUDNN_STATUS_NOT_SUPPORTED (9 was cuDNN 8's number). */
#define DNN_BAD_PARAM 2000
#define DNN_NOT_SUPPORTED 3000
#define DNN_EXECUTION_FAILED 5000   /* the emulator's injected default */

static const char *conv_check_path;
static const char *libampshim_path;
static const char *emu_dir;

#define HOOKED_NAME(ret, name, params) #name,
static const char *const apis[] = { AMP_CUDNN_HOOKED(HOOKED_NAME) };
/* conv_check calls the three directions, listed first; the fused forward
 * has its own program (conv_fused). */
#define N_APIS 3

/* conv_check without the shim, on the emulator's modelled H100: cuDNN's
 * FP32 default math is TF32 there, as on any Ampere or later GPU, so the
 * truth every run is compared with passes --tol tf32, not fp32. */
static struct amp_test_run plain_run;
static struct amp_test_check plain;

/* What the case list implies, per API (index into apis): cases by class. */
struct api_cases {
    long calls, conv, typed, strict, invalid;
};
static struct api_cases expected[N_APIS];

struct setting {
    const char *name, *value;
};

/* Runs conv_check --tol tol on the emulator, with the shim preloaded if
 * preload, plus the settings (NULL-name terminated; AMPSHIM_MODE there
 * replaces the fp16 default of these tests). */
static void
run_conv_check_args(const char *tol, int preload, const struct setting *extra,
                    const char *more, const char *more_value,
                    struct amp_test_run *run)
{
    char *argv[] = { (char *)conv_check_path, (char *)"--tol", (char *)tol,
                     (char *)more, (char *)more_value, NULL };
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (preload) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        amp_test_env_set(&env, "AMPSHIM_MODE", "fp16");
    }
    for (; extra && extra->name; extra++)
        amp_test_env_set(&env, extra->name, extra->value);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", conv_check_path, strerror(errno));
    amp_test_env_free(&env);
}

static void
run_conv_check(const char *tol, int preload, const struct setting *extra,
               struct amp_test_run *run)
{
    run_conv_check_args(tol, preload, extra, NULL, NULL, run);
}

static int
api_index(const char *api)
{
    for (int i = 0; i < N_APIS; i++)
        if (strcmp(apis[i], api) == 0)
            return i;
    return -1;
}

/* ---- Assertions ------------------------------------------------------------ */

/* The summary lines of run: one per API, the run's pid, with the counters
 * the case list implies. converting: the mode converts; failing: the API
 * whose conversions all fall back ("*": every API, NULL: none). */
static void
expect_summary(const struct amp_test_run *run, int converting,
               const char *failing, const char *what,
               struct amp_test_summary *sum)
{
    amp_test_parse_summary(run->err, sum);
    if (sum->malformed != 0 || sum->count != N_APIS) {
        amp_test_run_dump(what, run);
        fail_msg("%s: %d malformed summary lines, %d APIs summarised, "
                 "expected %d", what, sum->malformed, sum->count, N_APIS);
    }
    for (int i = 0; i < N_APIS; i++) {
        const struct amp_test_summary_line *l =
            amp_test_summary_find(sum, apis[i]);
        const struct api_cases *e = &expected[i];
        int fails = failing && (strcmp(failing, "*") == 0 ||
                                strcmp(failing, apis[i]) == 0);
        long converted = converting && !fails ? e->conv : 0;
        long fallback = converting && fails ? e->conv : 0;
        long fp32 = e->calls - e->typed - converted - fallback;

        if (!l || l->seen != 1 || l->pid != (int)run->pid) {
            amp_test_run_dump(what, run);
            fail_msg("%s: no single summary line of pid %d for %s", what,
                     (int)run->pid, apis[i]);
        }
        if (l->calls == e->calls && l->converted == converted &&
            l->fp32 == fp32 && l->fallback == fallback &&
            l->passthrough == e->typed)
            continue;
        amp_test_run_dump(what, run);
        fail_msg("%s: %s calls=%ld converted=%ld fp32=%ld fallback=%ld "
                 "passthrough=%ld, expected %ld %ld %ld %ld %ld", what,
                 apis[i], l->calls, l->converted, l->fp32, l->fallback,
                 l->passthrough, e->calls, converted, fp32, fallback,
                 e->typed);
    }
}

/* ---- Set-up: the plain run and what its case list implies ---------------- */

static int
plain_setup(void **state)
{
    (void)state;
    run_conv_check("tf32", 0, NULL, &plain_run);
    if (!plain_run.exited || plain_run.code != 0 ||
        amp_test_parse_check(plain_run.out, &plain) != 0 ||
        !plain.have_result) {
        amp_test_run_dump("conv_check on the emulator, no shim", &plain_run);
        fprintf(stderr, "conv_check does not pass without the shim: "
                "nothing to compare with\n");
        return -1;
    }
    memset(expected, 0, sizeof(expected));
    for (int i = 0; i < plain.count; i++) {
        const struct amp_test_case *c = &plain.cases[i];
        int a = api_index(c->api);

        if (a < 0) {
            fprintf(stderr, "case %s: unknown api %s\n", c->name, c->api);
            return -1;
        }
        expected[a].calls++;
        if (strcmp(c->cls, "conv") == 0)
            expected[a].conv++;
        else if (strcmp(c->cls, "typed") == 0)
            expected[a].typed++;
        else if (strcmp(c->cls, "strict") == 0)
            expected[a].strict++;
        else if (strcmp(c->cls, "invalid") == 0)
            expected[a].invalid++;
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

/* The case list: 11 convolutions in each direction, and forward only a
 * half-data and a TENSOR_OP_MATH call (passthrough), an FMA_MATH call and
 * an invalid workspace (both FP32, the latter cuDNN's BAD_PARAM). */
static void
test_plain_case_list(void **state)
{
    (void)state;
    assert_int_equal(plain.count, 37);
    for (int i = 0; i < N_APIS; i++) {
        assert_int_equal(expected[i].conv, 11);
        assert_int_equal(expected[i].calls, i == 0 ? 15 : 11);
    }
    assert_int_equal(expected[0].typed, 2);
    assert_int_equal(expected[0].strict, 1);
    assert_int_equal(expected[0].invalid, 1);
    for (int i = 0; i < plain.count; i++)
        assert_int_equal(plain.cases[i].status,
                         strcmp(plain.cases[i].cls, "invalid") == 0
                             ? DNN_BAD_PARAM : 0);
}

/* ---- modes: converted within each mode's bound ---------------------------- */

struct mode_case {
    const char *mode, *tol;
    int differs;      /* converted results differ from the plain run's */
};

/* fp16 and bf16 round the output to half: every converted result differs
 * from TF32. tf32 is cuDNN's own default on the modelled H100, and
 * allow-conversion rounds inputs in [-1, 1] to FP16, which is TF32's
 * rounding for them: both are bit-identical to the plain run, and only
 * the counters tell them apart from it. */
static const struct mode_case mode_cases[] = {
    { "fp16", "fp16", 1 }, { "bf16", "bf16", 1 },
    { "tf32", "tf32", 0 }, { "allow-conversion", "fp16", 0 },
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
    run_conv_check(m->tol, 1, mode, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_cases_pass(&run, &plain, what, &check);
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];
        int conv = strcmp(c->cls, "conv") == 0;
        int same = strcmp(c->hash, plain.cases[i].hash) == 0;

        /* Not converted: bit-exact. Converted in fp16 and bf16: not, and
         * the case that hands the exact FP32 workspace of a precomputed-
         * index algorithm (too small for the padded FP16 one) is among
         * them. */
        if (conv ? same == !m->differs : same)
            continue;
        amp_test_run_dump(what, &run);
        fail_msg("%s: case %s (%s) is%s bit-identical to the plain run",
                 what, c->name, c->cls, same ? "" : " not");
    }
    expect_summary(&run, 1, NULL, what, &sum);
    amp_test_run_free(&run);
}

/* ---- repeat: each case twice in a row ------------------------------------- */

/* conv_check --repeat 2: each case run twice in a row at its site on the
 * same inputs, so that every converted case's second call takes the
 * path of a shape already seen (no baseline run). Both calls pass within
 * the mode's bound with the plain run's status, and every FP32
 * convolution converts both times. */
static void
test_repeated(void **state)
{
    const struct mode_case *m = *state;
    const struct setting mode[] = { { "AMPSHIM_MODE", m->mode },
                                    { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary sum;
    char what[64];

    snprintf(what, sizeof(what), "AMPSHIM_MODE=%s, conv_check --repeat 2",
             m->mode);
    run_conv_check_args(m->tol, 1, mode, "--repeat", "2", &run);
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
        fail_msg("%s: case %s, call %d: status %d (plain %d), %s", what,
                 c->name, i % 2 + 1, c->status, p->status,
                 c->ok ? "ok" : "outside its bound");
    }
    amp_test_parse_summary(run.err, &sum);
    for (int i = 0; i < N_APIS; i++) {
        const struct amp_test_summary_line *l =
            amp_test_summary_find(&sum, apis[i]);

        if (l && l->calls == 2 * expected[i].calls &&
            l->converted == 2 * expected[i].conv && l->fallback == 0)
            continue;
        amp_test_run_dump(what, &run);
        fail_msg("%s: want the summary's %s calls=%ld converted=%ld "
                 "fallback=0", what, apis[i], 2 * expected[i].calls,
                 2 * expected[i].conv);
    }
    amp_test_run_free(&run);
}

/* fp16x3 has no convolution candidate: FP32, bit-exact, counted fp32. */
static void
test_fp16x3_is_fp32(void **state)
{
    static const struct setting mode[] = { { "AMPSHIM_MODE", "fp16x3" },
                                           { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_summary sum;

    (void)state;
    run_conv_check("tf32", 1, mode, &run);
    amp_test_expect_exit(&run, 0, "fp16x3");
    amp_test_expect_plain_stdout(&run, &plain_run, "fp16x3");
    expect_summary(&run, 0, NULL, "fp16x3", &sum);
    amp_test_run_free(&run);
}

/* tf32x3 holds convolutions to FP32's own bound (conv_check --tol fp32:
 * the accumulation's alone) on the modelled H100, where cuDNN's FP32
 * default is TF32 and the plain run fails it: every convolution of one
 * group passes there under tf32x3, in every direction and layout; a
 * grouped one (its parts would lie across groups) stays FP32, the plain
 * run's bytes. */
static void
test_tf32x3_fp32_accuracy(void **state)
{
    static const struct setting mode[] = { { "AMPSHIM_MODE", "tf32x3" },
                                           { NULL, NULL } };
    struct amp_test_run run, plain32;
    struct amp_test_summary sum;
    int converted, plain_failed;

    (void)state;
    run_conv_check("fp32", 0, NULL, &plain32);
    run_conv_check("fp32", 1, mode, &run);
    converted = amp_test_expect_tf32x3_accuracy(&run, &plain, &plain32,
                                                &plain_failed);
    amp_test_parse_summary(run.err, &sum);
    for (int i = 0; i < N_APIS; i++) {
        const struct amp_test_summary_line *l =
            amp_test_summary_find(&sum, apis[i]);

        assert_non_null(l);
        assert_true(l->converted >= 1 && l->fallback == 0);
    }
    print_message("tf32x3: %d convolutions within FP32's bound, %d of "
                  "them outside it in the plain run (TF32)\n", converted,
                  plain_failed);
    /* 11 convolutions per direction, 2 of them grouped. */
    assert_int_equal(converted, 9 * N_APIS);
    assert_true(plain_failed >= 3);
    amp_test_run_free(&run);
    amp_test_run_free(&plain32);
}

/* An FMA_MATH convolution converts only where a rule names `math`: under
 * `rule fp16 when math == pedantic` and an fp32 default, the strict case
 * converts (within the FP16 bound, its result not the plain run's) and
 * every other case stays FP32, bit for bit; under `default fp16` alone
 * the strict case stays FP32 (AMPSHIM_MODE neither: test_mode). */
static void
test_fma_math_rule(void **state)
{
    static const char *const policies[] = {
        "set min-size 0\nrule fp16 when math == pedantic\ndefault fp32\n",
        "set min-size 0\ndefault fp16\n",
    };
    char dir[] = "/tmp/ampshim-conv-policy-XXXXXX", path[64];

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fma.policy", dir);
    for (int explicit = 1; explicit >= 0; explicit--) {
        const struct setting settings[] = {
            { "AMPSHIM_MODE", "" }, { "AMPSHIM_POLICY", path },
            { "AMPSHIM_BASELINE", "off" }, { NULL, NULL } };
        const char *what = explicit ? "rule fp16 when math == pedantic"
                                    : "default fp16";
        struct amp_test_run run;
        struct amp_test_check check;
        FILE *f = fopen(path, "w");

        assert_non_null(f);
        fputs(policies[!explicit], f);
        assert_int_equal(fclose(f), 0);
        run_conv_check("fp16", 1, settings, &run);
        amp_test_expect_exit(&run, 0, what);
        amp_test_expect_cases_pass(&run, &plain, what, &check);
        for (int i = 0; i < check.count; i++) {
            const struct amp_test_case *c = &check.cases[i];
            int strict = strcmp(c->cls, "strict") == 0;
            int conv = strcmp(c->cls, "conv") == 0;
            int same = strcmp(c->hash, plain.cases[i].hash) == 0;
            int converts = explicit ? strict : conv;

            if (same == !converts)
                continue;
            amp_test_run_dump(what, &run);
            fail_msg("%s: case %s (%s) is%s bit-identical to the plain run",
                     what, c->name, c->cls, same ? "" : " not");
        }
        amp_test_run_free(&run);
    }
    unlink(path);
    rmdir(dir);
}

/* The bounds tell the modes apart: bf16 results are measurably coarser
 * than the FP16 bound allows, with every call still successful (exit
 * status 1: cases failed). (fp16 itself passes the TF32 bound: TF32 and
 * FP16 share their 10 stored mantissa bits.) */
static void
test_bf16_exceeds_fp16_bound(void **state)
{
    static const struct setting mode[] = { { "AMPSHIM_MODE", "bf16" },
                                           { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    int failing = 0;

    (void)state;
    run_conv_check("fp16", 1, mode, &run);
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

/* ---- exact: fp32, disabled and shadow are the plain run's bytes ---------- */

static void
test_mode_fp32_is_bit_exact(void **state)
{
    static const struct setting mode[] = { { "AMPSHIM_MODE", "fp32" },
                                           { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_summary sum;

    (void)state;
    run_conv_check("tf32", 1, mode, &run);
    amp_test_expect_exit(&run, 0, "AMPSHIM_MODE=fp32");
    amp_test_expect_plain_stdout(&run, &plain_run, "AMPSHIM_MODE=fp32");
    expect_summary(&run, 0, NULL, "AMPSHIM_MODE=fp32", &sum);
    amp_test_run_free(&run);
}

static void
test_disable_is_bit_exact_and_silent(void **state)
{
    static const struct setting disable[] = { { "AMPSHIM_DISABLE", "1" },
                                              { NULL, NULL } };
    struct amp_test_run run;

    (void)state;
    run_conv_check("tf32", 1, disable, &run);
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
    int exact;        /* the candidate is the FP32 call's own math */
};

/* The candidate's error in the max norm, per call: fp16 rounds inputs and
 * output to 11 bits (u = 2^-11 each, plus accumulation), bf16 to 8; tf32
 * and allow-conversion on inputs in [-1, 1] are the plain call's own
 * arithmetic on the modelled H100, so their error is exactly 0. */
static const struct shadow_case shadow_cases[] = {
    { "shadow", 0x1p-8, 0 }, { "shadow:bf16", 0x1p-5, 0 },
    { "shadow:tf32", 0.0, 1 }, { "shadow:allow-conversion", 0.0, 1 },
};

static void
test_shadow(void **state)
{
    const struct shadow_case *s = *state;
    const struct setting mode[] = { { "AMPSHIM_MODE", s->mode },
                                    { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_summary sum;
    char what[64];

    snprintf(what, sizeof(what), "AMPSHIM_MODE=%s", s->mode);
    run_conv_check("tf32", 1, mode, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_plain_stdout(&run, &plain_run, what);
    expect_summary(&run, 1, NULL, what, &sum);
    for (int i = 0; i < N_APIS; i++) {
        const struct amp_test_summary_line *l =
            amp_test_summary_find(&sum, apis[i]);
        int ok = l->has_shadow && l->shadow == expected[i].conv &&
                 l->nonfinite == 0 && l->max_rel_err <= s->max_rel &&
                 (s->exact ? l->max_abs_err == 0.0
                           : l->max_abs_err > 0.0 && l->max_rel_err > 0.0);

        if (ok)
            continue;
        amp_test_run_dump(what, &run);
        fail_msg("%s: %s shadow=%ld nonfinite=%ld max_abs_err=%g "
                 "max_rel_err=%g, expected %ld measured, none non-finite, "
                 "relative error %s %g", what, apis[i], l->shadow,
                 l->nonfinite, l->max_abs_err, l->max_rel_err,
                 expected[i].conv, s->exact ? "exactly" : "in (0,",
                 s->max_rel);
    }
    amp_test_run_free(&run);
}

/* ---- faults: every failure gives the FP32 call's bytes and status -------- */

struct fault_case {
    const char *spec;   /* AMPSHIM_EMU_FAIL; NULL: built from api */
    const char *api;    /* failing: "*" or one cuDNN function */
    int status;         /* override for the vendor call, or 0 */
};

/* Device faults: no conversion can start; every call has the status and
 * the bytes of the plain run, and every eligible call counts as
 * fallback. */
static const struct fault_case device_faults[] = {
    { "alloc-async:1+", "*", 0 }, { "launch:1+", "*", 0 },
    { "module:1+", "*", 0 },
};

/* The vendor convolution of the shim fails. Under the shim a converted
 * call is one vendor call, and a failed one is followed by the original:
 * the shim's attempts are the odd occurrences 1, 3, ..., 2n - 1 of the
 * function, so failing those alone fails every conversion and no original
 * call. NOT_SUPPORTED is CUDNN_STATUS_NOT_SUPPORTED of cuDNN 9. */
static const struct fault_case vendor_faults[] = {
    { NULL, "cudnnConvolutionForward", 0 },
    { NULL, "cudnnConvolutionBackwardData", 0 },
    { NULL, "cudnnConvolutionBackwardFilter", 0 },
    { NULL, "cudnnConvolutionForward", DNN_NOT_SUPPORTED },
    { NULL, "cudnnConvolutionBackwardData", DNN_NOT_SUPPORTED },
    { NULL, "cudnnConvolutionBackwardFilter", DNN_NOT_SUPPORTED },
};

static const char *fault_label(const void *p);

/* "api:1,api:3,...,api:2n-1" (with ":status"), n the API's conversions. */
static void
odd_occurrences(const struct fault_case *f, char *spec, size_t size)
{
    long n = expected[api_index(f->api)].conv;
    size_t len = 0;

    spec[0] = '\0';
    for (long i = 0; i < n; i++) {
        int w = f->status
                    ? snprintf(spec + len, size - len, "%s%s:%ld:%d",
                               i ? "," : "", f->api, 2 * i + 1, f->status)
                    : snprintf(spec + len, size - len, "%s%s:%ld",
                               i ? "," : "", f->api, 2 * i + 1);

        assert_true(w > 0 && (size_t)w < size - len);
        len += (size_t)w;
    }
}

static void
test_fault_bit_exact(void **state)
{
    const struct fault_case *f = *state;
    char spec[1024], what[128];
    struct setting fault[] = { { "AMPSHIM_EMU_FAIL", spec }, { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary sum;

    if (f->spec)
        snprintf(spec, sizeof(spec), "%s", f->spec);
    else
        odd_occurrences(f, spec, sizeof(spec));
    snprintf(what, sizeof(what), "AMPSHIM_EMU_FAIL=%s", fault_label(f));
    run_conv_check("fp16", 1, fault, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_cases_pass(&run, &plain, what, &check);
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];

        /* The failing API's calls: the FP32 call's bytes; the others
         * stay converted within the FP16 bound. */
        if ((strcmp(f->api, "*") != 0 && strcmp(c->api, f->api) != 0) ||
            strcmp(c->hash, plain.cases[i].hash) == 0)
            continue;
        amp_test_run_dump(what, &run);
        fail_msg("%s: case %s is not bit-identical to the run without the "
                 "shim", what, c->name);
    }
    expect_summary(&run, 1, f->api, what, &sum);
    amp_test_run_free(&run);
}

/* Every occurrence fails (N+): the program's own FP32 calls fail as well,
 * exactly as without the shim. Each case has the status it has under the
 * same fault without the shim, the failed ones the same (untouched)
 * bytes, the others stay converted within the FP16 bound, and every
 * conversion of the API counts as fallback. */
static const struct fault_case all_occurrence_faults[] = {
    { "cudnnConvolutionForward:1+", "cudnnConvolutionForward", 0 },
    { "cudnnConvolutionBackwardData:1+", "cudnnConvolutionBackwardData", 0 },
    { "cudnnConvolutionBackwardFilter:1+", "cudnnConvolutionBackwardFilter",
      0 },
    { "cudnnConvolutionForward:1+:3000", "cudnnConvolutionForward",
      DNN_NOT_SUPPORTED },
};

static void
test_fault_same_as_without_shim(void **state)
{
    const struct fault_case *f = *state;
    const struct setting fault[] = { { "AMPSHIM_EMU_FAIL", f->spec },
                                     { NULL, NULL } };
    struct amp_test_run run, base;
    struct amp_test_check check, base_check;
    struct amp_test_summary sum;
    char what[96];
    int failed = 0;

    snprintf(what, sizeof(what), "AMPSHIM_EMU_FAIL=%s", f->spec);
    run_conv_check("fp16", 0, fault, &base);
    run_conv_check("fp16", 1, fault, &run);
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
        /* Every call of the API that cuDNN accepts reaches the fault:
         * converted, strict and passthrough alike. */
        int hit = strcmp(c->api, f->api) == 0 &&
                  strcmp(c->cls, "invalid") != 0;

        if (hit) {
            failed++;
            /* FP32 itself fails here: the injected status, nothing
             * written. */
            if (c->status ==
                    (f->status ? f->status : DNN_EXECUTION_FAILED) &&
                c->status == b->status && strcmp(c->hash, b->hash) == 0)
                continue;
        } else if (c->status == b->status && c->ok) {
            continue;
        }
        amp_test_run_dump("the fault without the shim", &base);
        amp_test_run_dump(what, &run);
        fail_msg("%s: case %s: status %d (without the shim %d)", what,
                 c->name, c->status, b->status);
    }
    assert_int_equal(failed, expected[api_index(f->api)].calls -
                                 expected[api_index(f->api)].invalid);
    expect_summary(&run, 1, f->api, what, &sum);
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

    if (f->spec)
        return f->spec;
    snprintf(label, sizeof(label), "%s:odd%s", f->api,
             f->status ? ":3000" : "");
    return label;
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest plain_tests[] = {
        cmocka_unit_test(test_plain_case_list),
        cmocka_unit_test(test_fp16x3_is_fp32),
        cmocka_unit_test(test_tf32x3_fp32_accuracy),
        cmocka_unit_test(test_fma_math_rule),
        cmocka_unit_test(test_bf16_exceeds_fp16_bound),
    };
    const struct CMUnitTest exact[] = {
        cmocka_unit_test(test_mode_fp32_is_bit_exact),
        cmocka_unit_test(test_disable_is_bit_exact_and_silent),
    };
    const char *group;
    int failed = 0;

    if (argc != 5) {
        fprintf(stderr, "usage: %s modes|exact|faults|repeat CONV_CHECK "
                "LIBAMPSHIM EMU_DIR\n", argv[0]);
        return 2;
    }
    group = argv[1];
    conv_check_path = argv[2];
    libampshim_path = argv[3];
    emu_dir = argv[4];
    if (access(conv_check_path, X_OK) != 0 ||
        access(libampshim_path, R_OK) != 0) {
        fprintf(stderr, "%s: missing %s or %s\n", argv[0], conv_check_path,
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
            "device faults", test_fault_bit_exact, device_faults,
            sizeof(device_faults[0]), COUNT(device_faults), "fault",
            fault_label, plain_setup, plain_teardown);
        failed += amp_test_run_parametrized(
            "vendor faults", test_fault_bit_exact, vendor_faults,
            sizeof(vendor_faults[0]), COUNT(vendor_faults), "fault",
            fault_label, plain_setup, plain_teardown);
        failed += amp_test_run_parametrized(
            "every occurrence", test_fault_same_as_without_shim,
            all_occurrence_faults, sizeof(all_occurrence_faults[0]),
            COUNT(all_occurrence_faults), "fault", fault_label, plain_setup,
            plain_teardown);
        return failed;
    }
    fprintf(stderr, "%s: unknown group '%s'\n", argv[0], group);
    return 2;
}
