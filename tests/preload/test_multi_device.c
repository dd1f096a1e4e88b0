/* Preload test of one process driving several devices: multi_device on
 * the emulator's 4 devices (AMPSHIM_EMU_DEVICES=4), in threads each on a
 * device of its own and in one thread switching devices between calls,
 * without the shim for the references, then under it in shadow (every
 * byte the plain run's: FP32 results) and in fp16, bf16 and tf32 (every
 * case converted, within its bound, the same hashes in two runs), each
 * run's report saying per device what ran there.
 *
 * usage: test_multi_device MULTI_DEVICE LIBAMPSHIM EMU_DIR CHECK_SCHEMA
 *        PYTHON3 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/json.h"
#include "harness.h"
#include "expect.h"

#define RUN_TIMEOUT_S 240
#define DEVICES 4
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *program_path;
static const char *libampshim_path;
static const char *emu_dir;
static const char *check_schema_path;
static const char *python_path;
static char report_dir[] = "/tmp/ampshim-multi-device-XXXXXX";

/* The two ways multi_device drives the devices. */
enum drive { DRIVE_THREADS, DRIVE_SWITCH, DRIVE_COUNT };
static const char *const drive_names[DRIVE_COUNT] = { "threads", "switch" };

/* A run's cases with the device each ran on. */
struct md_output {
    struct amp_test_check check;
    int device[AMP_TEST_MAX_CASES];
    int per_device[DEVICES];   /* cases */
};

/* The runs without the shim: the references. */
static struct amp_test_run plain_run[DRIVE_COUNT];
static struct md_output plain[DRIVE_COUNT];

/* Runs multi_device on the emulator's 4 devices with --tol tol: without
 * the shim when mode is NULL, else under it in that AMPSHIM_MODE with its
 * report written to report (when not NULL). */
static void
run_multi_device(enum drive drive, const char *mode, const char *tol,
                 const char *report, struct amp_test_run *run)
{
    char *argv[] = { (char *)program_path, (char *)"--tol", (char *)tol,
                     (char *)(drive == DRIVE_SWITCH ? "--switch"
                                                    : "--threads"),
                     drive == DRIVE_SWITCH ? NULL : (char *)"8", NULL };
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(&env, "AMPSHIM_EMU_DEVICES", "4");
    if (mode) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        amp_test_env_set(&env, "AMPSHIM_MODE", mode);
        if (report)
            amp_test_env_set(&env, "AMPSHIM_REPORT", report);
    }
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", program_path, strerror(errno));
    amp_test_env_free(&env);
}

/* Parses the case lines of run and the device each names. */
static void
parse_output(const struct amp_test_run *run, const char *what,
             struct md_output *o)
{
    const char *line = run->out;
    int i = 0;

    memset(o, 0, sizeof(*o));
    if (amp_test_parse_check(run->out, &o->check) != 0 ||
        !o->check.have_result) {
        amp_test_run_dump(what, run);
        fail_msg("%s: malformed output", what);
    }
    for (; line && *line; line = strchr(line, '\n'), line += line != NULL) {
        const char *dev;
        int d = -1;

        if (strncmp(line, "case ", 5) != 0)
            continue;
        dev = strstr(line, " device=");
        if (!dev || dev > strchr(line, '\n') || sscanf(dev, " device=%d",
                                                       &d) != 1 ||
            d < 0 || d >= DEVICES) {
            amp_test_run_dump(what, run);
            fail_msg("%s: case %d names no device of 0 to %d", what, i,
                     DEVICES - 1);
        }
        o->device[i++] = d;
        o->per_device[d]++;
    }
    assert_int_equal(i, o->check.count);
}

/* ---- The references --------------------------------------------------------- */

static int
plain_setup(void **state)
{
    (void)state;
    if (!mkdtemp(report_dir))
        return -1;
    for (int d = 0; d < DRIVE_COUNT; d++) {
        run_multi_device((enum drive)d, NULL, "tf32", NULL, &plain_run[d]);
        if (!plain_run[d].exited || plain_run[d].code != 0) {
            amp_test_run_dump("multi_device without the shim", &plain_run[d]);
            return -1;
        }
        parse_output(&plain_run[d], "multi_device without the shim",
                     &plain[d]);
    }
    return 0;
}

static int
plain_teardown(void **state)
{
    (void)state;
    for (int d = 0; d < DRIVE_COUNT; d++)
        amp_test_run_free(&plain_run[d]);
    rmdir(report_dir);
    return 0;
}

/* Without the shim: "devices: 4", every case passes, every device has its
 * share (threads: 8 threads of 5 cases on 4 devices; switch: 3 rounds of
 * an SGEMM per device, a strided batch and a convolution per device). */
static void
test_plain(void **state)
{
    (void)state;
    for (int d = 0; d < DRIVE_COUNT; d++) {
        int expected = d == DRIVE_SWITCH ? 5 : 10;

        assert_int_equal(amp_test_count_lines_with(plain_run[d].out,
                                                   "devices: 4"), 1);
        assert_int_equal(plain[d].check.count, expected * DEVICES);
        for (int i = 0; i < plain[d].check.count; i++) {
            if (plain[d].check.cases[i].ok)
                continue;
            amp_test_run_dump("multi_device without the shim",
                              &plain_run[d]);
            fail_msg("%s: case %s failed without the shim", drive_names[d],
                     plain[d].check.cases[i].name);
        }
        for (int dev = 0; dev < DEVICES; dev++)
            assert_int_equal(plain[d].per_device[dev], expected);
    }
}

/* ---- Under the shim ----------------------------------------------------------- */

struct mode_case {
    const char *mode;          /* AMPSHIM_MODE */
    const char *tol;
    enum drive drive;
};

static const struct mode_case mode_cases[] = {
    { "shadow", "tf32", DRIVE_THREADS },
    { "shadow", "tf32", DRIVE_SWITCH },
    { "fp16", "fp16", DRIVE_THREADS },
    { "fp16", "fp16", DRIVE_SWITCH },
    { "bf16", "bf16", DRIVE_THREADS },
    { "bf16", "bf16", DRIVE_SWITCH },
    { "tf32", "tf32", DRIVE_THREADS },
    { "tf32", "tf32", DRIVE_SWITCH },
};

static const char *
mode_label(const void *p)
{
    const struct mode_case *m = p;
    static char label[64];

    snprintf(label, sizeof label, "%s_%s", m->mode, drive_names[m->drive]);
    return label;
}

/* The report's devices: one per device, in order, each with as many calls
 * as multi_device's cases on it, every one converted (shadow: every one
 * a shadow call), and its name. */
static void
expect_report_devices(const char *path, const struct mode_case *m,
                      const struct md_output *out, const char *what)
{
    int shadow = strcmp(m->mode, "shadow") == 0;
    const struct amp_json *devices, *totals;
    struct amp_json *doc;
    char err[160], *text = amp_test_read_file(path);
    long sum = 0;

    if (!text)
        fail_msg("%s: no report at %s", what, path);
    doc = amp_json_parse(text, strlen(text), err, sizeof err);
    if (!doc)
        fail_msg("%s: report %s: %s", what, path, err);
    devices = amp_json_get(doc, "devices");
    totals = amp_json_get(doc, "totals");
    if (!devices || devices->type != AMP_JSON_ARRAY ||
        devices->count != DEVICES || !totals)
        fail_msg("%s: the report has no devices array of %d devices:\n%s",
                 what, DEVICES, text);
    for (int d = 0; d < DEVICES; d++) {
        const struct amp_json *o = &devices->items[d];
        double calls = amp_json_num(amp_json_get(o, "calls"), -1);
        double conv = amp_json_num(amp_json_get(o, "converted"), -1);
        double sh = amp_json_num(amp_json_get(o, "shadow"), -1);
        double flops = amp_json_num(amp_json_get(o, "flops_converted"), -1);
        const char *name = amp_json_str(amp_json_get(o, "name"));

        if (amp_json_num(amp_json_get(o, "ordinal"), -1) != d || !name ||
            !strstr(name, "(emulated)") || calls != out->per_device[d] ||
            conv != calls || sh != (shadow ? calls : 0) ||
            amp_json_num(amp_json_get(o, "fallback"), -1) != 0 ||
            !(shadow ? flops == 0 : flops > 0))
            fail_msg("%s: device %d: %s calls=%g converted=%g shadow=%g "
                     "flops_converted=%g; expected %d calls, all %s", what,
                     d, name ? name : "(no name)", calls, conv, sh, flops,
                     out->per_device[d], shadow ? "shadow" : "converted");
        sum += (long)calls;
    }
    /* Every call is some device's. */
    if (amp_json_num(amp_json_get(totals, "calls"), -1) != sum)
        fail_msg("%s: totals.calls is not the devices' %ld", what, sum);
    amp_json_free(doc);
    free(text);
}

/* The report conforms to docs/report-schema.md (check_schema.py). */
static void
expect_schema(const char *path, const char *what)
{
    char *argv[] = { (char *)python_path, (char *)check_schema_path,
                     (char *)path, NULL };
    struct amp_test_run run;
    struct amp_test_env env;

    amp_test_env_init(&env);
    if (amp_test_run(argv, &env, 60, &run) != 0)
        fail_msg("cannot start %s", python_path);
    amp_test_env_free(&env);
    if (!run.exited || run.code != 0) {
        amp_test_run_dump("check_schema.py", &run);
        fail_msg("%s: the report does not conform to the schema", what);
    }
    amp_test_run_free(&run);
}

/* Every summary line: every call converted. */
static void
expect_all_converted(const struct amp_test_run *run, const char *what)
{
    struct amp_test_summary sum;

    amp_test_parse_summary(run->err, &sum);
    if (sum.malformed || sum.count == 0) {
        amp_test_run_dump(what, run);
        fail_msg("%s: no summary", what);
    }
    for (int i = 0; i < sum.count; i++) {
        const struct amp_test_summary_line *l = &sum.lines[i];

        if (l->calls > 0 && l->converted == l->calls)
            continue;
        amp_test_run_dump(what, run);
        fail_msg("%s: %s calls=%ld converted=%ld fallback=%ld", what,
                 l->api, l->calls, l->converted, l->fallback);
    }
}

static void
test_mode(void **state)
{
    const struct mode_case *m = *state;
    const struct md_output *ref = &plain[m->drive];
    struct amp_test_run run[2];
    struct md_output out[2];
    char what[96], report[2][sizeof report_dir + 64];

    for (int r = 0; r < 2; r++) {
        snprintf(what, sizeof what, "multi_device --%s under %s (run %d)",
                 drive_names[m->drive], m->mode, r + 1);
        snprintf(report[r], sizeof report[r], "%s/%s_%s_%d.json", report_dir,
                 m->mode, drive_names[m->drive], r);
        unlink(report[r]);
        run_multi_device(m->drive, m->mode, m->tol, report[r], &run[r]);
        amp_test_expect_exit(&run[r], 0, what);
        if (strcmp(m->mode, "shadow") == 0) {
            /* FP32 results: the plain run's bytes, line for line. */
            amp_test_expect_plain_stdout(&run[r], &plain_run[m->drive],
                                         what);
        }
        amp_test_expect_cases_pass(&run[r], &ref->check, what,
                                   &out[r].check);
        parse_output(&run[r], what, &out[r]);
        for (int i = 0; i < out[r].check.count; i++)
            if (out[r].device[i] != ref->device[i])
                fail_msg("%s: case %s on device %d, plain on %d", what,
                         out[r].check.cases[i].name, out[r].device[i],
                         ref->device[i]);
        expect_all_converted(&run[r], what);
        expect_report_devices(report[r], m, &out[r], what);
        expect_schema(report[r], what);
    }
    /* Deterministic: the same bytes in both runs. */
    for (int i = 0; i < out[0].check.count; i++)
        if (strcmp(out[0].check.cases[i].hash, out[1].check.cases[i].hash))
            fail_msg("%s: case %s: hash %s, then %s", m->mode,
                     out[0].check.cases[i].name, out[0].check.cases[i].hash,
                     out[1].check.cases[i].hash);
    for (int r = 0; r < 2; r++) {
        unlink(report[r]);
        amp_test_run_free(&run[r]);
    }
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest plain_tests[] = {
        cmocka_unit_test(test_plain),
    };
    int failed = 0;

    if (argc != 6) {
        fprintf(stderr, "usage: %s MULTI_DEVICE LIBAMPSHIM EMU_DIR "
                "CHECK_SCHEMA PYTHON3\n", argv[0]);
        return 2;
    }
    program_path = argv[1];
    libampshim_path = argv[2];
    emu_dir = argv[3];
    check_schema_path = argv[4];
    python_path = argv[5];
    if (access(program_path, X_OK) != 0 ||
        access(libampshim_path, R_OK) != 0) {
        fprintf(stderr, "%s: missing %s or %s\n", argv[0], program_path,
                libampshim_path);
        return 1;
    }
    failed += _cmocka_run_group_tests("plain", plain_tests,
                                      COUNT(plain_tests), plain_setup, NULL);
    failed += amp_test_run_parametrized(
        "modes", test_mode, mode_cases, sizeof(mode_cases[0]),
        COUNT(mode_cases), "mode", mode_label, NULL, plain_teardown);
    return failed;
}
