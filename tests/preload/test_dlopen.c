/* Programs that open cuBLAS with dlopen: in a local scope, a lookup on the
 * library's own handle reaches the library, not the shim (the call stays
 * FP32, bit for bit, and the shim says nothing); opened in the global
 * scope and looked up with RTLD_DEFAULT, the shim's hook comes first and
 * converts the call.
 *
 * usage: test_dlopen DLOPEN_SGEMM LIBAMPSHIM EMU_DIR */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "harness.h"

#define RUN_TIMEOUT_S 120

static const char *program, *libampshim_path, *emu_dir;

/* Runs the program with `scope` (local or global), under the shim in
 * fp16 mode when `shim`; returns its stdout line's hash in hash[17]. */
static void
run(const char *scope, int shim, struct amp_test_run *r, char hash[17])
{
    char *argv[] = {(char *)program, (char *)"--scope", (char *)scope, NULL};
    struct amp_test_env env;
    const char *at;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (shim) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        amp_test_env_set(&env, "AMPSHIM_MODE", "fp16");
    }
    assert_int_equal(amp_test_run(argv, &env, RUN_TIMEOUT_S, r), 0);
    amp_test_env_free(&env);
    at = strstr(r->out, "status=0 hash=");
    if (!r->exited || r->code != 0 || !at) {
        amp_test_run_dump(scope, r);
        fail_msg("dlopen_sgemm --scope %s: expected a successful SGEMM",
                 scope);
    }
    memcpy(hash, at + strlen("status=0 hash="), 16);
    hash[16] = '\0';
}

static void
test_local_scope_bypasses_the_shim(void **state)
{
    struct amp_test_run plain, shimmed;
    struct amp_test_summary sum;
    char h_plain[17], h_shim[17];

    run("local", 0, &plain, h_plain);
    run("local", 1, &shimmed, h_shim);
    /* The library's own symbol ran: FP32, bit for bit, nothing counted. */
    assert_string_equal(h_shim, h_plain);
    amp_test_parse_summary(shimmed.err, &sum);
    assert_int_equal(sum.summary_lines, 0);
    amp_test_run_free(&plain);
    amp_test_run_free(&shimmed);
}

static void
test_global_scope_is_converted(void **state)
{
    struct amp_test_run plain, shimmed;
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;
    char h_plain[17], h_shim[17];

    run("global", 0, &plain, h_plain);
    run("global", 1, &shimmed, h_shim);
    assert_string_not_equal(h_shim, h_plain);
    amp_test_parse_summary(shimmed.err, &sum);
    l = amp_test_summary_find(&sum, "cublasSgemm_v2");
    if (!l || l->calls != 1 || l->converted != 1) {
        amp_test_run_dump("global scope under the shim", &shimmed);
        fail_msg("expected cublasSgemm_v2 calls=1 converted=1");
    }
    amp_test_run_free(&plain);
    amp_test_run_free(&shimmed);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_scope_bypasses_the_shim),
        cmocka_unit_test(test_global_scope_is_converted),
    };

    if (argc != 4) {
        fprintf(stderr, "usage: test_dlopen DLOPEN_SGEMM LIBAMPSHIM "
                "EMU_DIR\n");
        return 2;
    }
    program = argv[1];
    libampshim_path = argv[2];
    emu_dir = argv[3];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
