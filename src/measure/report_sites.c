/* The report's groups: the profiler's (site, shape) entries gathered per
 * (site, API), and what the program got from them (the delivered error,
 * the steady state, the verdict and the time lines). */
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

/* ---- Sites: the entries of one (site, API) ---------------------------------- */

void
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
    s->timing_ms += e->timing_ms;
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
    s->timing_ms += t->timing_ms;
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
enum amp_status
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

void
amp_report_free(struct amp_report *r)
{
    free(r->entries);
    free(r->group_of);
    free(r->groups);
}

/* a / b, NaN (written null) when b is not positive. */
double
amp_ratio(double a, double b)
{
    return b > 0.0 ? a / b : NAN;
}

/* ---- What the program got ------------------------------------------------------ */

/* Calls measured in shadow: the program got FP32's result. */
unsigned long long
amp_entry_shadow(const struct amp_prof_entry *e)
{
    return e->modes[AMP_MODE_SHADOW];
}

/* Calls whose result the program got from a converted path. */
unsigned long long
amp_entry_delivered(const struct amp_prof_entry *e)
{
    return e->outcomes[AMP_OUTCOME_CONVERTED] - e->modes[AMP_MODE_SHADOW];
}

/* Adds e's steady state: under auto, the mean time of the calls that ran
 * converted in its choice (a shadow call's candidate does more: its own
 * output beside the original's), or where none was timed the chosen
 * candidate's mean in shadow, beside the mean FP32 time measured with it
 * (FP32's own when auto kept FP32); for a demoted shape, FP32's; else the converted calls' mean
 * time (or their candidates' beside the FP32 baseline), or, for a shape
 * only ever shadowed, the FP32 original plus its candidate, against the
 * baseline. A shape without an
 * FP32 time adds nothing. */
void
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
void
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
void
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
void
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
double
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
const char *
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
