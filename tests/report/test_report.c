/* The report, the call log, the exit table, the trace and the tool, with
 * report_prog under the shim on the emulator, whose modelled times the
 * test computes from the emulator's own roofline (emu_model_ns), and the
 * convolutions' FLOPs with conv_check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/json.h"
#include "emu.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog, *shim, *emu_dir, *tool, *python, *schema;
static const char *conv_prog;
static char dir[] = "/tmp/ampshim-report-XXXXXX";
static char policy[256];

#define M 256
#define N 128
#define K 512
#define CALLS 5

/* Modelled milliseconds of an m x n x k GEMM of report_prog at `prec`
 * (beta 0: A, B read, C written). */
static double
gemm_ms_of(double m, double n, double k, enum emu_prec prec)
{
    double bytes = 4.0 * (m * k + k * n + m * n);

    return emu_model_ns(2.0 * m * n * k, prec, bytes) / 1e6;
}

static double
gemm_ms(enum emu_prec prec)
{
    return gemm_ms_of(M, N, K, prec);
}

/* The model's least time to compare `calls` m x n results with FP32's:
 * reading both. */
static double
least_check_ms(double calls, double m, double n)
{
    return calls * emu_model_ns(0.0, EMU_PREC_NONE, 2.0 * 4.0 * m * n) / 1e6;
}

/* The comparisons with FP32 of the shadow calls of an entry of the report
 * (at prefix): the report's own time, which the program waits for, so
 * counted in actual_ms; no less than `least`. */
static double
check_ms(const struct amp_json *rep, const char *prefix, double least);

static void
env_for(struct amp_test_env *env, const char *report)
{
    amp_test_env_init(env);
    amp_test_env_set(env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(env, "LD_PRELOAD", shim);
    amp_test_env_set(env, "AMPSHIM_POLICY", policy);
    if (report)
        amp_test_env_set(env, "AMPSHIM_REPORT", report);
}

/* Runs report_prog with env and extra arguments (NULL-terminated). */
static void
run_prog(struct amp_test_env *env, struct amp_test_run *r, ...)
{
    char m[16], n[16], k[16], calls[16];
    char *argv[32] = {(char *)prog, "--m", m, "--n", n, "--k", k, "--calls",
                      calls};
    int argc = 9;
    const char *arg;
    va_list ap;

    snprintf(m, sizeof m, "%d", M);
    snprintf(n, sizeof n, "%d", N);
    snprintf(k, sizeof k, "%d", K);
    snprintf(calls, sizeof calls, "%d", CALLS);
    va_start(ap, r);
    while ((arg = va_arg(ap, const char *)) && argc < 31)
        argv[argc++] = (char *)arg;
    va_end(ap);
    argv[argc] = NULL;
    assert_int_equal(amp_test_run(argv, env, 120, r), 0);
}

static struct amp_json *
load(const char *path)
{
    char *text = amp_test_read_file(path), err[128];
    struct amp_json *v;

    if (!text)
        fail_msg("no file %s", path);
    v = amp_json_parse(text, strlen(text), err, sizeof err);
    if (!v)
        fail_msg("%s: %s", path, err);
    free(text);
    return v;
}

/* Member by a dotted path: "sites.0.time.saved_ms". */
static const struct amp_json *
at(const struct amp_json *v, const char *path)
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
    if (!v)
        fail_msg("report has no %s", path);
    return v;
}

static double
num(const struct amp_json *v, const char *path)
{
    const struct amp_json *x = at(v, path);

    if (x->type != AMP_JSON_NUMBER)
        fail_msg("%s is not a number", path);
    return x->number;
}

static const char *
str(const struct amp_json *v, const char *path)
{
    const char *s = amp_json_str(at(v, path));

    if (!s)
        fail_msg("%s is not a string", path);
    return s;
}

static void
assert_close(double got, double want, const char *what)
{
    if (!(fabs(got - want) <= 1e-5 * fabs(want) + 1e-9))
        fail_msg("%s: %.9g, the model implies %.9g", what, got, want);
}

static double
check_ms(const struct amp_json *rep, const char *prefix, double least)
{
    char path[160];
    double got;

    snprintf(path, sizeof path, "%s.time.shadow_check_ms", prefix);
    got = num(rep, path);
    if (!(got >= least))
        fail_msg("%s: %.9g, less than the model's %.9g to read both "
                 "results", path, got, least);
    return got;
}

/* The device time of the timing events the shim recorded for the calls
 * under prefix: a whole number of event records (emu_event_record_ns
 * each), at least two per timed call (its start and its end). */
static double
timing_ms(const struct amp_json *rep, const char *prefix)
{
    const double each = emu_event_record_ns() * 1e-6;
    char path[160];
    double got, events;

    snprintf(path, sizeof path, "%s.time.timing_ms", prefix);
    got = num(rep, path);
    events = got / each;
    snprintf(path, sizeof path, "%s.time.calls_timed", prefix);
    if (!(fabs(events - round(events)) < 1e-3 &&
          round(events) >= 2.0 * num(rep, path)))
        fail_msg("%s.time.timing_ms: %.9g, not a whole number of event "
                 "records of %.9g ms, two or more per timed call", prefix,
                 got, each);
    return got;
}

static void
expect_schema(const char *path)
{
    char *argv[] = {(char *)python, (char *)schema, (char *)path, NULL};
    struct amp_test_env env;
    struct amp_test_run r;

    amp_test_env_init(&env);
    assert_int_equal(amp_test_run(argv, &env, 60, &r), 0);
    if (!r.exited || r.code != 0) {
        amp_test_run_dump("schema check", &r);
        fail_msg("%s does not follow docs/report-schema.md", path);
    }
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

/* ---- The report's numbers ------------------------------------------------ */

/* `rule tf32 verify 1`: the site's first call runs in shadow (FP32
 * measured, TF32 candidate beside it), the others in TF32 with the FP32
 * time estimated from that baseline. */
static void
test_report_numbers(void **state)
{
    double f = gemm_ms(EMU_PREC_FP32), t = gemm_ms(EMU_PREC_TF32), c;
    char path[300], label[96];
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;

    (void)state;
    snprintf(path, sizeof path, "%s/numbers.json", dir);
    env_for(&env, path);
    amp_test_env_set(&env, "NVIDIA_TF32_OVERRIDE", "1");
    run_prog(&env, &r, NULL);
    assert_true(r.exited);
    assert_int_equal(r.code, 0);
    expect_schema(path);
    rep = load(path);
    assert_string_equal(str(rep, "program.name"), "report_prog");
    assert_int_equal((int)num(rep, "program.pid"), (int)r.pid);
    assert_string_equal(str(rep, "device.name"), "emulated");
    assert_string_equal(str(rep, "device.modelled_gpu"), "NVIDIA H100 SXM");
    assert_string_equal(str(rep, "device.timing"), "modelled");
    assert_string_equal(str(rep, "policy.source"), "AMPSHIM_POLICY");
    assert_string_equal(str(rep, "policy.path"), policy);
    assert_string_equal(str(rep, "environment.NVIDIA_TF32_OVERRIDE"), "1");
    assert_int_equal((int)num(rep, "totals.sites"), 1);
    assert_string_equal(str(rep, "sites.0.api"), "cublasSgemm_v2");
    assert_string_equal(str(rep, "sites.0.function"), "main");
    assert_int_equal((int)num(rep, "sites.0.calls"), CALLS);
    assert_int_equal((int)num(rep, "sites.0.converted"), CALLS);
    assert_int_equal((int)num(rep, "sites.0.modes.shadow"), 1);
    assert_int_equal((int)num(rep, "sites.0.modes.tf32"), CALLS - 1);
    assert_string_equal(str(rep, "sites.0.shadow_candidate"), "tf32");
    assert_string_equal(str(rep, "sites.0.shapes.0.shape"), "256x128x512 NN");
    assert_close(num(rep, "sites.0.shapes.0.fp32_baseline_ms"), f,
                 "baseline");
    assert_close(num(rep, "sites.0.time.shadow_fp32_ms"), f, "shadow FP32");
    assert_close(num(rep, "sites.0.time.shadow_candidate_ms"), t,
                 "shadow candidate");
    assert_close(num(rep, "sites.0.time.converted_ms"), (CALLS - 1) * t,
                 "converted");
    assert_close(num(rep, "sites.0.time.fp32_ms"), CALLS * f, "fp32");
    assert_close(num(rep, "sites.0.time.fp32_estimated_ms"), (CALLS - 1) * f,
                 "estimated");
    /* The calls' time under the shim holds its timing events. */
    c = check_ms(rep, "sites.0", least_check_ms(1, M, N)) +
        timing_ms(rep, "sites.0");
    assert_close(num(rep, "sites.0.time.actual_ms"), f + CALLS * t + c,
                 "actual");
    assert_close(num(rep, "totals.saved_ms"), CALLS * f - f - CALLS * t - c,
                 "saved");
    assert_close(num(rep, "totals.speedup"), CALLS * f / (f + CALLS * t + c),
                 "speedup");
    assert_close(num(rep, "sites.0.time.converted_speedup"), f / t,
                 "converted speedup");
    assert_int_equal((int)num(rep, "sites.0.time.calls_fp32_measured"), 1);
    assert_int_equal((int)num(rep, "sites.0.time.calls_fp32_estimated"),
                     CALLS - 1);
    assert_close(num(rep, "totals.flops_fp32"), CALLS * 2.0 * M * N * K,
                 "FLOPs");
    assert_close(num(rep, "totals.converted_share"),
                 (double)(CALLS - 1) / CALLS, "converted share");
    assert_int_equal((int)num(rep, "sites.0.errors.shadow_calls"), 1);
    assert_true(num(rep, "sites.0.errors.max_rel") > 0.0);
    assert_true(num(rep, "sites.0.errors.max_rel") < 1e-2);
    assert_int_equal((int)num(rep, "sites.0.errors.over_tolerance"), 0);
    assert_close(num(rep, "sites.0.errors.tolerance"), 0.01, "tolerance");
    /* The table on stderr names the site by its label and its totals. */
    snprintf(label, sizeof label, "]: | main (report_prog+0x%llx) ",
             (unsigned long long)num(rep, "sites.0.offset"));
    assert_int_equal(amp_test_count_lines_with(r.err, label), 1);
    assert_int_equal(amp_test_count_lines_with(r.err, "]: | total "), 1);
    assert_int_equal(amp_test_count_lines_with(r.err, "times modelled on "
                                               "NVIDIA H100 SXM (emulated)"),
                     1);
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

/* A site's or a shape's numbers: `calls` calls of FP32 time f and TF32
 * time t each, `shadow` of them beside their FP32 original (`delivered`
 * of those giving the program the candidate's result: converted work),
 * the rest in TF32, and `flops` per call. */
struct expect_time {
    double calls, shadow, f, t, flops, delivered;
    double m, n;                /* the output's shape */
};

static void
expect_times(const struct amp_json *rep, const char *prefix,
             const struct expect_time *e, size_t n)
{
    double fp32 = 0, actual = 0, converted = 0, shadow_f = 0, flops = 0;
    double flops_conv = 0, estimated = 0, least = 0;
    char path[160];
    static const char *const fields[] = {
        "time.fp32_ms", "time.actual_ms", "time.saved_ms", "time.speedup",
        "time.converted_ms", "time.shadow_fp32_ms", "flops.total",
        "flops.converted", "time.fp32_estimated_ms",
        "time.converted_speedup",
    };
    double want[10];

    for (size_t i = 0; i < n; i++) {
        fp32 += e[i].calls * e[i].f;
        actual += e[i].shadow * e[i].f + e[i].calls * e[i].t;
        least += least_check_ms(e[i].shadow, e[i].m, e[i].n);
        converted += (e[i].calls - e[i].shadow) * e[i].t;
        shadow_f += e[i].shadow * e[i].f;
        flops += e[i].calls * e[i].flops;
        flops_conv += (e[i].calls - e[i].shadow + e[i].delivered) *
                      e[i].flops;
        estimated += (e[i].calls - e[i].shadow) * e[i].f;
    }
    actual += check_ms(rep, prefix, least) + timing_ms(rep, prefix);
    want[0] = fp32;
    want[1] = actual;
    want[2] = fp32 - actual;
    want[3] = fp32 / actual;
    want[4] = converted;
    want[5] = shadow_f;
    want[6] = flops;
    want[7] = flops_conv;
    want[8] = estimated;
    want[9] = estimated / converted;
    for (size_t i = 0; i < 10; i++) {
        snprintf(path, sizeof path, "%s.%s", prefix, fields[i]);
        assert_close(num(rep, path), want[i], path);
    }
}

/* Two sites, three shapes: main's loop (256x128x512) and second_site
 * (128x64x256, then 128x64x128, in turn), under `rule tf32 verify 2`:
 * the first two calls of each shape at each site run in shadow (verify
 * counts per site and shape), which gives each shape its FP32 baseline.
 * Every site's and shape's times, speedup and FLOPs are the emulator's
 * modelled times summed over its calls. */
static void
test_report_sites_and_shapes(void **state)
{
    const double m2 = 128, n2 = 64, k2 = 256;
    const struct expect_time a = {CALLS, 2, gemm_ms(EMU_PREC_FP32),
                                  gemm_ms(EMU_PREC_TF32), 2.0 * M * N * K,
                                  0, M, N};
    /* Calls 1, 3 and 5 of second_site (1 and 3 in shadow), then 2 and 4
     * (both in shadow: the second shape's window is its own). */
    const struct expect_time b[2] = {
        {(CALLS + 1) / 2, 2, gemm_ms_of(m2, n2, k2, EMU_PREC_FP32),
         gemm_ms_of(m2, n2, k2, EMU_PREC_TF32), 2.0 * m2 * n2 * k2, 0, m2,
         n2},
        {CALLS / 2, 2, gemm_ms_of(m2, n2, k2 / 2, EMU_PREC_FP32),
         gemm_ms_of(m2, n2, k2 / 2, EMU_PREC_TF32), 2.0 * m2 * n2 * k2 / 2,
         0, m2, n2},
    };
    char path[300], policy2[300];
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;
    FILE *f;

    (void)state;
    snprintf(policy2, sizeof policy2, "%s/verify2.policy", dir);
    f = fopen(policy2, "w");
    assert_non_null(f);
    fputs("set tolerance 1e-2\nrule tf32 verify 2 when gemm\ndefault fp32\n",
          f);
    fclose(f);
    snprintf(path, sizeof path, "%s/sites.json", dir);
    env_for(&env, path);
    amp_test_env_set(&env, "AMPSHIM_POLICY", policy2);
    run_prog(&env, &r, "--m2", "128", "--n2", "64", "--k2", "256", NULL);
    assert_true(r.exited);
    assert_int_equal(r.code, 0);
    expect_schema(path);
    rep = load(path);
    assert_int_equal((int)num(rep, "totals.sites"), 2);
    assert_string_equal(str(rep, "sites.0.function"), "main");
    assert_string_equal(str(rep, "sites.1.function"), "second_site");
    assert_string_equal(str(rep, "sites.0.shapes.0.shape"), "256x128x512 NN");
    assert_string_equal(str(rep, "sites.1.shapes.0.shape"), "128x64x256 NN");
    assert_string_equal(str(rep, "sites.1.shapes.1.shape"), "128x64x128 NN");
    assert_int_equal((int)num(rep, "sites.1.calls"), CALLS);
    assert_int_equal((int)num(rep, "sites.1.shapes.0.calls"), (CALLS + 1) / 2);
    assert_int_equal((int)num(rep, "sites.1.shapes.1.calls"), CALLS / 2);
    assert_int_equal((int)num(rep, "sites.1.shapes.0.modes.shadow"), 2);
    assert_int_equal((int)num(rep, "sites.1.shapes.1.modes.shadow"), 2);
    assert_null(amp_json_get(at(rep, "sites.1.shapes.1.modes"), "tf32"));
    expect_times(rep, "sites.0", &a, 1);
    expect_times(rep, "sites.0.shapes.0", &a, 1);
    expect_times(rep, "sites.1", b, 2);
    expect_times(rep, "sites.1.shapes.0", &b[0], 1);
    /* A site's scratch is its shapes': the mean over its converted
     * calls. */
    assert_close(num(rep, "sites.1.scratch_bytes.mean") *
                     num(rep, "sites.1.converted"),
                 num(rep, "sites.1.shapes.0.scratch_bytes.mean") *
                         num(rep, "sites.1.shapes.0.converted") +
                     num(rep, "sites.1.shapes.1.scratch_bytes.mean") *
                         num(rep, "sites.1.shapes.1.converted"),
                 "sites.1.scratch_bytes.mean");
    assert_true(num(rep, "sites.1.shapes.1.scratch_bytes.mean") > 0.0);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "sites.1.shapes.%d.fp32_baseline_ms", i);
        assert_close(num(rep, path), b[i].f, path);
    }
    assert_close(num(rep, "sites.1.shapes.0.time.converted_speedup"),
                 b[0].f / b[0].t, "converted_speedup");
    /* The second shape never converted: no steady-state speedup. */
    assert_int_equal(at(rep, "sites.1.shapes.1.time.converted_speedup")->type,
                     AMP_JSON_NULL);
    assert_close(num(rep, "totals.fp32_ms"),
                 a.calls * a.f + b[0].calls * b[0].f + b[1].calls * b[1].f,
                 "totals.fp32_ms");
    assert_close(num(rep, "totals.flops_fp32"),
                 a.calls * a.flops + b[0].calls * b[0].flops +
                     b[1].calls * b[1].flops,
                 "totals.flops_fp32");
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

static void run_tool(char **argv, struct amp_test_run *r);

/* AMPSHIM_MODE=tf32 converts every call; with AMPSHIM_BASELINE=first
 * (the default) the first call of each shape at each site runs its FP32
 * original beside it all the same, so every converted call has an FP32
 * time: the times are those of `rule tf32 verify 1` per (site, shape),
 * but the program gets the first call's TF32 result (a forced mode
 * forces every call), counted as a tf32 call and converted work. With
 * the baseline off, no call is measured: the FP32 times are unknown, the
 * report says why, and `ampshim report` prints "-" and that reason, never
 * 0.000. */
static void
test_baseline(void **state)
{
    const double m2 = 128, n2 = 64, k2 = 256;
    const struct expect_time a = {CALLS, 1, gemm_ms(EMU_PREC_FP32),
                                  gemm_ms(EMU_PREC_TF32), 2.0 * M * N * K,
                                  1, M, N};
    const struct expect_time b[2] = {
        {(CALLS + 1) / 2, 1, gemm_ms_of(m2, n2, k2, EMU_PREC_FP32),
         gemm_ms_of(m2, n2, k2, EMU_PREC_TF32), 2.0 * m2 * n2 * k2, 1, m2,
         n2},
        {CALLS / 2, 1, gemm_ms_of(m2, n2, k2 / 2, EMU_PREC_FP32),
         gemm_ms_of(m2, n2, k2 / 2, EMU_PREC_TF32), 2.0 * m2 * n2 * k2 / 2,
         1, m2, n2},
    };
    char path[300], off[300];
    char *report[] = {(char *)tool, "report", off, NULL};
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;

    (void)state;
    snprintf(path, sizeof path, "%s/baseline.json", dir);
    env_for(&env, path);
    amp_test_env_set(&env, "AMPSHIM_MODE", "tf32");
    amp_test_env_set(&env, "AMPSHIM_BASELINE", "first");
    run_prog(&env, &r, "--m2", "128", "--n2", "64", "--k2", "256", NULL);
    assert_int_equal(r.code, 0);
    expect_schema(path);
    rep = load(path);
    assert_null(amp_json_get(at(rep, "sites.0.modes"), "shadow"));
    assert_int_equal((int)num(rep, "sites.0.modes.tf32"), CALLS);
    assert_int_equal((int)num(rep, "sites.1.shapes.0.modes.tf32"),
                     (CALLS + 1) / 2);
    assert_int_equal((int)num(rep, "sites.1.shapes.1.modes.tf32"),
                     CALLS / 2);
    assert_int_equal((int)num(rep, "totals.shadow"), 0);
    assert_int_equal((int)num(rep, "sites.1.shapes.1.errors.shadow_calls"),
                     1);
    assert_close(num(rep, "coverage.converted_share"), 1.0,
                 "converted share");
    expect_times(rep, "sites.0", &a, 1);
    expect_times(rep, "sites.1.shapes.0", &b[0], 1);
    expect_times(rep, "sites.1.shapes.1", &b[1], 1);
    assert_int_equal((int)num(rep, "totals.calls_fp32_unknown"), 0);
    assert_int_equal(at(rep, "sites.1.time.fp32_unknown_reason")->type,
                     AMP_JSON_NULL);
    amp_json_free(rep);
    amp_test_run_free(&r);

    snprintf(off, sizeof off, "%s/baseline-off.json", dir);
    amp_test_env_set(&env, "AMPSHIM_REPORT", off);
    amp_test_env_set(&env, "AMPSHIM_BASELINE", "off");
    run_prog(&env, &r, NULL);
    assert_int_equal(r.code, 0);
    expect_schema(off);
    rep = load(off);
    assert_null(amp_json_get(at(rep, "sites.0.modes"), "shadow"));
    assert_int_equal((int)num(rep, "sites.0.time.calls_fp32_unknown"), CALLS);
    assert_int_equal((int)num(rep, "totals.calls_fp32_measured") +
                         (int)num(rep, "totals.calls_fp32_estimated"),
                     0);
    assert_non_null(strstr(str(rep, "sites.0.time.fp32_unknown_reason"),
                           "no FP32 baseline"));
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);

    run_tool(report, &r);
    assert_int_equal(r.code, 0);
    assert_null(strstr(r.out, "0.000"));
    assert_int_equal(amp_test_count_lines_with(r.out, "-: no FP32 baseline"),
                     1);
    assert_int_equal(amp_test_count_lines_with(r.out, "total: 5 calls, 5 "
                                               "converted, 0 measured in "
                                               "shadow; fp32 - ms, actual "
                                               "- ms, saved - ms, speedup -"),
                     1);
    amp_test_run_free(&r);
}

/* Why calls ran FP32, per site, per shape and in total: under `set
 * min-size 1500000` and `rule tf32 when m >= 256`, main's calls convert;
 * second_site's 128x64x256 calls (2.1M multiply-adds) match no rule and
 * its 128x64x128 calls (1.05M) are under min-size. The table, its last
 * line and the CSV say so too. */
static void
test_fp32_reasons(void **state)
{
    char path[300], pol[300], csv[300];
    char *report[] = {(char *)tool, "report", path, "--csv", csv, NULL};
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;
    char *text;
    FILE *f;

    (void)state;
    snprintf(pol, sizeof pol, "%s/reasons.policy", dir);
    f = fopen(pol, "w");
    assert_non_null(f);
    fputs("set min-size 1500000\nrule tf32 when m >= 256\ndefault fp32\n",
          f);
    fclose(f);
    snprintf(path, sizeof path, "%s/reasons.json", dir);
    snprintf(csv, sizeof csv, "%s/reasons.csv", dir);
    env_for(&env, path);
    amp_test_env_set(&env, "AMPSHIM_POLICY", pol);
    run_prog(&env, &r, "--m2", "128", "--n2", "64", "--k2", "256", NULL);
    assert_int_equal(r.code, 0);
    expect_schema(path);
    rep = load(path);
    assert_int_equal(at(rep, "sites.0.fp32_reasons")->count, 0);
    assert_int_equal((int)num(rep, "sites.1.fp32_reasons.no-rule"), 3);
    assert_int_equal((int)num(rep, "sites.1.fp32_reasons.min-size"), 2);
    assert_int_equal(at(rep, "sites.1.fp32_reasons")->count, 2);
    assert_int_equal((int)num(rep, "sites.1.shapes.0.fp32_reasons.no-rule"),
                     3);
    assert_int_equal(at(rep, "sites.1.shapes.0.fp32_reasons")->count, 1);
    assert_int_equal((int)num(rep, "sites.1.shapes.1.fp32_reasons.min-size"),
                     2);
    assert_int_equal((int)num(rep, "totals.fp32_reasons.no-rule"), 3);
    assert_int_equal((int)num(rep, "totals.fp32_reasons.min-size"), 2);
    assert_int_equal(amp_test_count_lines_with(r.err, "| FP32 calls by "
                                               "reason: no-rule 3, min-size "
                                               "2"),
                     1);
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);

    run_tool(report, &r);
    assert_int_equal(r.code, 0);
    assert_int_equal(amp_test_count_lines_with(r.out, "fp32: no-rule 3, "
                                               "min-size 2"),
                     1);
    assert_int_equal(amp_test_count_lines_with(r.out, "fp32: min-size 2"), 1);
    assert_int_equal(amp_test_count_lines_with(r.out, "FP32 calls by "
                                               "reason: no-rule 3, min-size "
                                               "2"),
                     1);
    amp_test_run_free(&r);
    text = amp_test_read_file(csv);
    assert_non_null(text);
    assert_int_equal(amp_test_count_lines_with(text, ",\"no-rule 3, "
                                               "min-size 2\","),
                     1);
    free(text);
}

/* conv_check under AMPSHIM_MODE=fp16: each direction's FLOPs in the
 * report are 2 * (output elements) * (reduction length) per call, the
 * numbers conv_check prints for its cases (m= and k=), summed over the
 * direction's sites; each shape's FLOPs per call are one case's. */
static void
test_report_conv_flops(void **state)
{
    static const char *const apis[] = {
        "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
        "cudnnConvolutionBackwardFilter",
    };
    char *argv[] = {(char *)conv_prog, "--tol", "fp16", NULL};
    static struct amp_test_check check;
    char path[300];
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;
    const struct amp_json *sites;

    (void)state;
    snprintf(path, sizeof path, "%s/conv.json", dir);
    env_for(&env, path);
    amp_test_env_set(&env, "AMPSHIM_MODE", "fp16");
    assert_int_equal(amp_test_run(argv, &env, 120, &r), 0);
    assert_true(r.exited);
    assert_int_equal(r.code, 0);
    assert_int_equal(amp_test_parse_check(r.out, &check), 0);
    expect_schema(path);
    rep = load(path);
    sites = at(rep, "sites");
    for (size_t d = 0; d < 3; d++) {
        double want = 0.0, got = 0.0;
        int cases = 0, shapes = 0;

        for (int i = 0; i < check.count; i++) {
            if (strcmp(check.cases[i].api, apis[d]) != 0 ||
                strcmp(check.cases[i].cls, "conv") != 0)
                continue;
            want += 2.0 * check.cases[i].m * check.cases[i].k;
            cases++;
        }
        assert_true(cases >= 5);
        for (size_t s = 0; s < sites->count; s++) {
            const struct amp_json *site = &sites->items[s];
            const struct amp_json *sh = at(site, "shapes");

            if (strcmp(str(site, "api"), apis[d]) != 0)
                continue;
            /* A site's calls kept FP32 (alpha 0, pedantic math, invalid
             * arguments) are in it too, not converted. */
            got += num(site, "flops.converted");
            for (size_t j = 0; j < sh->count; j++) {
                double per = num(&sh->items[j], "flops.total") /
                             num(&sh->items[j], "calls");
                int found = 0;

                if (num(&sh->items[j], "converted") == 0)
                    continue;
                assert_close(num(&sh->items[j], "flops.converted"),
                             num(&sh->items[j], "flops.total"), apis[d]);

                for (int i = 0; i < check.count && !found; i++)
                    found = strcmp(check.cases[i].api, apis[d]) == 0 &&
                            per == 2.0 * check.cases[i].m * check.cases[i].k;
                if (!found)
                    fail_msg("%s: a shape of %g FLOPs a call, no case's",
                             apis[d], per);
                shapes++;
            }
        }
        assert_true(shapes >= 5);
        assert_close(got, want, apis[d]);
    }
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

/* One log line per harvested call, FP32 measured once and estimated for
 * the rest. */
static void
test_call_log(void **state)
{
    struct amp_test_env env;
    struct amp_test_run r;
    char want[160];

    (void)state;
    env_for(&env, "off");
    amp_test_env_set(&env, "AMPSHIM_CALL_LOG", "1");
    run_prog(&env, &r, NULL);
    assert_int_equal(r.code, 0);
    assert_int_equal(amp_test_count_lines_with(r.err, "]: call cublasSgemm_v2 "
                                               "site=main shape=256x128x512 NN"),
                     CALLS);
    snprintf(want, sizeof want, "mode=shadow:tf32 converted=%.6fms "
             "fp32=%.6fms(measured)", gemm_ms(EMU_PREC_TF32),
             gemm_ms(EMU_PREC_FP32));
    assert_int_equal(amp_test_count_lines_with(r.err, want), 1);
    snprintf(want, sizeof want, "mode=tf32 converted=%.6fms "
             "fp32=%.6fms(estimated)", gemm_ms(EMU_PREC_TF32),
             gemm_ms(EMU_PREC_FP32));
    assert_int_equal(amp_test_count_lines_with(r.err, want), CALLS - 1);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

/* ---- Contexts that end under the shim ------------------------------------ */

/* report_prog ends its context while CALLS converted calls are pending
 * (`how`: cudaDeviceReset, the driver's primary-context reset, cuCtxDestroy
 * of its own context), then with `again` starts over that many times, each
 * in a new context, and checks the last result: every call converted and
 * timed, none fallen back, in shadow each one's error measured. */
static void
expect_context_end(const char *how, const char *again, const char *mode)
{
    int calls = CALLS * (1 + atoi(again));
    char path[300];
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;

    snprintf(path, sizeof path, "%s/end-%s-%s-%s.json", dir, how, again,
             mode);
    env_for(&env, path);
    amp_test_env_set(&env, "AMPSHIM_MODE", mode);
    run_prog(&env, &r, "--reset", how, "--again", again, NULL);
    if (!r.exited || r.code != 0) {
        amp_test_run_dump(how, &r);
        fail_msg("--reset %s --again %s in %s: exit %d", how, again, mode,
                 r.code);
    }
    if (atoi(again) > 0)
        assert_int_equal(amp_test_count_lines_with(
                             r.out, "report_prog after the reset"), 1);
    rep = load(path);
    assert_int_equal((int)num(rep, "totals.sites"), 1);
    assert_int_equal((int)num(rep, "sites.0.calls"), calls);
    assert_int_equal((int)num(rep, "sites.0.converted"), calls);
    assert_int_equal((int)num(rep, "sites.0.fallback"), 0);
    assert_int_equal((int)num(rep, "sites.0.unmeasured"), 0);
    /* Timed, or (converted calls past the first ones) estimated at the
     * timed ones' mean: none lost. */
    assert_int_equal((int)num(rep, "sites.0.time.calls_timed") +
                         (int)num(rep,
                                  "sites.0.time.calls_converted_estimated"),
                     calls);
    assert_int_equal((int)num(rep, "sites.0.errors.shadow_calls"),
                     strncmp(mode, "shadow", 6) == 0 ? calls : 0);
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

static void
test_context_end(void **state)
{
    static const char *const modes[] = {"fp16", "shadow:fp16"};

    (void)state;
    for (int i = 0; i < 2; i++) {
        expect_context_end("runtime", "0", modes[i]);
        expect_context_end("driver", "0", modes[i]);
        expect_context_end("destroy", "0", modes[i]);
        /* More contexts than the shim keeps own handles per thread. */
        expect_context_end("runtime", "10", modes[i]);
        expect_context_end("destroy", "10", modes[i]);
    }
}

/* conv_check --reset: every case twice, in two contexts, a cudaDeviceReset
 * after each round: every convolution converted, timed and checked. */
static void
test_context_end_conv(void **state)
{
    char *argv[] = {(char *)conv_prog, "--tol", "fp16", "--reset", NULL};
    char path[300];
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;
    int converted;

    (void)state;
    snprintf(path, sizeof path, "%s/end-conv.json", dir);
    env_for(&env, path);
    amp_test_env_set(&env, "AMPSHIM_MODE", "shadow:fp16");
    assert_int_equal(amp_test_run(argv, &env, 240, &r), 0);
    if (!r.exited || r.code != 0) {
        amp_test_run_dump("conv_check --reset", &r);
        fail_msg("conv_check --reset: exit %d", r.code);
    }
    rep = load(path);
    converted = (int)num(rep, "totals.converted");
    /* Both rounds' convertible cases: 2 x 33; the others are kept FP32
     * at their sites. */
    assert_int_equal(converted, 66);
    assert_int_equal((int)num(rep, "totals.calls"),
                     converted + (int)num(rep, "totals.fp32"));
    assert_int_equal((int)num(rep, "totals.fallback"), 0);
    assert_int_equal((int)num(rep, "totals.unmeasured"), 0);
    for (size_t s = 0; s < at(rep, "sites")->count; s++) {
        const struct amp_json *site = &at(rep, "sites")->items[s];

        assert_int_equal((int)num(site, "errors.shadow_calls"),
                         (int)num(site, "converted"));
        assert_int_equal((int)num(site, "time.calls_timed"),
                         (int)num(site, "converted"));
    }
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

/* ---- Caps and kinds the policy and the hooks decide ---------------------- */

/* The policy's `set scratch-max` and AMPSHIM_SCRATCH_MAX: the lower one
 * caps a call's scratch, whichever it is. An fp16 GEMM of report_prog
 * needs more than 1K: capped, every call runs FP32 ("scratch-cap"). */
static void
expect_scratch(const char *policy_cap, const char *env_cap, int capped)
{
    char path[300], pol[300];
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;
    FILE *f;

    snprintf(pol, sizeof pol, "%s/cap-%s.policy", dir, policy_cap);
    snprintf(path, sizeof path, "%s/cap-%s-%s.json", dir, policy_cap,
             env_cap ? env_cap : "unset");
    f = fopen(pol, "w");
    assert_non_null(f);
    fprintf(f, "set scratch-max %s\nrule fp16 when gemm\ndefault fp32\n",
            policy_cap);
    fclose(f);
    env_for(&env, path);
    amp_test_env_set(&env, "AMPSHIM_POLICY", pol);
    if (env_cap)
        amp_test_env_set(&env, "AMPSHIM_SCRATCH_MAX", env_cap);
    run_prog(&env, &r, NULL);
    assert_true(r.exited);
    assert_int_equal(r.code, 0);
    rep = load(path);
    if (capped) {
        assert_int_equal((int)num(rep, "sites.0.converted"), 0);
        assert_int_equal((int)num(rep, "sites.0.fallbacks.scratch-cap"),
                         CALLS);
    } else {
        assert_int_equal((int)num(rep, "sites.0.converted"), CALLS);
    }
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

static void
test_scratch_caps(void **state)
{
    (void)state;
    expect_scratch("1G", NULL, 0);
    expect_scratch("1K", NULL, 1);
    expect_scratch("1G", "1K", 1);
    expect_scratch("1K", "1G", 1);
}

/* conv_check's FP32 case with CUDNN_FMA_MATH alone is kept FP32 as the
 * program chose (counted fp32), its TENSOR_OP_MATH case alone is the
 * program's own Tensor Core math (passed through). */
static void
expect_conv_kind(const char *name, int fp32, int passthrough)
{
    char *argv[] = {(char *)conv_prog, "--tol", "tf32", "--only",
                    (char *)name, NULL};
    char path[300];
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;

    snprintf(path, sizeof path, "%s/kind-%s.json", dir, name);
    env_for(&env, path);
    amp_test_env_set(&env, "AMPSHIM_MODE", "fp16");
    assert_int_equal(amp_test_run(argv, &env, 60, &r), 0);
    assert_true(r.exited);
    assert_int_equal(r.code, 0);
    rep = load(path);
    assert_string_equal(str(rep, "apis.0.api"), "cudnnConvolutionForward");
    assert_int_equal((int)num(rep, "apis.0.calls"), 1);
    assert_int_equal((int)num(rep, "apis.0.converted"), 0);
    assert_int_equal((int)num(rep, "apis.0.fp32"), fp32);
    assert_int_equal((int)num(rep, "apis.0.passthrough"), passthrough);
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

static void
test_conv_math_kinds(void **state)
{
    (void)state;
    expect_conv_kind("fma_math_FW", 1, 0);
    expect_conv_kind("tensor_op_math_FW", 0, 1);
}

/* ---- Where the report goes ---------------------------------------------- */

static void
test_exit_from_thread(void **state)
{
    char path[300];
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *rep;

    (void)state;
    snprintf(path, sizeof path, "%s/thread.json", dir);
    env_for(&env, path);
    run_prog(&env, &r, "--exit-thread", "--exit", "3", NULL);
    assert_true(r.exited);
    assert_int_equal(r.code, 3);
    rep = load(path);
    assert_int_equal((int)num(rep, "sites.0.calls"), CALLS);
    assert_int_equal((int)num(rep, "sites.0.time.calls_timed") +
                         (int)num(rep,
                                  "sites.0.time.calls_converted_estimated"),
                     CALLS);
    amp_json_free(rep);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

/* AMPSHIM_REPORT or AMPSHIM_TRACE (var) at path: exactly one warning,
 * saying why, the program's own exit status and its own output. */
static void
expect_refused(const char *var, const char *path, const char *why)
{
    const char *what = strcmp(var, "AMPSHIM_TRACE") == 0 ? "trace" : "report";
    struct amp_test_env env;
    struct amp_test_run plain, r;
    char warning[64];

    env_for(&env, "off");
    if (strcmp(var, "AMPSHIM_TRACE") == 0)
        amp_test_env_set(&env, "AMPSHIM_MODE", "shadow:tf32");
    run_prog(&env, &plain, "--exit", "4", NULL);
    amp_test_env_set(&env, var, path);
    run_prog(&env, &r, "--exit", "4", NULL);
    snprintf(warning, sizeof warning, "cannot write the %s to", what);
    if (!r.exited || r.code != 4 ||
        amp_test_count_lines_with(r.err, warning) != 1 ||
        amp_test_count_lines_with(r.err, "warn") != 1 ||
        amp_test_count_lines_with(r.err, why) != 1) {
        amp_test_run_dump(path, &r);
        fail_msg("%s=%s: expected exit 4 and one warning saying '%s'", var,
                 path, why);
    }
    assert_int_equal(r.out_len, plain.out_len);
    assert_memory_equal(r.out, plain.out, plain.out_len);
    amp_test_run_free(&plain);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

static const char *const path_vars[] = {"AMPSHIM_REPORT", "AMPSHIM_TRACE"};

static void
test_unwritable_path(void **state)
{
    char path[300];
    FILE *f;

    (void)state;
    snprintf(path, sizeof path, "%s/plain-file", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    for (size_t v = 0; v < 2; v++) {
        snprintf(path, sizeof path, "%s/no-such-dir/r.json", dir);
        expect_refused(path_vars[v], path, "No such file or directory");
        /* A regular file where a directory should be. */
        snprintf(path, sizeof path, "%s/plain-file/r.json", dir);
        expect_refused(path_vars[v], path, "Not a directory");
        /* /proc takes no new files, root or not. */
        expect_refused(path_vars[v], "/proc/ampshim-r.json",
                       "cannot write the");
    }
}

static void
test_refuses_directory(void **state)
{
    char path[300];

    (void)state;
    for (size_t v = 0; v < 2; v++) {
        expect_refused(path_vars[v], dir, "(it is a directory)");
        snprintf(path, sizeof path, "%s/", dir);
        expect_refused(path_vars[v], path, "Is a directory");
    }
}

static void
test_never_overwrites(void **state)
{
    char path[300], *text;
    FILE *f;

    (void)state;
    for (size_t v = 0; v < 2; v++) {
        snprintf(path, sizeof path, "%s/existing-%zu.json", dir, v);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("keep me\n", f);
        fclose(f);
        expect_refused(path_vars[v], path,
                       "(an existing file is never replaced)");
        text = amp_test_read_file(path);
        assert_string_equal(text, "keep me\n");
        free(text);
    }
}

/* A symbolic link, to a file that does not exist yet or to one that does:
 * neither is followed, nothing is created or changed. */
static void
test_refuses_symlink(void **state)
{
    char link[300], target[300], *text;
    struct stat st;
    FILE *f;

    (void)state;
    for (size_t v = 0; v < 2; v++) {
        snprintf(link, sizeof link, "%s/link-%zu.json", dir, v);
        snprintf(target, sizeof target, "%s/target-%zu.json", dir, v);
        assert_int_equal(symlink(target, link), 0);
        expect_refused(path_vars[v], link,
                       "(a symbolic link is never followed)");
        assert_int_not_equal(stat(target, &st), 0);
        f = fopen(target, "w");
        assert_non_null(f);
        fputs("elsewhere\n", f);
        fclose(f);
        expect_refused(path_vars[v], link,
                       "(a symbolic link is never followed)");
        text = amp_test_read_file(target);
        assert_string_equal(text, "elsewhere\n");
        free(text);
    }
}

/* Without AMPSHIM_REPORT a preloaded program writes its report to the
 * state directory (made when missing, never the working directory), and
 * says where; with neither XDG_STATE_HOME nor HOME, it warns once and
 * writes none. */
static void
test_default_name(void **state)
{
    char path[400], cwd[4096], xdg[300], inwd[400];
    struct amp_test_env env;
    struct amp_test_run r;
    struct stat st;

    (void)state;
    snprintf(xdg, sizeof xdg, "%s/state", dir);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    env_for(&env, ""); /* empty: the default name */
    amp_test_env_set(&env, "XDG_STATE_HOME", xdg);
    run_prog(&env, &r, NULL);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(r.code, 0);
    snprintf(path, sizeof path, "%s/ampshim/ampshim-report_prog-%d.json", xdg,
             (int)r.pid);
    snprintf(inwd, sizeof inwd, "%s/ampshim-report_prog-%d.json", dir,
             (int)r.pid);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(stat(inwd, &st), -1);
    assert_non_null(strstr(r.err, path));
    expect_schema(path);
    unlink(path);
    amp_test_run_free(&r);
    amp_test_env_free(&env);

    /* No state directory: one warning, no file, the program's status. */
    env_for(&env, "");
    amp_test_env_set(&env, "XDG_STATE_HOME", "relative/ignored");
    amp_test_env_set(&env, "HOME", "");
    run_prog(&env, &r, NULL);
    assert_int_equal(r.code, 0);
    assert_int_equal(amp_test_count_lines_with(r.err, "no report is written: "
                                               "neither XDG_STATE_HOME nor "
                                               "HOME names a directory"), 1);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

/* ---- The trace -------------------------------------------------------------- */

static void
test_trace_tracks(void **state)
{
    char path[300];
    struct amp_test_env env;
    struct amp_test_run r;
    struct amp_json *trace;
    const struct amp_json *ev;
    int complete = 0, shadow = 0, names = 0, tids[8] = {0};
    size_t i;

    (void)state;
    snprintf(path, sizeof path, "%s/trace.json", dir);
    env_for(&env, "off");
    amp_test_env_set(&env, "AMPSHIM_MODE", "shadow:tf32");
    amp_test_env_set(&env, "AMPSHIM_TRACE", path);
    run_prog(&env, &r, "--streams", "2", NULL);
    assert_int_equal(r.code, 0);
    trace = load(path);
    ev = at(trace, "traceEvents");
    for (i = 0; i < ev->count; i++) {
        const char *ph = amp_json_str(amp_json_get(&ev->items[i], "ph"));
        int tid = (int)amp_json_num(amp_json_get(&ev->items[i], "tid"), -1);

        if (strcmp(ph, "M") == 0 &&
            strcmp(str(&ev->items[i], "name"), "thread_name") == 0)
            names++;
        if (strcmp(ph, "X") != 0)
            continue;
        complete++;
        assert_true(tid >= 1 && tid < 8);
        tids[tid] = 1;
        shadow += strcmp(str(&ev->items[i], "cat"), "shadow") == 0;
        assert_string_equal(str(&ev->items[i], "args.api"),
                            "cublasSgemm_v2");
        assert_close(num(&ev->items[i], "dur") / 1e3,
                     strcmp(str(&ev->items[i], "cat"), "shadow") == 0
                         ? gemm_ms(EMU_PREC_FP32) : gemm_ms(EMU_PREC_TF32),
                     "event duration");
    }
    assert_int_equal(complete, 2 * CALLS); /* candidate and original */
    assert_int_equal(shadow, CALLS);
    assert_int_equal(names, 2);
    assert_true(tids[1] && tids[2] && !tids[3]);
    amp_json_free(trace);
    amp_test_run_free(&r);
    amp_test_env_free(&env);
}

/* ---- The tool ------------------------------------------------------------------ */

static void
run_tool(char **argv, struct amp_test_run *r)
{
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(&env, "AMPSHIM_LIBRARY", shim);
    /* Empty, or a sanitized build's runtime (the harness adds it), which
     * the tool keeps in front of the shim. */
    amp_test_env_set(&env, "LD_PRELOAD", "");
    assert_int_equal(amp_test_run(argv, &env, 120, r), 0);
    amp_test_env_free(&env);
}

static void
test_tool_run(void **state)
{
    char path[300];
    char *argv[] = {(char *)tool, "run", "--mode", "fp32", "--report", path,
                    "--", (char *)prog, "--calls", "2", "--exit", "6", NULL};
    char *help[] = {(char *)tool, "run", "--help", NULL};
    struct amp_test_run r;
    struct amp_json *rep;

    (void)state;
    snprintf(path, sizeof path, "%s/run.json", dir);
    run_tool(argv, &r);
    assert_true(r.exited);
    assert_int_equal(r.code, 6);
    rep = load(path);
    assert_string_equal(str(rep, "policy.source"), "AMPSHIM_MODE");
    assert_string_equal(str(rep, "policy.mode"), "fp32");
    assert_int_equal((int)num(rep, "totals.converted"), 0);
    assert_int_equal((int)num(rep, "totals.fp32"), 2);
    assert_close(num(rep, "totals.converted_share"), 0.0, "share");
    amp_json_free(rep);
    amp_test_run_free(&r);
    run_tool(help, &r);
    assert_int_equal(r.code, 0);
    assert_non_null(strstr(r.out, "usage: ampshim run"));
    amp_test_run_free(&r);
}

static void
test_tool_report(void **state)
{
    char report[300], html[300], csv[300], want[64];
    char *argv[] = {(char *)tool, "report", report, "--html", html, "--csv",
                    csv, NULL};
    char *text;
    struct amp_test_run r;
    struct amp_json *rep;
    double c;

    (void)state;
    snprintf(report, sizeof report, "%s/numbers.json", dir);
    rep = load(report);
    c = check_ms(rep, "sites.0", least_check_ms(1, M, N)) +
        timing_ms(rep, "sites.0");
    amp_json_free(rep);
    snprintf(html, sizeof html, "%s/r.html", dir);
    snprintf(csv, sizeof csv, "%s/r.csv", dir);
    run_tool(argv, &r);
    if (!r.exited || r.code != 0)
        amp_test_run_dump("ampshim report", &r);
    assert_int_equal(r.code, 0);
    assert_int_equal(amp_test_count_lines_with(r.out, "main (report_prog+0x"),
                     1);
    snprintf(want, sizeof want, "saved %.3f ms",
             CALLS * gemm_ms(EMU_PREC_FP32) - gemm_ms(EMU_PREC_FP32) -
                 CALLS * gemm_ms(EMU_PREC_TF32) - c);
    assert_int_equal(amp_test_count_lines_with(r.out, want), 1);
    text = amp_test_read_file(csv);
    assert_non_null(text);
    assert_int_equal(amp_test_count_lines_with(text, "\n"), 0);
    assert_int_equal(amp_test_count_lines_with(text, "cublasSgemm_v2,main,"),
                     1);
    /* Converted: the calls whose converted result the program got; the
     * shadow call apart, in the shadow column. */
    assert_non_null(strstr(text, ",5,4,0,0,tf32+shadow:tf32,"));
    assert_non_null(strstr(text, ",max,1,"));
    free(text);
    text = amp_test_read_file(html);
    assert_non_null(text);
    assert_null(strstr(text, "http://"));
    assert_null(strstr(text, "https://"));
    assert_null(strstr(text, "<script"));
    assert_int_equal(amp_test_count_lines_with(text, "<svg class=\"chart\""),
                     4);
    assert_non_null(strstr(text, "main (report_prog+0x"));
    free(text);
    amp_test_run_free(&r);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_numbers),
        cmocka_unit_test(test_report_sites_and_shapes),
        cmocka_unit_test(test_report_conv_flops),
        cmocka_unit_test(test_baseline),
        cmocka_unit_test(test_fp32_reasons),
        cmocka_unit_test(test_call_log),
        cmocka_unit_test(test_exit_from_thread),
        cmocka_unit_test(test_context_end),
        cmocka_unit_test(test_context_end_conv),
        cmocka_unit_test(test_scratch_caps),
        cmocka_unit_test(test_conv_math_kinds),
        cmocka_unit_test(test_unwritable_path),
        cmocka_unit_test(test_never_overwrites),
        cmocka_unit_test(test_refuses_symlink),
        cmocka_unit_test(test_refuses_directory),
        cmocka_unit_test(test_default_name),
        cmocka_unit_test(test_trace_tracks),
        cmocka_unit_test(test_tool_run),
        cmocka_unit_test(test_tool_report),
    };
    char cmd[400];
    FILE *f;
    int rc;

    if (argc != 8) {
        fprintf(stderr, "usage: %s REPORT_PROG LIBAMPSHIM EMU_DIR AMPSHIM "
                "PYTHON3 CHECK_SCHEMA CONV_CHECK\n", argv[0]);
        return 2;
    }
    /* Absolute: a test runs the program from another directory. */
    prog = realpath(argv[1], NULL);
    shim = realpath(argv[2], NULL);
    emu_dir = argv[3];
    tool = realpath(argv[4], NULL);
    python = argv[5];
    schema = realpath(argv[6], NULL);
    conv_prog = realpath(argv[7], NULL);
    if (!prog || !shim || !tool || !schema || !conv_prog)
        return 1;
    if (!mkdtemp(dir))
        return 1;
    snprintf(policy, sizeof policy, "%s/p.policy", dir);
    f = fopen(policy, "w");
    if (!f)
        return 1;
    fputs("set tolerance 1e-2\nrule tf32 verify 1 when gemm\ndefault fp32\n",
          f);
    fclose(f);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (rc == 0 && system(cmd) != 0)
        rc = 1;
    return rc;
}
