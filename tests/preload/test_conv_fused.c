/* Preload tests of the fused bias-activation convolution hook: the
 * unmodified FP32 program conv_fused (cudnnConvolutionBiasActivationForward
 * cases, each against a double-precision reference) under
 * LD_PRELOAD=libampshim.so on the CPU device emulator, in every mode, with
 * a policy naming the symbol and with the shim's convolutions, or the
 * bias or activation steps after them, failing, judged by its results,
 * statuses, hashes and the shim's exit summary.
 *
 * usage: test_conv_fused CONV_FUSED LIBAMPSHIM EMU_DIR */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "expect.h"

#define RUN_TIMEOUT_S 240
#define API "cudnnConvolutionBiasActivationForward"

static const char *conv_fused_path;
static const char *libampshim_path;
static const char *emu_dir;

/* conv_fused without the shim, on the emulator's modelled H100 (cuDNN's
 * FP32 default math is TF32 there, so the truth passes --tol tf32). */
static struct amp_test_run plain_run;
static struct amp_test_check plain;

/* The plain run's cases by class: conv (the shim converts them), invalid
 * (refused by cuDNN: passed through). */
static struct {
    long calls, conv, invalid;
} expected;

struct setting {
    const char *name, *value;
};

/* Runs conv_fused --tol tol on the emulator, with the shim preloaded if
 * preload (no report file), plus the settings (NULL-name terminated). */
static void
run_conv_fused(const char *tol, int preload, const struct setting *extra,
               struct amp_test_run *run)
{
    char *argv[] = { (char *)conv_fused_path, (char *)"--tol", (char *)tol,
                     NULL };
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (preload) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        amp_test_env_set(&env, "AMPSHIM_REPORT", "off");
    }
    for (; extra && extra->name; extra++)
        amp_test_env_set(&env, extra->name, extra->value);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", conv_fused_path, strerror(errno));
    amp_test_env_free(&env);
}

/* One summary line for the fused API, the run's pid: every call, the
 * convertible ones `converted`, `fallback` or else FP32, the rest passed
 * through; `shadow` of them measured. */
static void
expect_summary(const struct amp_test_run *run, long converted,
               long fallback, long shadow, const char *what)
{
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;
    long fp32 = expected.conv - converted - fallback;
    long passthrough = expected.invalid;

    amp_test_parse_summary(run->err, &sum);
    l = amp_test_summary_find(&sum, API);
    if (sum.malformed != 0 || !l || l->seen != 1 ||
        l->pid != (int)run->pid) {
        amp_test_run_dump(what, run);
        fail_msg("%s: no single well-formed summary line of pid %d for %s",
                 what, (int)run->pid, API);
    }
    if (l->calls == expected.calls && l->converted == converted &&
        l->fp32 == fp32 && l->fallback == fallback &&
        l->passthrough == passthrough &&
        (shadow ? l->has_shadow && l->shadow == shadow && l->nonfinite == 0
                : !l->has_shadow))
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: calls=%ld converted=%ld fp32=%ld fallback=%ld "
             "passthrough=%ld shadow=%ld, expected %ld %ld %ld %ld %ld %ld",
             what, l->calls, l->converted, l->fp32, l->fallback,
             l->passthrough, l->has_shadow ? l->shadow : 0, expected.calls,
             converted, fp32, fallback, passthrough, shadow);
}

/* ---- Set-up: the plain run and what its case list implies ---------------- */

static int
plain_setup(void **state)
{
    (void)state;
    run_conv_fused("tf32", 0, NULL, &plain_run);
    if (!plain_run.exited || plain_run.code != 0 ||
        amp_test_parse_check(plain_run.out, &plain) != 0 ||
        !plain.have_result) {
        amp_test_run_dump("conv_fused on the emulator, no shim", &plain_run);
        fprintf(stderr, "conv_fused does not pass without the shim: "
                "nothing to compare with\n");
        return -1;
    }
    memset(&expected, 0, sizeof(expected));
    for (int i = 0; i < plain.count; i++) {
        const struct amp_test_case *c = &plain.cases[i];

        expected.calls++;
        if (strcmp(c->api, API) != 0) {
            fprintf(stderr, "case %s: api %s\n", c->name, c->api);
            return -1;
        }
        if (strcmp(c->cls, "conv") == 0)
            expected.conv++;
        else if (strcmp(c->cls, "invalid") == 0)
            expected.invalid++;
        else {
            fprintf(stderr, "case %s: class %s\n", c->name, c->cls);
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

/* The case list: ReLU and IDENTITY, no side input, a residual in place,
 * a side input apart, groups and strides converted; a refused SIGMOID
 * passed through. */
static void
test_plain_case_list(void **state)
{
    (void)state;
    assert_int_equal(expected.calls, 7);
    assert_int_equal(expected.conv, 6);
    assert_int_equal(expected.invalid, 1);
}

/* The coverage meter's line: every call, all the FLOPs converted (a
 * refused call has none). */
static void
expect_coverage(const struct amp_test_run *run, const char *what)
{
    char line[256];

    snprintf(line, sizeof(line), "of GEMM and convolution work in %ld "
             "calls, 100.0 %% FP32 within the shim's reach (converted "
             "100.0 %%, kept FP32 0.0 %%), 0.0 %% in other precisions",
             expected.calls);
    if (amp_test_count_lines_with(run->err, line) == 1)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: no coverage line \"%s\"", what, line);
}

/* ---- The modes --------------------------------------------------------- */

/* fp16, bf16 and tf32 convert every FP32 case: each within its mode's
 * bound (the bias and activation within FP32's), the statuses plain's,
 * the coverage meter's figures. */
static void
test_converting_modes(void **state)
{
    static const char *const modes[] = { "fp16", "bf16", "tf32" };

    (void)state;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        const struct setting mode[] = { { "AMPSHIM_MODE", modes[i] },
                                        { NULL, NULL } };
        struct amp_test_run run;
        struct amp_test_check check;
        char what[64];

        snprintf(what, sizeof(what), "AMPSHIM_MODE=%s", modes[i]);
        run_conv_fused(modes[i], 1, mode, &run);
        amp_test_expect_exit(&run, 0, what);
        amp_test_expect_cases_pass(&run, &plain, what, &check);
        expect_summary(&run, expected.conv, 0, 0, what);
        expect_coverage(&run, what);
        amp_test_run_free(&run);
    }
}

/* tf32 is what the emulated GPU's cuDNN does by default: the converted
 * convolution, bias and activation give the plain run's bytes. */
static void
test_tf32_is_plain(void **state)
{
    static const struct setting mode[] = { { "AMPSHIM_MODE", "tf32" },
                                           { NULL, NULL } };
    struct amp_test_run run;

    (void)state;
    run_conv_fused("tf32", 1, mode, &run);
    amp_test_expect_exit(&run, 0, "tf32");
    amp_test_expect_plain_stdout(&run, &plain_run, "tf32");
    amp_test_run_free(&run);
}

/* Modes that keep FP32 results: fp16x3 (no convolution candidate: FP32),
 * fp32, and shadow (measured, FP32's result delivered): the plain run's
 * bytes. */
static void
test_fp32_results(void **state)
{
    static const struct {
        const char *mode;
        int shadow;
    } modes[] = { { "fp16x3", 0 }, { "fp32", 0 }, { "shadow", 1 } };

    (void)state;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        const struct setting mode[] = { { "AMPSHIM_MODE", modes[i].mode },
                                        { NULL, NULL } };
        struct amp_test_run run;
        char what[64];

        snprintf(what, sizeof(what), "AMPSHIM_MODE=%s", modes[i].mode);
        run_conv_fused("tf32", 1, mode, &run);
        amp_test_expect_exit(&run, 0, what);
        amp_test_expect_plain_stdout(&run, &plain_run, what);
        expect_summary(&run, modes[i].shadow ? expected.conv : 0, 0,
                       modes[i].shadow ? expected.conv : 0, what);
        amp_test_run_free(&run);
    }
}

/* AMPSHIM_DISABLE: the plain run's bytes, nothing counted. */
static void
test_disabled(void **state)
{
    static const struct setting off[] = { { "AMPSHIM_MODE", "fp16" },
                                          { "AMPSHIM_DISABLE", "1" },
                                          { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_summary sum;

    (void)state;
    run_conv_fused("tf32", 1, off, &run);
    amp_test_expect_exit(&run, 0, "AMPSHIM_DISABLE=1");
    amp_test_expect_plain_stdout(&run, &plain_run, "AMPSHIM_DISABLE=1");
    amp_test_parse_summary(run.err, &sum);
    assert_null(amp_test_summary_find(&sum, API));
    amp_test_run_free(&run);
}

/* Runs conv_fused under a policy file holding `text` (no AMPSHIM_MODE). */
static void
run_with_policy(const char *text, const char *tol, struct amp_test_run *run)
{
    char path[] = "/tmp/ampshim-fused-policy-XXXXXX";
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
    run_conv_fused(tol, 1, policy, run);
    unlink(path);
}

/* Policies name the fused forward by its symbol: one keeps it FP32 (the
 * plain run's bytes), one converts it to bf16. */
static void
test_policy_symbol(void **state)
{
    struct amp_test_run run;
    struct amp_test_check check;
    const char *what = "policy: fp32 when symbol " API;

    (void)state;
    run_with_policy("rule fp32 when symbol " API "\ndefault fp16\n", "tf32",
                    &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_plain_stdout(&run, &plain_run, what);
    expect_summary(&run, 0, 0, 0, what);
    amp_test_run_free(&run);
    what = "policy: bf16 when conv and symbol cudnnConvolutionBias*";
    run_with_policy("rule bf16 when conv and symbol "
                    "\"cudnnConvolutionBias*\"\ndefault fp32\n", "bf16",
                    &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_cases_pass(&run, &plain, what, &check);
    expect_summary(&run, expected.conv, 0, 0, what);
    amp_test_run_free(&run);
}

/* Every converted convolution the shim issues fails in cuDNN (the
 * program calls only the fused forward, the shim cudnnConvolutionForward):
 * each falls back to the original fused call, the plain run's bytes. */
static void
test_vendor_failure_falls_back(void **state)
{
    static const struct setting fail[] = {
        { "AMPSHIM_MODE", "fp16" },
        { "AMPSHIM_EMU_FAIL", "cudnnConvolutionForward:1+" },
        { NULL, NULL } };
    struct amp_test_run run;
    const char *what = "fp16, the shim's convolutions failing";

    (void)state;
    run_conv_fused("tf32", 1, fail, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_plain_stdout(&run, &plain_run, what);
    expect_summary(&run, 0, expected.conv, 0, what);
    amp_test_run_free(&run);
}

/* The shim's bias step fails in cuDNN (cudnnAddTensor, which the program
 * never calls) after every converted convolution: each call falls back to
 * the original fused call, with y (z when it is y) untouched until then:
 * the plain run's statuses and bytes, every convertible call a fallback.
 * In shadow mode the same bytes, the calls measured before the step. */
static void
test_bias_failure_falls_back(void **state)
{
    static const struct setting fail[] = {
        { "AMPSHIM_MODE", "fp16" },
        { "AMPSHIM_EMU_FAIL", "cudnnAddTensor:1+" },
        { NULL, NULL } };
    static const struct setting shadow[] = {
        { "AMPSHIM_MODE", "shadow" },
        { "AMPSHIM_EMU_FAIL", "cudnnAddTensor:1+" },
        { NULL, NULL } };
    struct amp_test_run run;
    const char *what = "fp16, the shim's cudnnAddTensor failing";

    (void)state;
    run_conv_fused("tf32", 1, fail, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_plain_stdout(&run, &plain_run, what);
    expect_summary(&run, 0, expected.conv, 0, what);
    amp_test_run_free(&run);
    what = "shadow, the shim's cudnnAddTensor failing";
    run_conv_fused("tf32", 1, shadow, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_plain_stdout(&run, &plain_run, what);
    expect_summary(&run, expected.conv, 0, expected.conv, what);
    amp_test_run_free(&run);
}

/* The shim's activation step fails (cudnnActivationForward, the last
 * step of the RELU calls, which the program never calls): the RELU calls
 * fall back to the original fused call, with the plain run's status and
 * y's bytes; the IDENTITY call, which needs no activation step, stays
 * converted within fp16's bound. */
static void
test_activation_failure_falls_back(void **state)
{
    static const struct setting fail[] = {
        { "AMPSHIM_MODE", "fp16" },
        { "AMPSHIM_EMU_FAIL", "cudnnActivationForward:1+" },
        { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    const char *what = "fp16, the shim's cudnnActivationForward failing";

    (void)state;
    run_conv_fused("fp16", 1, fail, &run);
    amp_test_expect_exit(&run, 0, what);
    amp_test_expect_cases_pass(&run, &plain, what, &check);
    for (int i = 0; i < check.count; i++) {
        const struct amp_test_case *c = &check.cases[i];
        const struct amp_test_case *p = &plain.cases[i];

        if (strcmp(c->name, "identity_precomp") == 0 ||
            strcmp(c->hash, p->hash) == 0)
            continue;
        amp_test_run_dump(what, &run);
        fail_msg("%s: case %s: y's hash %s, the plain run's %s", what,
                 c->name, c->hash, p->hash);
    }
    expect_summary(&run, 1, expected.conv - 1, 0, what);
    amp_test_run_free(&run);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_case_list),
        cmocka_unit_test(test_converting_modes),
        cmocka_unit_test(test_tf32_is_plain),
        cmocka_unit_test(test_fp32_results),
        cmocka_unit_test(test_disabled),
        cmocka_unit_test(test_policy_symbol),
        cmocka_unit_test(test_vendor_failure_falls_back),
        cmocka_unit_test(test_bias_failure_falls_back),
        cmocka_unit_test(test_activation_failure_falls_back),
    };

    if (argc != 4) {
        fprintf(stderr, "usage: %s CONV_FUSED LIBAMPSHIM EMU_DIR\n",
                argv[0]);
        return 2;
    }
    conv_fused_path = argv[1];
    libampshim_path = argv[2];
    emu_dir = argv[3];
    return cmocka_run_group_tests_name("preload_conv_fused", tests,
                                       plain_setup, plain_teardown);
}
