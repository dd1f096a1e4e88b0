/* Preload tests of the cuBLASLt hook: the unmodified FP32 program lt_check
 * (34 cublasLtMatmul cases: every forward epilogue, both orders, strided
 * batches, every pointer mode (alpha vectors included), in place, beta 0 over NaN, wide-range and
 * huge inputs, stack descriptors initialised again in place) under
 * LD_PRELOAD=libampshim.so on the CPU device emulator, in every mode and
 * under injected faults, judged by its results against a double-precision
 * reference, its output bytes and the shim's exit summary.
 *
 * usage: test_lt GROUP LT_CHECK LIBAMPSHIM EMU_DIR
 * GROUP: modes | faults */
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
#define API "cublasLtMatmul"

static const char *lt_check_path;
static const char *libampshim_path;
static const char *emu_dir;

/* lt_check without the shim: cuBLASLt's FP32 products are FP32 on the
 * emulator (CUBLAS_COMPUTE_32F), so the truth passes --tol fp32. */
static struct amp_test_run plain_run;
static struct amp_test_check plain;
static int plain_converts;     /* class gemm: the cases the shim converts */

struct setting {
    const char *name, *value;
};

/* lt_check with argv (argv[0] its path), the shim preloaded or not, and
 * the extra settings (up to one whose name is NULL). */
static void
run_lt_argv(char **argv, int preload, const struct setting *extra,
            struct amp_test_run *run)
{
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (preload)
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
    for (; extra && extra->name; extra++)
        amp_test_env_set(&env, extra->name, extra->value);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", lt_check_path, strerror(errno));
    amp_test_env_free(&env);
}

static void
run_lt_check(const char *tol, int preload, const struct setting *extra,
             struct amp_test_run *run)
{
    char *argv[] = { (char *)lt_check_path, (char *)"--tol", (char *)tol,
                     NULL };

    run_lt_argv(argv, preload, extra, run);
}

/* The summary line of cublasLtMatmul: the run's pid and these counters. */
static const struct amp_test_summary_line *
expect_summary(const struct amp_test_run *run, long converted, long fallback,
               const char *what, struct amp_test_summary *sum)
{
    const struct amp_test_summary_line *l;
    long fp32 = plain.count - converted - fallback;

    amp_test_parse_summary(run->err, sum);
    l = amp_test_summary_find(sum, API);
    if (sum->malformed == 0 && l && l->seen == 1 && l->pid == (int)run->pid &&
        l->calls == plain.count && l->converted == converted &&
        l->fallback == fallback && l->fp32 == fp32 && l->passthrough == 0)
        return l;
    amp_test_run_dump(what, run);
    fail_msg("%s: expected one summary line for " API " with calls=%d "
             "converted=%ld fp32=%ld fallback=%ld passthrough=0", what,
             plain.count, converted, fp32, fallback);
    return NULL;
}

static int
plain_setup(void **state)
{
    (void)state;
    run_lt_check("fp32", 0, NULL, &plain_run);
    if (!plain_run.exited || plain_run.code != 0 ||
        amp_test_parse_check(plain_run.out, &plain) != 0 ||
        !plain.have_result) {
        amp_test_run_dump("lt_check on the emulator, no shim", &plain_run);
        fprintf(stderr, "lt_check does not pass without the shim\n");
        return -1;
    }
    plain_converts = 0;
    for (int i = 0; i < plain.count; i++)
        plain_converts += strcmp(plain.cases[i].cls, "gemm") == 0;
    return 0;
}

static int
plain_teardown(void **state)
{
    (void)state;
    amp_test_run_free(&plain_run);
    return 0;
}

/* 34 cases, all successful, all of them the shim converts (the alpha
 * vectors of every pointer mode included). */
static void
test_plain_case_list(void **state)
{
    (void)state;
    assert_int_equal(plain.count, 34);
    assert_int_equal(plain_converts, 34);
    for (int i = 0; i < plain.count; i++)
        assert_int_equal(plain.cases[i].status, 0);
}

/* ---- modes ------------------------------------------------------------------ */

/* Each case's D against FP32's bytes: a converted case's (class gemm,
 * when `converts`) differ, every other's are the same. */
static void
expect_fp32_bytes(const struct amp_test_run *run,
                  const struct amp_test_check *check, const char *what,
                  int converts)
{
    for (int i = 0; i < check->count; i++) {
        int conv = converts && strcmp(check->cases[i].cls, "gemm") == 0;
        int same = strcmp(check->cases[i].hash, plain.cases[i].hash) == 0;

        if (conv != same)
            continue;
        amp_test_run_dump(what, run);
        fail_msg("%s: case %s (%s) is%s bit-identical to FP32", what,
                 check->cases[i].name, check->cases[i].cls,
                 same ? "" : " not");
    }
}

struct mode_case {
    const char *mode, *tol;
};

/* fp16x3 and tf32x3 meet the FP32 bound. */
static const struct mode_case mode_cases[] = {
    { "fp16", "fp16" }, { "bf16", "bf16" }, { "tf32", "tf32" },
    { "fp16x3", "fp32" }, { "tf32x3", "fp32" },
};

/* Converted in every mode within its bound: a converted case's bytes
 * differ from FP32's, an FP32 case's do not. */
static void
test_modes(void **state)
{
    (void)state;
    for (size_t m = 0; m < sizeof mode_cases / sizeof *mode_cases; m++) {
        const struct setting mode[] = { { "AMPSHIM_MODE", mode_cases[m].mode },
                                        { NULL, NULL } };
        struct amp_test_run run;
        struct amp_test_check check;
        struct amp_test_summary sum;
        char what[64];

        snprintf(what, sizeof what, "AMPSHIM_MODE=%s", mode_cases[m].mode);
        run_lt_check(mode_cases[m].tol, 1, mode, &run);
        amp_test_expect_exit(&run, 0, what);
        amp_test_expect_cases_pass(&run, &plain, what, &check);
        expect_fp32_bytes(&run, &check, what, 1);
        expect_summary(&run, plain_converts, 0, what, &sum);
        /* The coverage meter counts every product, all FP32 converted. */
        if (amp_test_count_lines_with(
                run.err, "of GEMM and convolution work in 34 calls, 100.0 % "
                         "FP32 within the shim's reach (converted 100.0 %") !=
            1) {
            amp_test_run_dump(what, &run);
            fail_msg("%s: no coverage line for the 34 converted products",
                     what);
        }
        amp_test_run_free(&run);
    }
}

/* bf16x9: cuBLASLt's own BF16x9 emulation of FP32 on the program's
 * operands. On the B200 model every case the shim converts meets FP32's
 * bound with bytes unlike FP32's; on the H100 model, whose cuBLASLt would
 * compute FP32 under its name, every case keeps FP32's bytes, counted as
 * no-emulation. */
static void
test_bf16x9(void **state)
{
    static const char *const gpus[] = { "b200", "h100" };

    (void)state;
    for (size_t g = 0; g < sizeof gpus / sizeof *gpus; g++) {
        const struct setting set[] = { { "AMPSHIM_MODE", "bf16x9" },
                                       { "AMPSHIM_EMU_GPU", gpus[g] },
                                       { NULL, NULL } };
        int emulated = strcmp(gpus[g], "b200") == 0;
        struct amp_test_run run;
        struct amp_test_check check;
        struct amp_test_summary sum;
        char what[64];

        snprintf(what, sizeof what, "AMPSHIM_MODE=bf16x9 on the %s model",
                 gpus[g]);
        run_lt_check("fp32", 1, set, &run);
        amp_test_expect_exit(&run, 0, what);
        amp_test_expect_cases_pass(&run, &plain, what, &check);
        expect_fp32_bytes(&run, &check, what, emulated);
        expect_summary(&run, emulated ? plain_converts : 0, 0, what, &sum);
        if (!emulated &&
            amp_test_count_lines_with(run.err, "FP32 calls by reason: "
                                               "no-emulation") != 1) {
            amp_test_run_dump(what, &run);
            fail_msg("%s: the calls not counted as no-emulation", what);
        }
        amp_test_run_free(&run);
    }
}

/* Each case run twice in a row at its site, on the same inputs (lt_check
 * --repeat 2): the second call of an fp16 case is a repeating call
 * (delayed scaling where it applies; every pointer mode, alpha vectors
 * included), and both calls' D meet the mode's bound, every call
 * converted. */
static void
test_repeated_calls(void **state)
{
    static const char *const modes[][2] = { { "fp16", "fp16" },
                                            { "bf16", "bf16" } };

    (void)state;
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        char *argv[] = { (char *)lt_check_path, (char *)"--tol",
                         (char *)modes[m][1], (char *)"--repeat",
                         (char *)"2", NULL };
        const struct setting mode[] = { { "AMPSHIM_MODE", modes[m][0] },
                                        { NULL, NULL } };
        struct amp_test_run run;
        struct amp_test_summary sum;
        const struct amp_test_summary_line *l;
        char what[64], result[64];

        snprintf(what, sizeof what, "AMPSHIM_MODE=%s, lt_check --repeat 2",
                 modes[m][0]);
        run_lt_argv(argv, 1, mode, &run);
        snprintf(result, sizeof result, "result: %d of %d cases pass\n",
                 2 * plain.count, 2 * plain.count);
        amp_test_parse_summary(run.err, &sum);
        l = amp_test_summary_find(&sum, API);
        if (!run.exited || run.code != 0 || !strstr(run.out, result) ||
            !l || l->calls != 2 * plain.count ||
            l->converted != 2 * plain_converts) {
            amp_test_run_dump(what, &run);
            fail_msg("%s: expected '%.*s', every call converted", what,
                     (int)strlen(result) - 1, result);
        }
        amp_test_run_free(&run);
    }
}

/* lt_check --layers: two layers of one shape share the program's
 * descriptor objects, each call setting its layer's bias pointer on the
 * matmul descriptor. The converted steps' descriptors, made once and
 * kept per step inputs, carry each call's own bias: every call converted
 * and within the mode's bound (the layers' biases differ by 8, far over
 * it). */
static void
test_layers_bias(void **state)
{
    static const char *const modes[][2] = {
        { "fp16", "fp16" }, { "bf16", "bf16" }, { "tf32", "tf32" },
        { "tf32x3", "fp32" },
    };

    (void)state;
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        char *argv[] = { (char *)lt_check_path, (char *)"--tol",
                         (char *)modes[m][1], (char *)"--layers", NULL };
        const struct setting mode[] = { { "AMPSHIM_MODE", modes[m][0] },
                                        { "AMPSHIM_REPORT", "off" },
                                        { NULL, NULL } };
        struct amp_test_run run;
        struct amp_test_summary sum;
        const struct amp_test_summary_line *l;
        char what[64];

        snprintf(what, sizeof what, "AMPSHIM_MODE=%s, lt_check --layers",
                 modes[m][0]);
        run_lt_argv(argv, 1, mode, &run);
        amp_test_parse_summary(run.err, &sum);
        l = amp_test_summary_find(&sum, API);
        if (!run.exited || run.code != 0 ||
            !strstr(run.out, "result: 1 of 1 cases pass\n") ||
            amp_test_count_lines_with(run.out, " ok") != 8 || !l ||
            l->calls != 8 ||
            l->converted != 8) {
            amp_test_run_dump(what, &run);
            fail_msg("%s: expected 8 calls converted, each within %s's "
                     "bound", what, modes[m][1]);
        }
        amp_test_run_free(&run);
    }
}

/* fp16 is measurably coarser than FP32: the FP32 bound fails it, every
 * call still successful. */
static void
test_fp16_exceeds_fp32_bound(void **state)
{
    static const struct setting mode[] = { { "AMPSHIM_MODE", "fp16" },
                                           { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;
    int failing = 0;

    (void)state;
    run_lt_check("fp32", 1, mode, &run);
    amp_test_expect_exit(&run, 1, "fp16 checked with the FP32 bound");
    assert_int_equal(amp_test_parse_check(run.out, &check), 0);
    assert_int_equal(check.count, plain.count);
    for (int i = 0; i < check.count; i++) {
        assert_int_equal(check.cases[i].status, 0);
        failing += !check.cases[i].ok;
    }
    assert_true(failing >= plain_converts / 2);
    amp_test_run_free(&run);
}

/* fp32, a disabled shim and shadow give the FP32 bytes; shadow measures
 * every converted case, and the error it reports is FP16's. */
static void
test_exact(void **state)
{
    static const struct { const char *name, *value; } settings[] = {
        { "AMPSHIM_MODE", "fp32" }, { "AMPSHIM_DISABLE", "1" },
        { "AMPSHIM_MODE", "shadow" },
    };

    (void)state;
    for (size_t s = 0; s < sizeof settings / sizeof *settings; s++) {
        const struct setting set[] = { { settings[s].name, settings[s].value },
                                       { NULL, NULL } };
        int shadow = strcmp(settings[s].value, "shadow") == 0;
        int disabled = strcmp(settings[s].name, "AMPSHIM_DISABLE") == 0;
        struct amp_test_run run;
        struct amp_test_summary sum;
        const struct amp_test_summary_line *l;
        char what[64];

        snprintf(what, sizeof what, "%s=%s", settings[s].name,
                 settings[s].value);
        run_lt_check("fp32", 1, set, &run);
        amp_test_expect_exit(&run, 0, what);
        amp_test_expect_plain_stdout(&run, &plain_run, what);
        if (disabled) {
            assert_int_equal(run.err_len, 0);
        } else {
            l = expect_summary(&run, shadow ? plain_converts : 0, 0, what,
                               &sum);
            if (shadow && !(l->has_shadow && l->shadow == plain_converts &&
                            l->nonfinite == 0 && l->max_rel_err > 0.0 &&
                            l->max_rel_err <= 0x1p-8)) {
                amp_test_run_dump(what, &run);
                fail_msg("%s: shadow=%ld nonfinite=%ld max_rel_err=%g", what,
                         l->shadow, l->nonfinite, l->max_rel_err);
            }
        }
        amp_test_run_free(&run);
    }
}

/* A policy that names cuBLASLt calls by their epilogue: the report's
 * shapes show the epilogue, each of lt_check's shapes under its own
 * epilogue's name (as many shapes under each name as lt_check has cases
 * of that epilogue), gelu-bias and gelu-aux ones stay FP32, relu-aux ones
 * run in tf32, the others in the default fp16. */
static void
test_policy_epilogue(void **state)
{
    char dir[] = "/tmp/test_lt.XXXXXX", policy[64], report[64], err[128];
    const struct setting set[] = { { "AMPSHIM_POLICY", policy },
                                   { "AMPSHIM_REPORT", report },
                                   { NULL, NULL } };
    const struct amp_json *sites, *shapes;
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_json *doc;
    char *text;
    FILE *f;
    int seen[3] = { 0, 0, 0 };
    /* lt_check's cases per epilogue; "" is CUBLASLT_EPILOGUE_DEFAULT,
     * whose shapes name none. */
    static const struct { const char *name; int cases; } epilogues[] = {
        { "", 13 }, { "bias", 5 }, { "relu", 3 }, { "relu-aux", 1 },
        { "relu-bias", 4 }, { "relu-aux-bias", 2 }, { "gelu", 1 },
        { "gelu-aux", 2 }, { "gelu-bias", 2 }, { "gelu-aux-bias", 1 },
    };
    int named[sizeof epilogues / sizeof *epilogues] = { 0 };

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(policy, sizeof policy, "%s/lt.policy", dir);
    snprintf(report, sizeof report, "%s/lt.json", dir);
    f = fopen(policy, "w");
    assert_non_null(f);
    fputs("rule fp32 when lt and (epilogue == gelu-bias or "
          "epilogue == gelu-aux)\n"
          "rule tf32 when lt and (epilogue == relu-aux or "
          "epilogue == relu-aux-bias)\n"
          "default fp16\n", f);
    fclose(f);
    run_lt_check("fp16", 1, set, &run);
    amp_test_expect_exit(&run, 0, "epilogue policy");
    amp_test_expect_cases_pass(&run, &plain, "epilogue policy", &check);
    text = amp_test_read_file(report);
    assert_non_null(text);
    doc = amp_json_parse(text, strlen(text), err, sizeof err);
    assert_non_null(doc);
    sites = amp_json_get(doc, "sites");
    assert_non_null(sites);
    for (size_t i = 0; i < sites->count; i++) {
        shapes = amp_json_get(&sites->items[i], "shapes");
        for (size_t j = 0; shapes && j < shapes->count; j++) {
            const struct amp_json *sh = &shapes->items[j];
            const char *epi = amp_json_str(
                amp_json_get(amp_json_get(sh, "dims"), "epilogue"));
            const char *name = amp_json_str(amp_json_get(sh, "shape"));
            const struct amp_json *modes = amp_json_get(sh, "modes");
            double conv = amp_json_num(amp_json_get(sh, "converted"), -1);
            int tf32 = amp_json_num(amp_json_get(modes, "tf32"), 0) > 0;
            int fp16 = amp_json_num(amp_json_get(modes, "fp16"), 0) > 0;

            assert_non_null(name);
            if (epi)    /* the shape's text ends with the epilogue */
                assert_string_equal(name + strlen(name) - strlen(epi), epi);
            for (size_t e = 0; e < sizeof epilogues / sizeof *epilogues;
                 e++)
                named[e] += strcmp(epi ? epi : "", epilogues[e].name) == 0;
            if (epi && (strcmp(epi, "gelu-bias") == 0 ||
                        strcmp(epi, "gelu-aux") == 0)) {
                assert_true(conv == 0.0);
                seen[0]++;
            } else if (epi && strncmp(epi, "relu-aux", 8) == 0) {
                assert_true(conv > 0.0 && tf32 && !fp16);
                seen[1]++;
            } else {
                assert_true(conv > 0.0 && fp16 && !tf32);
                seen[2]++;
            }
        }
    }
    for (size_t e = 0; e < sizeof epilogues / sizeof *epilogues; e++) {
        if (named[e] != epilogues[e].cases)
            print_message("epilogue '%s': %d shapes, lt_check has %d "
                          "cases\n", epilogues[e].name, named[e],
                          epilogues[e].cases);
        assert_int_equal(named[e], epilogues[e].cases);
    }
    /* gelu_bias, no_algo, gelu_aux and in_place_beta_zero; relu_aux,
     * relu_aux_bias and the batched one; the other 27 cases. */
    assert_int_equal(seen[0], 4);
    assert_int_equal(seen[1], 3);
    assert_int_equal(seen[2], 27);
    amp_json_free(doc);
    free(text);
    amp_test_run_free(&run);
    unlink(report);
    unlink(policy);
    rmdir(dir);
}

/* ---- faults ----------------------------------------------------------------- */

struct fault_case {
    const char *mode, *tol, *spec;
    long fallback;     /* conversions that fall back */
};

/* A device fault stops every conversion before anything is written (the
 * first launch of every call for tf32x3, whose one launch is its split);
 * a cuBLASLt call of the shim that fails after writing part of its output
 * (the first case's step in fp16; the second of its three in fp16x3; the
 * first case's one step in tf32x3, or the second case's) falls back to
 * the program's own call. */
static const struct fault_case faults[] = {
    { "fp16", "fp16", "alloc-async:1+", 34 },
    { "fp16", "fp16", "launch:1+", 34 },
    { "fp16x3", "fp32", "launch:3+", 34 },
    { "fp16", "fp16", "cublasLtMatmul:1:partial", 1 },
    { "fp16x3", "fp32", "cublasLtMatmul:2:partial", 1 },
    { "tf32x3", "fp32", "cublasLtMatmul:1:partial", 1 },
    { "tf32x3", "fp32", "cublasLtMatmul:2:partial", 1 },
    { "tf32x3", "fp32", "launch:1+", 34 },
    { "bf16", "bf16", "cublasLtMatmul:3", 1 },
};

static void
test_faults(void **state)
{
    (void)state;
    for (size_t f = 0; f < sizeof faults / sizeof *faults; f++) {
        const struct fault_case *fc = &faults[f];
        const struct setting set[] = { { "AMPSHIM_MODE", fc->mode },
                                       { "AMPSHIM_EMU_FAIL", fc->spec },
                                       { NULL, NULL } };
        struct amp_test_run run;
        struct amp_test_check check;
        struct amp_test_summary sum;
        int fp32_bytes = 0;
        char what[96];

        snprintf(what, sizeof what, "AMPSHIM_MODE=%s AMPSHIM_EMU_FAIL=%s",
                 fc->mode, fc->spec);
        run_lt_check(fc->tol, 1, set, &run);
        amp_test_expect_exit(&run, 0, what);
        amp_test_expect_cases_pass(&run, &plain, what, &check);
        for (int i = 0; i < check.count; i++)
            fp32_bytes += strcmp(check.cases[i].cls, "gemm") == 0 &&
                          strcmp(check.cases[i].hash, plain.cases[i].hash) == 0;
        /* Every fallen-back case has the FP32 call's bytes. */
        if (fp32_bytes != fc->fallback) {
            amp_test_run_dump(what, &run);
            fail_msg("%s: %d converted cases with FP32 bytes, expected %ld",
                     what, fp32_bytes, fc->fallback);
        }
        expect_summary(&run, plain_converts - fc->fallback, fc->fallback,
                       what, &sum);
        amp_test_run_free(&run);
    }
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest modes[] = {
        cmocka_unit_test(test_plain_case_list),
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_bf16x9),
        cmocka_unit_test(test_fp16_exceeds_fp32_bound),
        cmocka_unit_test(test_exact),
        cmocka_unit_test(test_policy_epilogue),
        cmocka_unit_test(test_repeated_calls),
        cmocka_unit_test(test_layers_bias),
    };
    const struct CMUnitTest fault_tests[] = {
        cmocka_unit_test(test_faults),
    };

    if (argc != 5) {
        fprintf(stderr, "usage: %s modes|faults LT_CHECK LIBAMPSHIM "
                "EMU_DIR\n", argv[0]);
        return 2;
    }
    lt_check_path = argv[2];
    libampshim_path = argv[3];
    emu_dir = argv[4];
    if (strcmp(argv[1], "modes") == 0)
        return cmocka_run_group_tests_name("lt modes", modes, plain_setup,
                                           plain_teardown);
    if (strcmp(argv[1], "faults") == 0)
        return cmocka_run_group_tests_name("lt faults", fault_tests,
                                           plain_setup, plain_teardown);
    fprintf(stderr, "%s: unknown group '%s'\n", argv[0], argv[1]);
    return 2;
}
