/* The report writers: per-site groups of the profiler's (site, shape)
 * entries, as JSON, as a table, and the trace. */
#include "measure/report.h"

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

#define AMP_EMULATED_SUFFIX " (emulated)"

/* ---- Sites: the entries of one (site, API) ---------------------------------- */

struct amp_group {
    const char *api;
    struct amp_site *site;
    enum amp_family family;
    struct amp_prof_entry sum;   /* counters summed over the shapes */
    struct amp_prof_totals t;    /* totals summed over the shapes */
    double conv_known_ms;        /* converted time of the calls with an
                                    estimated FP32 time */
};

/* Everything the writers use, gathered once. */
struct amp_report {
    struct amp_prof_entry *entries;
    size_t nentries;
    int *group_of;               /* entry -> group */
    struct amp_group *groups;
    size_t ngroups;
    struct amp_group all;        /* every group summed */
    const struct amp_config *cfg;
};

static void
amp_sum_entry(struct amp_prof_entry *s, const struct amp_prof_entry *e)
{
    int i;

    s->calls += e->calls;
    for (i = 0; i < AMP_OUTCOME_COUNT; i++)
        s->outcomes[i] += e->outcomes[i];
    for (i = 0; i < AMP_MODE_COUNT; i++)
        s->modes[i] += e->modes[i];
    for (i = 0; i < AMP_FALLBACK_COUNT; i++)
        s->fallbacks[i] += e->fallbacks[i];
    for (i = 0; i < AMP_KEPT_COUNT; i++)
        s->kept[i] += e->kept[i];
    if (e->modes[AMP_MODE_SHADOW])
        s->candidate = e->candidate;
    s->unmeasured += e->unmeasured;
    s->timed += e->timed;
    s->converted_ms += e->converted_ms;
    s->sampled_out += e->sampled_out;
    s->fp32_sampled += e->fp32_sampled;
    s->fp32_sampled_ms += e->fp32_sampled_ms;
    s->shadow_timed += e->shadow_timed;
    s->shadow_fp32_ms += e->shadow_fp32_ms;
    s->shadow_candidate_ms += e->shadow_candidate_ms;
    s->shadow_check_ms += e->shadow_check_ms;
    s->error_calls += e->error_calls;
    s->measured_calls += e->measured_calls;
    s->compared += e->compared;
    s->sum_rel += e->sum_rel;
    if (e->max_rel > s->max_rel)
        s->max_rel = e->max_rel;
    s->sum_fro += e->sum_fro;
    if (e->max_fro > s->max_fro)
        s->max_fro = e->max_fro;
    if (e->max_abs > s->max_abs)
        s->max_abs = e->max_abs;
    s->over_tolerance += e->over_tolerance;
    s->nonfinite += e->nonfinite;
    if (e->scratch_max > s->scratch_max)
        s->scratch_max = e->scratch_max;
    s->scratch_total += e->scratch_total;
    s->replays += e->replays;
    s->replays_converted += e->replays_converted;
    s->replays_provisional += e->replays_provisional;
    s->replays_saved_ms += e->replays_saved_ms;
    s->replays_flops += e->replays_flops;
    s->replays_unestimated += e->replays_unestimated;
}

/* The FLOPs of e's converted replays and the time they saved: each the
 * shape's FP32 baseline less its converted calls' mean time, both
 * measured outside the graph (a replayed call is not timed); the replays
 * without both are counted unestimated. */
static void
amp_replays_estimate(struct amp_prof_entry *e)
{
    double base = amp_prof_baseline(e);

    e->replays_saved_ms = 0.0;
    e->replays_unestimated = 0;
    e->replays_flops = e->flops * (double)e->replays_converted;
    if (!e->replays_converted)
        return;
    if (base >= 0.0 && e->timed)
        e->replays_saved_ms = (double)e->replays_converted *
                              (base - e->converted_ms / (double)e->timed);
    else
        e->replays_unestimated = e->replays_converted;
}

static void
amp_sum_totals(struct amp_prof_totals *s, const struct amp_prof_totals *t)
{
    s->fp32_ms += t->fp32_ms;
    s->actual_ms += t->actual_ms;
    s->saved_ms += t->saved_ms;
    s->fp32_measured_ms += t->fp32_measured_ms;
    s->fp32_estimated_ms += t->fp32_estimated_ms;
    s->measured += t->measured;
    s->estimated += t->estimated;
    s->unknown += t->unknown;
    s->flops_total += t->flops_total;
    s->flops_converted += t->flops_converted;
    s->device_ms += t->device_ms;
    s->device_untimed += t->device_untimed;
    s->converted_estimated += t->converted_estimated;
    s->converted_estimated_ms += t->converted_estimated_ms;
}

static void
amp_group_add(struct amp_group *g, const struct amp_prof_entry *e)
{
    struct amp_prof_totals t;

    amp_prof_totals(e, &t);
    amp_sum_entry(&g->sum, e);
    amp_sum_totals(&g->t, &t);
    if (amp_prof_baseline(e) >= 0.0)
        g->conv_known_ms += amp_prof_converted_total(e);
}

/* Groups the snapshot's entries by (site, API), in first-seen order. */
static enum amp_status
amp_report_gather(struct amp_report *r, const struct amp_config *cfg)
{
    size_t i, g;

    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->entries = amp_prof_snapshot(&r->nentries);
    if (r->nentries == 0)
        return AMP_OK;
    r->group_of = calloc(r->nentries, sizeof *r->group_of);
    r->groups = calloc(r->nentries, sizeof *r->groups);
    if (!r->group_of || !r->groups)
        return AMP_ERR_NOMEM;
    for (i = 0; i < r->nentries; i++) {
        struct amp_prof_entry *e = &r->entries[i];

        amp_replays_estimate(e);
        for (g = 0; g < r->ngroups; g++)
            if (r->groups[g].site == e->site && r->groups[g].api == e->api)
                break;
        if (g == r->ngroups) {
            r->groups[g].api = e->api;
            r->groups[g].site = e->site;
            r->groups[g].family = e->shape.family;
            amp_site_symbolize(e->site);
            r->ngroups++;
        }
        r->group_of[i] = (int)g;
        amp_group_add(&r->groups[g], e);
        amp_group_add(&r->all, e);
    }
    return AMP_OK;
}

static void
amp_report_free(struct amp_report *r)
{
    free(r->entries);
    free(r->group_of);
    free(r->groups);
}

/* a / b, NaN (written null) when b is not positive. */
static double
amp_ratio(double a, double b)
{
    return b > 0.0 ? a / b : NAN;
}

/* ---- What the program got ------------------------------------------------------ */

/* Calls measured in shadow: the program got FP32's result. */
static unsigned long long
amp_entry_shadow(const struct amp_prof_entry *e)
{
    return e->modes[AMP_MODE_SHADOW];
}

/* Calls whose result the program got from a converted path. */
static unsigned long long
amp_entry_delivered(const struct amp_prof_entry *e)
{
    return e->outcomes[AMP_OUTCOME_CONVERTED] - e->modes[AMP_MODE_SHADOW];
}

/* The steady state of (site, shape)s: what their calls cost in FP32 and
 * under the choice made, each shape's mean times weighted by its calls. */
struct amp_steady {
    double fp32_ms, chosen_ms;
    unsigned long long timed;      /* shapes with both times */
    unsigned long long measuring;  /* auto shapes still measuring */
};

/* Adds e's steady state: under auto, the mean time of the calls that ran
 * converted in its choice (a shadow call's candidate does more: its own
 * output beside the original's), or where none was timed the chosen
 * candidate's mean in shadow, beside the mean FP32 time measured with it
 * (FP32's own when auto kept FP32); for a demoted shape, FP32's; else the converted calls' mean
 * time (or their candidates' beside the FP32 baseline), or, for a shape
 * only ever shadowed, the FP32 original plus its candidate, against the
 * baseline. A shape without an
 * FP32 time adds nothing. */
static void
amp_steady_add(struct amp_steady *s, const struct amp_prof_entry *e)
{
    double base = amp_prof_baseline(e), cost = -1.0, n = (double)e->calls;
    struct amp_auto_view v;
    int i;

    if (e->auto_shape && amp_auto_get(e->site, e->auto_shape - 1, &v) == 0) {
        if (v.state == AMP_AUTO_MEASURING) {
            s->measuring++;
            return;
        }
        for (i = 0; i < v.ncandidates; i++) {
            const struct amp_auto_candidate *c = &v.c[i];

            if (!c->timed || (v.state == AMP_AUTO_CHOSEN && i != v.choice))
                continue;
            base = c->fp32_ms / (double)c->timed;
            cost = v.state != AMP_AUTO_CHOSEN ? base
                   : e->timed ? e->converted_ms / (double)e->timed
                              : c->candidate_ms / (double)c->timed;
            break;
        }
        if (cost < 0.0 && v.state == AMP_AUTO_FP32)
            cost = base;
    } else if (base >= 0.0 && (amp_site_demoted(e->site) ||
                               e->kept[AMP_KEPT_DEMOTED] > 0)) {
        cost = base; /* demoted: its calls run FP32 from now on */
    } else if (base >= 0.0 && amp_entry_delivered(e) > 0) {
        cost = e->timed ? e->converted_ms / (double)e->timed
                        : e->shadow_candidate_ms / (double)e->shadow_timed;
    } else if (base >= 0.0 && amp_entry_shadow(e) > 0) {
        cost = (e->shadow_fp32_ms + e->shadow_candidate_ms +
                e->shadow_check_ms) / (double)e->shadow_timed;
    }
    if (base <= 0.0 || cost <= 0.0)
        return;
    s->fp32_ms += n * base;
    s->chosen_ms += n * cost;
    s->timed++;
}

/* The largest of a and b, a NaN standing for "not measured" only when
 * both are. */
static double
amp_max_known(double a, double b)
{
    return isnan(a) ? b : isnan(b) ? a : a > b ? a : b;
}

/* The error of what the program got from e, in the max and Frobenius
 * norms: 0 (exactly FP32's) when no converted result reached it; under
 * auto, the chosen candidate's measured error; else the error measured
 * of the mode's results; NaN when none was measured. */
static void
amp_delivered_error(const struct amp_prof_entry *e, double *rel, double *fro)
{
    struct amp_auto_view v;
    int i;

    *rel = *fro = NAN;
    if (amp_entry_delivered(e) == 0) {
        *rel = *fro = 0.0;
    } else if (e->auto_shape &&
               amp_auto_get(e->site, e->auto_shape - 1, &v) == 0) {
        /* The chosen candidate's. */
        for (i = 0; i < v.ncandidates; i++) {
            const struct amp_auto_candidate *c = &v.c[i];

            if (!c->worst.compared ||
                !(v.state == AMP_AUTO_CHOSEN && i == v.choice))
                continue;
            *rel = amp_max_known(*rel, c->worst.max_rel);
            *fro = amp_max_known(*fro, c->worst.fro_rel);
        }
    } else if (e->measured_calls) {
        *rel = e->max_rel;
        *fro = e->max_fro;
    }
}

/* The delivered errors of the entries of group g (NULL: all). */
static void
amp_group_delivered_error(const struct amp_report *r,
                          const struct amp_group *g, double *rel,
                          double *fro)
{
    size_t i;
    double er, ef;

    *rel = *fro = NAN;
    for (i = 0; i < r->nentries; i++) {
        const struct amp_prof_entry *e = &r->entries[i];

        if (g && (e->site != g->site || e->api != g->api))
            continue;
        amp_delivered_error(e, &er, &ef);
        *rel = amp_max_known(*rel, er);
        *fro = amp_max_known(*fro, ef);
    }
}

/* The steady state of group g's entries (NULL: all). */
static void
amp_group_steady(const struct amp_report *r, const struct amp_group *g,
                 struct amp_steady *s)
{
    size_t i;

    memset(s, 0, sizeof *s);
    for (i = 0; i < r->nentries; i++) {
        const struct amp_prof_entry *e = &r->entries[i];

        if (!g || (e->site == g->site && e->api == g->api))
            amp_steady_add(s, e);
    }
}

/* The commonest reason the calls ran FP32 (fp32_reasons), NULL for none. */
static const char *
amp_top_reason(const struct amp_prof_entry *e)
{
    unsigned long long best = 0;
    const char *name = NULL;
    int i;

    for (i = 0; i < AMP_KEPT_COUNT; i++)
        if (e->kept[i] > best) {
            best = e->kept[i];
            name = amp_kept_name((enum amp_kept)i);
        }
    for (i = 1; i < AMP_FALLBACK_COUNT; i++)
        if (e->fallbacks[i] > best) {
            best = e->fallbacks[i];
            name = amp_fallback_name((enum amp_fallback)i);
        }
    return name;
}

/* Why every call ran FP32, in words, from its commonest reason. */
static const char *
amp_verdict_why(const struct amp_verdict *v)
{
    static const struct {
        const char *reason, *words;
    } words[] = {
        {"auto", "auto found no candidate both within the tolerance and "
                 "faster than FP32 for these shapes (converting them would "
                 "cost more than it saves, or lose accuracy)"},
        {"mode", "the mode asked for is fp32, or cannot run these calls"},
        {"rule", "the policy's fp32 rules keep these calls FP32"},
        {"no-rule", "no policy rule matched these calls, and the policy's "
                    "default is fp32"},
        {"min-size", "the calls are smaller than the policy's min-size: too "
                     "small to gain from a conversion"},
        {"demoted", "their errors measured beside FP32 went over the "
                    "tolerance, so they were put back to FP32"},
        {"pedantic", "the program asked for pedantic FP32 math"},
        {"library", "NVIDIA's own libraries made these calls, which stay "
                    "FP32 unless the policy says set library-calls convert"},
        {"broken-policy", "the policy file has an error"},
    };
    size_t i;

    if (v->shadow > 0.0 && v->shadow + 0.5 >= v->calls - v->delivered &&
        !v->why_fp32)
        return "every converted call ran in shadow (the program got FP32's "
               "results; the candidates were only measured)";
    for (i = 0; v->why_fp32 && i < sizeof words / sizeof *words; i++)
        if (strcmp(words[i].reason, v->why_fp32) == 0)
            return words[i].words;
    return NULL;
}

const char *
amp_verdict_line(const struct amp_verdict *v, char *buf, size_t cap)
{
    const char *why = amp_verdict_why(v);
    char run[96] = "", steady[32], measuring[80] = "";
    double figure = !isnan(v->steady) ? v->steady : v->speedup;

    if (v->measuring > 0.0)
        snprintf(measuring, sizeof measuring, "; %.0f shape%s still "
                 "measuring, left out of the steady state", v->measuring,
                 v->measuring == 1.0 ? "" : "s");
    if (!isnan(v->speedup))
        snprintf(run, sizeof run, " (this run: %.2fx, %.3f ms %s)",
                 v->speedup, fabs(v->saved_ms),
                 v->saved_ms >= 0.0 ? "saved" : "lost");
    snprintf(steady, sizeof steady, "%.2fx", v->steady);
    if (!(v->calls > 0.0)) {
        snprintf(buf, cap, "nothing to gain here: the shim saw no FP32 GEMM "
                 "or convolution it could convert");
    } else if (v->broken) {
        snprintf(buf, cap, "nothing to gain here: the policy file has an "
                 "error, so every call ran FP32 (see the policy line)");
    } else if (v->measuring > 0.0 && (v->delivered <= 0.0 ||
                                      isnan(v->steady))) {
        snprintf(buf, cap, "still measuring: auto needs about ten calls "
                 "per shape to choose, and %.0f of %.0f shapes had fewer%s; "
                 "the measuring calls run FP32 and a candidate beside it%s%s"
                 "; run longer to see the steady state",
                 v->measuring, v->shapes, run,
                 isnan(v->steady) ? "" : "; the shapes decided: ",
                 isnan(v->steady) ? "" : steady);
    } else if (v->delivered <= 0.0 && v->shadow > 0.0 &&
               v->steady >= 1.005) {
        /* auto has chosen, but this run ended while it measured. */
        snprintf(buf, cap, "faster: the intercepted GEMMs and convolutions "
                 "run %.2fx as fast as FP32 in steady state%s; no converted "
                 "result reached the program in this run (%.0f of %.0f "
                 "calls measured the candidates in shadow while auto "
                 "chose): run longer to gain", v->steady, run, v->shadow,
                 v->calls);
    } else if (v->delivered <= 0.0) {
        snprintf(buf, cap, "nothing to gain here: no converted result reached "
                 "the program (%.0f calls ran FP32%s)%s%s%s", v->calls,
                 v->shadow > 0.0 ? ", some measured in shadow" : "",
                 why ? ": " : "", why ? why : "", run);
    } else if (isnan(figure)) {
        snprintf(buf, cap, "converted, speed unknown: %.0f of %.0f calls "
                 "converted (their results reached the program), none "
                 "timed beside FP32",
                 v->delivered, v->calls);
    } else if (figure >= 1.005) {
        snprintf(buf, cap, "faster: the intercepted GEMMs and convolutions "
                 "run %.2fx as fast as FP32 %s%s; %.0f of %.0f calls "
                 "converted (their results reached the program), %.0f "
                 "measured in shadow%s",
                 figure, isnan(v->steady) ? "in this run" : "in steady state",
                 isnan(v->steady) ? "" : run, v->delivered, v->calls,
                 v->shadow, measuring);
    } else if (figure <= 0.995) {
        snprintf(buf, cap, "slower: the intercepted GEMMs and convolutions "
                 "run %.2fx as fast as FP32 %s%s: converting costs more than it "
                 "saves here; keep these calls FP32 (an fp32 rule, or "
                 "AMPSHIM_MODE=fp32)", figure,
                 isnan(v->steady) ? "in this run" : "in steady state",
                 isnan(v->steady) ? "" : run);
    } else {
        snprintf(buf, cap, "nothing to gain here: %s the calls run as fast "
                 "as FP32 (%.2fx)%s%s%s", isnan(v->steady) ? "in this run"
                                                          : "in steady state",
                 figure, isnan(v->steady) ? "" : run, why ? ": " : "",
                 why ? why : "");
    }
    return buf;
}

/* Milliseconds since the process started (its start time in
 * /proc/self/stat, in clock ticks since boot: proc(5)); NAN when unknown. */
static double
amp_process_wall_ms(void)
{
    char buf[1024], *p;
    unsigned long long start = 0;
    struct timespec now;
    FILE *f = fopen("/proc/self/stat", "re");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    long tick = sysconf(_SC_CLK_TCK);
    int field;

    if (f)
        fclose(f);
    buf[n] = '\0';
    /* The command name, field 2, may hold spaces and parentheses: the
     * fields after it follow the last ')'. Field 22 is starttime. */
    p = strrchr(buf, ')');
    for (field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (!p || sscanf(p + 1, "%llu", &start) != 1 || tick <= 0 ||
        clock_gettime(CLOCK_BOOTTIME, &now) != 0)
        return NAN;
    return ((double)now.tv_sec + (double)now.tv_nsec * 1e-9) * 1e3 -
           (double)start * 1e3 / (double)tick;
}

const char *
amp_time_line(double device_ms, double untimed, double wall_ms,
              double saved_ms, char *buf, size_t cap)
{
    char wall[64] = "", saved[64] = "", left[96] = "";

    if (!isnan(wall_ms))
        snprintf(wall, sizeof wall, " of the run's %.1f ms (wall clock)",
                 wall_ms);
    if (!isnan(saved_ms) && saved_ms != 0.0)
        snprintf(saved, sizeof saved, "; the shim %s %.3f ms %s it",
                 saved_ms > 0.0 ? "saved" : "added", fabs(saved_ms),
                 saved_ms > 0.0 ? "of" : "to");
    if (untimed > 0.0)
        snprintf(left, sizeof left, "; %.0f call%s not timed, left out",
                 untimed, untimed == 1.0 ? "" : "s");
    snprintf(buf, cap, "the intercepted GEMMs and convolutions took %.3f ms "
             "of device time%s%s%s", device_ms, wall, saved, left);
    return buf;
}

/* The verdict of the report r. */
static const char *
amp_report_verdict(const struct amp_report *r, char *buf, size_t cap)
{
    struct amp_policy_info info;
    struct amp_verdict v;
    struct amp_steady s;

    amp_policy_info(&info);
    amp_group_steady(r, NULL, &s);
    memset(&v, 0, sizeof v);
    v.calls = (double)r->all.sum.calls;
    v.delivered = (double)amp_entry_delivered(&r->all.sum);
    v.shadow = (double)amp_entry_shadow(&r->all.sum);
    v.speedup = amp_ratio(r->all.t.fp32_ms, r->all.t.actual_ms);
    v.steady = amp_ratio(s.fp32_ms, s.chosen_ms);
    v.saved_ms = r->all.t.saved_ms;
    v.measuring = (double)s.measuring;
    v.shapes = (double)r->nentries;
    v.why_fp32 = amp_top_reason(&r->all.sum);
    v.broken = info.broken;
    return amp_verdict_line(&v, buf, cap);
}

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
static int
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
amp_json_devices(struct amp_json_out *j)
{
    struct amp_prof_device d[AMP_REPORT_DEVICES];
    unsigned long long dropped;
    size_t n = amp_prof_devices(d, AMP_REPORT_DEVICES, &dropped), i;
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
        amp_json_devices(&j);
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

static enum amp_status
amp_report_write_snapshot(FILE *f, const struct amp_config *cfg)
{
    return amp_report_write_as(f, cfg, 0);
}

/* ---- The trace ----------------------------------------------------------------- */

static void
amp_trace_meta(struct amp_json_out *j, const char *what, int tid,
               const char *name)
{
    amp_json_object(j);
    amp_json_kstring(j, "name", what);
    amp_json_kstring(j, "ph", "M");
    amp_json_kint(j, "pid", (long long)getpid());
    amp_json_kint(j, "tid", tid);
    amp_json_key(j, "args");
    amp_json_object(j);
    amp_json_kstring(j, "name", name);
    amp_json_end_object(j);
    amp_json_end_object(j);
}

static void
amp_trace_event(struct amp_json_out *j, const struct amp_trace_event *t,
                double origin)
{
    char name[96], shape[160], label[AMP_LABEL_LEN];
    const char *mode = amp_mode_name(t->mode);
    /* What the program got, by its category: "converted" (a converted
     * result), "shadow" (a shadow call's FP32 original, whose result it
     * got), "candidate" (a shadow call's candidate, measured and
     * discarded), "baseline" (the FP32 original timed beside a converted
     * call, discarded). */
    const char *cat = t->fp32 ? (t->delivered ? "shadow" : "baseline")
                              : (t->delivered ? "converted" : "candidate");

    amp_shape_format(&t->shape, shape, sizeof shape);
    snprintf(name, sizeof name, "%s %s%s", t->api, t->fp32 ? "fp32" : mode,
             t->fp32 ? (t->delivered ? " (shadow)" : " (baseline)")
                     : t->delivered ? "" : " (shadow candidate)");
    amp_json_object(j);
    amp_json_kstring(j, "name", name);
    amp_json_kstring(j, "cat", cat);
    amp_json_kstring(j, "ph", "X");
    amp_json_knumber(j, "ts", t->ts_us - origin);
    amp_json_knumber(j, "dur", t->dur_us);
    amp_json_kint(j, "pid", (long long)getpid());
    amp_json_kint(j, "tid", t->track + 1);
    amp_json_key(j, "args");
    amp_json_object(j);
    amp_json_kstring(j, "api", t->api);
    amp_json_kstring(j, "site", amp_site_label(t->site, label, sizeof label));
    amp_json_kstring(j, "shape", shape);
    amp_json_kstring(j, "mode", t->fp32 ? "fp32" : mode);
    amp_json_kbool(j, "delivered", t->delivered);
    amp_json_knumber(j, "converted_ms", t->converted_ms >= 0.0
                                            ? t->converted_ms : NAN);
    amp_json_knumber(j, "fp32_ms", t->fp32_ms >= 0.0 ? t->fp32_ms : NAN);
    amp_json_kstring(j, "fp32_time", t->fp32_ms < 0.0 ? "unknown"
                                     : t->fp32_measured ? "measured"
                                                        : "estimated");
    amp_json_end_object(j);
    amp_json_end_object(j);
}

/* The calls the events stand for, as the report counts them: kept-FP32
 * calls run untimed and have no event of their own. */
static void
amp_trace_counts(struct amp_json_out *j)
{
    struct amp_prof_entry sum, *e;
    size_t n = 0, i;

    memset(&sum, 0, sizeof sum);
    e = amp_prof_snapshot(&n);
    for (i = 0; i < n; i++)
        amp_sum_entry(&sum, &e[i]);
    free(e);
    amp_json_kint(j, "calls", (long long)sum.calls);
    amp_json_kint(j, "delivered", (long long)amp_entry_delivered(&sum));
    amp_json_kint(j, "shadow", (long long)amp_entry_shadow(&sum));
    amp_json_kint(j, "fp32", (long long)(sum.outcomes[AMP_OUTCOME_FP32] +
                                         sum.outcomes[AMP_OUTCOME_FALLBACK]));
}

enum amp_status
amp_report_trace(FILE *f)
{
    const struct amp_trace_track *tracks;
    const struct amp_trace_event *ev;
    unsigned long long dropped;
    struct amp_json_out j;
    struct amp_program prog;
    size_t n, ntracks, i;
    double origin = 0.0;
    char name[300];

    ev = amp_prof_trace(&n, &dropped);
    tracks = amp_prof_tracks(&ntracks);
    for (i = 0; i < n; i++)
        if (i == 0 || ev[i].ts_us < origin)
            origin = ev[i].ts_us;
    amp_program_self(&prog);
    amp_json_init(&j, f, 0);
    amp_json_object(&j);
    amp_json_key(&j, "traceEvents");
    amp_json_array(&j);
    snprintf(name, sizeof name, "ampshim: %.200s", prog.name);
    amp_trace_meta(&j, "process_name", 0, name);
    for (i = 0; i < ntracks; i++) {
        snprintf(name, sizeof name, "stream %p (%.100s)", tracks[i].stream,
                 amp_dev_name(tracks[i].dev));
        amp_trace_meta(&j, "thread_name", (int)i + 1, name);
    }
    for (i = 0; i < n; i++) {
        fputc('\n', f);
        amp_trace_event(&j, &ev[i], origin);
    }
    amp_json_end_array(&j);
    amp_json_kstring(&j, "displayTimeUnit", "ns");
    amp_json_key(&j, "otherData");
    amp_json_object(&j);
    amp_json_kint(&j, "dropped_events", (long long)dropped);
    amp_trace_counts(&j);
    amp_json_end_object(&j);
    amp_json_end_object(&j);
    fputc('\n', f);
    return fflush(f) != 0 || ferror(f) ? AMP_ERR_IO : AMP_OK;
}

/* ---- The table on stderr ---------------------------------------------------------- */

/* The modes a group ran, e.g. "fp16", "fp16+shadow:fp16", or "fp32". */
static void
amp_modes_text(const struct amp_prof_entry *e, char *buf, size_t cap)
{
    size_t len = 0;
    int m;

    buf[0] = '\0';
    for (m = 0; m < AMP_MODE_COUNT && len < cap; m++) {
        if (!e->modes[m])
            continue;
        len += (size_t)snprintf(buf + len, cap - len, "%s%s%s%s",
                                len ? "+" : "",
                                amp_mode_name((enum amp_mode)m),
                                m == AMP_MODE_SHADOW ? ":" : "",
                                m == AMP_MODE_SHADOW
                                    ? amp_mode_name(e->candidate) : "");
    }
    if (!buf[0])
        snprintf(buf, cap, "fp32");
}

static int
amp_by_saved(const void *a, const void *b)
{
    const struct amp_group *x = a, *y = b;

    return (x->t.saved_ms < y->t.saved_ms) - (x->t.saved_ms > y->t.saved_ms);
}

/* "-" for NaN, else the number with `digits` decimals. */
static const char *
amp_cell(char *buf, size_t cap, double v, int digits)
{
    if (isnan(v))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.*f", digits, v);
    return buf;
}

/* The exit table's site column: a longer label goes on its own line. */
#define AMP_TABLE_SITE_WIDTH 28

/* The table's mode cell of group g (NULL: every group): under auto the
 * choices of its shapes ("auto:tf32", "auto:tf32,fp32", "auto:measuring"
 * while one is measured), then "+" and the modes of the shapes without
 * auto that converted; else the modes its calls ran (amp_modes_text). */
static void
amp_group_modes(const struct amp_report *r, const struct amp_group *g,
                char *buf, size_t cap)
{
    static const char *const states[] = {"measuring", NULL, "fp32"};
    struct amp_prof_entry other;
    struct amp_auto_view v;
    size_t i, len;
    int others = 0;

    buf[0] = '\0';
    memset(&other, 0, sizeof other);
    for (i = 0; i < r->nentries; i++) {
        const struct amp_prof_entry *e = &r->entries[i];

        if (g && (e->site != g->site || e->api != g->api))
            continue;
        if (e->auto_shape &&
            amp_auto_get(e->site, e->auto_shape - 1, &v) == 0) {
            amp_mode_list_add(buf, cap, "auto:",
                         v.state == AMP_AUTO_CHOSEN
                             ? amp_mode_name(v.c[v.choice].mode)
                             : states[v.state]);
            continue;
        }
        amp_sum_entry(&other, e);
        others |= e->outcomes[AMP_OUTCOME_CONVERTED] > 0;
    }
    len = strlen(buf);
    if (!len) {
        amp_modes_text(&other, buf, cap);
    } else if (others && len + 2 < cap) {
        buf[len] = '+';
        amp_modes_text(&other, buf + len + 1, cap - len - 1);
    }
}

/* A row of the exit table: group g (r->all for the total). The "conv"
 * column counts the calls whose converted result the program got,
 * "shadow" those measured beside FP32 (the program got FP32's result);
 * the error is of what the program got, "exactly FP32" when no converted
 * result reached it. */
static void
amp_table_row(const struct amp_report *r, const char *site, const char *api,
              const struct amp_group *g, const char *modes)
{
    char fp32[32], actual[32], speed[32], steady[32], saved[32], err[32];
    const struct amp_prof_entry *e = &g->sum;
    int known = g->t.measured + g->t.estimated > 0;
    struct amp_steady st;
    double rel, fro, v;

    amp_group_steady(r, g == &r->all ? NULL : g, &st);
    amp_group_delivered_error(r, g == &r->all ? NULL : g, &rel, &fro);
    /* In the tolerance's norm, as the header says. */
    v = amp_policy_tolerance_norm() == AMP_NORM_FRO ? fro : rel;
    if (amp_entry_delivered(e) == 0)
        snprintf(err, sizeof err, "exactly FP32");
    else if (!isnan(v))
        snprintf(err, sizeof err, "%.2e", v);
    else if (e->error_calls) /* no FP32 result had a finite element */
        snprintf(err, sizeof err, "not measurable");
    else
        snprintf(err, sizeof err, "-");
    amp_log_line("| %-*s %-28.28s %7llu %7llu %7llu %-18.18s %10s %10s %8s "
                 "%8s %10s %12s", AMP_TABLE_SITE_WIDTH, site, api, e->calls,
                 amp_entry_delivered(e), amp_entry_shadow(e), modes,
                 amp_cell(fp32, sizeof fp32, known ? g->t.fp32_ms : NAN, 3),
                 amp_cell(actual, sizeof actual,
                          known ? g->t.actual_ms : NAN, 3),
                 amp_cell(speed, sizeof speed,
                          amp_ratio(g->t.fp32_ms, g->t.actual_ms), 2),
                 amp_cell(steady, sizeof steady,
                          amp_ratio(st.fp32_ms, st.chosen_ms), 2),
                 amp_cell(saved, sizeof saved,
                          known ? g->t.saved_ms : NAN, 3),
                 err);
}

/* Under a site with shadow calls: the error their candidates showed,
 * which the program did not get. */
static void
amp_table_candidates(const struct amp_prof_entry *e)
{
    int fro = amp_policy_tolerance_norm() == AMP_NORM_FRO;

    if (!amp_entry_shadow(e) || !e->error_calls)
        return;
    if (e->measured_calls)
        amp_log_line("|   candidates measured in shadow (%llu calls): %s "
                     "rel err up to %.2e, a result the program did not get",
                     amp_entry_shadow(e), fro ? "fro" : "max",
                     fro ? e->max_fro : e->max_rel);
    else
        amp_log_line("|   candidates measured in shadow (%llu calls): error "
                     "not measurable (no FP32 result had a finite element)",
                     amp_entry_shadow(e));
}

/* "| FP32 calls by reason: min-size 12, no-rule 3" (fallbacks
 * included); nothing when every call converted. */
static void
amp_reasons_line(const struct amp_prof_entry *e)
{
    char line[512];
    size_t len = 0;
    int i;

    line[0] = '\0';
    for (i = 0; i < AMP_KEPT_COUNT + AMP_FALLBACK_COUNT && len < sizeof line;
         i++) {
        int kept = i < AMP_KEPT_COUNT, f = i - AMP_KEPT_COUNT;
        unsigned long long n = kept ? e->kept[i] : f > 0 ? e->fallbacks[f] : 0;

        if (n)
            len += (size_t)snprintf(
                line + len, sizeof line - len, "%s%s %llu", len ? ", " : "",
                kept ? amp_kept_name((enum amp_kept)i)
                     : amp_fallback_name((enum amp_fallback)f),
                n);
    }
    if (line[0])
        amp_log_line("| FP32 calls by reason: %s", line);
}

static void
amp_report_table(struct amp_report *r, const char *device, const char *path)
{
    char modes[96], verdict[512];
    size_t i;

    amp_log_line("verdict: %s", amp_report_verdict(r, verdict,
                                                   sizeof verdict));
    amp_log_line("time: %s",
                 amp_time_line(r->all.t.device_ms,
                               (double)r->all.t.device_untimed,
                               amp_process_wall_ms(), r->all.t.saved_ms,
                               verdict, sizeof verdict));
    qsort(r->groups, r->ngroups, sizeof *r->groups, amp_by_saved);
    amp_log_line("| %-*s %-28s %7s %7s %7s %-18s %10s %10s %8s %8s %10s "
                 "%12s", AMP_TABLE_SITE_WIDTH, "site", "api", "calls", "conv",
                 "shadow", "mode", "fp32 ms", "actual ms", "speedup", "steady",
                 "saved ms", amp_policy_tolerance_norm() == AMP_NORM_FRO
                                 ? "fro rel err"
                                 : "max rel err");
    for (i = 0; i < r->ngroups; i++) {
        char label[AMP_LABEL_LEN];

        amp_group_modes(r, &r->groups[i], modes, sizeof modes);
        amp_site_label(r->groups[i].site, label, sizeof label);
        /* A label wider than its column gets a line of its own, whole. */
        if (strlen(label) > AMP_TABLE_SITE_WIDTH) {
            amp_log_line("| %s", label);
            label[0] = '\0';
        }
        amp_table_row(r, label, r->groups[i].api, &r->groups[i], modes);
        amp_table_candidates(&r->groups[i].sum);
    }
    amp_group_modes(r, NULL, modes, sizeof modes);
    amp_table_row(r, "total", "", &r->all, modes);
    amp_reasons_line(&r->all.sum);
    amp_log_line("| conv: calls whose converted result the program got; "
                 "shadow: measured beside FP32 (the program got FP32's "
                 "result); steady: once measuring is over");
    amp_log_line("| times %s on %s; %.1f%% of the FP32 work (FLOPs) "
                 "converted; report: %s", strcmp(device, "-") == 0 ? "-" :
                 strstr(device, AMP_EMULATED_SUFFIX) ? "modelled" : "measured",
                 device,
                 100.0 * (r->all.t.flops_total > 0.0
                              ? r->all.t.flops_converted / r->all.t.flops_total
                              : 0.0),
                 path);
}

/* ---- At exit ------------------------------------------------------------------------ */

FILE *
amp_report_create(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0644);
    FILE *f;

    if (fd < 0)
        return NULL;
    f = fdopen(fd, "w");
    if (!f) {
        int saved = errno;

        close(fd);
        unlink(path);
        errno = saved;
    }
    return f;
}

/* Why amp_report_create refused an existing path (errno EEXIST): what
 * is there. */
static const char *
amp_report_existing(const char *path)
{
    struct stat st;

    if (lstat(path, &st) != 0)
        return "an existing file is never replaced";
    if (S_ISLNK(st.st_mode))
        return "a symbolic link is never followed";
    if (S_ISDIR(st.st_mode))
        return "it is a directory";
    return "an existing file is never replaced";
}

/* Writes one file with `write`; one warning when it cannot. */
static int
amp_report_file(const char *path, const char *what,
                enum amp_status (*write)(FILE *, const struct amp_config *),
                const struct amp_config *cfg)
{
    FILE *f = amp_report_create(path);
    enum amp_status st;

    if (!f) {
        int err = errno;

        amp_log(AMP_LOG_WARN, "cannot write the %s to %s: %s%s%s%s", what,
                path, strerror(err), err == EEXIST ? " (" : "",
                err == EEXIST ? amp_report_existing(path) : "",
                err == EEXIST ? ")" : "");
        return -1;
    }
    st = write(f, cfg);
    if (fclose(f) != 0 || st != AMP_OK) {
        amp_log(AMP_LOG_WARN, "writing the %s to %s failed", what, path);
        return -1;
    }
    return 0;
}

static enum amp_status
amp_trace_writer(FILE *f, const struct amp_config *cfg)
{
    (void)cfg;
    return amp_report_trace(f);
}

/* The trace, at AMPSHIM_TRACE with its escapes expanded; one warning
 * when it cannot be written. */
static void
amp_report_trace_file(const struct amp_config *cfg)
{
    char path[AMP_CONFIG_PATH_LEN + 256];

    if (amp_path_expand(cfg->trace, (long)getpid(), path, sizeof path) !=
        AMP_OK) {
        amp_log(AMP_LOG_WARN, "AMPSHIM_TRACE is too long once expanded; no "
                "trace is written");
        return;
    }
    amp_report_file(path, "trace", amp_trace_writer, cfg);
}

/* The report's path: AMPSHIM_REPORT with its escapes expanded, else
 * ampshim-PROGRAM-PID.json in the user's state directory (made when
 * missing), never the working directory (a source tree, a read-only job
 * directory); "off" when none is written. 0, or -1 after a warning when
 * there is no path: the expansion is too long, there is no state
 * directory, or it cannot be made. */
static int
amp_report_path(const struct amp_config *cfg, char *path, size_t cap)
{
    struct amp_program prog;
    static atomic_int warned;

    if (cfg->report_off) {
        snprintf(path, cap, "off");
    } else if (cfg->report[0]) {
        if (amp_path_expand(cfg->report, (long)getpid(), path, cap) !=
            AMP_OK) {
            amp_log(AMP_LOG_WARN, "AMPSHIM_REPORT is too long once "
                    "expanded; no report is written");
            return -1;
        }
    } else if (!cfg->state_dir[0]) {
        if (!atomic_exchange(&warned, 1))
            amp_log(AMP_LOG_WARN, "no report is written: neither "
                    "XDG_STATE_HOME nor HOME names a directory; name a file "
                    "with AMPSHIM_REPORT");
        return -1;
    } else if (amp_make_dirs(cfg->state_dir, 0700) != 0) {
        if (!atomic_exchange(&warned, 1))
            amp_log(AMP_LOG_WARN, "no report is written: cannot make %s: "
                    "%s; name a file with AMPSHIM_REPORT", cfg->state_dir,
                    strerror(errno));
        return -1;
    } else {
        int n;

        amp_program_self(&prog);
        n = snprintf(path, cap, "%s/ampshim-%.200s-%d.json", cfg->state_dir,
                     prog.name[0] ? prog.name : "program", (int)getpid());
        if (n < 0 || (size_t)n >= cap) {
            amp_log(AMP_LOG_WARN, "no report is written: the path in %s is "
                    "too long", cfg->state_dir);
            return -1;
        }
    }
    return 0;
}

/* ---- Snapshots during the run ---------------------------------------------- */

/* 0: no snapshot written yet; 1: the report's path holds this process's
 * snapshot, which later ones and the final report replace; -1: no more
 * snapshots (the path was taken, or writing failed). Under the lock. */
static int amp_snapshot_state;
static pthread_mutex_t amp_snapshot_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_llong amp_snapshot_due_ns;

static long long
amp_now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Writes the report into a new file beside path and moves it there: the
 * first time only if path does not exist (link fails on an existing
 * name, even a dangling symbolic link), later over this process's own
 * snapshot. 0 on success. Lock held. */
static int
amp_report_replace(const char *path, const struct amp_config *cfg,
                   enum amp_status (*write)(FILE *, const struct amp_config *))
{
    char tmp[AMP_CONFIG_PATH_LEN + 96];
    FILE *f;
    int rc;

    snprintf(tmp, sizeof tmp, "%s.partial-%d", path, (int)getpid());
    f = amp_report_create(tmp);
    if (!f)
        return -1;
    rc = write(f, cfg) == AMP_OK ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
    if (rc == 0)
        rc = amp_snapshot_state == 1 ? rename(tmp, path) : link(tmp, path);
    unlink(tmp);
    return rc;
}

void
amp_report_snapshot(const struct amp_config *cfg)
{
    char path[AMP_CONFIG_PATH_LEN + 256];
    long long now, due;

    if (cfg->report_off || cfg->snapshot_s == 0)
        return;
    now = amp_now_ns();
    due = atomic_load_explicit(&amp_snapshot_due_ns, memory_order_relaxed);
    if (due == 0) {
        /* The first call starts the clock; the first snapshot comes
         * within seconds, the later ones at the interval. */
        atomic_compare_exchange_strong(
            &amp_snapshot_due_ns, &due,
            now + (long long)(cfg->snapshot_s < AMP_SNAPSHOT_FIRST_S
                                  ? cfg->snapshot_s
                                  : AMP_SNAPSHOT_FIRST_S) *
                      1000000000LL);
        return;
    }
    if (now < due || pthread_mutex_trylock(&amp_snapshot_lock) != 0)
        return;
    atomic_store(&amp_snapshot_due_ns,
                 now + (long long)cfg->snapshot_s * 1000000000LL);
    if (amp_snapshot_state >= 0 &&
        amp_report_path(cfg, path, sizeof path) != 0) {
        amp_snapshot_state = -1;
    } else if (amp_snapshot_state >= 0) {
        if (amp_report_replace(path, cfg, amp_report_write_snapshot) == 0) {
            amp_snapshot_state = 1;
        } else {
            amp_log(AMP_LOG_WARN, "cannot write a snapshot of the report "
                    "to %s: %s; it is written at exit only", path,
                    errno == EEXIST ? "the path exists" : strerror(errno));
            amp_snapshot_state = -1;
        }
    }
    pthread_mutex_unlock(&amp_snapshot_lock);
}

void
amp_report_forget(void)
{
    pthread_mutex_init(&amp_snapshot_lock, NULL);
    amp_snapshot_state = 0;
    atomic_store(&amp_snapshot_due_ns, 0);
}

/* The final report: over this process's snapshot if it wrote one, else
 * as a new file. 0 on success (else one warning). */
static int
amp_report_final(const char *path, const struct amp_config *cfg)
{
    int rc;

    pthread_mutex_lock(&amp_snapshot_lock);
    if (amp_snapshot_state == 1) {
        rc = amp_report_replace(path, cfg, amp_report_write);
        if (rc != 0)
            amp_log(AMP_LOG_WARN, "cannot write the report to %s: %s (the "
                    "last snapshot stays)", path, strerror(errno));
    } else {
        rc = amp_report_file(path, "report", amp_report_write, cfg);
    }
    amp_snapshot_state = -1; /* no snapshot after the final report */
    pthread_mutex_unlock(&amp_snapshot_lock);
    return rc;
}

/* The norm as the exit line names it. */
static const char *
amp_norm_words(enum amp_norm norm)
{
    return norm == AMP_NORM_FRO ? "Frobenius norm" : "max norm";
}

/* Calls whose converted result the program received (shadow calls
 * return FP32; delivering ones count as their candidate's), over every
 * (site, shape). */
static unsigned long long
amp_report_converted_results(void)
{
    unsigned long long n = 0;
    struct amp_prof_entry *e;
    size_t i, count = 0;

    e = amp_prof_snapshot(&count);
    for (i = 0; i < count; i++)
        n += e[i].outcomes[AMP_OUTCOME_CONVERTED] - e[i].modes[AMP_MODE_SHADOW];
    free(e);
    return n;
}

void
amp_report_tolerance_line(void)
{
    enum amp_norm norm = amp_policy_tolerance_norm();
    double tol = amp_policy_tolerance();
    struct amp_site_worst w, fro;
    char source[AMP_CONFIG_PATH_LEN + 32], bound[AMP_CONFIG_PATH_LEN + 256];
    char also[64] = "";
    static const char how[] = "AMPSHIM_TOLERANCE=X[:fro] or ampshim run "
                              "--tolerance X[:fro] (1e-6:fro is FP32 "
                              "accuracy)";

    if (amp_report_converted_results() == 0)
        return;
    amp_site_worst(norm, &w);
    amp_policy_tolerance_source(source, sizeof source);
    if (tol == HUGE_VAL)
        snprintf(bound, sizeof bound, "no tolerance bounds them (%s); "
                 "bound them with %s", source, how);
    else
        snprintf(bound, sizeof bound, "the tolerance %g (%s, %s)%s; "
                 "tighten it with %s", tol, amp_norm_words(norm), source,
                 w.demoted == 0 ? ""
                 : w.demoted == 1 ? " demoted calls at 1 site to FP32"
                                  : " demoted calls at sites to FP32", how);
    if (w.shadow_calls == 0) {
        amp_log_line("converted results were not compared with FP32 (no "
                     "shadow call at a site still converting); %s%s",
                     tol == HUGE_VAL ? "" : "held to ", bound);
        return;
    }
    if (w.compared == 0) {
        amp_log_line("converted results differ from FP32 by an amount not "
                     "measurable: FP32's result had no finite element in "
                     "%s %llu shadow call%s; %s%s",
                     w.shadow_calls == 1 ? "its" : "any of the",
                     w.shadow_calls, w.shadow_calls == 1 ? "" : "s",
                     tol == HUGE_VAL ? "" : "held to ", bound);
        return;
    }
    /* A program that checks its result in the L2 norm wants that one too. */
    if (norm == AMP_NORM_MAX) {
        amp_site_worst(AMP_NORM_FRO, &fro);
        snprintf(also, sizeof also, "; %.2e in the Frobenius norm",
                 fro.error);
    }
    amp_log_line("converted results differ from FP32 by up to %.2e "
                 "(relative, %s%s; %s %llu shadow call%s), %s%s",
                 w.error, amp_norm_words(norm), also,
                 w.shadow_calls == 1 ? "measured in" : "the largest of",
                 w.shadow_calls, w.shadow_calls == 1 ? "" : "s",
                 tol == HUGE_VAL ? "" : "within ", bound);
}

void
amp_report_exit(const struct amp_config *cfg)
{
    char path[AMP_CONFIG_PATH_LEN + 256], device[128] = "-";
    struct amp_report r;

    if (amp_report_path(cfg, path, sizeof path) != 0 ||
        (!cfg->report_off && amp_report_final(path, cfg) != 0))
        snprintf(path, sizeof path, "not written");
    if (cfg->trace[0])
        amp_report_trace_file(cfg);
    if (!cfg->summary)
        return;
    amp_report_device(device, sizeof device);
    if (amp_report_gather(&r, cfg) == AMP_OK && r.ngroups > 0)
        amp_report_table(&r, device, path);
    amp_report_free(&r);
    amp_report_tolerance_line();
}
