/* The JSON report: each site's shapes with their counts, times, errors
 * and reasons; the program, the job, the device, the policy, the
 * settings, the APIs' counters, the totals and the coverage. */
#include "measure/report_impl.h"

#include "base/job.h"
#include "base/json.h"
#include "base/log.h"
#include "base/path.h"
#include "decide/auto.h"
#include "decide/policy.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/coverage.h"
#include "measure/prof.h"
#include "measure/replay.h"
#include "measure/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- JSON -------------------------------------------------------------------- */

/* The calls CUDA graph launches replayed (measure/replay.h). */
static void
amp_json_replays(struct amp_json_out *j, const struct amp_prof_entry *e)
{
    amp_json_key(j, "replays");
    amp_json_object(j);
    amp_json_kint(j, "calls", (long long)e->replays);
    amp_json_kint(j, "converted", (long long)e->replays_converted);
    amp_json_knumber(j, "flops_converted", e->replays_flops);
    amp_json_knumber(j, "saved_ms",
                     e->replays_converted > e->replays_unestimated
                         ? e->replays_saved_ms
                         : NAN);
    amp_json_kint(j, "unestimated", (long long)e->replays_unestimated);
    amp_json_kint(j, "provisional", (long long)e->replays_provisional);
    amp_json_end_object(j);
}

static void
amp_json_counts(struct amp_json_out *j, const struct amp_prof_entry *e)
{
    int m;

    amp_json_kint(j, "calls", (long long)e->calls);
    amp_json_kint(j, "converted",
                  (long long)e->outcomes[AMP_OUTCOME_CONVERTED]);
    amp_json_kint(j, "delivered", (long long)amp_entry_delivered(e));
    amp_json_kint(j, "shadow", (long long)amp_entry_shadow(e));
    amp_json_kint(j, "fp32", (long long)e->outcomes[AMP_OUTCOME_FP32]);
    amp_json_kint(j, "fallback", (long long)e->outcomes[AMP_OUTCOME_FALLBACK]);
    amp_json_kint(j, "unmeasured", (long long)e->unmeasured);
    amp_json_key(j, "modes");
    amp_json_object(j);
    for (m = 0; m < AMP_MODE_COUNT; m++)
        if (e->modes[m])
            amp_json_kint(j, amp_mode_name((enum amp_mode)m),
                          (long long)e->modes[m]);
    amp_json_end_object(j);
    amp_json_kstring(j, "shadow_candidate",
                     e->modes[AMP_MODE_SHADOW]
                         ? amp_mode_name(e->candidate) : NULL);
    amp_json_replays(j, e);
}

/* Why some converted calls have no FP32 time to compare with; NULL when
 * every one has. */
static const char *
amp_unknown_reason(const struct amp_prof_entry *e,
                   const struct amp_prof_totals *t)
{
    if (t->unknown)
        return "no FP32 baseline: no call of the shape ran beside FP32 "
               "(AMPSHIM_BASELINE=off; its first call was captured into a "
               "CUDA graph or not timed; or, under AMPSHIM_MODE, a "
               "cuBLASLt epilogue with an auxiliary output)";
    if (e->unmeasured)
        return "converted calls not timed: captured into a CUDA graph, or "
               "no timing event was free";
    return NULL;
}

static void
amp_json_time(struct amp_json_out *j, const struct amp_prof_entry *e,
              const struct amp_prof_totals *t, double conv_known_ms,
              const struct amp_steady *steady)
{
    amp_json_key(j, "time");
    amp_json_object(j);
    amp_json_knumber(j, "converted_ms", e->converted_ms);
    amp_json_knumber(j, "converted_estimated_ms",
                     t->converted_estimated_ms);
    amp_json_knumber(j, "shadow_fp32_ms", e->shadow_fp32_ms);
    amp_json_knumber(j, "shadow_candidate_ms", e->shadow_candidate_ms);
    amp_json_knumber(j, "shadow_check_ms", e->shadow_check_ms);
    amp_json_knumber(j, "timing_ms", e->timing_ms);
    amp_json_knumber(j, "fp32_ms", t->fp32_ms);
    amp_json_knumber(j, "fp32_measured_ms", t->fp32_measured_ms);
    amp_json_knumber(j, "fp32_estimated_ms", t->fp32_estimated_ms);
    amp_json_knumber(j, "actual_ms", t->actual_ms);
    amp_json_knumber(j, "saved_ms", t->saved_ms);
    amp_json_knumber(j, "speedup", amp_ratio(t->fp32_ms, t->actual_ms));
    amp_json_knumber(j, "converted_speedup",
                     amp_ratio(t->fp32_estimated_ms, conv_known_ms));
    amp_json_knumber(j, "candidate_speedup",
                     amp_ratio(e->shadow_fp32_ms, e->shadow_candidate_ms));
    amp_json_knumber(j, "steady_speedup",
                     amp_ratio(steady->fp32_ms, steady->chosen_ms));
    amp_json_kint(j, "calls_timed", (long long)(e->timed + e->shadow_timed));
    amp_json_kint(j, "calls_converted_estimated",
                  (long long)t->converted_estimated);
    amp_json_kint(j, "fp32_sampled", (long long)e->fp32_sampled);
    amp_json_knumber(j, "fp32_sampled_ms", e->fp32_sampled_ms);
    amp_json_kint(j, "calls_fp32_measured", (long long)t->measured);
    amp_json_kint(j, "calls_fp32_estimated", (long long)t->estimated);
    amp_json_kint(j, "calls_fp32_unknown", (long long)t->unknown);
    amp_json_kstring(j, "fp32_unknown_reason", amp_unknown_reason(e, t));
    amp_json_end_object(j);
}

static void
amp_json_errors(struct amp_json_out *j, const struct amp_prof_entry *e,
                double delivered_rel, double delivered_fro)
{
    double tol = amp_policy_tolerance();

    amp_json_key(j, "errors");
    amp_json_object(j);
    /* Errors of the calls that compared an element: none (null) when
     * every FP32 result had no finite element, never an error of 0. */
    amp_json_kint(j, "shadow_calls", (long long)e->error_calls);
    amp_json_kint(j, "compared", (long long)e->compared);
    amp_json_knumber(j, "max_rel", e->measured_calls ? e->max_rel : NAN);
    amp_json_knumber(j, "mean_rel", amp_ratio(e->sum_rel,
                                              (double)e->measured_calls));
    amp_json_knumber(j, "max_abs", e->measured_calls ? e->max_abs : NAN);
    amp_json_knumber(j, "max_fro", e->measured_calls ? e->max_fro : NAN);
    amp_json_knumber(j, "mean_fro", amp_ratio(e->sum_fro,
                                              (double)e->measured_calls));
    amp_json_kint(j, "nonfinite", (long long)e->nonfinite);
    amp_json_knumber(j, "tolerance", tol == HUGE_VAL ? NAN : tol);
    amp_json_kstring(j, "tolerance_norm",
                     amp_norm_name(amp_policy_tolerance_norm()));
    amp_json_kint(j, "over_tolerance", (long long)e->over_tolerance);
    amp_json_knumber(j, "delivered_max_rel", delivered_rel);
    amp_json_knumber(j, "delivered_max_fro", delivered_fro);
    amp_json_end_object(j);
}

/* Every call that ran FP32, by why: the reasons of the calls kept FP32
 * and of the fallbacks; they sum to fp32 + fallback. */
static void
amp_json_reasons(struct amp_json_out *j, const struct amp_prof_entry *e)
{
    int i;

    amp_json_key(j, "fp32_reasons");
    amp_json_object(j);
    for (i = 0; i < AMP_KEPT_COUNT; i++)
        if (e->kept[i])
            amp_json_kint(j, amp_kept_name((enum amp_kept)i),
                          (long long)e->kept[i]);
    for (i = 1; i < AMP_FALLBACK_COUNT; i++)
        if (e->fallbacks[i])
            amp_json_kint(j, amp_fallback_name((enum amp_fallback)i),
                          (long long)e->fallbacks[i]);
    amp_json_end_object(j);
}

static void
amp_json_rest(struct amp_json_out *j, const struct amp_prof_entry *e,
              const struct amp_prof_totals *t)
{
    int i;

    amp_json_key(j, "fallbacks");
    amp_json_object(j);
    for (i = 1; i < AMP_FALLBACK_COUNT; i++)
        if (e->fallbacks[i])
            amp_json_kint(j, amp_fallback_name((enum amp_fallback)i),
                          (long long)e->fallbacks[i]);
    amp_json_end_object(j);
    amp_json_reasons(j, e);
    amp_json_key(j, "scratch_bytes");
    amp_json_object(j);
    amp_json_kint(j, "max", (long long)e->scratch_max);
    amp_json_knumber(j, "mean",
                     amp_ratio(e->scratch_total,
                               (double)e->outcomes[AMP_OUTCOME_CONVERTED]));
    amp_json_end_object(j);
    amp_json_key(j, "flops");
    amp_json_object(j);
    amp_json_knumber(j, "total", t->flops_total);
    amp_json_knumber(j, "converted", t->flops_converted);
    amp_json_end_object(j);
}

static void
amp_json_dims(struct amp_json_out *j, const struct amp_shape *s)
{
    static const char *const gemm[] = {"m", "n", "k", "batch"};
    int i;

    amp_json_key(j, "dims");
    amp_json_object(j);
    if (s->family == AMP_FAMILY_GEMM) {
        for (i = 0; i < 4; i++)
            amp_json_kint(j, gemm[i], (long long)s->v[i]);
        amp_json_kstring(j, "transa", s->v[4] ? "T" : "N");
        amp_json_kstring(j, "transb", s->v[5] ? "T" : "N");
        if (s->v[6] != AMP_EPI_DEFAULT)
            amp_json_kstring(j, "epilogue",
                             amp_epi_name((enum amp_epi)s->v[6]));
    } else {
        amp_json_key(j, "x");
        amp_json_array(j);
        for (i = 0; i < s->v[10]; i++)
            amp_json_int(j, (long long)s->v[i]);
        amp_json_end_array(j);
        amp_json_key(j, "w");
        amp_json_array(j);
        for (i = 0; i < s->v[10]; i++)
            amp_json_int(j, (long long)s->v[5 + i]);
        amp_json_end_array(j);
        amp_json_kint(j, "groups", (long long)s->v[11]);
    }
    amp_json_end_object(j);
}

/* An auto rule's (site, shape): its choice and every candidate's
 * figures (decide/auto.h). */
static void
amp_json_auto(struct amp_json_out *j, const struct amp_prof_entry *e)
{
    static const char *const states[] = {
        [AMP_AUTO_MEASURING] = "measuring", [AMP_AUTO_CHOSEN] = "chosen",
        [AMP_AUTO_FP32] = "fp32",
    };
    struct amp_auto_view v;
    char why[96];
    int i;

    if (!e->auto_shape || amp_auto_get(e->site, e->auto_shape - 1, &v) != 0)
        return;
    amp_json_key(j, "auto");
    amp_json_object(j);
    amp_json_kstring(j, "state", states[v.state]);
    amp_json_kstring(j, "choice",
                     v.state == AMP_AUTO_CHOSEN ? amp_mode_name(v.c[v.choice].mode)
                     : v.state == AMP_AUTO_FP32 ? "fp32"
                                                : NULL);
    amp_json_kint(j, "changes", v.changes);
    amp_json_key(j, "candidates");
    amp_json_array(j);
    for (i = 0; i < v.ncandidates; i++) {
        const struct amp_auto_candidate *c = &v.c[i];
        const char *no = amp_auto_rejects(c, NULL, why, sizeof why);

        amp_json_object(j);
        amp_json_kstring(j, "mode", amp_mode_name(c->mode));
        amp_json_kint(j, "shadow_calls", (long long)c->issued);
        amp_json_kint(j, "errors_measured", (long long)c->errors);
        amp_json_kint(j, "times_measured", (long long)c->timed);
        amp_json_kint(j, "warmup_calls", (long long)c->warmups);
        amp_json_kint(j, "untimed_calls", (long long)c->untimed);
        amp_json_kint(j, "compared", (long long)c->worst.compared);
        amp_json_knumber(j, "max_rel",
                         c->worst.compared ? c->worst.max_rel : NAN);
        amp_json_knumber(j, "fro_rel",
                         c->worst.compared ? c->worst.fro_rel : NAN);
        amp_json_kint(j, "nonfinite", (long long)c->worst.nonfinite);
        amp_json_knumber(j, "candidate_ms",
                         c->timed ? c->candidate_ms / (double)c->timed : NAN);
        amp_json_knumber(j, "fp32_ms",
                         c->timed ? c->fp32_ms / (double)c->timed : NAN);
        amp_json_knumber(j, "speedup", c->timed && c->candidate_ms > 0
                                           ? c->fp32_ms / c->candidate_ms
                                           : NAN);
        amp_json_knumber(j, "median_speedup", amp_auto_median_speedup(c));
        amp_json_kbool(j, "eligible", no == NULL);
        amp_json_kstring(j, "rejected", no);
        amp_json_end_object(j);
    }
    amp_json_end_array(j);
    amp_json_end_object(j);
}

static void
amp_json_shape(struct amp_json_out *j, const struct amp_prof_entry *e)
{
    struct amp_prof_totals t;
    struct amp_steady steady;
    double rel, fro;
    char text[160];

    amp_prof_totals(e, &t);
    memset(&steady, 0, sizeof steady);
    amp_steady_add(&steady, e);
    amp_delivered_error(e, &rel, &fro);
    amp_shape_format(&e->shape, text, sizeof text);
    amp_json_object(j);
    amp_json_kstring(j, "shape", text);
    amp_json_dims(j, &e->shape);
    amp_json_counts(j, e);
    amp_json_knumber(j, "fp32_baseline_ms", amp_prof_baseline(e) >= 0.0
                                                ? amp_prof_baseline(e)
                                                : NAN);
    amp_json_time(j, e, &t,
                  amp_prof_baseline(e) >= 0.0 ? amp_prof_converted_total(e)
                                              : 0.0,
                  &steady);
    amp_json_errors(j, e, rel, fro);
    amp_json_rest(j, e, &t);
    amp_json_auto(j, e);
    amp_json_end_object(j);
}

static void
amp_json_site(struct amp_json_out *j, const struct amp_report *r, size_t g)
{
    const struct amp_group *grp = &r->groups[g];
    const struct amp_site *s = grp->site;
    int demoted = amp_site_demoted(s) ||
                  (s && atomic_load(&s->demoted_shapes) > 0);
    char label[AMP_LABEL_LEN];
    struct amp_steady steady;
    double rel, fro;
    size_t i;

    amp_group_steady(r, grp, &steady);
    amp_group_delivered_error(r, grp, &rel, &fro);
    amp_json_object(j);
    amp_json_kstring(j, "api", grp->api);
    amp_json_kstring(j, "family",
                     grp->family == AMP_FAMILY_GEMM ? "gemm" : "conv");
    amp_json_kstring(j, "function", s && s->function[0] ? s->function : NULL);
    amp_json_kstring(j, "symbol", s && s->symbol[0] ? s->symbol : NULL);
    amp_json_kstring(j, "module", s && s->module[0] ? s->module : NULL);
    amp_json_knumber(j, "offset", s && s->module[0] ? (double)s->offset : NAN);
    /* The frames above the caller that tell this site from others. */
    amp_json_key(j, "stack");
    amp_json_array(j);
    for (i = 1; s && i < (size_t)s->depth; i++)
        amp_json_string(j, amp_site_frame_label(s, (int)i, label,
                                                sizeof label));
    amp_json_end_array(j);
    amp_json_counts(j, &grp->sum);
    amp_json_time(j, &grp->sum, &grp->t, grp->conv_known_ms, &steady);
    amp_json_errors(j, &grp->sum, rel, fro);
    amp_json_rest(j, &grp->sum, &grp->t);
    amp_json_kbool(j, "demoted", demoted);
    amp_json_kstring(j, "demoted_reason", demoted ? s->demoted_why : NULL);
    amp_json_key(j, "shapes");
    amp_json_array(j);
    for (i = 0; i < r->nentries; i++)
        if (r->group_of[i] == (int)g)
            amp_json_shape(j, &r->entries[i]);
    amp_json_end_array(j);
    amp_json_end_object(j);
}

/* The process's arguments (/proc/self/cmdline), as an array; null when
 * they cannot be read. */
static void
amp_json_command_line(struct amp_json_out *j)
{
    char buf[8192];
    size_t len = 0, at;
    ssize_t n;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

    amp_json_key(j, "command_line");
    if (fd < 0) {
        amp_json_null(j);
        return;
    }
    while (len < sizeof buf &&
           (n = read(fd, buf + len, sizeof buf - len)) > 0)
        len += (size_t)n;
    close(fd);
    /* A command line longer than the buffer keeps its whole arguments;
     * then every argument ends with its NUL. */
    if (len == sizeof buf)
        while (len > 0 && buf[len - 1] != '\0')
            len--;
    if (len > 0 && buf[len - 1] != '\0')
        buf[len - 1] = '\0'; /* the kernel ends each; never read past */
    amp_json_array(j);
    for (at = 0; at < len; at += strlen(buf + at) + 1)
        amp_json_string(j, buf + at);
    amp_json_end_array(j);
}

/* This host's name, as %h expands it; NULL when it has none. */
static const char *
amp_host_name(char *buf, size_t cap)
{
    if (gethostname(buf, cap) != 0)
        return NULL;
    buf[cap - 1] = '\0';
    return buf;
}

static void
amp_json_program(struct amp_json_out *j)
{
    struct amp_program prog;
    char id[2 * AMP_POLICY_BUILD_ID_MAX + 1], host[256];
    size_t i;

    amp_program_self(&prog);
    for (i = 0; i < prog.build_id_len; i++)
        snprintf(id + 2 * i, 3, "%02x", prog.build_id[i]);
    id[2 * prog.build_id_len] = '\0';
    amp_json_key(j, "program");
    amp_json_object(j);
    amp_json_kstring(j, "name", prog.name);
    amp_json_kstring(j, "path", prog.exe);
    amp_json_kstring(j, "build_id", prog.build_id_len ? id : NULL);
    amp_json_kint(j, "pid", (long long)getpid());
    amp_json_command_line(j);
    amp_json_kstring(j, "host", amp_host_name(host, sizeof host));
    amp_json_end_object(j);
}

/* The job the process ran in (its launcher's variables); null outside
 * one. */
static void
amp_json_job(struct amp_json_out *j)
{
    struct amp_job job;

    amp_job_self(&job);
    amp_json_key(j, "job");
    if (!job.launcher) {
        amp_json_null(j);
        return;
    }
    amp_json_object(j);
    amp_json_kstring(j, "launcher", job.launcher);
    amp_json_kint(j, "rank", job.rank);
    amp_json_knumber(j, "local_rank",
                     job.local_rank < 0 ? NAN : (double)job.local_rank);
    amp_json_knumber(j, "size", job.size < 0 ? NAN : (double)job.size);
    amp_json_kstring(j, "id", job.id[0] ? job.id : NULL);
    amp_json_end_object(j);
}

/* The device's name: of the first context the shim used, else of the
 * calling thread's current one, else of the first device (by ordinal)
 * the program's calls ran on: a program that reset the device or
 * released its context before exit, with every call kept FP32 (the shim
 * set nothing up), still ran them there. -1 when there is none. */
int
amp_report_device(char *name, size_t cap)
{
    const struct amp_dev *dev = amp_dev_first();
    struct amp_prof_device ran;
    unsigned long long dropped;

    if (dev) {
        snprintf(name, cap, "%s", amp_dev_name(dev));
        return 0;
    }
    if (amp_dev_current_name(name, cap) == AMP_OK)
        return 0;
    if (amp_prof_devices(&ran, 1, &dropped) == 1 &&
        amp_dev_ordinal_name(ran.ordinal, name, cap) == AMP_OK)
        return 0;
    return -1;
}

/* The device label: its name, and whether the emulator models it. */
static int
amp_device_emulated(const char *name, char *modelled, size_t cap)
{
    size_t n = strlen(name), k = strlen(AMP_EMULATED_SUFFIX);

    if (n < k || strcmp(name + n - k, AMP_EMULATED_SUFFIX) != 0)
        return 0;
    snprintf(modelled, cap, "%.*s", (int)(n - k), name);
    return 1;
}

static void
amp_json_device(struct amp_json_out *j)
{
    const struct amp_dev *first = amp_dev_first();
    char modelled[128], name[128], cc[24];
    int emulated;

    amp_json_key(j, "device");
    if (amp_report_device(name, sizeof name) != 0) {
        amp_json_null(j);
        return;
    }
    emulated = amp_device_emulated(name, modelled, sizeof modelled);
    amp_json_object(j);
    amp_json_kstring(j, "name", emulated ? "emulated" : name);
    amp_json_kstring(j, "reported_name", name);
    amp_json_kbool(j, "emulated", emulated);
    amp_json_kstring(j, "modelled_gpu", emulated ? modelled : NULL);
    amp_json_kstring(j, "timing", emulated ? "modelled" : "measured");
    /* Known of the device the shim set up in (the driver says 0.0 when it
     * does not know). */
    if (first && amp_dev_cc_major(first) > 0)
        snprintf(cc, sizeof cc, "%d.%d", amp_dev_cc_major(first),
                 amp_dev_cc_minor(first));
    amp_json_kstring(j, "compute_capability",
                     first && amp_dev_cc_major(first) > 0 ? cc : NULL);
    amp_json_end_object(j);
}

/* Every device calls ran on, by ordinal: what ran there and what it
 * gained (the per-device share of the totals). The first is the device
 * above, when the shim set it up first. */
#define AMP_REPORT_DEVICES 64
static void
amp_json_devices(struct amp_json_out *j, const struct amp_report *r)
{
    struct amp_prof_device d[AMP_REPORT_DEVICES];
    unsigned long long dropped;
    size_t n = amp_prof_devices_of(r->entries, r->nentries, d,
                                   AMP_REPORT_DEVICES, &dropped),
           i;
    char name[128];

    amp_json_key(j, "devices");
    amp_json_array(j);
    for (i = 0; i < n; i++) {
        amp_json_object(j);
        amp_json_kint(j, "ordinal", d[i].ordinal);
        amp_json_kstring(j, "name",
                         amp_dev_ordinal_name(d[i].ordinal, name,
                                              sizeof name) == AMP_OK
                             ? name
                             : NULL);
        amp_json_kint(j, "calls", (long long)d[i].calls);
        amp_json_kint(j, "converted", (long long)d[i].converted);
        amp_json_kint(j, "delivered",
                      (long long)(d[i].converted - d[i].shadow));
        amp_json_kint(j, "shadow", (long long)d[i].shadow);
        amp_json_kint(j, "fp32", (long long)d[i].fp32);
        amp_json_kint(j, "fallback", (long long)d[i].fallback);
        amp_json_knumber(j, "fp32_ms", d[i].fp32_ms);
        amp_json_knumber(j, "actual_ms", d[i].actual_ms);
        amp_json_knumber(j, "speedup",
                         amp_ratio(d[i].fp32_ms, d[i].actual_ms));
        amp_json_knumber(j, "flops_fp32", d[i].flops_total);
        amp_json_knumber(j, "flops_converted", d[i].flops_converted);
        amp_json_kint(j, "calls_fp32_measured", (long long)d[i].measured);
        amp_json_kint(j, "calls_fp32_estimated", (long long)d[i].estimated);
        amp_json_kint(j, "calls_fp32_unknown", (long long)d[i].unknown);
        amp_json_end_object(j);
    }
    amp_json_end_array(j);
}

static void
amp_json_policy(struct amp_json_out *j)
{
    struct amp_policy_info info;
    double tol = amp_policy_tolerance();
    char mode[48] = "", source[AMP_CONFIG_PATH_LEN + 32];

    amp_policy_info(&info);
    if (strcmp(info.source, "AMPSHIM_MODE") == 0)
        snprintf(mode, sizeof mode, "%s%s%s", amp_mode_name(info.mode),
                 info.mode == AMP_MODE_SHADOW ? ":" : "",
                 info.mode == AMP_MODE_SHADOW ? amp_mode_name(info.candidate)
                                              : "");
    amp_json_key(j, "policy");
    amp_json_object(j);
    amp_json_kstring(j, "source", info.source);
    amp_json_kstring(j, "path", info.path);
    amp_json_kstring(j, "why", info.why);
    amp_json_kbool(j, "broken", info.broken);
    amp_json_kstring(j, "mode", mode[0] ? mode : NULL);
    amp_json_knumber(j, "tolerance", tol == HUGE_VAL ? NAN : tol);
    amp_json_kstring(j, "tolerance_norm",
                     amp_norm_name(amp_policy_tolerance_norm()));
    amp_json_kstring(j, "tolerance_source",
                     amp_policy_tolerance_source(source, sizeof source));
    amp_json_end_object(j);
}

static void
amp_json_environment(struct amp_json_out *j, const struct amp_config *cfg)
{
    int i;

    amp_json_key(j, "environment");
    amp_json_object(j);
    for (i = 0; i < cfg->nfp32_env; i++) {
        char name[AMP_CONFIG_PROBLEM_LEN];
        char *eq;

        snprintf(name, sizeof name, "%s", cfg->fp32_env[i]);
        eq = strchr(name, '=');
        if (!eq)
            continue;
        *eq = '\0';
        amp_json_kstring(j, name, eq + 1);
    }
    amp_json_end_object(j);
}

static void
amp_json_apis(struct amp_json_out *j)
{
    const struct amp_api_stats *api;

    amp_json_key(j, "apis");
    amp_json_array(j);
    for (api = amp_stats_list(); api; api = amp_stats_next(api)) {
        amp_json_object(j);
        amp_json_kstring(j, "api", api->name);
        amp_json_kint(j, "calls", (long long)atomic_load(&api->calls));
        amp_json_kint(j, "converted", (long long)atomic_load(
                                          &api->outcomes[AMP_OUTCOME_CONVERTED]));
        amp_json_kint(j, "fp32", (long long)atomic_load(
                                     &api->outcomes[AMP_OUTCOME_FP32]));
        amp_json_kint(j, "fallback", (long long)atomic_load(
                                         &api->outcomes[AMP_OUTCOME_FALLBACK]));
        amp_json_kint(j, "passthrough",
                      (long long)atomic_load(
                          &api->outcomes[AMP_OUTCOME_PASSTHROUGH]));
        amp_json_kint(j, "plans_built",
                      (long long)atomic_load(&api->plans_built));
        amp_json_kint(j, "heuristic_queries",
                      (long long)atomic_load(&api->heuristic_queries));
        amp_json_end_object(j);
    }
    amp_json_end_array(j);
}

static void
amp_json_totals(struct amp_json_out *j, const struct amp_report *r)
{
    const struct amp_group *a = &r->all;
    struct amp_steady steady;
    char verdict[512];

    amp_group_steady(r, NULL, &steady);
    amp_json_key(j, "totals");
    amp_json_object(j);
    amp_json_kint(j, "sites", (long long)r->ngroups);
    amp_json_kint(j, "calls", (long long)a->sum.calls);
    amp_json_kint(j, "converted",
                  (long long)a->sum.outcomes[AMP_OUTCOME_CONVERTED]);
    amp_json_kint(j, "delivered", (long long)amp_entry_delivered(&a->sum));
    amp_json_kint(j, "shadow", (long long)a->sum.modes[AMP_MODE_SHADOW]);
    amp_json_kint(j, "fp32", (long long)a->sum.outcomes[AMP_OUTCOME_FP32]);
    amp_json_kint(j, "fallback",
                  (long long)a->sum.outcomes[AMP_OUTCOME_FALLBACK]);
    amp_json_kint(j, "unmeasured", (long long)a->sum.unmeasured);
    amp_json_kint(j, "dropped", (long long)amp_prof_dropped());
    amp_json_kint(j, "graph_launches", (long long)amp_replay_launches());
    amp_json_replays(j, &a->sum);
    amp_json_knumber(j, "fp32_ms", a->t.fp32_ms);
    amp_json_knumber(j, "actual_ms", a->t.actual_ms);
    amp_json_knumber(j, "saved_ms", a->t.saved_ms);
    amp_json_knumber(j, "speedup", amp_ratio(a->t.fp32_ms, a->t.actual_ms));
    amp_json_knumber(j, "flops_fp32", a->t.flops_total);
    amp_json_knumber(j, "flops_converted", a->t.flops_converted);
    amp_json_knumber(j, "converted_share",
                     amp_ratio(a->t.flops_converted, a->t.flops_total));
    amp_json_knumber(j, "converted_speedup",
                     amp_ratio(a->t.fp32_estimated_ms, a->conv_known_ms));
    amp_json_knumber(j, "steady_speedup",
                     amp_ratio(steady.fp32_ms, steady.chosen_ms));
    amp_json_kint(j, "shapes", (long long)r->nentries);
    amp_json_kint(j, "shapes_measuring", (long long)steady.measuring);
    amp_json_kstring(j, "verdict", amp_report_verdict(r, verdict,
                                                      sizeof verdict));
    amp_json_knumber(j, "wall_ms", amp_process_wall_ms());
    amp_json_knumber(j, "device_ms", a->t.device_ms);
    amp_json_knumber(j, "timing_ms", a->t.timing_ms);
    amp_json_kint(j, "calls_untimed", (long long)a->t.device_untimed);
    amp_json_kint(j, "calls_converted_estimated",
                  (long long)a->t.converted_estimated);
    amp_json_kint(j, "calls_fp32_sampled", (long long)a->sum.fp32_sampled);
    amp_json_kint(j, "calls_fp32_measured", (long long)a->t.measured);
    amp_json_kint(j, "calls_fp32_estimated", (long long)a->t.estimated);
    amp_json_kint(j, "calls_fp32_unknown", (long long)a->t.unknown);
    amp_json_reasons(j, &a->sum);
    amp_json_end_object(j);
}

/* One coverage kind: its calls, FLOPs and share of all the work. */
static void
amp_json_cover_kind(struct amp_json_out *j, const struct amp_cover_totals *t,
                    enum amp_cover c)
{
    amp_json_key(j, amp_cover_name(c));
    amp_json_object(j);
    amp_json_kint(j, "calls", (long long)t->calls[c]);
    amp_json_knumber(j, "flops", t->flops[c]);
    amp_json_knumber(j, "share", amp_ratio(t->flops[c], t->total));
    amp_json_end_object(j);
}

/* Every GEMM and convolution the process ran, FP32 or not. */
static void
amp_json_coverage(struct amp_json_out *j)
{
    struct amp_cover_totals t;
    int c;

    amp_cover_totals(&t);
    amp_json_key(j, "coverage");
    amp_json_object(j);
    amp_json_kint(j, "calls", (long long)t.calls_total);
    amp_json_knumber(j, "flops", t.total);
    amp_json_knumber(j, "fp32_share", amp_ratio(t.fp32, t.total));
    amp_json_knumber(j, "converted_share",
                     amp_ratio(t.flops[AMP_COVER_CONVERTED], t.total));
    amp_json_knumber(j, "fp32_kept_share", amp_ratio(t.fp32_kept, t.total));
    amp_json_knumber(j, "other_share", amp_ratio(t.other, t.total));
    amp_json_cover_kind(j, &t, AMP_COVER_CONVERTED);
    amp_json_key(j, "fp32_kept");
    amp_json_object(j);
    for (c = AMP_COVER_CONVERTED + 1; c < AMP_COVER_FIRST_OTHER; c++)
        amp_json_cover_kind(j, &t, (enum amp_cover)c);
    amp_json_end_object(j);
    amp_json_key(j, "other");
    amp_json_object(j);
    for (c = AMP_COVER_FIRST_OTHER; c < AMP_COVER_COUNT; c++)
        amp_json_cover_kind(j, &t, (enum amp_cover)c);
    amp_json_end_object(j);
    amp_json_end_object(j);
}

/* The report into f; `complete`: written at exit (else a snapshot taken
 * during the run). */
static enum amp_status
amp_report_write_as(FILE *f, const struct amp_config *cfg, int complete)
{
    struct amp_json_out j;
    struct amp_report r;
    char when[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    size_t g;
    enum amp_status st = amp_report_gather(&r, cfg);

    if (st == AMP_OK) {
        if (gmtime_r(&now, &tm))
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        amp_json_init(&j, f, 1);
        amp_json_object(&j);
        amp_json_kstring(&j, "schema", "ampshim-report");
        amp_json_kint(&j, "version", AMP_REPORT_VERSION);
        amp_json_kstring(&j, "ampshim_version", AMP_VERSION);
        amp_json_kstring(&j, "generated", when);
        amp_json_kbool(&j, "complete", complete);
        amp_json_program(&j);
        amp_json_job(&j);
        amp_json_device(&j);
        amp_json_devices(&j, &r);
        amp_json_policy(&j);
        amp_json_environment(&j, cfg);
        amp_json_apis(&j);
        amp_json_key(&j, "sites");
        amp_json_array(&j);
        for (g = 0; g < r.ngroups; g++)
            amp_json_site(&j, &r, g);
        amp_json_end_array(&j);
        amp_json_totals(&j, &r);
        amp_json_coverage(&j);
        amp_json_end_object(&j);
        fputc('\n', f);
    }
    amp_report_free(&r);
    if (st == AMP_OK && (fflush(f) != 0 || ferror(f)))
        st = AMP_ERR_IO;
    return st;
}

enum amp_status
amp_report_write(FILE *f, const struct amp_config *cfg)
{
    return amp_report_write_as(f, cfg, 1);
}

enum amp_status
amp_report_write_snapshot(FILE *f, const struct amp_config *cfg)
{
    return amp_report_write_as(f, cfg, 0);
}
