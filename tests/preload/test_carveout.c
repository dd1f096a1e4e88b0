/* Preload tests of what a converted call keeps of the program's call
 * besides its operands, observed in the emulator's call log
 * (AMPSHIM_EMU_CALL_LOG=1: one line per GEMM call the library accepts,
 * with what it was given), on carveout_check under AMPSHIM_MODE=fp16:
 * - the SM carve-out: a handle's cublasSetSmCountTarget reaches the
 *   converted cublasGemmEx, a descriptor's CUBLASLT_MATMUL_DESC_SM_COUNT_
 *   TARGET the converted cuBLASLt heuristic query and matmul, two targets
 *   of one shape each their own query;
 * - atomic synchronisation (cuBLAS 12.x's attributes, given by the test
 *   double lt_atomic_sync preloaded after the shim): the call passes
 *   through, FP32's bits, kept FP32 with the reason atomic-sync;
 * - the cuBLASLt workspace: the converted call's heuristic query and
 *   execution take the program's workspace where it gave one, else
 *   cuBLAS's recommended size for the device (32 MiB on compute
 *   capability 9.0 and later, 4 MiB before).
 *
 * usage: test_carveout CARVEOUT_CHECK LIBAMPSHIM LT_ATOMIC_SYNC EMU_DIR */
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

static const char *carveout_path;
static const char *libampshim_path;
static const char *atomic_sync_path;
static const char *emu_dir;

static struct amp_test_run plain_run;
static struct amp_test_check plain;

struct setting {
    const char *name, *value;
};

/* carveout_check on the emulator; with `preload`, under the shim (and
 * `atomic`: the atomic synchronisation double after it). */
static void
run_check(const char *tol, int preload, int atomic,
          const struct setting *extra, struct amp_test_run *run)
{
    char *argv[] = { (char *)carveout_path, (char *)tol, NULL };
    char preloads[4096];
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    snprintf(preloads, sizeof preloads, "%s%s%s",
             preload ? libampshim_path : "",
             preload && atomic ? " " : "", atomic ? atomic_sync_path : "");
    if (preloads[0])
        amp_test_env_set(&env, "LD_PRELOAD", preloads);
    amp_test_env_set(&env, "AMPSHIM_EMU_CALL_LOG", "1");
    for (; extra && extra->name; extra++)
        amp_test_env_set(&env, extra->name, extra->value);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", carveout_path, strerror(errno));
    amp_test_env_free(&env);
}

static int
plain_setup(void **state)
{
    (void)state;
    run_check("fp32", 0, 0, NULL, &plain_run);
    if (!plain_run.exited || plain_run.code != 0 ||
        amp_test_parse_check(plain_run.out, &plain) != 0 ||
        !plain.have_result || plain.count != 5) {
        amp_test_run_dump("carveout_check on the emulator, no shim",
                          &plain_run);
        fprintf(stderr, "carveout_check does not pass without the shim\n");
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

static const struct amp_test_case *
case_named(const struct amp_test_check *check, const char *name)
{
    for (int i = 0; i < check->count; i++)
        if (strcmp(check->cases[i].name, name) == 0)
            return &check->cases[i];
    fail_msg("no case %s", name);
    return NULL;
}

/* The run's stderr has `want` lines (-1: at least one) that contain
 * every one of the (NULL-ended) pieces. */
static void
expect_log(const struct amp_test_run *run, const char *what, int want, ...)
{
    const char *pieces[8];
    int n = 0, found = 0;
    va_list ap;

    va_start(ap, want);
    while (n < 8 && (pieces[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    for (const char *line = run->err; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        int all = 1;

        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        for (int i = 0; i < n && all; i++)
            all = strstr(buf, pieces[i]) != NULL;
        found += all;
        line = end ? end + 1 : NULL;
    }
    if (want < 0 ? found > 0 : found == want)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: %d emulator log lines with \"%s\"%s%s%s%s, want %s%d",
             what, found, pieces[0], n > 1 ? " and \"" : "",
             n > 1 ? pieces[1] : "", n > 1 ? "\"" : "",
             n > 2 ? " ..." : "", want < 0 ? "some, not " : "",
             want < 0 ? 0 : want);
}

/* fp16 under the shim: every case within the fp16 bound. */
static void
run_fp16(const struct setting *extra, int atomic, struct amp_test_run *run,
         struct amp_test_check *check)
{
    struct setting all[8] = { { "AMPSHIM_MODE", "fp16" } };
    int n = 1;

    for (; extra && extra->name && n < 7; extra++)
        all[n++] = *extra;
    all[n] = (struct setting){ NULL, NULL };
    run_check("fp16", 1, atomic, all, run);
    amp_test_expect_exit(run, 0, "fp16");
    amp_test_expect_cases_pass(run, &plain, "fp16", check);
}

/* ---- the SM carve-out ---------------------------------------------------- */

/* The handle's target (100 of the H100's 132 SMs) on the shim's
 * cublasGemmEx; no converted step without it. */
static void
test_sgemm_sm_count_target(void **state)
{
    struct amp_test_run run;
    struct amp_test_check check;

    (void)state;
    run_fp16(NULL, 0, &run, &check);
    expect_log(&run, "cublasSgemm_v2's carve-out", -1,
               "ampshim-emu: call cublasGemmEx m=96 n=80 k=64 type_ab=16F",
               "sm_count_target=100", NULL);
    expect_log(&run, "cublasSgemm_v2's carve-out", 0,
               "ampshim-emu: call cublasGemmEx m=96 n=80 k=64 type_ab=16F",
               "sm_count_target=0", NULL);
    amp_test_run_free(&run);
}

/* The descriptor's target on the converted heuristic query and matmul;
 * two targets of one shape, two queries. */
static void
test_lt_sm_count_target(void **state)
{
    static const char *const targets[] = { "sm_count_target=96 ",
                                           "sm_count_target=64 " };
    struct amp_test_run run;
    struct amp_test_check check;

    (void)state;
    run_fp16(NULL, 0, &run, &check);
    for (size_t i = 0; i < COUNT(targets); i++) {
        expect_log(&run, "the descriptor's carve-out, heuristics", 1,
                   "ampshim-emu: call cublasLtMatmulAlgoGetHeuristic m=64 "
                   "n=48 k=96 type_ab=16F", targets[i], NULL);
        expect_log(&run, "the descriptor's carve-out, matmul", 1,
                   "ampshim-emu: call cublasLtMatmul m=64 n=48 k=96 "
                   "type_ab=16F", targets[i], NULL);
    }
    expect_log(&run, "the descriptor's carve-out", 0,
               "ampshim-emu: call cublasLtMatmul m=64 n=48 k=96 type_ab=16F",
               "sm_count_target=0 ", NULL);
    amp_test_run_free(&run);
}

/* ---- atomic synchronisation ------------------------------------------------ */

/* With the attributes (cuBLAS 12.x's, the double's), the call passes
 * through: FP32's bits, no converted step, kept FP32 for atomic-sync in
 * the summary and the report; the other calls convert. */
static void
test_atomic_sync_passes_through(void **state)
{
    char dir[] = "/tmp/test_carveout.XXXXXX", report[64];
    const struct setting set[] = { { "AMPSHIM_REPORT", report },
                                   { NULL, NULL } };
    const struct amp_test_case *c;
    const struct amp_test_summary_line *l;
    struct amp_test_summary sum;
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_json *doc;
    char err[128], *text;
    double reason;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(report, sizeof report, "%s/r.json", dir);
    run_fp16(set, 1, &run, &check);
    c = case_named(&check, "lt_atomic_sync");
    if (strcmp(c->cls, "atomic") != 0) {
        amp_test_run_dump("atomic sync", &run);
        fail_msg("the double did not take the attributes");
    }
    if (strcmp(c->hash, case_named(&plain, "lt_atomic_sync")->hash) != 0) {
        amp_test_run_dump("atomic sync", &run);
        fail_msg("lt_atomic_sync: not FP32's bits: the call was converted");
    }
    expect_log(&run, "atomic sync", 0,
               "ampshim-emu: call cublasLtMatmul m=48 n=40 k=64 type_ab=16F",
               NULL);
    expect_log(&run, "atomic sync", 1,
               "ampshim-emu: call cublasLtMatmul m=48 n=40 k=64 type_ab=32F",
               NULL);
    amp_test_parse_summary(run.err, &sum);
    l = amp_test_summary_find(&sum, "cublasLtMatmul");
    if (!l || l->calls != 4 || l->converted != 3 || l->fp32 != 1 ||
        l->passthrough != 0) {
        amp_test_run_dump("atomic sync", &run);
        fail_msg("want cublasLtMatmul calls=4 converted=3 fp32=1");
    }
    text = amp_test_read_file(report);
    assert_non_null(text);
    doc = amp_json_parse(text, strlen(text), err, sizeof err);
    if (!doc)
        fail_msg("%s: %s", report, err);
    reason = amp_json_num(amp_json_get(amp_json_get(amp_json_get(doc,
                                                                 "totals"),
                                                    "fp32_reasons"),
                                       "atomic-sync"),
                          -1.0);
    if (reason != 1.0) {
        fprintf(stderr, "%s\n", text);
        fail_msg("the report's totals.fp32_reasons.atomic-sync is %g, "
                 "want 1", reason);
    }
    amp_json_free(doc);
    free(text);
    amp_test_run_free(&run);
    unlink(report);
    rmdir(dir);
}

/* ---- the cuBLASLt workspace ------------------------------------------------- */

/* The program's 12 MiB workspace for the converted call's heuristic query
 * and execution. */
static void
test_lt_program_workspace(void **state)
{
    struct amp_test_run run;
    struct amp_test_check check;

    (void)state;
    run_fp16(NULL, 0, &run, &check);
    expect_log(&run, "the program's workspace, heuristics", 2,
               "ampshim-emu: call cublasLtMatmulAlgoGetHeuristic m=64 n=48 "
               "k=96 type_ab=16F", "max_workspace=12582912", NULL);
    expect_log(&run, "the program's workspace, matmul", 2,
               "ampshim-emu: call cublasLtMatmul m=64 n=48 k=96 type_ab=16F",
               "workspace=12582912 ", NULL);
    amp_test_run_free(&run);
}

struct workspace_case {
    const char *gpu;
    const char *max;           /* the query's limit */
};

static const struct workspace_case workspace_cases[] = {
    { "h100", "max_workspace=33554432" }, /* compute capability 9.0 */
    { "a100", "max_workspace=4194304" },  /* 8.0 */
};

static const char *
workspace_label(const void *p)
{
    return ((const struct workspace_case *)p)->gpu;
}

/* No workspace from the program: the heuristic query within cuBLAS's
 * recommendation for the device, the execution with what the algorithm
 * needs (none at this shape). */
static void
test_lt_default_workspace(void **state)
{
    const struct workspace_case *wc = *state;
    const struct setting set[] = { { "AMPSHIM_EMU_GPU", wc->gpu },
                                   { NULL, NULL } };
    struct amp_test_run run;
    struct amp_test_check check;

    run_fp16(set, 0, &run, &check);
    expect_log(&run, wc->gpu, 1,
               "ampshim-emu: call cublasLtMatmulAlgoGetHeuristic m=80 n=56 "
               "k=72 type_ab=16F", wc->max, NULL);
    expect_log(&run, wc->gpu, 1,
               "ampshim-emu: call cublasLtMatmul m=80 n=56 k=72 type_ab=16F",
               "workspace=0 ", NULL);
    amp_test_run_free(&run);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgemm_sm_count_target),
        cmocka_unit_test(test_lt_sm_count_target),
        cmocka_unit_test(test_atomic_sync_passes_through),
        cmocka_unit_test(test_lt_program_workspace),
    };
    int failed = 0;

    if (argc != 5) {
        fprintf(stderr, "usage: %s CARVEOUT_CHECK LIBAMPSHIM LT_ATOMIC_SYNC "
                "EMU_DIR\n", argv[0]);
        return 2;
    }
    carveout_path = argv[1];
    libampshim_path = argv[2];
    atomic_sync_path = argv[3];
    emu_dir = argv[4];
    failed += _cmocka_run_group_tests("carve-out, atomic sync, workspace",
                                      tests, COUNT(tests), plain_setup,
                                      plain_teardown);
    failed += amp_test_run_parametrized(
        "default workspace", test_lt_default_workspace, workspace_cases,
        sizeof(workspace_cases[0]), COUNT(workspace_cases), "gpu",
        workspace_label, plain_setup, plain_teardown);
    return failed;
}
