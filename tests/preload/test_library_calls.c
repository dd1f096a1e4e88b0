/* Calls that an NVIDIA library makes (the cuSOLVER stand-in,
 * libcusolver.so.12, whose trailing update runs 4 SGEMMs through its own
 * imports of cuBLAS) pass through: under every forced mode its result is
 * FP32's bit for bit, and the report counts those calls apart
 * (coverage.fp32_kept.library, the library's site's fp32_reasons.library)
 * while the program's own SGEMM is converted. A policy's `set
 * library-calls convert` lets its rules convert them.
 *
 * usage: test_library_calls LIBRARY_GEMM LIBAMPSHIM EMU_DIR */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "harness.h"

#define RUN_TIMEOUT_S 120

/* library_gemm's sizes: the library's 4 GEMMs of 96 x 96 x 32. */
#define LIBRARY_CALLS 4
#define LIBRARY_FLOPS (LIBRARY_CALLS * 2.0 * 96 * 96 * 32)

static const char *program, *libampshim_path, *emu_dir;

struct hashes {
    char library[17], program[17];
};

/* Runs library_gemm (without the shim when mode and policy are NULL),
 * its report in `report` when not NULL. */
static void
run(const char *mode, const char *policy, const char *report,
    struct amp_test_run *r, struct hashes *h)
{
    char *argv[] = {(char *)program, NULL};
    struct amp_test_env env;
    const char *at;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (mode || policy)
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
    if (mode)
        amp_test_env_set(&env, "AMPSHIM_MODE", mode);
    if (policy)
        amp_test_env_set(&env, "AMPSHIM_POLICY", policy);
    if (report)
        amp_test_env_set(&env, "AMPSHIM_REPORT", report);
    assert_int_equal(amp_test_run(argv, &env, RUN_TIMEOUT_S, r), 0);
    amp_test_env_free(&env);
    if (!r->exited || r->code != 0 ||
        !(at = strstr(r->out, "library status=0 hash=")) ||
        sscanf(at, "library status=0 hash=%16s", h->library) != 1 ||
        !(at = strstr(r->out, "program status=0 hash=")) ||
        sscanf(at, "program status=0 hash=%16s", h->program) != 1) {
        amp_test_run_dump("library_gemm", r);
        fail_msg("library_gemm: expected two successful products");
    }
}

/* The summary line of cublasSgemm_v2 has these counts. */
static void
expect_summary(const struct amp_test_run *r, long calls, long converted,
               long fp32, const char *what)
{
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;

    amp_test_parse_summary(r->err, &sum);
    l = amp_test_summary_find(&sum, "cublasSgemm_v2");
    if (!l || l->calls != calls || l->converted != converted ||
        l->fp32 != fp32) {
        amp_test_run_dump(what, r);
        fail_msg("%s: expected cublasSgemm_v2 calls=%ld converted=%ld "
                 "fp32=%ld", what, calls, converted, fp32);
    }
}

/* The report's count of library-internal calls: coverage.fp32_kept.library
 * (calls and FLOPs) and the library's site's fp32_reasons.library. */
static void
expect_report(const char *path, long calls, const char *what)
{
    const struct amp_json *kind, *sites;
    struct amp_json *doc;
    char err[128], *text = amp_test_read_file(path);
    long site_calls = 0;

    if (!text)
        fail_msg("%s: no report at %s", what, path);
    doc = amp_json_parse(text, strlen(text), err, sizeof err);
    if (!doc)
        fail_msg("%s: report: %s", what, err);
    kind = amp_json_get(amp_json_get(amp_json_get(doc, "coverage"),
                                     "fp32_kept"), "library");
    print_message("  coverage.fp32_kept.library: calls %.0f, flops %.0f\n",
                  amp_json_num(amp_json_get(kind, "calls"), -1),
                  amp_json_num(amp_json_get(kind, "flops"), -1));
    if (amp_json_num(amp_json_get(kind, "calls"), -1) != calls ||
        amp_json_num(amp_json_get(kind, "flops"), -1) !=
            (calls ? LIBRARY_FLOPS : 0))
        fail_msg("%s: expected coverage.fp32_kept.library calls %ld", what,
                 calls);
    sites = amp_json_get(doc, "sites");
    for (size_t i = 0; sites && i < sites->count; i++) {
        const char *module =
            amp_json_str(amp_json_get(&sites->items[i], "module"));

        if (module && strstr(module, "libcusolver.so.12"))
            site_calls += (long)amp_json_num(
                amp_json_get(amp_json_get(&sites->items[i], "fp32_reasons"),
                             "library"), 0);
    }
    if (site_calls != calls)
        fail_msg("%s: the library's site: fp32_reasons.library %ld, "
                 "expected %ld", what, site_calls, calls);
    amp_json_free(doc);
    free(text);
}

static char report_path[64], policy_path[64];

/* Under every forced mode: the library's result is FP32's bit for bit
 * and counted as library-internal; the program's own call converts. */
static void
test_forced_modes_pass_library_calls(void **state)
{
    static const char *const modes[] = {"fp16", "bf16", "tf32", "fp16x3"};
    struct amp_test_run plain_run;
    struct hashes plain;

    (void)state;
    run(NULL, NULL, NULL, &plain_run, &plain);
    print_message("without the shim: library %s, program %s\n",
                  plain.library, plain.program);
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        struct amp_test_run r;
        struct hashes h;

        unlink(report_path);
        run(modes[m], NULL, report_path, &r, &h);
        print_message("AMPSHIM_MODE=%s: library %s, program %s\n", modes[m],
                      h.library, h.program);
        if (strcmp(h.library, plain.library) != 0) {
            amp_test_run_dump(modes[m], &r);
            fail_msg("AMPSHIM_MODE=%s: the library's result differs from "
                     "FP32's", modes[m]);
        }
        if (strcmp(modes[m], "fp16x3") != 0)
            assert_string_not_equal(h.program, plain.program);
        expect_summary(&r, LIBRARY_CALLS + 1, 1, LIBRARY_CALLS, modes[m]);
        expect_report(report_path, LIBRARY_CALLS, modes[m]);
        amp_test_run_free(&r);
    }
    amp_test_run_free(&plain_run);
}

static void
write_policy(const char *text)
{
    FILE *f = fopen(policy_path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A policy converts the program's calls and not the library's, unless it
 * says `set library-calls convert`. */
static void
test_policy_opt_in(void **state)
{
    struct amp_test_run plain_run, r;
    struct hashes plain, h;

    (void)state;
    run(NULL, NULL, NULL, &plain_run, &plain);
    write_policy("default fp16\n");
    unlink(report_path);
    run(NULL, policy_path, report_path, &r, &h);
    print_message("default fp16: library %s, program %s\n", h.library,
                  h.program);
    assert_string_equal(h.library, plain.library);
    assert_string_not_equal(h.program, plain.program);
    expect_summary(&r, LIBRARY_CALLS + 1, 1, LIBRARY_CALLS, "default fp16");
    expect_report(report_path, LIBRARY_CALLS, "default fp16");
    amp_test_run_free(&r);

    write_policy("set library-calls convert\ndefault fp16\n");
    unlink(report_path);
    run(NULL, policy_path, report_path, &r, &h);
    print_message("set library-calls convert, default fp16: library %s, "
                  "program %s\n", h.library, h.program);
    assert_string_not_equal(h.library, plain.library);
    expect_summary(&r, LIBRARY_CALLS + 1, LIBRARY_CALLS + 1, 0,
                   "set library-calls convert");
    expect_report(report_path, 0, "set library-calls convert");
    amp_test_run_free(&r);

    /* Opted in, a rule still picks: the library's module stays FP32. */
    write_policy("set library-calls convert\n"
                 "rule fp32 when module \"libcusolver*\"\ndefault fp16\n");
    run(NULL, policy_path, NULL, &r, &h);
    assert_string_equal(h.library, plain.library);
    assert_string_not_equal(h.program, plain.program);
    amp_test_run_free(&r);
    amp_test_run_free(&plain_run);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forced_modes_pass_library_calls),
        cmocka_unit_test(test_policy_opt_in),
    };
    int failed;

    if (argc != 4) {
        fprintf(stderr, "usage: test_library_calls LIBRARY_GEMM LIBAMPSHIM "
                "EMU_DIR\n");
        return 2;
    }
    program = argv[1];
    libampshim_path = argv[2];
    emu_dir = argv[3];
    snprintf(report_path, sizeof report_path, "/tmp/amp_library_%d.json",
             (int)getpid());
    snprintf(policy_path, sizeof policy_path, "/tmp/amp_library_%d.policy",
             (int)getpid());
    failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(report_path);
    unlink(policy_path);
    return failed;
}
