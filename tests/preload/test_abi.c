/* ABI tests of libampshim.so: it exports exactly the hooked symbols of
 * every hook file (cublas_v2.h's, the legacy cublas.h's, cuDNN's
 * convolutions and the CUDA calls that end a context), needs no CUDA or cuDNN library, and leaves no trace in a process that never calls
 * a hooked function.
 *
 * usage: test_abi exports LIBAMPSHIM NM READELF
 *        test_abi quiet LIBAMPSHIM */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Names only: cublas.h and cublas_v2.h refuse to meet in one file. */
#define AMP_SYMBOL_NAMES_ONLY
#include "cublas_legacy_symbols.h"
#include "cublas_symbols.h"
#include "cuda_symbols.h"
#include "cublaslt_symbols.h"
#include "cudnn_graph_symbols.h"
#include "cudnn_symbols.h"
#include "harness.h"

#define RUN_TIMEOUT_S 60

static const char *libampshim_path;
static const char *nm_path;
static const char *readelf_path;

#define HOOKED_NAME(ret, name, params) #name,
static const char *const hooked[] = {
    AMP_CUBLAS_HOOKED(HOOKED_NAME) AMP_CUBLAS_LEGACY_HOOKED(HOOKED_NAME)
    AMP_CUBLASLT_HOOKED(HOOKED_NAME) AMP_CUDNN_HOOKED(HOOKED_NAME)
    AMP_CUDNN_GRAPH_HOOKED(HOOKED_NAME)
    AMP_CUDA_HOOKED(HOOKED_NAME)
    /* Lookups on a vendor library's handle (hooks/dlsym.c). */
    "dlsym", "dlvsym",
};
#define N_HOOKED ((int)(sizeof(hooked) / sizeof(hooked[0])))

/* Runs a tool on the library and returns its stdout (exit 0 required). */
static void
run_tool(const char *tool, const char *option1, const char *option2,
         struct amp_test_run *run)
{
    char *argv[] = { (char *)tool, (char *)option1, (char *)option2,
                     (char *)libampshim_path, NULL };
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LC_ALL", "C");
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", tool, strerror(errno));
    amp_test_env_free(&env);
    if (!run->exited || run->code != 0) {
        amp_test_run_dump(tool, run);
        fail_msg("%s failed on %s", tool, libampshim_path);
    }
}

/* Symbols every shared object defines for the linker and the loader. */
static int
is_linker_symbol(const char *name)
{
    static const char *const names[] = {
        "_init", "_fini", "_edata", "_end", "__bss_start", "_DYNAMIC",
        "_GLOBAL_OFFSET_TABLE_", "__end__", "__data_start",
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

static int
hooked_index(const char *name)
{
    for (int i = 0; i < N_HOOKED; i++)
        if (strcmp(hooked[i], name) == 0)
            return i;
    return -1;
}

/* nm -D --defined-only: every exported symbol is a hooked one, and every
 * hooked one is exported once, as code. */
static void
test_exports_are_the_hooked_list(void **state)
{
    struct amp_test_run run;
    int found[N_HOOKED], extra = 0;
    char *line, *save = NULL;

    memset(found, 0, sizeof(found));
    run_tool(nm_path, "-D", "--defined-only", &run);
    for (line = strtok_r(run.out, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char addr[64], type[4], name[256];
        char *at;
        int i;

        if (sscanf(line, "%63s %3s %255s", addr, type, name) != 3) {
            fprintf(stderr, "unparsed nm line: %s\n", line);
            extra++;
            continue;
        }
        at = strchr(name, '@');
        if (at)
            *at = '\0';
        /* Absolute symbols are version nodes and linker definitions. */
        if (strcmp(type, "A") == 0 || is_linker_symbol(name))
            continue;
        i = hooked_index(name);
        if (i < 0 || strcmp(type, "T") != 0) {
            fprintf(stderr, "exported but not hooked: %s %s\n", type, name);
            extra++;
            continue;
        }
        found[i]++;
    }
    for (int i = 0; i < N_HOOKED; i++)
        if (found[i] != 1)
            fprintf(stderr, "hooked %s exported %d times\n", hooked[i],
                    found[i]);
    for (int i = 0; i < N_HOOKED; i++)
        assert_int_equal(found[i], 1);
    assert_int_equal(extra, 0);
    /* Every GEMM entry point of both APIs: 18 of cublas_v2.h that the
     * shim converts and 38 that it counts (FP64, complex and FP16), and
     * the legacy cublasSgemm with the three context calls it depends on;
     * cublasLtMatmul; the three cuDNN convolutions and the fused
     * bias-activation forward; cuDNN's backend
     * descriptor creation, finalization, destruction, execution and
     * setting and getting attributes;
     * cudaDeviceReset and the driver's three calls that end a context,
     * cuStreamDestroy, the runtime's and the driver's graph calls (the
     * runtime's instantiation in three forms, the driver's in two, the
     * executable graph's update, the child graph node, the clone, launch
     * on a stream and on the per-thread default stream, and destruction:
     * ten of the runtime's, nine of the driver's) and cuGetProcAddress;
     * dlsym and dlvsym. */
    assert_int_equal(N_HOOKED, 98);
    amp_test_run_free(&run);
}

/* readelf -d: DT_NEEDED names no CUDA library, cuDNN included (a missing
 * one would kill a preloaded process before main). */
static void
test_no_cuda_library_needed(void **state)
{
    struct amp_test_run run;
    int needed = 0, cuda = 0;
    char *line, *save = NULL;

    run_tool(readelf_path, "-d", "-W", &run);
    for (line = strtok_r(run.out, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *name;

        if (!strstr(line, "(NEEDED)"))
            continue;
        name = strstr(line, "Shared library: [");
        assert_non_null(name);
        name += strlen("Shared library: [");
        needed++;
        if (strncmp(name, "libcu", 5) == 0 || strncmp(name, "libnv", 5) == 0) {
            fprintf(stderr, "DT_NEEDED on a CUDA library: %s\n", line);
            cuda++;
        }
    }
    /* libc at least: a parse that found nothing proves nothing. */
    assert_true(needed >= 1);
    assert_int_equal(cuda, 0);
    amp_test_run_free(&run);
}

/* ---- A process that never calls a hooked function ------------------------ */

static void
run_preloaded(char *const argv[], const char *log_file,
              struct amp_test_run *run)
{
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
    if (log_file)
        amp_test_env_set(&env, "AMPSHIM_LOG_FILE", log_file);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", argv[0], strerror(errno));
    amp_test_env_free(&env);
}

static void
test_true_prints_nothing(void **state)
{
    char *argv[] = { (char *)"/bin/true", NULL };
    struct amp_test_run run;

    run_preloaded(argv, NULL, &run);
    if (!run.exited || run.code != 0 || run.out_len != 0 ||
        run.err_len != 0) {
        amp_test_run_dump("/bin/true under the shim", &run);
        fail_msg("/bin/true under the shim left a trace");
    }
    amp_test_run_free(&run);
}

/* A shell with a log file configured: its own output only, and no file. */
static void
test_shell_creates_no_log_file(void **state)
{
    char *argv[] = { (char *)"/bin/sh", (char *)"-c",
                     (char *)"echo quiet; /bin/true", NULL };
    char dir[] = "/tmp/amp-abi-XXXXXX";
    struct amp_test_run run;
    struct dirent *entry;
    char *pattern;
    DIR *d;
    int files = 0;

    assert_non_null(mkdtemp(dir));
    assert_true(asprintf(&pattern, "%s/shim-%%p.log", dir) > 0);
    run_preloaded(argv, pattern, &run);
    if (!run.exited || run.code != 0 || strcmp(run.out, "quiet\n") != 0 ||
        run.err_len != 0) {
        amp_test_run_dump("sh under the shim", &run);
        fail_msg("sh under the shim: unexpected output");
    }
    d = opendir(dir);
    assert_non_null(d);
    while ((entry = readdir(d)) != NULL) {
        if (entry->d_name[0] == '.')
            continue;
        fprintf(stderr, "left behind: %s/%s\n", dir, entry->d_name);
        files++;
    }
    closedir(d);
    assert_int_equal(files, 0);
    rmdir(dir);
    free(pattern);
    amp_test_run_free(&run);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest exports[] = {
        cmocka_unit_test(test_exports_are_the_hooked_list),
        cmocka_unit_test(test_no_cuda_library_needed),
    };
    const struct CMUnitTest quiet[] = {
        cmocka_unit_test(test_true_prints_nothing),
        cmocka_unit_test(test_shell_creates_no_log_file),
    };

    if (argc == 5 && strcmp(argv[1], "exports") == 0) {
        libampshim_path = argv[2];
        nm_path = argv[3];
        readelf_path = argv[4];
        return cmocka_run_group_tests_name("exports", exports, NULL, NULL);
    }
    if (argc == 3 && strcmp(argv[1], "quiet") == 0) {
        libampshim_path = argv[2];
        return cmocka_run_group_tests_name("quiet", quiet, NULL, NULL);
    }
    fprintf(stderr, "usage: %s exports LIBAMPSHIM NM READELF\n"
            "       %s quiet LIBAMPSHIM\n", argv[0], argv[0]);
    return 2;
}
