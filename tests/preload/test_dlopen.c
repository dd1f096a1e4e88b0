/* Programs that open cuBLAS with dlopen and take its functions with dlsym:
 * in a local scope, looked up on the library's handle (by soname or path,
 * with dlsym or dlvsym), in the global scope through RTLD_DEFAULT, and a
 * Python program through ctypes: each converted under the shim, and, with
 * the shim disabled, the library's own call, bit for bit. dlsym_check: the
 * answers of dlsym and dlvsym to everything else (RTLD_DEFAULT and
 * RTLD_NEXT lookups, other names, failed lookups and dlerror, many
 * threads) are the same with and without the shim, and a lookup on the
 * handle of a library that is not NVIDIA's (SGEMM_WRAPPER, which defines
 * cublasSgemm_v2 itself) finds that library's function.
 *
 * usage: test_dlopen DLOPEN_SGEMM LIBAMPSHIM EMU_DIR DLSYM_CHECK PYTHON3
 *                    CTYPES_SGEMM SGEMM_WRAPPER */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define RUN_TIMEOUT_S 120

static const char *program, *libampshim_path, *emu_dir, *dlsym_check,
    *python3, *ctypes_sgemm, *sgemm_wrapper;

enum shim { PLAIN, SHIM, SHIM_DISABLED };

/* Runs argv on the emulator: plain, under the shim in fp16 mode, or
 * preloaded with AMPSHIM_DISABLE=1. Expects exit status 0. */
static void
run_argv(char **argv, enum shim shim, struct amp_test_run *r)
{
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (shim != PLAIN) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        amp_test_env_set(&env, "AMPSHIM_MODE", "fp16");
    }
    if (shim == SHIM_DISABLED)
        amp_test_env_set(&env, "AMPSHIM_DISABLE", "1");
    assert_int_equal(amp_test_run(argv, &env, RUN_TIMEOUT_S, r), 0);
    amp_test_env_free(&env);
    if (!r->exited || r->code != 0) {
        amp_test_run_dump(argv[0], r);
        fail_msg("%s: expected exit status 0", argv[0]);
    }
}

/* Runs dlopen_sgemm with args (after the program, NULL-terminated); its
 * output line's hash in hash[17]. */
static void
run_sgemm(char **args, enum shim shim, struct amp_test_run *r, char hash[17])
{
    char *argv[8] = {(char *)program};
    const char *at;

    for (int i = 0; args[i] && i < 6; i++)
        argv[i + 1] = args[i];
    run_argv(argv, shim, r);
    at = strstr(r->out, "status=0 hash=");
    if (!at) {
        amp_test_run_dump("dlopen_sgemm", r);
        fail_msg("dlopen_sgemm: expected a successful SGEMM");
    }
    memcpy(hash, at + strlen("status=0 hash="), 16);
    hash[16] = '\0';
}

/* The shim's summary line for api says calls=1 converted=1. */
static void
expect_converted(struct amp_test_run *r, const char *api, const char *what)
{
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;

    amp_test_parse_summary(r->err, &sum);
    l = amp_test_summary_find(&sum, api);
    if (!l || l->calls != 1 || l->converted != 1) {
        amp_test_run_dump(what, r);
        fail_msg("%s: expected %s calls=1 converted=1", what, api);
    }
}

/* The hash of dlopen_sgemm's cublasLtMatmul (--lt) in hash[17]. */
static void
lt_hash(const struct amp_test_run *r, char hash[17])
{
    const char *at = strstr(r->out, "lt status=0 hash=");

    if (!at) {
        amp_test_run_dump("dlopen_sgemm --lt", r);
        fail_msg("dlopen_sgemm: expected a successful cublasLtMatmul");
    }
    memcpy(hash, at + strlen("lt status=0 hash="), 16);
    hash[16] = '\0';
}

/* Each way of opening and looking up: converted under the shim (a result
 * other than FP32's), FP32 bit for bit and silent when it is disabled. */
static void
test_every_lookup_is_converted(void **state)
{
    char local[] = "local", global[] = "global", scope[] = "--scope",
         versioned[] = "--versioned", dir[] = "--dir", lt[] = "--lt";
    char *ways[][6] = {
        {scope, local, NULL},
        {scope, global, NULL},
        {scope, local, versioned, NULL},
        {scope, local, dir, (char *)emu_dir, NULL},
        {scope, local, lt, NULL},
        {scope, local, versioned, lt, NULL},
    };

    (void)state;
    for (size_t w = 0; w < sizeof ways / sizeof *ways; w++) {
        struct amp_test_run plain, shimmed, disabled;
        struct amp_test_summary sum;
        char h_plain[17], h_shim[17], h_disabled[17];

        print_message("dlopen_sgemm %s %s%s%s\n", ways[w][0], ways[w][1],
                      ways[w][2] ? " " : "", ways[w][2] ? ways[w][2] : "");
        run_sgemm(ways[w], PLAIN, &plain, h_plain);
        run_sgemm(ways[w], SHIM, &shimmed, h_shim);
        run_sgemm(ways[w], SHIM_DISABLED, &disabled, h_disabled);
        assert_string_not_equal(h_shim, h_plain);
        expect_converted(&shimmed, "cublasSgemm_v2", ways[w][1]);
        assert_string_equal(h_disabled, h_plain);
        if (strstr(shimmed.out, "lt status=")) {
            /* cuBLASLt looked up on its handle: converted too. */
            char l_plain[17], l_shim[17], l_disabled[17];

            lt_hash(&plain, l_plain);
            lt_hash(&shimmed, l_shim);
            lt_hash(&disabled, l_disabled);
            assert_string_not_equal(l_shim, l_plain);
            expect_converted(&shimmed, "cublasLtMatmul", "--lt");
            assert_string_equal(l_disabled, l_plain);
        }
        amp_test_parse_summary(disabled.err, &sum);
        assert_int_equal(sum.summary_lines, 0);
        amp_test_run_free(&plain);
        amp_test_run_free(&shimmed);
        amp_test_run_free(&disabled);
    }
}

/* Everything else dlsym and dlvsym answer is what the C library answers. */
static void
test_other_lookups_are_unchanged(void **state)
{
    char *argv[] = {(char *)dlsym_check, (char *)sgemm_wrapper, NULL};
    struct amp_test_run plain, shimmed, disabled;

    (void)state;
    run_argv(argv, PLAIN, &plain);
    run_argv(argv, SHIM, &shimmed);
    run_argv(argv, SHIM_DISABLED, &disabled);
    assert_non_null(strstr(plain.out, "next sgemm is default sgemm: 1\n"));
    assert_non_null(strstr(plain.out, "missing: null\n"));
    assert_non_null(strstr(plain.out, ", 0 answers that differ\n"));
    /* The wrapper's own function: its status, its one call counted. */
    assert_non_null(strstr(plain.out, "wrapper sgemm: status 77\n"
                                      "wrapper calls: 1\n"));
    if (!strstr(shimmed.out, "wrapper sgemm: status 77\n"
                             "wrapper calls: 1\n")) {
        amp_test_run_dump("dlsym_check under the shim", &shimmed);
        fail_msg("dlsym on a wrapper's handle did not find the wrapper's "
                 "cublasSgemm_v2");
    }
    assert_string_equal(shimmed.out, plain.out);
    assert_string_equal(disabled.out, plain.out);
    amp_test_run_free(&plain);
    amp_test_run_free(&shimmed);
    amp_test_run_free(&disabled);
}

/* Python's ctypes: converted, and within FP16's error of NumPy's product
 * (about 3e-4 of the largest element at k = 256). */
static void
test_python_ctypes_is_converted(void **state)
{
    char *argv[] = {(char *)python3, (char *)ctypes_sgemm, NULL};
    struct amp_test_run plain, shimmed;
    double e_plain = 1.0, e_shim = 1.0;
    const char *at;

    (void)state;
    /* A sanitized build's libraries need its runtime first, and Debian's
     * python3 is not built with it. */
    if (getenv("AMP_TEST_PRELOAD_FIRST")) {
        print_message("skipped: python3 cannot load a sanitized build\n");
        skip();
    }
    run_argv(argv, PLAIN, &plain);
    run_argv(argv, SHIM, &shimmed);
    at = strstr(plain.out, "status=0 relerr=");
    assert_non_null(at);
    e_plain = strtod(at + strlen("status=0 relerr="), NULL);
    at = strstr(shimmed.out, "status=0 relerr=");
    assert_non_null(at);
    e_shim = strtod(at + strlen("status=0 relerr="), NULL);
    expect_converted(&shimmed, "cublasSgemm_v2", "ctypes_sgemm.py");
    print_message("relative error: FP32 %.3e, under the shim %.3e\n",
                  e_plain, e_shim);
    assert_true(e_plain < 1e-5);
    assert_true(e_shim > e_plain && e_shim < 2e-3);
    amp_test_run_free(&plain);
    amp_test_run_free(&shimmed);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_lookup_is_converted),
        cmocka_unit_test(test_other_lookups_are_unchanged),
        cmocka_unit_test(test_python_ctypes_is_converted),
    };

    if (argc != 8) {
        fprintf(stderr, "usage: test_dlopen DLOPEN_SGEMM LIBAMPSHIM EMU_DIR "
                "DLSYM_CHECK PYTHON3 CTYPES_SGEMM SGEMM_WRAPPER\n");
        return 2;
    }
    program = argv[1];
    libampshim_path = argv[2];
    emu_dir = argv[3];
    dlsym_check = argv[4];
    python3 = argv[5];
    ctypes_sgemm = argv[6];
    sgemm_wrapper = argv[7];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
