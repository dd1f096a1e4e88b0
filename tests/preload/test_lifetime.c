/* Preload tests of contexts and threads that end under the shim
 * (docs/design.md, invariant 9), on the emulator, under AMPSHIM_MODE=fp16:
 * - static_reset: a program with the CUDA runtime linked statically, as
 *   the driver sees it (every driver function from cuGetProcAddress),
 *   resets the device through the cuDevicePrimaryCtxReset it was given,
 *   SGEMMs still queued, then makes new buffers and converts again: both
 *   rounds within the FP16 bound, every call converted and timed, none
 *   fallen back or unmeasured; and under AMPSHIM_MODE=fp32, where the shim
 *   sets nothing up on the device and no context is current at exit, the
 *   report and the exit table still name the device the calls ran on;
 * - dlsym_loader: a loader that takes every function from its own dlopen
 *   handles with dlsym, the context-ending ones included, ends four
 *   contexts (cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxReset_v2,
 *   cuCtxDestroy_v2, cudaDeviceReset), SGEMMs queued in each: under
 *   AMPSHIM_MODE=shadow:fp16 every call's shadow check is measured and
 *   timed, none unmeasured;
 * - thread_exit: threads that made converted SGEMMs and a convolution
 *   exit one after another; with the emulator's call log on, no
 *   device-wide synchronisation (`ampshim-emu: call cuCtxSynchronize`)
 *   between the lines the program prints around each join, and the later
 *   thread converts too;
 * - primary_retain: a library retains and releases the primary context
 *   around each SGEMM, 100 rounds while the runtime holds it, after two
 *   cycles in which its release is the last one (a new context each):
 *   every call converted and timed (no context-table exhaustion), device
 *   memory at exit what the program leaves plus the shim's records of the
 *   one context still alive; and after a first call whose cast kernel's
 *   launch fails (an injected fault), the key's next call takes the two
 *   passes and the one after the one-pass delayed cast (the emulator's
 *   kernel launch counts).
 *
 * usage: test_lifetime static_reset|dlsym_loader|thread_exit|primary_retain
 *        PROGRAM LIBAMPSHIM EMU_DIR */
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

#define RUN_TIMEOUT_S 120
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *prog_path;
static const char *libampshim_path;
static const char *emu_dir;

static struct amp_test_run plain_run;
static struct amp_test_check plain;

/* The shim's records (src/device/device.h: AMP_DEV_RECORDS records of
 * AMP_DEV_RECORD_BYTES), device memory an FP16 GEMM makes once per
 * context and keeps for the context's life. */
#define SHIM_RECORD_BYTES (256 * 64)

/* The program on the emulator with tolerance tol; with `report` (a path),
 * under the shim in `mode` (AMPSHIM_MODE) writing its report there. */
static void
run_prog(const char *tol, const char *mode, const char *report,
         struct amp_test_run *run)
{
    char *argv[] = { (char *)prog_path, (char *)tol, NULL };
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(&env, "AMPSHIM_EMU_CALL_LOG", "1");
    amp_test_env_set(&env, "AMPSHIM_EMU_MEMCHECK", "1");
    if (report) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        amp_test_env_set(&env, "AMPSHIM_MODE", mode);
        amp_test_env_set(&env, "AMPSHIM_REPORT", report);
    }
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", prog_path, strerror(errno));
    amp_test_env_free(&env);
}

static int
plain_setup(void **state)
{
    (void)state;
    /* tf32: cuDNN's default math on the emulated Hopper. */
    run_prog("tf32", NULL, NULL, &plain_run);
    if (!plain_run.exited || plain_run.code != 0 ||
        amp_test_parse_check(plain_run.out, &plain) != 0 ||
        !plain.have_result || plain.count == 0) {
        amp_test_run_dump("without the shim", &plain_run);
        fprintf(stderr, "%s does not pass without the shim\n", prog_path);
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

/* Member of the report by a dotted path ("sites.0.time.calls_timed"), or
 * NULL. */
static const struct amp_json *
report_at(const struct amp_json *v, const char *path)
{
    char buf[128], *save = NULL, *part;

    snprintf(buf, sizeof buf, "%s", path);
    for (part = strtok_r(buf, ".", &save); part && v;
         part = strtok_r(NULL, ".", &save)) {
        if (v->type == AMP_JSON_ARRAY) {
            size_t i = strtoul(part, NULL, 10);

            v = i < v->count ? &v->items[i] : NULL;
        } else {
            v = amp_json_get(v, part);
        }
    }
    return v;
}

static double
report_num(const struct amp_json *rep, const char *path)
{
    const struct amp_json *v = report_at(rep, path);

    if (!v || v->type != AMP_JSON_NUMBER)
        fail_msg("the report has no number %s", path);
    return v->number;
}

static const char *
report_str(const struct amp_json *rep, const char *path)
{
    const struct amp_json *v = report_at(rep, path);

    if (!v || v->type != AMP_JSON_STRING)
        fail_msg("the report has no string %s", path);
    return v->string;
}

/* Under the shim in fp16: the run passes every plain case within the FP16
 * bound; its summary for api and its report count `calls` calls, all
 * converted and timed. */
static void
expect_all_converted(const char *api, int calls, struct amp_test_run *run)
{
    char dir[] = "/tmp/test_lifetime.XXXXXX", report[64], err[128], key[64];
    const struct amp_test_summary_line *l;
    struct amp_test_summary sum;
    struct amp_test_check check;
    struct amp_json *rep;
    const struct amp_json *sites;
    char *text;
    int timed = 0;

    assert_non_null(mkdtemp(dir));
    snprintf(report, sizeof report, "%s/r.json", dir);
    run_prog("fp16", "fp16", report, run);
    amp_test_expect_exit(run, 0, "fp16");
    amp_test_expect_cases_pass(run, &plain, "fp16", &check);
    amp_test_parse_summary(run->err, &sum);
    l = amp_test_summary_find(&sum, api);
    if (!l || l->calls != calls || l->converted != calls || l->fallback ||
        l->fp32 || l->passthrough) {
        amp_test_run_dump("fp16", run);
        fail_msg("want the summary's %s calls=%d converted=%d, no other "
                 "outcome", api, calls, calls);
    }
    text = amp_test_read_file(report);
    if (!text)
        fail_msg("no report %s", report);
    rep = amp_json_parse(text, strlen(text), err, sizeof err);
    if (!rep)
        fail_msg("%s: %s", report, err);
    sites = amp_json_get(rep, "sites");
    assert_non_null(sites);
    for (size_t i = 0; i < sites->count; i++) {
        snprintf(key, sizeof key, "sites.%zu.time.calls_timed", i);
        timed += (int)report_num(rep, key);
        /* Past a shape's first converted calls, sampled: the others at
         * the timed ones' mean. */
        snprintf(key, sizeof key,
                 "sites.%zu.time.calls_converted_estimated", i);
        timed += (int)report_num(rep, key);
    }
    if (report_num(rep, "totals.converted") !=
            report_num(rep, "totals.calls") ||
        report_num(rep, "totals.fallback") != 0 ||
        report_num(rep, "totals.unmeasured") != 0 ||
        timed != (int)report_num(rep, "totals.converted")) {
        fprintf(stderr, "%s\n", text);
        amp_test_run_dump("fp16", run);
        fail_msg("report: calls=%g converted=%g fallback=%g unmeasured=%g "
                 "timed=%d; want every call converted and timed",
                 report_num(rep, "totals.calls"),
                 report_num(rep, "totals.converted"),
                 report_num(rep, "totals.fallback"),
                 report_num(rep, "totals.unmeasured"), timed);
    }
    amp_json_free(rep);
    free(text);
    unlink(report);
    rmdir(dir);
}

/* ---- A statically linked runtime's reset -------------------------------- */

/* static_reset: 3 checked calls and 3 queued at the reset, then 3 checked
 * in the primary context made again at the same address. */
static void
test_static_reset(void **state)
{
    struct amp_test_run run;

    (void)state;
    expect_all_converted("cublasSgemm_v2", 9, &run);
    amp_test_run_free(&run);
}

/* static_reset under AMPSHIM_MODE=fp32: every call kept FP32, so the shim
 * never sets up its state in a context, and the program has released the
 * primary context at exit. The report's device and the exit table still
 * name the device its calls ran on (the report's devices[0], named by
 * its ordinal), not "none". */
static void
test_static_reset_device_named(void **state)
{
    char dir[] = "/tmp/test_lifetime.XXXXXX", report[64], err[128];
    char line[256];
    struct amp_test_run run;
    struct amp_json *rep;
    const char *name;
    char *text;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(report, sizeof report, "%s/r.json", dir);
    run_prog("fp32", "fp32", report, &run);
    amp_test_expect_exit(&run, 0, "fp32");
    text = amp_test_read_file(report);
    if (!text)
        fail_msg("no report %s", report);
    rep = amp_json_parse(text, strlen(text), err, sizeof err);
    if (!rep)
        fail_msg("%s: %s", report, err);
    assert_int_equal((int)report_num(rep, "totals.fp32"), 9);
    name = report_str(rep, "devices.0.name");
    snprintf(line, sizeof line, "| times modelled on %s;", name);
    if (!report_at(rep, "device.reported_name") ||
        report_at(rep, "device.reported_name")->type != AMP_JSON_STRING ||
        strcmp(report_str(rep, "device.reported_name"), name) != 0 ||
        amp_test_count_lines_with(run.err, line) != 1) {
        fprintf(stderr, "%s\n", text);
        amp_test_run_dump("fp32", &run);
        fail_msg("want the device named %s in the report and the exit "
                 "table after the reset", name);
    }
    amp_json_free(rep);
    free(text);
    amp_test_run_free(&run);
    unlink(report);
    rmdir(dir);
}

/* ---- A loader's own lookups --------------------------------------------- */

/* dlsym_loader under AMPSHIM_MODE=shadow:fp16: 4 rounds of 3 checked and
 * 3 queued calls, each round's context ended through a function the
 * program took with dlsym. Every call is a shadow call whose error and
 * times the report has: the shim harvested each context before it
 * ended. */
static void
test_dlsym_loader(void **state)
{
    char dir[] = "/tmp/test_lifetime.XXXXXX", report[64], err[128], key[64];
    const int calls = 24;
    const struct amp_test_summary_line *l;
    struct amp_test_summary sum;
    struct amp_test_check check;
    struct amp_test_run run;
    struct amp_json *rep;
    int measured = 0, timed = 0;
    size_t nsites;
    char *text;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(report, sizeof report, "%s/r.json", dir);
    run_prog("fp16", "shadow:fp16", report, &run);
    amp_test_expect_exit(&run, 0, "shadow:fp16");
    amp_test_expect_cases_pass(&run, &plain, "shadow:fp16", &check);
    amp_test_parse_summary(run.err, &sum);
    l = amp_test_summary_find(&sum, "cublasSgemm_v2");
    if (!l || l->calls != calls || l->converted != calls ||
        l->shadow != calls || l->fallback || l->fp32 || l->passthrough) {
        amp_test_run_dump("shadow:fp16", &run);
        fail_msg("want the summary's cublasSgemm_v2 calls=%d, every one a "
                 "measured shadow call", calls);
    }
    text = amp_test_read_file(report);
    if (!text)
        fail_msg("no report %s", report);
    rep = amp_json_parse(text, strlen(text), err, sizeof err);
    if (!rep)
        fail_msg("%s: %s", report, err);
    nsites = report_at(rep, "sites")->count;
    for (size_t i = 0; i < nsites; i++) {
        snprintf(key, sizeof key, "sites.%zu.errors.shadow_calls", i);
        measured += (int)report_num(rep, key);
        snprintf(key, sizeof key, "sites.%zu.time.calls_timed", i);
        timed += (int)report_num(rep, key);
    }
    if (report_num(rep, "totals.calls") != calls ||
        report_num(rep, "totals.unmeasured") != 0 || measured != calls ||
        timed != calls) {
        fprintf(stderr, "%s\n", text);
        amp_test_run_dump("shadow:fp16", &run);
        fail_msg("report: calls=%g unmeasured=%g shadow checks measured=%d "
                 "timed=%d; want all %d measured and timed",
                 report_num(rep, "totals.calls"),
                 report_num(rep, "totals.unmeasured"), measured, timed,
                 calls);
    }
    amp_json_free(rep);
    free(text);
    amp_test_run_free(&run);
    unlink(report);
    rmdir(dir);
}

/* ---- Thread exit -------------------------------------------------------- */

/* Lines of text between the line containing `from` and the next one
 * containing `to` that contain needle; -1 when the markers are not
 * there. */
static int
count_between(const char *text, const char *from, const char *to,
              const char *needle)
{
    const char *start = strstr(text, from), *end;
    int n = 0;

    if (!start || !(end = strstr(start, to)))
        return -1;
    for (const char *p = strstr(start, needle); p && p < end;
         p = strstr(p + 1, needle))
        n++;
    return n;
}

/* thread_exit: two workers, each 2 SGEMMs and a convolution; no
 * cuCtxSynchronize while either exits; both convert every call. */
static void
test_thread_exit(void **state)
{
    static const char *const apis[] = { "cublasSgemm_v2",
                                        "cudnnConvolutionForward" };
    static const int calls[] = { 4, 2 };
    struct amp_test_run run;
    struct amp_test_summary sum;

    (void)state;
    expect_all_converted(apis[0], calls[0], &run);
    amp_test_parse_summary(run.err, &sum);
    for (size_t i = 1; i < COUNT(apis); i++) {
        const struct amp_test_summary_line *l =
            amp_test_summary_find(&sum, apis[i]);

        if (!l || l->calls != calls[i] || l->converted != calls[i]) {
            amp_test_run_dump("fp16", &run);
            fail_msg("want the summary's %s calls=%d converted=%d", apis[i],
                     calls[i], calls[i]);
        }
    }
    for (int w = 0; w < 2; w++) {
        char from[64], to[64];
        int n;

        snprintf(from, sizeof from, "thread_exit: joining worker %d\n", w);
        snprintf(to, sizeof to, "thread_exit: joined worker %d\n", w);
        n = count_between(run.err, from, to,
                          "ampshim-emu: call cuCtxSynchronize");
        printf("worker %d: %d cuCtxSynchronize line(s) while it exits\n", w,
               n);
        if (n != 0) {
            amp_test_run_dump("fp16", &run);
            fail_msg("worker %d: %d device-wide synchronisations while it "
                     "exits, want 0 (markers %s)", w, n,
                     n < 0 ? "missing" : "found");
        }
    }
    amp_test_run_free(&run);
}

/* ---- A library's retain and release of the primary context ------------- */

/* "ampshim-emu: device memory at exit: N bytes": N, or -1. */
static long
device_at_exit(const struct amp_test_run *run)
{
    const char *line = strstr(run->err, "device memory at exit: ");
    long bytes = -1;

    if (line)
        sscanf(line, "device memory at exit: %ld bytes", &bytes);
    return bytes;
}

/* primary_retain: 2 SGEMMs in contexts whose release is the last, then
 * 100 between a library's retain and release while the runtime holds the
 * context: all 102 converted and timed, and at exit the device holds what
 * the program left plus the records of the one context still alive (a
 * context the shim took for ended would leave its records behind, and
 * after 64 such the calls would stay FP32). */
static void
test_primary_retain(void **state)
{
    struct amp_test_run run;
    long plain_bytes = device_at_exit(&plain_run), bytes;

    (void)state;
    expect_all_converted("cublasSgemm_v2", 102, &run);
    bytes = device_at_exit(&run);
    printf("device memory at exit: %ld bytes without the shim, %ld with\n",
           plain_bytes, bytes);
    if (plain_bytes < 0 || bytes != plain_bytes + SHIM_RECORD_BYTES) {
        amp_test_run_dump("fp16", &run);
        fail_msg("device memory at exit %ld bytes, want %ld (the program's) "
                 "+ %d (the records of one context)", bytes, plain_bytes,
                 SHIM_RECORD_BYTES);
    }
    amp_test_run_free(&run);
}

/* Launches of kernel `name` in the emulator's kernel statistics
 * ("ampshim-emu: kernel NAME launches=N ..."); 0 when it never ran. */
static long
kernel_launches(const char *err, const char *name)
{
    char want[96];
    const char *line;
    long n = 0;

    snprintf(want, sizeof want, "ampshim-emu: kernel %s launches=", name);
    line = strstr(err, want);
    if (line)
        sscanf(line + strlen(want), "%ld", &n);
    return n;
}

/* The shim's first launch in the process is its first call's scales
 * kernel (the two-pass cast's first pass), the second that call's cast:
 * AMPSHIM_EMU_FAIL=launch:2 fails the cast after the scales kernel, which
 * sets the record, was queued. */
#define FIRST_CAST_LAUNCH "launch:2"

/* primary_retain fp16 3 0: three calls at one key (site, shape, stream).
 * The first one's cast launch fails: it falls back to FP32 and gives its
 * record up; the second takes the two passes (scales, cast) and the
 * third the one-pass delayed cast (with its recast check). */
static void
test_fault_then_one_pass(void **state)
{
    char *argv[] = { (char *)prog_path, (char *)"fp16", (char *)"3",
                     (char *)"0", NULL };
    static const struct {
        const char *kernel;
        long launches;
    } want[] = {
        { "amp_k_gemm_scales", 2 },       /* the first call's, the second's */
        { "amp_k_gemm_cast", 1 },         /* the second call's */
        { "amp_k_gemm_cast_delayed", 1 }, /* the third call's */
        { "amp_k_gemm_recast", 1 },       /* the third call's check */
    };
    struct amp_test_env env;
    struct amp_test_run run;
    struct amp_test_summary sum;
    const struct amp_test_summary_line *l;
    int wrong = 0;

    (void)state;
    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
    amp_test_env_set(&env, "AMPSHIM_MODE", "fp16");
    amp_test_env_set(&env, "AMPSHIM_EMU_FAIL", FIRST_CAST_LAUNCH);
    amp_test_env_set(&env, "AMPSHIM_EMU_KERNEL_STATS", "1");
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, &run) != 0)
        fail_msg("cannot start %s: %s", prog_path, strerror(errno));
    amp_test_env_free(&env);
    amp_test_expect_exit(&run, 0, "fp16, first cast launch failing");
    amp_test_parse_summary(run.err, &sum);
    l = amp_test_summary_find(&sum, "cublasSgemm_v2");
    if (!l || l->calls != 3 || l->converted != 2 || l->fallback != 1) {
        amp_test_run_dump("fp16, first cast launch failing", &run);
        fail_msg("want the summary's cublasSgemm_v2 calls=3 converted=2 "
                 "fallback=1");
    }
    for (size_t i = 0; i < COUNT(want); i++) {
        long n = kernel_launches(run.err, want[i].kernel);

        printf("%s: %ld launch(es), want %ld\n", want[i].kernel, n,
               want[i].launches);
        wrong += n != want[i].launches;
    }
    if (wrong) {
        amp_test_run_dump("fp16, first cast launch failing", &run);
        fail_msg("after a first call whose cast failed, want the next call "
                 "in two passes and the one after in one");
    }
    amp_test_run_free(&run);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest reset_tests[] = {
        cmocka_unit_test(test_static_reset),
        cmocka_unit_test(test_static_reset_device_named),
    };
    const struct CMUnitTest loader_tests[] = {
        cmocka_unit_test(test_dlsym_loader),
    };
    const struct CMUnitTest exit_tests[] = {
        cmocka_unit_test(test_thread_exit),
    };
    const struct CMUnitTest retain_tests[] = {
        cmocka_unit_test(test_primary_retain),
        cmocka_unit_test(test_fault_then_one_pass),
    };

    if (argc != 5) {
        fprintf(stderr, "usage: %s static_reset|dlsym_loader|thread_exit|"
                "primary_retain PROGRAM LIBAMPSHIM EMU_DIR\n", argv[0]);
        return 2;
    }
    prog_path = argv[2];
    libampshim_path = argv[3];
    emu_dir = argv[4];
    if (strcmp(argv[1], "static_reset") == 0)
        return _cmocka_run_group_tests("static runtime reset", reset_tests,
                                       COUNT(reset_tests), plain_setup,
                                       plain_teardown);
    if (strcmp(argv[1], "dlsym_loader") == 0)
        return _cmocka_run_group_tests("loader's own lookups", loader_tests,
                                       COUNT(loader_tests), plain_setup,
                                       plain_teardown);
    if (strcmp(argv[1], "thread_exit") == 0)
        return _cmocka_run_group_tests("thread exit", exit_tests,
                                       COUNT(exit_tests), plain_setup,
                                       plain_teardown);
    if (strcmp(argv[1], "primary_retain") == 0)
        return _cmocka_run_group_tests("primary context retained",
                                       retain_tests, COUNT(retain_tests),
                                       plain_setup, plain_teardown);
    fprintf(stderr, "%s: no group %s\n", argv[0], argv[1]);
    return 2;
}
