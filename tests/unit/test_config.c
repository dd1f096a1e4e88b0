/* Unit tests of the AMPSHIM_* variable parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/config.h"

#include <stdio.h>
#include <string.h>

/* The environment of one test: name=value pairs. */
static const char *const *test_env;

static const char *
table_getenv(const char *name)
{
    const char *const *e;

    for (e = test_env; e && e[0]; e += 2)
        if (strcmp(e[0], name) == 0)
            return e[1];
    return NULL;
}

static void
load(struct amp_config *cfg, const char *const *env)
{
    test_env = env;
    amp_config_load(cfg, table_getenv);
}

static void
test_defaults(void **state)
{
    struct amp_config cfg;

    load(&cfg, NULL);
    assert_int_equal(cfg.disabled, 0);
    assert_int_equal(cfg.mode, AMP_MODE_FP16);
    assert_int_equal(cfg.log_level, AMP_LOG_WARN);
    assert_string_equal(cfg.log_file, "");
    assert_int_equal(cfg.summary, 1);
    assert_true(cfg.scratch_max == AMP_SCRATCH_MAX_DEFAULT);
    assert_int_equal(cfg.nproblems, 0);
}

static void
test_good_values(void **state)
{
    static const char *const env[] = {
        "AMPSHIM_DISABLE", "yes",         "AMPSHIM_MODE",     "FP32",
        "AMPSHIM_LOG_LEVEL", "debug",     "AMPSHIM_LOG_FILE", "/tmp/a-%p.log",
        "AMPSHIM_SUMMARY", "off",         "AMPSHIM_SCRATCH_MAX", "64M",
        NULL,
    };
    struct amp_config cfg;

    load(&cfg, env);
    assert_int_equal(cfg.disabled, 1);
    assert_int_equal(cfg.mode, AMP_MODE_FP32);
    assert_int_equal(cfg.log_level, AMP_LOG_DEBUG);
    assert_string_equal(cfg.log_file, "/tmp/a-%p.log");
    assert_int_equal(cfg.summary, 0);
    assert_true(cfg.scratch_max == 64ull << 20);
    assert_int_equal(cfg.nproblems, 0);
}

static void
test_byte_counts(void **state)
{
    static const char *const plain[] = {"AMPSHIM_SCRATCH_MAX", "4096", NULL};
    static const char *const kilo[] = {"AMPSHIM_SCRATCH_MAX", "3k", NULL};
    static const char *const giga[] = {"AMPSHIM_SCRATCH_MAX", "2G", NULL};
    struct amp_config cfg;

    load(&cfg, plain);
    assert_true(cfg.scratch_max == 4096);
    load(&cfg, kilo);
    assert_true(cfg.scratch_max == 3072);
    load(&cfg, giga);
    assert_true(cfg.scratch_max == 2ull << 30);
}

/* Each bad value keeps the default and names the variable. */
static void
test_bad_values(void **state)
{
    static const char *const cases[][2] = {
        {"AMPSHIM_MODE", "fp8"},
        {"AMPSHIM_LOG_LEVEL", "loud"},
        {"AMPSHIM_DISABLE", "maybe"},
        {"AMPSHIM_SUMMARY", "2"},
        {"AMPSHIM_SCRATCH_MAX", "-1"},
        {"AMPSHIM_SCRATCH_MAX", "12Q"},
        {"AMPSHIM_SCRATCH_MAX", "99999999999999999999999"},
        {"AMPSHIM_SCRATCH_MAX", "17179869184G"},
    };
    struct amp_config cfg, defaults;
    const char *env[3] = {NULL, NULL, NULL};
    size_t i;

    load(&defaults, NULL);
    for (i = 0; i < sizeof cases / sizeof *cases; i++) {
        env[0] = cases[i][0];
        env[1] = cases[i][1];
        load(&cfg, env);
        assert_int_equal(cfg.nproblems, 1);
        assert_non_null(strstr(cfg.problems[0], cases[i][0]));
        assert_int_equal(cfg.mode, defaults.mode);
        assert_int_equal(cfg.log_level, defaults.log_level);
        assert_int_equal(cfg.disabled, defaults.disabled);
        assert_int_equal(cfg.summary, defaults.summary);
        assert_true(cfg.scratch_max == defaults.scratch_max);
    }
}

/* AMPSHIM_TOLERANCE=X[:NORM]: a number, and a norm by any of its names. */
static void
test_tolerance(void **state)
{
    static const struct {
        const char *value;
        double tol;
        enum amp_norm norm;
    } good[] = {
        {"5e-3", 5e-3, AMP_NORM_MAX},    {"1e-6:fro", 1e-6, AMP_NORM_FRO},
        {"1e-6:FRO", 1e-6, AMP_NORM_FRO}, {"0.01:frobenius", 0.01,
                                            AMP_NORM_FRO},
        {"2e-4:l2", 2e-4, AMP_NORM_FRO}, {"0:max", 0.0, AMP_NORM_MAX},
        {".5:inf", 0.5, AMP_NORM_MAX},
    };
    static const char *const bad[] = {
        "1e-3:l3", "fro", "-1e-3", "1e-3:", ":fro", "inf", "nan", "1e999",
        " 1e-3", "1e-3x", "1e-3:fro:max", "0x1p-3",
    };
    const char *env[3] = {"AMPSHIM_TOLERANCE", NULL, NULL};
    struct amp_config cfg;
    char want[160];
    size_t i;

    (void)state;
    load(&cfg, NULL);
    assert_true(cfg.tolerance < 0);
    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        env[1] = good[i].value;
        load(&cfg, env);
        assert_int_equal(cfg.nproblems, 0);
        assert_true(cfg.tolerance == good[i].tol);
        assert_int_equal(cfg.tolerance_norm, good[i].norm);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        env[1] = bad[i];
        load(&cfg, env);
        assert_int_equal(cfg.nproblems, 1);
        snprintf(want, sizeof want, "AMPSHIM_TOLERANCE=\"%s\" is not a "
                 "tolerance (a non-negative number, with :NORM for a norm, "
                 "NORM max or fro, as 1e-6:fro); ignored", bad[i]);
        assert_string_equal(cfg.problems[0], want);
        assert_true(cfg.tolerance < 0);
    }
}

static void
test_problem_lists_accepted_values(void **state)
{
    static const char *const env[] = {"AMPSHIM_LOG_LEVEL", "verbose", NULL};
    struct amp_config cfg;

    load(&cfg, env);
    assert_int_equal(cfg.nproblems, 1);
    assert_non_null(strstr(cfg.problems[0], "\"verbose\""));
    assert_non_null(strstr(cfg.problems[0], "off, error, warn, info, debug"));
}

static void
test_empty_values_are_unset(void **state)
{
    static const char *const env[] = {
        "AMPSHIM_MODE", "", "AMPSHIM_DISABLE", "", "AMPSHIM_SCRATCH_MAX", "",
        NULL,
    };
    struct amp_config cfg;

    load(&cfg, env);
    assert_int_equal(cfg.nproblems, 0);
    assert_int_equal(cfg.mode, AMP_MODE_FP16);
    assert_int_equal(cfg.disabled, 0);
}

static void
test_overlong_log_file(void **state)
{
    static char path[AMP_CONFIG_PATH_LEN + 10];
    const char *env[] = {"AMPSHIM_LOG_FILE", path, NULL};
    struct amp_config cfg;

    memset(path, 'x', sizeof path - 1);
    load(&cfg, env);
    assert_int_equal(cfg.nproblems, 1);
    assert_string_equal(cfg.log_file, "");
}

static void
test_mode_names(void **state)
{
    assert_string_equal(amp_mode_name(AMP_MODE_FP32), "fp32");
    assert_string_equal(amp_mode_name(AMP_MODE_FP16), "fp16");
    assert_string_equal(amp_mode_name(AMP_MODE_BF16), "bf16");
    assert_string_equal(amp_mode_name(AMP_MODE_TF32), "tf32");
    assert_string_equal(amp_mode_name(AMP_MODE_FP16X3), "fp16x3");
    assert_string_equal(amp_mode_name(AMP_MODE_TF32X3), "tf32x3");
    assert_string_equal(amp_mode_name(AMP_MODE_BF16X9), "bf16x9");
    assert_string_equal(amp_mode_name(AMP_MODE_SHADOW), "shadow");
    assert_string_equal(amp_mode_name(AMP_MODE_ALLOW_CONVERSION),
                        "allow-conversion");
    assert_string_equal(amp_mode_name(AMP_MODE_COUNT), "?");
}

/* Every mode and shadow candidate; "shadow" alone measures fp16. */
static void
test_modes(void **state)
{
    static const struct {
        const char *value;
        enum amp_mode mode, candidate;
    } cases[] = {
        {"fp32", AMP_MODE_FP32, AMP_MODE_FP16},
        {"bf16", AMP_MODE_BF16, AMP_MODE_FP16},
        {"TF32", AMP_MODE_TF32, AMP_MODE_FP16},
        {"fp16x3", AMP_MODE_FP16X3, AMP_MODE_FP16},
        {"shadow", AMP_MODE_SHADOW, AMP_MODE_FP16},
        {"shadow:fp16", AMP_MODE_SHADOW, AMP_MODE_FP16},
        {"shadow:bf16", AMP_MODE_SHADOW, AMP_MODE_BF16},
        {"shadow:tf32", AMP_MODE_SHADOW, AMP_MODE_TF32},
        {"Shadow:FP16x3", AMP_MODE_SHADOW, AMP_MODE_FP16X3},
        {"tf32x3", AMP_MODE_TF32X3, AMP_MODE_FP16},
        {"shadow:tf32x3", AMP_MODE_SHADOW, AMP_MODE_TF32X3},
        {"BF16x9", AMP_MODE_BF16X9, AMP_MODE_FP16},
        {"shadow:bf16x9", AMP_MODE_SHADOW, AMP_MODE_BF16X9},
        {"allow-conversion", AMP_MODE_ALLOW_CONVERSION, AMP_MODE_FP16},
        {"shadow:allow-conversion", AMP_MODE_SHADOW,
         AMP_MODE_ALLOW_CONVERSION},
    };
    const char *env[3] = {"AMPSHIM_MODE", NULL, NULL};
    struct amp_config cfg;
    size_t i;

    for (i = 0; i < sizeof cases / sizeof *cases; i++) {
        env[1] = cases[i].value;
        load(&cfg, env);
        assert_int_equal(cfg.nproblems, 0);
        assert_int_equal(cfg.mode, cases[i].mode);
        assert_int_equal(cfg.shadow_candidate, cases[i].candidate);
    }
}

/* A bad mode is one problem naming the variable and every accepted value;
 * shadow's candidate cannot be fp32 or shadow. */
static void
test_bad_modes(void **state)
{
    static const char *const bad[] = {"shadow:fp32", "shadow:shadow",
                                      "shadow:", "fp16 ", "fp16x2"};
    const char *env[3] = {"AMPSHIM_MODE", NULL, NULL};
    struct amp_config cfg;
    size_t i;

    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        env[1] = bad[i];
        load(&cfg, env);
        assert_int_equal(cfg.nproblems, 1);
        assert_int_equal(cfg.mode, AMP_MODE_FP16);
        assert_int_equal(cfg.shadow_candidate, AMP_MODE_FP16);
        assert_non_null(strstr(cfg.problems[0], "AMPSHIM_MODE"));
        assert_non_null(strstr(cfg.problems[0],
                               "fp32, fp16, bf16, tf32, fp16x3, tf32x3, "
                               "bf16x9, shadow, shadow:fp16, shadow:bf16, "
                               "shadow:tf32, shadow:fp16x3, shadow:tf32x3, "
                               "shadow:bf16x9, allow-conversion, "
                               "shadow:allow-conversion; ignored"));
    }
}

/* NVIDIA's numbered levels: 0 off, 1 errors, 2 warnings, 3 information,
 * 4 and 5 everything the shim has (debug); the names keep working. */
static void
test_numeric_levels(void **state)
{
    static const struct {
        const char *value;
        enum amp_log_level level;
    } cases[] = {
        {"0", AMP_LOG_OFF},   {"1", AMP_LOG_ERROR}, {"2", AMP_LOG_WARN},
        {"3", AMP_LOG_INFO},  {"4", AMP_LOG_DEBUG}, {"5", AMP_LOG_DEBUG},
        {"off", AMP_LOG_OFF}, {"WARN", AMP_LOG_WARN}, {"debug", AMP_LOG_DEBUG},
    };
    static const char *const bad[] = {"6", "-1", "01", "3 ", "9", "1.0"};
    const char *env[3] = {"AMPSHIM_LOG_LEVEL", NULL, NULL};
    struct amp_config cfg;
    size_t i;

    for (i = 0; i < sizeof cases / sizeof *cases; i++) {
        env[1] = cases[i].value;
        load(&cfg, env);
        assert_int_equal(cfg.nproblems, 0);
        assert_int_equal(cfg.log_level, cases[i].level);
        /* info and above log each call, as the name info does */
        assert_int_equal(cfg.call_log, cases[i].level >= AMP_LOG_INFO);
    }
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        env[1] = bad[i];
        load(&cfg, env);
        assert_int_equal(cfg.nproblems, 1);
        assert_int_equal(cfg.log_level, AMP_LOG_WARN);
        assert_non_null(strstr(cfg.problems[0],
                               "off, error, warn, info, debug, or 0 (off) "
                               "to 5 (everything); ignored"));
    }
}

static void
test_quiet(void **state)
{
    static const char *const on[] = {"AMPSHIM_QUIET", "1", NULL};
    static const char *const off[] = {"AMPSHIM_QUIET", "no", NULL};
    static const char *const bad[] = {"AMPSHIM_QUIET", "very", NULL};
    struct amp_config cfg;

    load(&cfg, NULL);
    assert_int_equal(cfg.quiet, 0);
    load(&cfg, on);
    assert_int_equal(cfg.quiet, 1);
    load(&cfg, off);
    assert_int_equal(cfg.quiet, 0);
    load(&cfg, bad);
    assert_int_equal(cfg.quiet, 0);
    assert_int_equal(cfg.nproblems, 1);
    assert_non_null(strstr(cfg.problems[0], "AMPSHIM_QUIET=\"very\""));
}

/* The tool checks --mode with the shim's own table. */
static void
test_mode_lookup(void **state)
{
    enum amp_mode mode, candidate;
    char names[400];

    assert_int_equal(amp_config_mode("Shadow:BF16", &mode, &candidate),
                     AMP_OK);
    assert_int_equal(mode, AMP_MODE_SHADOW);
    assert_int_equal(candidate, AMP_MODE_BF16);
    assert_int_equal(amp_config_mode("tf32", &mode, &candidate), AMP_OK);
    assert_int_equal(mode, AMP_MODE_TF32);
    assert_int_equal(amp_config_mode("TF32x3", &mode, &candidate), AMP_OK);
    assert_int_equal(mode, AMP_MODE_TF32X3);
    assert_int_equal(amp_config_mode("shadow:tf32x3", &mode, &candidate),
                     AMP_OK);
    assert_int_equal(mode, AMP_MODE_SHADOW);
    assert_int_equal(candidate, AMP_MODE_TF32X3);
    assert_int_equal(amp_config_mode("fp8", &mode, &candidate),
                     AMP_ERR_INVALID);
    amp_config_mode_names(names, sizeof names);
    assert_string_equal(names, "fp32, fp16, bf16, tf32, fp16x3, tf32x3, "
                        "bf16x9, shadow, shadow:fp16, shadow:bf16, "
                        "shadow:tf32, shadow:fp16x3, shadow:tf32x3, "
                        "shadow:bf16x9, allow-conversion, "
                        "shadow:allow-conversion");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numeric_levels),
        cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_mode_lookup),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_good_values),
        cmocka_unit_test(test_byte_counts),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_tolerance),
        cmocka_unit_test(test_problem_lists_accepted_values),
        cmocka_unit_test(test_empty_values_are_unset),
        cmocka_unit_test(test_overlong_log_file),
        cmocka_unit_test(test_mode_names),
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_bad_modes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
