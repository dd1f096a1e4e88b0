/* Preload tests of a forced mode on a program that makes each of its
 * products once (once_check: SGEMMs, batched ones on pointer arrays,
 * cuBLASLt products, cuDNN convolutions), with the baseline on as by
 * default (AMPSHIM_BASELINE=first): every call is the first of its shape
 * at its site. AMPSHIM_MODE=fp16, bf16, tf32, fp16x3 and tf32x3 give the
 * program that mode's results on every call (not FP32's bits, within the
 * mode's bound), each call counted converted with its FP32 time measured beside
 * it; AMPSHIM_MODE=shadow gives FP32's bits; a fault on a baseline
 * call's launches (its copy of the candidate included) leaves that call
 * FP32's, counted a fallback.
 *
 * usage: test_once ONCE_CHECK LIBAMPSHIM EMU_DIR */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "harness.h"
#include "expect.h"

#define RUN_TIMEOUT_S 240
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *once_check_path;
static const char *libampshim_path;
static const char *emu_dir;

/* once_check without the shim: FP32's bits (its convolutions TF32's:
 * cuDNN's default math on the modelled GPU, compute capability 9.0). */
static struct amp_test_run plain_run;
static struct amp_test_check plain;

/* The APIs once_check calls and how many calls each. */
static const struct api_calls {
    const char *api;
    int calls;
    int conv;
} apis[] = {
    {"cublasSgemm_v2", 3, 0},
    {"cublasSgemmBatched", 1, 0},
    {"cublasSgemmStridedBatched", 1, 0},
    {"cublasLtMatmul", 4, 0},
    {"cudnnConvolutionForward", 2, 1},
};
#define CALLS 11
/* The cuBLASLt call whose epilogue writes an auxiliary output converts
 * without a baseline: a shadow run gives the program D alone. */
#define AUX_CALLS 1

static void
run_once_failing(const char *tol, const char *mode, const char *report,
                 const char *fail, struct amp_test_run *run)
{
    char *argv[] = { (char *)once_check_path, (char *)tol, NULL };
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (mode) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        amp_test_env_set(&env, "AMPSHIM_MODE", mode);
        /* The shim's default: the first call of each shape at a site is
         * its baseline (the harness turns it off). */
        amp_test_env_set(&env, "AMPSHIM_BASELINE", "first");
    }
    if (report)
        amp_test_env_set(&env, "AMPSHIM_REPORT", report);
    if (fail)
        amp_test_env_set(&env, "AMPSHIM_EMU_FAIL", fail);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", once_check_path, strerror(errno));
    amp_test_env_free(&env);
}

static void
run_once(const char *tol, const char *mode, const char *report,
         struct amp_test_run *run)
{
    run_once_failing(tol, mode, report, NULL, run);
}

static int
plain_setup(void **state)
{
    (void)state;
    run_once("tf32", NULL, NULL, &plain_run);
    if (!plain_run.exited || plain_run.code != 0 ||
        amp_test_parse_check(plain_run.out, &plain) != 0 ||
        !plain.have_result || plain.count != CALLS) {
        amp_test_run_dump("once_check on the emulator, no shim", &plain_run);
        fprintf(stderr, "once_check does not pass without the shim\n");
        return -1;
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

/* ---- shadow: FP32's bits ------------------------------------------------ */

static void
test_shadow_is_fp32(void **state)
{
    struct amp_test_run run;

    (void)state;
    run_once("tf32", "shadow", NULL, &run);
    amp_test_expect_exit(&run, 0, "AMPSHIM_MODE=shadow");
    amp_test_expect_plain_stdout(&run, &plain_run, "AMPSHIM_MODE=shadow");
    amp_test_run_free(&run);
}

/* ---- forced modes: the mode's results, every call ------------------------ */

/* What a mode gives a convolution: its own bits, FP32's (fp16x3 has no
 * convolution: FP32), or either (tf32: an FP32 convolution of cuDNN's
 * default math is TF32 already on the modelled GPU). */
enum conv_bits { CONV_DIFFERS, CONV_SAME, CONV_EITHER };

struct mode_case {
    const char *mode;
    const char *tol;       /* once_check's bound for the mode */
    int converts_conv;
    enum conv_bits conv_bits;
};

static const struct mode_case mode_cases[] = {
    { "fp16", "fp16", 1, CONV_DIFFERS },
    { "bf16", "bf16", 1, CONV_DIFFERS },
    { "tf32", "tf32", 1, CONV_EITHER },
    /* Three FP16 products: FP32's accuracy, not its bits; its
     * convolutions are the plain run's (TF32). */
    { "fp16x3", "tf32", 0, CONV_SAME },
    /* Three TF32 products, for convolutions too: FP32's accuracy, not
     * the plain run's TF32 bits. */
    { "tf32x3", "tf32", 1, CONV_DIFFERS },
};

static const char *
mode_label(const void *p)
{
    return ((const struct mode_case *)p)->mode;
}

static int
is_conv(const struct amp_test_case *c)
{
    return strcmp(c->api, "cudnnConvolutionForward") == 0;
}

/* Every call is within the mode's bound, and its bytes are the mode's:
 * not FP32's (a convolution: as the mode says). */
static void
expect_mode_results(const struct mode_case *mc,
                    const struct amp_test_run *run)
{
    struct amp_test_check check;

    amp_test_expect_cases_pass(run, &plain, mc->mode, &check);
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];
        enum conv_bits want = is_conv(c) ? mc->conv_bits : CONV_DIFFERS;
        int same = strcmp(c->hash, plain.cases[i].hash) == 0;

        if (want == CONV_EITHER || same == (want == CONV_SAME))
            continue;
        amp_test_run_dump(mc->mode, run);
        fail_msg("AMPSHIM_MODE=%s: case %s (%s): %s", mc->mode, c->name,
                 c->api, same ? "the program got FP32's bits, not the "
                                "mode's"
                              : "not FP32's bits");
    }
}

/* Every call counted converted (convolutions under fp16x3: FP32). */
static void
expect_summary(const struct mode_case *mc, const struct amp_test_run *run)
{
    struct amp_test_summary sum;

    amp_test_parse_summary(run->err, &sum);
    for (size_t i = 0; i < COUNT(apis); i++) {
        const struct amp_test_summary_line *l =
            amp_test_summary_find(&sum, apis[i].api);
        long converted = !apis[i].conv || mc->converts_conv ? apis[i].calls
                                                            : 0;

        if (l && l->calls == apis[i].calls && l->converted == converted &&
            l->fp32 == apis[i].calls - converted && l->fallback == 0)
            continue;
        amp_test_run_dump(mc->mode, run);
        fail_msg("AMPSHIM_MODE=%s: expected %s calls=%d converted=%ld",
                 mc->mode, apis[i].api, apis[i].calls, converted);
    }
}

/* The number at a dotted path of the document, -1 when there is none. */
static double
number_at(const struct amp_json *doc, const char *path)
{
    char key[64];
    const char *p = path;

    while (doc && *p) {
        size_t len = strcspn(p, ".");

        snprintf(key, sizeof key, "%.*s", (int)len, p);
        doc = amp_json_get(doc, key);
        p += len + (p[len] == '.');
    }
    return amp_json_num(doc, -1.0);
}

/* The report: the converted calls' results are the program's (no shadow
 * call, every one converted work), and each has its FP32 time measured
 * beside it but the one without a baseline. */
static void
expect_report(const struct mode_case *mc, const char *path)
{
    long converted = CALLS - (mc->converts_conv ? 0 : 2);
    char err[128], *text = amp_test_read_file(path);
    struct amp_json *doc;
    const struct {
        const char *path;
        long want;
    } checks[] = {
        { "totals.converted", converted },
        { "totals.shadow", 0 },
        { "totals.calls_fp32_measured", converted - AUX_CALLS },
        { "totals.calls_fp32_unknown", AUX_CALLS },
        { "coverage.converted.calls", converted },
        { "coverage.fp32_kept.shadow.calls", 0 },
    };

    assert_non_null(text);
    doc = amp_json_parse(text, strlen(text), err, sizeof err);
    if (!doc)
        fail_msg("%s: %s", path, err);
    for (size_t i = 0; i < COUNT(checks); i++) {
        double got = number_at(doc, checks[i].path);

        if (got == (double)checks[i].want)
            continue;
        fprintf(stderr, "%s\n", text);
        fail_msg("AMPSHIM_MODE=%s: the report's %s is %g, want %ld",
                 mc->mode, checks[i].path, got, checks[i].want);
    }
    amp_json_free(doc);
    free(text);
}

static void
test_mode(void **state)
{
    const struct mode_case *mc = *state;
    char dir[] = "/tmp/test_once.XXXXXX", report[64];
    struct amp_test_run run;

    assert_non_null(mkdtemp(dir));
    snprintf(report, sizeof report, "%s/once.json", dir);
    run_once(mc->tol, mc->mode, report, &run);
    amp_test_expect_exit(&run, 0, mc->mode);
    expect_mode_results(mc, &run);
    expect_summary(mc, &run);
    expect_report(mc, report);
    amp_test_run_free(&run);
    unlink(report);
    rmdir(dir);
}

/* ---- a fault on a baseline call: FP32's result, a fallback -------------- */

/* AMPSHIM_EMU_FAIL=launch:N fails the shim's Nth kernel launch: one of the
 * first calls' (the scales, the casts, the comparison, or the copy of the
 * candidate over the FP32 result). That call falls back: the program gets
 * FP32's bits for it, counted a fallback; every other call the mode's. */
static void
test_baseline_launch_faults(void **state)
{
    (void)state;
    for (int n = 1; n <= 8; n++) {
        struct amp_test_run run;
        struct amp_test_check check;
        struct amp_test_summary sum;
        char fault[32], what[64];
        int fp32_bits = 0, fallback = 0, fell = -1;

        snprintf(fault, sizeof fault, "launch:%d", n);
        snprintf(what, sizeof what, "fp16, %s", fault);
        run_once_failing("fp16", "fp16", NULL, fault, &run);
        amp_test_expect_exit(&run, 0, what);
        amp_test_expect_cases_pass(&run, &plain, what, &check);
        for (int i = 0; i < check.count; i++)
            if (strcmp(check.cases[i].hash, plain.cases[i].hash) == 0) {
                fp32_bits++;
                fell = i;
            }
        amp_test_parse_summary(run.err, &sum);
        for (int i = 0; i < sum.count; i++)
            fallback += (int)sum.lines[i].fallback;
        if (fp32_bits != 1 || fallback != 1 ||
            amp_test_summary_find(&sum, check.cases[fell].api)->fallback !=
                1) {
            amp_test_run_dump(what, &run);
            fail_msg("%s: %d calls with FP32's bits, %d fallbacks; want one "
                     "call, fallen back", what, fp32_bits, fallback);
        }
        amp_test_run_free(&run);
    }
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest shadow[] = {
        cmocka_unit_test(test_shadow_is_fp32),
        cmocka_unit_test(test_baseline_launch_faults),
    };
    int failed = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: %s ONCE_CHECK LIBAMPSHIM EMU_DIR\n",
                argv[0]);
        return 2;
    }
    once_check_path = argv[1];
    libampshim_path = argv[2];
    emu_dir = argv[3];
    failed += _cmocka_run_group_tests("once shadow and faults", shadow,
                                      COUNT(shadow), plain_setup,
                                      plain_teardown);
    failed += amp_test_run_parametrized(
        "once forced modes", test_mode, mode_cases, sizeof(mode_cases[0]),
        COUNT(mode_cases), "mode", mode_label, plain_setup, plain_teardown);
    return failed;
}
