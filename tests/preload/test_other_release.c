/* Another release of cuBLAS in a local scope (libcublas.so.12, the
 * emulator's CUDA 12 copy): reached by dlsym on its handle and through an
 * extension module's own imports, alone and beside the shim's release in
 * the global scope. Under the shim (fp16) and with AMPSHIM_DISABLE=1, the
 * cuBLAS 12 product is served by cuBLAS 12 (its version, status 0) and
 * is bit for bit the product without the shim; a call that reaches a hook
 * counts as passthrough; the cuBLAS 13 product beside it is converted.
 *
 * usage: test_other_release OTHER_RELEASE EXT LIBAMPSHIM EMU_DIR */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define RUN_TIMEOUT_S 120

/* What the emulator's two releases answer to cublasGetVersion. */
#define VERSION_12 120901
#define VERSION_13 130100

static const char *program, *ext_path, *libampshim_path, *emu_dir;

enum shim { PLAIN, SHIM, SHIM_DISABLED };

/* One product's line: "WHICH version=V status=S hash=H". */
struct product {
    int version, status;
    char hash[17];
};

static void
run(const char *route, int with13, enum shim shim, struct amp_test_run *r)
{
    char *argv[8] = {(char *)program, "--route", (char *)route};
    struct amp_test_env env;
    int argc = 3;

    if (strcmp(route, "import") == 0) {
        argv[argc++] = "--ext";
        argv[argc++] = (char *)ext_path;
    }
    if (with13)
        argv[argc++] = "--with13";
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
}

/* The line of product `which`; fails the test without one. */
static void
product_of(const struct amp_test_run *r, const char *which, struct product *p)
{
    char key[32];
    const char *at;

    snprintf(key, sizeof key, "%s version=", which);
    at = strstr(r->out, key);
    if (!at || sscanf(at + strlen(key), "%d status=%d hash=%16s",
                      &p->version, &p->status, p->hash) != 3) {
        amp_test_run_dump(which, r);
        fail_msg("no '%s' line", which);
    }
}

static const char *const shim_names[] = {"without the shim", "under the shim",
                                         "with AMPSHIM_DISABLE=1"};

static void
check_route(const char *route, int with13)
{
    struct amp_test_run runs[3];
    struct product p12[3], p13[3];
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;

    for (int s = PLAIN; s <= SHIM_DISABLED; s++) {
        print_message("--route %s%s %s\n", route, with13 ? " --with13" : "",
                      shim_names[s]);
        run(route, with13, (enum shim)s, &runs[s]);
        product_of(&runs[s], "cublas12", &p12[s]);
        print_message("  cublas12 version=%d status=%d hash=%s\n",
                      p12[s].version, p12[s].status, p12[s].hash);
        if (p12[s].version != VERSION_12 || p12[s].status != 0) {
            amp_test_run_dump(shim_names[s], &runs[s]);
            fail_msg("%s: cuBLAS 12's product: version %d, status %d "
                     "(expected %d, 0)", shim_names[s], p12[s].version,
                     p12[s].status, VERSION_12);
        }
        assert_string_equal(p12[s].hash, p12[PLAIN].hash);
        if (with13) {
            product_of(&runs[s], "cublas13", &p13[s]);
            print_message("  cublas13 version=%d status=%d hash=%s\n",
                          p13[s].version, p13[s].status, p13[s].hash);
            assert_int_equal(p13[s].version, VERSION_13);
            assert_int_equal(p13[s].status, 0);
        }
        assert_true(runs[s].exited && runs[s].code == 0);
    }
    if (with13) {
        /* The shim's release beside it is still converted. */
        assert_string_not_equal(p13[SHIM].hash, p13[PLAIN].hash);
        assert_string_equal(p13[SHIM_DISABLED].hash, p13[PLAIN].hash);
    }
    /* A call that reached a hook (the extension's import) is counted as
     * passthrough; dlsym on cuBLAS 12's handle gives its own function,
     * which the shim never sees. */
    amp_test_parse_summary(runs[SHIM].err, &sum);
    l = amp_test_summary_find(&sum, "cublasSgemm_v2");
    if (strcmp(route, "import") == 0 || with13) {
        long through = strcmp(route, "import") == 0 ? 1 : 0;

        if (!l || l->calls != through + with13 ||
            l->converted != with13 || l->passthrough != through) {
            amp_test_run_dump("under the shim", &runs[SHIM]);
            fail_msg("expected cublasSgemm_v2 calls=%ld converted=%d "
                     "passthrough=%ld", through + with13, with13, through);
        }
    } else {
        assert_null(l);
    }
    amp_test_parse_summary(runs[SHIM_DISABLED].err, &sum);
    assert_int_equal(sum.summary_lines, 0);
    for (int s = PLAIN; s <= SHIM_DISABLED; s++)
        amp_test_run_free(&runs[s]);
}

static void
test_dlsym_route(void **state)
{
    (void)state;
    check_route("dlsym", 0);
}

static void
test_import_route(void **state)
{
    (void)state;
    check_route("import", 0);
}

static void
test_dlsym_route_beside_13(void **state)
{
    (void)state;
    check_route("dlsym", 1);
}

static void
test_import_route_beside_13(void **state)
{
    (void)state;
    check_route("import", 1);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dlsym_route),
        cmocka_unit_test(test_import_route),
        cmocka_unit_test(test_dlsym_route_beside_13),
        cmocka_unit_test(test_import_route_beside_13),
    };

    if (argc != 5) {
        fprintf(stderr, "usage: test_other_release OTHER_RELEASE EXT "
                "LIBAMPSHIM EMU_DIR\n");
        return 2;
    }
    program = argv[1];
    ext_path = argv[2];
    libampshim_path = argv[3];
    emu_dir = argv[4];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
