/* `ampshim calibrate` on the emulator (modelled, deterministic times):
 * calibrates layer_mix (four call sites: a tiny GEMM, a large one, a
 * large one whose products cancel, a convolution), checks the choices and
 * annotations of the written policy, then runs the program with it and
 * checks from the report that every site ran in the mode calibration chose
 * at the speedup it wrote down. Then calibrates report_prog, a GEMM-only
 * program: allow-conversion is not run, the runs' exit tables are left
 * out, a site whose tf32 gain (4.5 %) is below the 5 % worth converting
 * for stays fp32, and a site whose two shapes choose differently (tf32 at
 * k 64, fp32 at k 32) gets a rule per shape, which the next run follows;
 * on the H100 model bf16x9 is not run (no BF16x9 emulation), on the B200
 * model it is, and chosen for layer_mix's 1024^3 GEMM at 1e-6:fro.
 *
 * usage: test_calibrate LAYER_MIX LIBAMPSHIM EMU_DIR AMPSHIM REPORT_PROG */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/json.h"
#include "decide/policy.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN_TIMEOUT_S 400

static const char *prog, *shim, *emu_dir, *tool, *gemm_prog;
static char dir[] = "/tmp/ampshim-calibrate-test-XXXXXX";
static char policy_path[300];

/* The calibration's verdict for one site, read from its comments. */
struct verdict {
    const char *function;
    const char *mode;            /* expected choice */
    double speedup;              /* the chosen mode's, from the file */
    double max_rel, max_fro;
};

static struct verdict verdicts[] = {
    {"tiny_projection", "fp32", 0, 0, 0},   /* nothing is faster */
    {"dense_layer", "tf32", 0, 0, 0},       /* the fastest within 5e-3 */
    {"cancelling_layer", "fp16x3", 0, 0, 0}, /* within it with tf32x3,
                                                and faster */
    {"conv_layer*", "fp32", 0, 0, 0},       /* too small to gain */
};
#define NVERDICTS (sizeof verdicts / sizeof verdicts[0])

static int
tool_run(struct amp_test_run *r, char **argv)
{
    struct amp_test_env env;
    int rc;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(&env, "AMPSHIM_LIBRARY", shim);
    /* Empty, or a sanitized build's runtime (the harness adds it), which
     * the tool keeps in front of the shim in every run it makes. */
    amp_test_env_set(&env, "LD_PRELOAD", "");
    rc = amp_test_run(argv, &env, RUN_TIMEOUT_S, r);
    amp_test_env_free(&env);
    assert_int_equal(rc, 0);
    return r->exited ? r->code : -1;
}

/* tool_run on the B200 model. */
static int
tool_run_b200(struct amp_test_run *r, char **argv)
{
    struct amp_test_env env;
    int rc;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(&env, "AMPSHIM_LIBRARY", shim);
    amp_test_env_set(&env, "AMPSHIM_EMU_GPU", "b200");
    amp_test_env_set(&env, "LD_PRELOAD", "");
    rc = amp_test_run(argv, &env, RUN_TIMEOUT_S, r);
    amp_test_env_free(&env);
    assert_int_equal(rc, 0);
    return r->exited ? r->code : -1;
}

static int
calibrate(int force, struct amp_test_run *r)
{
    char *argv[] = {(char *)tool, "calibrate", "-o", policy_path,
                    force ? "--force" : "--", force ? "--" : (char *)prog,
                    force ? (char *)prog : NULL, NULL};

    return tool_run(r, argv);
}

/* The site block of the policy whose rule names `function`: the
 * "chosen" comment's speedup and error, the rule's action. */
static void
read_verdict(const char *text, struct verdict *v, char action[32])
{
    char needle[96], fn[64];
    const char *rule, *block, *chosen;

    snprintf(fn, sizeof fn, "%s", v->function);
    if (strchr(fn, '*'))
        *strchr(fn, '*') = '\0';
    snprintf(needle, sizeof needle, "and caller \"%s", fn);
    rule = strstr(text, needle);
    assert_non_null(rule);
    while (rule > text && rule[-1] != '\n')
        rule--;
    assert_int_equal(sscanf(rule, "rule %31s", action), 1);
    /* The block starts at the blank line before the rule. */
    block = rule;
    while (block > text + 1 && !(block[-1] == '\n' && block[-2] == '\n'))
        block--;
    chosen = strstr(block, " chosen: ");
    assert_non_null(chosen);
    assert_true(chosen < rule);
    if (strcmp(v->mode, "fp32") == 0) {
        assert_non_null(strstr(chosen, "no candidate is within"));
        return;
    }
    assert_int_equal(sscanf(chosen, " chosen: max rel error %lf, fro rel "
                            "error %lf, speedup %lf", &v->max_rel,
                            &v->max_fro, &v->speedup), 3);
    /* The Frobenius norm's error is measured too. */
    assert_true(v->max_fro > 0 && isfinite(v->max_fro));
}

static const struct amp_json *
report_site(const struct amp_json *root, const char *function)
{
    const struct amp_json *sites = amp_json_get(root, "sites");
    size_t n = strcspn(function, "*");
    size_t i;

    assert_non_null(sites);
    for (i = 0; i < sites->count; i++) {
        const char *f = amp_json_str(amp_json_get(&sites->items[i],
                                                  "function"));

        if (f && strncmp(f, function, n) == 0 &&
            (function[n] == '*' || f[n] == '\0'))
            return &sites->items[i];
    }
    fail_msg("no site %s in the report", function);
    return NULL;
}

static double
num(const struct amp_json *obj, const char *key)
{
    return amp_json_num(amp_json_get(obj, key), NAN);
}

static void
test_calibrate_and_replay(void **state)
{
    static struct amp_policy pol;
    struct amp_policy_error perr;
    struct amp_test_run r;
    char report[320], *text, action[32];
    char *run_argv[] = {(char *)tool, "run", "--policy", policy_path,
                        "--report", report, "--", (char *)prog, NULL};
    struct amp_json *root;
    struct stat st;
    size_t i;

    (void)state;
    if (calibrate(0, &r) != 0) {
        amp_test_run_dump("calibrate", &r);
        fail_msg("ampshim calibrate failed");
    }
    /* One run per candidate: the program's output six times. */
    assert_int_equal(amp_test_count_lines_with(r.out, "layer dense "), 6);
    amp_test_run_free(&r);

    /* A valid policy for this program and build. */
    assert_int_equal(amp_policy_load(policy_path, &pol, &perr), AMP_OK);
    assert_int_equal(pol.nmatches, 1);
    assert_string_equal(pol.strings + pol.matches[0].exe, "layer_mix");
    assert_int_equal(pol.matches[0].build_id_len, 20);
    assert_int_equal(pol.nrules, 4);
    assert_true(fabs(pol.set.tolerance - 5e-3) < 1e-12);
    assert_int_equal(pol.set.tolerance_norm, AMP_NORM_MAX);
    text = amp_test_read_file(policy_path);
    assert_non_null(text);
    for (i = 0; i < NVERDICTS; i++) {
        read_verdict(text, &verdicts[i], action);
        assert_string_equal(action, verdicts[i].mode);
    }
    /* The rejected candidates, with their reasons: dense_layer's fp16,
     * bf16, fp16x3 and tf32x3 (on the H100 model fp16x3's three half
     * products beat FP32 at 1024^3, but not tf32; tf32x3's three TF32
     * ones neither). */
    assert_true(amp_test_count_lines_with(text, "error over the tolerance "
                                          "0.005") >= 3);
    assert_int_equal(amp_test_count_lines_with(text, "slower than tf32"), 4);
    /* cancelling_layer's tf32x3: within the tolerance, slower than
     * fp16x3. */
    assert_int_equal(amp_test_count_lines_with(text, "slower than fp16x3"),
                     1);
    assert_true(amp_test_count_lines_with(text, "not faster than fp32") >= 8);
    assert_true(verdicts[1].speedup > 1.0 && verdicts[1].max_rel <= 5e-3);
    assert_true(verdicts[2].speedup > 1.0 && verdicts[2].max_rel <= 5e-3);
    free(text);

    /* Never replaced without --force: refused before any run, 125. */
    assert_int_equal(stat(policy_path, &st), 0);
    assert_int_equal(calibrate(0, &r), 125);
    assert_non_null(strstr(r.err, "exists; --force replaces it"));
    assert_int_equal(amp_test_count_lines_with(r.out, "layer dense "), 0);
    amp_test_run_free(&r);

    /* The program again with the policy: each site in its mode. */
    snprintf(report, sizeof report, "%s/replay.json", dir);
    if (tool_run(&r, run_argv) != 0) {
        amp_test_run_dump("replay", &r);
        fail_msg("ampshim run failed");
    }
    amp_test_run_free(&r);
    text = amp_test_read_file(report);
    assert_non_null(text);
    root = amp_json_parse(text, strlen(text), NULL, 0);
    assert_non_null(root);
    assert_string_equal(amp_json_str(amp_json_get(amp_json_get(root,
                                                                "policy"),
                                                  "source")),
                        "AMPSHIM_POLICY");
    for (i = 0; i < NVERDICTS; i++) {
        const struct verdict *v = &verdicts[i];
        const struct amp_json *s = report_site(root, v->function);
        const struct amp_json *modes = amp_json_get(s, "modes");
        const struct amp_json *time = amp_json_get(s, "time");
        double calls = num(s, "calls");

        assert_true(amp_json_get(s, "demoted")->boolean == 0);
        if (strcmp(v->mode, "fp32") == 0) {
            assert_true(num(s, "fp32") == calls);
            assert_true(num(s, "converted") == 0);
            continue;
        }
        /* verify 1: the first call in shadow mode, the rest converted. */
        assert_string_equal(amp_json_str(amp_json_get(s,
                                                      "shadow_candidate")),
                            v->mode);
        assert_true(num(modes, "shadow") == 1);
        assert_true(num(modes, v->mode) == calls - 1);
        assert_true(num(s, "converted") == calls);
        /* The same speedup as the calibration measured, for the shadow
         * call and for the converted ones. */
        assert_true(fabs(num(time, "candidate_speedup") - v->speedup) <
                    1e-3 * v->speedup);
        if (fabs(num(time, "converted_speedup") - v->speedup) >=
            1e-3 * v->speedup)
            fail_msg("%s: converted_speedup %g, calibrated %g", v->function,
                     num(time, "converted_speedup"), v->speedup);
        assert_true(num(amp_json_get(s, "errors"), "max_rel") <=
                    v->max_rel * 1.001);
    }
    amp_json_free(root);
    free(text);
    unlink(report);

    /* --force replaces the file. */
    assert_int_equal(calibrate(1, &r), 0);
    amp_test_run_free(&r);
}

/* report_prog's shapes: main 1024x768x36 (tf32 1.04x on the H100
 * model), second_site 1024x768x64 (tf32 1.43x) and 1024x768x32 (tf32 no
 * faster than FP32), two calls each. */
#define GEMM_ARGS "--calls", "4", "--m", "1024", "--n", "768", "--k", "36", \
    "--m2", "1024", "--n2", "768", "--k2", "64"

/* The shape of a report site with this text. */
static const struct amp_json *
site_shape(const struct amp_json *site, const char *text)
{
    const struct amp_json *shapes = amp_json_get(site, "shapes");
    size_t i;

    for (i = 0; shapes && i < shapes->count; i++)
        if (strcmp(amp_json_str(amp_json_get(&shapes->items[i], "shape")),
                   text) == 0)
            return &shapes->items[i];
    fail_msg("no shape %s at the site", text);
    return NULL;
}

static void
test_calibrate_gemm_only(void **state)
{
    static struct amp_policy pol;
    struct amp_policy_error perr;
    struct amp_test_run r;
    char path[320], report[320], *text;
    char *argv[] = {(char *)tool, "calibrate", "-o", path, "--",
                    (char *)gemm_prog, GEMM_ARGS, NULL};
    char *run_argv[] = {(char *)tool, "run", "--policy", path, "--report",
                        report, "--", (char *)gemm_prog, GEMM_ARGS, NULL};
    const struct amp_json *main_site, *second, *big, *small;
    struct amp_json *root;

    (void)state;
    snprintf(path, sizeof path, "%s/report_prog.policy", dir);
    snprintf(report, sizeof report, "%s/gemm.json", dir);
    if (tool_run(&r, argv) != 0) {
        amp_test_run_dump("calibrate", &r);
        fail_msg("ampshim calibrate failed");
    }
    /* Five runs, not six: no convolution to measure allow-conversion
     * on. Progress on stderr, no exit table of the runs. */
    assert_int_equal(amp_test_count_lines_with(r.out, "report_prog calls="),
                     5);
    assert_int_equal(amp_test_count_lines_with(r.err, "allow-conversion "
                                               "skipped: the program made "
                                               "no FP32 convolution"), 1);
    assert_int_equal(amp_test_count_lines_with(r.err, "bf16x9 skipped: "
                                               "NVIDIA H100 SXM (emulated) "
                                               "has no BF16x9 emulation"),
                     1);
    assert_int_equal(amp_test_count_lines_with(r.err, " measured: 2 sites, "
                                               "3 shapes"), 5);
    assert_int_equal(amp_test_count_lines_with(r.err, "| site "), 0);
    assert_int_equal(amp_test_count_lines_with(r.err, "verdict: "), 0);
    /* One summary: a line per site, per shape under second_site. */
    assert_int_equal(amp_test_count_lines_with(r.out, "site / shape "), 1);
    assert_int_equal(amp_test_count_lines_with(r.out, "  1024x768x64 NN "
                                               "  "), 1);
    assert_int_equal(amp_test_count_lines_with(r.out, "  1024x768x32 NN "
                                               "  "), 1);
    amp_test_run_free(&r);

    assert_int_equal(amp_policy_load(path, &pol, &perr), AMP_OK);
    /* main, and second_site's two shapes. */
    assert_int_equal(pol.nrules, 3);
    text = amp_test_read_file(path);
    assert_non_null(text);
    assert_non_null(strstr(text, "# Not run: allow-conversion"));
    /* The H100 has no BF16x9 emulation: bf16x9 is not run either. */
    assert_non_null(strstr(text, "# Not run: bf16x9 (the GPU has no BF16x9 "
                                 "emulation)"));
    assert_non_null(strstr(text, "at least 1.05x as fast as FP32"));
    /* main: tf32 gains 4.5 %, below the threshold. */
    assert_non_null(strstr(text, "below the 5 % worth converting for"));
    assert_non_null(strstr(text, "rule fp32 when symbol cublasSgemm_v2 and "
                                 "caller \"main\" and module "
                                 "\"report_prog\"\n"));
    assert_non_null(strstr(text, "its shapes choose differently"));
    assert_non_null(strstr(text, "rule tf32 verify 1 when symbol "
                                 "cublasSgemm_v2 and caller \"second_site\" "
                                 "and module \"report_prog\" and m == 1024 "
                                 "and n == 768 and k == 64 and batch == 1 "
                                 "and transa == n and transb == n\n"));
    assert_non_null(strstr(text, "rule fp32 when symbol cublasSgemm_v2 and "
                                 "caller \"second_site\" and module "
                                 "\"report_prog\" and m == 1024 and n == 768 "
                                 "and k == 32 and"));
    free(text);

    /* The next run follows the rules, shape by shape. */
    if (tool_run(&r, run_argv) != 0) {
        amp_test_run_dump("replay", &r);
        fail_msg("ampshim run failed");
    }
    amp_test_run_free(&r);
    text = amp_test_read_file(report);
    assert_non_null(text);
    root = amp_json_parse(text, strlen(text), NULL, 0);
    assert_non_null(root);
    main_site = report_site(root, "main");
    second = report_site(root, "second_site");
    big = site_shape(second, "1024x768x64 NN");
    small = site_shape(second, "1024x768x32 NN");
    assert_true(num(main_site, "fp32") == 4 &&
                num(main_site, "converted") == 0);
    /* verify 1: the first call measured in shadow, the next converted. */
    assert_true(num(big, "calls") == 2 && num(big, "delivered") == 1 &&
                num(amp_json_get(big, "modes"), "tf32") == 1);
    assert_true(num(small, "calls") == 2 && num(small, "fp32") == 2 &&
                num(small, "converted") == 0);
    amp_json_free(root);
    free(text);
    unlink(report);
    unlink(path);
}

static void
test_usage(void **state)
{
    struct amp_test_run r;
    char *bad_mode[] = {(char *)tool, "calibrate", "--modes", "fp16,fp8",
                        "--", (char *)prog, NULL};
    char *bad_tol[] = {(char *)tool, "calibrate", "--tolerance", "-1", "--",
                       (char *)prog, NULL};
    char *none[] = {(char *)tool, "calibrate", "--", NULL};
    char *bad_gain[] = {(char *)tool, "calibrate", "--min-speedup", "0.9",
                        "--", (char *)prog, NULL};

    (void)state;
    assert_int_equal(tool_run(&r, bad_mode), 2);
    assert_non_null(strstr(r.err, "not a candidate"));
    amp_test_run_free(&r);
    assert_int_equal(tool_run(&r, bad_tol), 2);
    assert_non_null(strstr(r.err, "--tolerance needs a non-negative"));
    amp_test_run_free(&r);
    assert_int_equal(tool_run(&r, none), 2);
    assert_non_null(strstr(r.err, "no program to run"));
    amp_test_run_free(&r);
    assert_int_equal(tool_run(&r, bad_gain), 2);
    assert_non_null(strstr(r.err, "--min-speedup needs a number of at "
                               "least 1"));
    amp_test_run_free(&r);
}

/* On the B200 model, FP32 accuracy asked for: bf16x9 runs (cuBLAS's own
 * emulation) and is the fastest within 1e-6 at dense_layer's 1024^3,
 * ahead of tf32x3; tiny_projection's 64^3 gains from neither. */
static void
test_calibrate_b200_bf16x9(void **state)
{
    struct amp_test_run r;
    char path[320], *text, action[32];
    char *argv[] = {(char *)tool, "calibrate", "-o", path, "--modes",
                    "tf32x3,bf16x9", "--tolerance", "1e-6:fro", "--",
                    (char *)prog, NULL};
    struct verdict dense = {"dense_layer", "bf16x9", 0, 0, 0};
    struct verdict tiny = {"tiny_projection", "fp32", 0, 0, 0};

    (void)state;
    snprintf(path, sizeof path, "%s/b200.policy", dir);
    if (tool_run_b200(&r, argv) != 0) {
        amp_test_run_dump("calibrate on the B200 model", &r);
        fail_msg("ampshim calibrate failed");
    }
    assert_int_equal(amp_test_count_lines_with(r.err, "bf16x9 measured: "),
                     1);
    amp_test_run_free(&r);
    text = amp_test_read_file(path);
    assert_non_null(text);
    assert_non_null(strstr(text, "# Device: NVIDIA B200 (emulated)"));
    assert_non_null(strstr(text, "# Candidates: tf32x3 bf16x9,"));
    read_verdict(text, &dense, action);
    assert_string_equal(action, "bf16x9");
    assert_true(dense.speedup > 1.5 && dense.max_fro <= 1e-6);
    read_verdict(text, &tiny, action);
    assert_string_equal(action, "fp32");
    assert_int_equal(amp_test_count_lines_with(text, "slower than bf16x9"),
                     1);
    free(text);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_calibrate_and_replay),
        cmocka_unit_test(test_calibrate_gemm_only),
        cmocka_unit_test(test_calibrate_b200_bf16x9),
    };
    int rc;

    if (argc != 6) {
        fprintf(stderr, "usage: test_calibrate LAYER_MIX LIBAMPSHIM EMU_DIR "
                "AMPSHIM REPORT_PROG\n");
        return 2;
    }
    gemm_prog = argv[5];
    prog = argv[1];
    shim = argv[2];
    emu_dir = argv[3];
    tool = argv[4];
    if (!mkdtemp(dir))
        return 1;
    snprintf(policy_path, sizeof policy_path, "%s/layer_mix.policy", dir);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(policy_path);
    rmdir(dir);
    return rc;
}
