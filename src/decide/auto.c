/* The policy action auto: each (site, shape)'s candidates measured in
 * shadow, then the fastest within the tolerance. The state of every
 * (site, shape) is under one lock: an auto call is at least min-size, so
 * one lock per decision costs nothing beside it. */
#include "decide/auto.h"

#include "base/log.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shadow calls of a candidate whose work or times failed after which it
 * is given up unless timed (a call the shim could not time, for want of
 * a record or an event or under a capture, is not counted: the next
 * shadow call measures it). */
#define AMP_AUTO_UNTIMED_MAX 4

static pthread_mutex_t amp_auto_lock = PTHREAD_MUTEX_INITIALIZER;

static const enum amp_mode amp_auto_gemm[] = {
    AMP_MODE_FP16, AMP_MODE_BF16, AMP_MODE_TF32,
};
static const enum amp_mode amp_auto_conv[] = {
    AMP_MODE_ALLOW_CONVERSION, AMP_MODE_FP16, AMP_MODE_BF16,
};

/* A convolution's half copies pad its channels to Tensor Core multiples
 * (src/run/conv.c), so every convolution fits; a GEMM's need m, n and k
 * multiples of 8. */
int
amp_auto_half_fits(const struct amp_policy_call *call)
{
    static const enum amp_field gemm[] = {AMP_FIELD_M, AMP_FIELD_N,
                                          AMP_FIELD_K};
    size_t i;

    if (call->family == AMP_FAMILY_CONV)
        return 1;
    for (i = 0; i < 3; i++)
        if (!(call->present & (1u << gemm[i])) ||
            call->field[gemm[i]] % 8 != 0)
            return 0;
    return 1;
}

/* 1 when `mode` computes on half-precision copies of the operands. */
static int
amp_auto_half(enum amp_mode mode)
{
    return mode != AMP_MODE_TF32 && mode != AMP_MODE_TF32X3;
}

/* (site, slot)'s state, made on first use; a shape whose dimensions do
 * not suit half precision (half_fits 0) has those candidates ruled out.
 * *made: 1 when this call made it. Lock held. */
static struct amp_auto_view *
amp_auto_view(struct amp_site *site, int slot, enum amp_family family,
              int half_fits, int *made)
{
    struct amp_auto_view **at = amp_site_shape_auto(slot), *v;
    const enum amp_mode *modes;
    int i;

    if (!at)
        return NULL;
    if (!*at) {
        *at = calloc(1, sizeof **at);
        if (!*at)
            return NULL;
    }
    v = *at;
    if (v->ncandidates)
        return v;
    v->family = family;
    modes = family == AMP_FAMILY_CONV ? amp_auto_conv : amp_auto_gemm;
    v->ncandidates = 3;
    for (i = 0; i < v->ncandidates; i++) {
        v->c[i].mode = modes[i];
        v->c[i].unfit = !half_fits && amp_auto_half(modes[i]);
    }
    v->state = AMP_AUTO_MEASURING;
    *made = 1;
    return v;
}

static int
amp_auto_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The samples of c kept. */
static int
amp_auto_kept(const struct amp_auto_candidate *c)
{
    return c->timed < AMP_AUTO_KEPT ? (int)c->timed : AMP_AUTO_KEPT;
}

/* The median of c's kept samples of `what`: 0 the candidate's time, 1
 * its time over FP32's (the two taken in one call, so that a slower or
 * faster device for a while changes both). NAN without samples. */
static double
amp_auto_median(const struct amp_auto_candidate *c, int what)
{
    double v[AMP_AUTO_KEPT];
    int i, n = amp_auto_kept(c);

    for (i = 0; i < n; i++)
        v[i] = what == 0 ? c->sample_ms[i]
                         : c->sample_ms[i] / c->sample_fp32_ms[i];
    if (!n)
        return NAN;
    qsort(v, (size_t)n, sizeof v[0], amp_auto_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* How far apart c's kept samples of its time over FP32's lie: the
 * largest less the least; 0 with one sample or none. */
static double
amp_auto_spread(const struct amp_auto_candidate *c)
{
    int i, n = amp_auto_kept(c);
    double lo = 0.0, hi = 0.0;

    for (i = 0; i < n; i++) {
        double r = c->sample_ms[i] / c->sample_fp32_ms[i];

        if (i == 0 || r < lo)
            lo = r;
        if (i == 0 || r > hi)
            hi = r;
    }
    return hi - lo;
}

double
amp_auto_median_speedup(const struct amp_auto_candidate *c)
{
    return 1.0 / amp_auto_median(c, 1);
}

/* bound, or the policy's for NULL, into *out. */
static const struct amp_auto_bound *
amp_auto_bound_or(const struct amp_auto_bound *bound,
                  struct amp_auto_bound *out)
{
    if (bound)
        return bound;
    out->tolerance = amp_policy_tolerance();
    out->norm = amp_policy_tolerance_norm();
    return out;
}

const char *
amp_auto_rejects(const struct amp_auto_candidate *c,
                 const struct amp_auto_bound *bound_in, char *buf,
                 size_t cap)
{
    struct amp_auto_bound policy;
    const struct amp_auto_bound *bound =
        amp_auto_bound_or(bound_in, &policy);

    if (c->unfit) {
        snprintf(buf, cap, "its half-precision copies need dimensions "
                           "that are multiples of 8");
    } else if (c->worst.nonfinite) {
        snprintf(buf, cap, "%llu non-finite elements where FP32 had none",
                 c->worst.nonfinite);
    } else if (c->over) {
        snprintf(buf, cap, "error %.3g over the tolerance %.3g%s",
                 amp_error_in(&c->worst, bound->norm), bound->tolerance,
                 bound->norm == AMP_NORM_FRO ? " (Frobenius norm)" : "");
    } else if (c->failed) {
        snprintf(buf, cap, c->timed >= AMP_AUTO_SAMPLES ||
                                   c->untimed < AMP_AUTO_UNTIMED_MAX
                               ? "the converted path could not run it"
                               : "no time measured");
    } else if (!c->errors || c->timed < AMP_AUTO_SAMPLES) {
        snprintf(buf, cap, "not measured yet");
    } else if (!(amp_auto_median(c, 1) * AMP_AUTO_GAIN <= 1.0)) {
        snprintf(buf, cap, "not faster than fp32");
    } else if (!(amp_auto_median(c, 1) * AMP_AUTO_GAIN + amp_auto_spread(c) <=
                 1.0)) {
        /* A gain within the samples' own range: noise could give it, and
         * a time the samples do not agree on is not taken. */
        snprintf(buf, cap, "faster than fp32 by less than its samples vary");
    } else {
        return NULL;
    }
    return buf;
}

/* 1 when c needs no more shadow calls to be judged. */
static int
amp_auto_settled(const struct amp_auto_candidate *c)
{
    return c->unfit || c->failed || c->over ||
           (c->errors && c->timed >= AMP_AUTO_SAMPLES);
}

/* What a result changed, logged once the lock is released (labelling a
 * site may read its module's file): each text follows the site's label;
 * "" for nothing. */
struct amp_auto_note {
    char drift[256];             /* a choice gave way: a warning */
    char choice[640];            /* a choice was made: a debug line */
};

/* The choice `what` and every candidate's figures into note. */
static void
amp_auto_note_choice(struct amp_auto_note *note,
                     const struct amp_auto_view *v,
                     const struct amp_auto_bound *bound, const char *what)
{
    char why[96];
    size_t n;
    int i;

    if (!amp_log_enabled(AMP_LOG_DEBUG))
        return;
    n = (size_t)snprintf(note->choice, sizeof note->choice, ": %s (", what);
    for (i = 0; i < v->ncandidates && n < sizeof note->choice; i++) {
        const struct amp_auto_candidate *c = &v->c[i];
        const char *no = amp_auto_rejects(c, bound, why, sizeof why);

        n += (size_t)snprintf(
            note->choice + n, sizeof note->choice - n, "%s%s %.2fx %.3g%s%s",
            i ? "; " : "", amp_mode_name(c->mode),
            c->timed ? amp_auto_median_speedup(c) : 0.0,
            amp_error_in(&c->worst, bound->norm), no ? ": " : "",
            no ? no : "");
    }
    if (n < sizeof note->choice)
        snprintf(note->choice + n, sizeof note->choice - n, ")");
}

/* Logs note, lock released. */
static void
amp_auto_note_log(struct amp_site *site, const struct amp_auto_note *note)
{
    char label[AMP_LABEL_LEN];

    if (note->drift[0])
        amp_log(AMP_LOG_WARN, "%s called from %s%s", site->api,
                amp_site_label(site, label, sizeof label), note->drift);
    if (note->choice[0])
        amp_log(AMP_LOG_DEBUG, "auto: %s at %s%s", site->api,
                amp_site_label(site, label, sizeof label), note->choice);
}

/* The choice among the eligible candidates, or -1 (FP32) when none is
 * within the tolerance and faster than FP32: the one of least median
 * time; but the candidates within AMP_AUTO_GAIN of that time are as fast
 * as far as the samples can tell, and of those the one with the least
 * error is chosen (then the first tried), so that timing noise does not
 * pick between candidates of one speed. Lock held. */
static int
amp_auto_fastest(const struct amp_auto_view *v,
                 const struct amp_auto_bound *bound)
{
    char why[96];
    double ms[AMP_AUTO_CANDIDATES], err, best_err = 0;
    int i, fastest = -1, best = -1;

    for (i = 0; i < v->ncandidates; i++) {
        ms[i] = NAN;
        if (amp_auto_rejects(&v->c[i], bound, why, sizeof why))
            continue;
        ms[i] = amp_auto_median(&v->c[i], 0);
        if (fastest < 0 || ms[i] < ms[fastest])
            fastest = i;
    }
    for (i = 0; fastest >= 0 && i < v->ncandidates; i++) {
        if (isnan(ms[i]) || ms[i] > ms[fastest] * AMP_AUTO_GAIN)
            continue;
        err = amp_error_in(&v->c[i].worst, bound->norm);
        if (best < 0 || err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

/* Chooses once every candidate is settled; adds the FP32-accurate modes,
 * fp16x3, tf32x3 and (on a GPU that has it) bf16x9, when no GEMM
 * candidate is within the tolerance. Lock held. */
static void
amp_auto_settle(struct amp_site *site, struct amp_auto_view *v,
                const struct amp_auto_bound *bound,
                struct amp_auto_note *note)
{
    int i, best, within = 0;

    if (v->state != AMP_AUTO_MEASURING)
        return;
    for (i = 0; i < v->ncandidates; i++) {
        if (!amp_auto_settled(&v->c[i]))
            return;
        within += !v->c[i].unfit && !v->c[i].failed && !v->c[i].over;
    }
    /* fp16x3 runs on FP16 copies too: not where fp16 does not fit;
     * tf32x3's FP32 copies and bf16x9's own operands fit every shape. */
    if (!within && v->family == AMP_FAMILY_GEMM && v->ncandidates == 3) {
        if (!v->c[0].unfit)
            v->c[v->ncandidates++].mode = AMP_MODE_FP16X3;
        v->c[v->ncandidates++].mode = AMP_MODE_TF32X3;
        if (v->bf16x9)
            v->c[v->ncandidates++].mode = AMP_MODE_BF16X9;
        return;
    }
    best = amp_auto_fastest(v, bound);
    v->state = best < 0 ? AMP_AUTO_FP32 : AMP_AUTO_CHOSEN;
    v->choice = best;
    amp_auto_note_choice(note, v, bound,
                         best < 0 ? "fp32" : amp_mode_name(v->c[best].mode));
}

/* The candidate of `mode` at (site, slot), or NULL. Lock held. */
static struct amp_auto_candidate *
amp_auto_find(struct amp_site *site, int slot, enum amp_mode mode,
              struct amp_auto_view **view)
{
    struct amp_auto_view **at = amp_site_shape_auto(slot), *v;
    int i;

    if (!site || !at || !*at || amp_site_shape_site(slot) != site)
        return NULL;
    v = *at;
    for (i = 0; i < v->ncandidates; i++) {
        if (v->c[i].mode == mode) {
            *view = v;
            return &v->c[i];
        }
    }
    return NULL;
}

/* After a result: a choice that no longer qualifies gives way, and a
 * measuring state may now choose. Lock held. */
static void
amp_auto_after(struct amp_site *site, struct amp_auto_view *v,
               const struct amp_auto_candidate *c,
               const struct amp_auto_bound *bound, struct amp_auto_note *note)
{
    char why[96];

    if (v->state == AMP_AUTO_CHOSEN && c == &v->c[v->choice] &&
        amp_auto_rejects(c, bound, why, sizeof why)) {
        v->state = AMP_AUTO_MEASURING;
        v->changes++;
        amp_auto_settle(site, v, bound, note);
        snprintf(note->drift, sizeof note->drift,
                 ": auto's %s now has %s; that shape now runs %s",
                 amp_mode_name(c->mode), why,
                 v->state == AMP_AUTO_CHOSEN
                     ? amp_mode_name(v->c[v->choice].mode)
                 : v->state == AMP_AUTO_FP32 ? "fp32"
                                             : "in shadow to measure the "
                                               "FP32-accurate splits");
        return;
    }
    amp_auto_settle(site, v, bound, note);
}

/* 1 when c has as many shadow calls out (issued, no result harvested) as
 * it still needs samples. */
static int
amp_auto_awaits(const struct amp_auto_candidate *c)
{
    unsigned long long back = c->timed + c->untimed + c->warmups;
    unsigned long long out = c->issued > back ? c->issued - back : 0;

    return c->timed < AMP_AUTO_SAMPLES &&
           out >= AMP_AUTO_SAMPLES - c->timed;
}

void
amp_auto_decide(struct amp_site *site, int slot, enum amp_family family,
                int half_fits, int bf16x9, int64_t count,
                int64_t sample_period, struct amp_decision *out)
{
    struct amp_auto_bound policy;
    struct amp_auto_note note = {"", ""};
    struct amp_auto_view *v;
    int i, next = -1, made = 0, awaiting = 0;

    out->mode = AMP_MODE_FP32;
    out->why = AMP_WHY_AUTO;
    out->automatic = 1;
    out->auto_slot = -1;
    if (!site || amp_site_shape_site(slot) != site)
        return;
    pthread_mutex_lock(&amp_auto_lock);
    v = amp_auto_view(site, slot, family, half_fits, &made);
    if (v)
        v->bf16x9 = bf16x9;
    if (made) /* nothing to measure (no candidate fits): FP32 at once */
        amp_auto_settle(site, v, amp_auto_bound_or(NULL, &policy), &note);
    if (v && v->state == AMP_AUTO_MEASURING) {
        for (i = 0; i < v->ncandidates; i++) {
            const struct amp_auto_candidate *c = &v->c[i];

            if (amp_auto_settled(c))
                continue;
            if (amp_auto_awaits(c) && v->waited < AMP_AUTO_WAIT_MAX) {
                awaiting = 1;
                continue;
            }
            if (next < 0 || c->issued < v->c[next].issued)
                next = i;
        }
        if (next < 0 && awaiting) {
            v->waited++;
            out->why = AMP_WHY_AUTO_WAIT;
        } else if (next >= 0) {
            v->waited = 0;
            v->c[next].issued++;
            out->mode = AMP_MODE_SHADOW;
            out->candidate = v->c[next].mode;
            out->fp32_first =
                amp_shadow_fp32_first((int64_t)v->c[next].issued);
        }
    } else if (v && v->state == AMP_AUTO_FP32) {
        out->settled = 1; /* for good: FP32 is no candidate that drifts */
    } else if (v && v->state == AMP_AUTO_CHOSEN) {
        out->mode = v->c[v->choice].mode;
        if (sample_period > 0 && count % sample_period == 0) {
            out->candidate = out->mode;
            out->mode = AMP_MODE_SHADOW;
            out->why = AMP_WHY_SAMPLE;
            out->fp32_first = amp_shadow_fp32_first(count / sample_period);
        }
    }
    if (v)
        out->auto_slot = slot;
    pthread_mutex_unlock(&amp_auto_lock);
    amp_auto_note_log(site, &note);
}

void
amp_auto_error(struct amp_site *site, int slot, enum amp_mode mode,
               const struct amp_gemm_error *e,
               const struct amp_auto_bound *bound_in)
{
    struct amp_auto_bound policy;
    const struct amp_auto_bound *bound =
        amp_auto_bound_or(bound_in, &policy);
    struct amp_auto_note note = {"", ""};
    struct amp_auto_view *v;
    struct amp_auto_candidate *c;

    pthread_mutex_lock(&amp_auto_lock);
    c = amp_auto_find(site, slot, mode, &v);
    if (c && !e) {
        c->failed = 1;
    } else if (c) {
        c->errors++;
        if (e->max_rel > c->worst.max_rel || isnan(e->max_rel))
            c->worst.max_rel = e->max_rel;
        if (e->fro_rel > c->worst.fro_rel || isnan(e->fro_rel))
            c->worst.fro_rel = e->fro_rel;
        if (e->max_abs > c->worst.max_abs)
            c->worst.max_abs = e->max_abs;
        c->worst.nonfinite += e->nonfinite;
        c->worst.compared += e->compared;
        if (amp_error_over(e, bound->tolerance, bound->norm))
            c->over = 1;
    }
    if (c)
        amp_auto_after(site, v, c, bound, &note);
    pthread_mutex_unlock(&amp_auto_lock);
    amp_auto_note_log(site, &note);
}

/* One timed sample of c. Lock held. */
static void
amp_auto_sample(struct amp_auto_candidate *c, double candidate_ms,
                double fp32_ms)
{
    int at = (int)(c->timed % AMP_AUTO_KEPT);

    c->sample_ms[at] = candidate_ms;
    c->sample_fp32_ms[at] = fp32_ms;
    c->timed++;
    c->candidate_ms += candidate_ms;
    c->fp32_ms += fp32_ms;
}

void
amp_auto_time(struct amp_site *site, int slot, enum amp_mode mode,
              double candidate_ms, double fp32_ms, int warmup,
              const struct amp_auto_bound *bound_in)
{
    struct amp_auto_bound policy;
    const struct amp_auto_bound *bound =
        amp_auto_bound_or(bound_in, &policy);
    struct amp_auto_note note = {"", ""};
    struct amp_auto_view *v;
    struct amp_auto_candidate *c;

    pthread_mutex_lock(&amp_auto_lock);
    c = amp_auto_find(site, slot, mode, &v);
    if (c && (candidate_ms < 0 || fp32_ms < 0 || isnan(fp32_ms))) {
        c->untimed++;
        if (c->timed < AMP_AUTO_SAMPLES &&
            c->untimed >= AMP_AUTO_UNTIMED_MAX && c->warmups) {
            /* its warm-up time is all there is */
            while (c->timed < AMP_AUTO_SAMPLES)
                amp_auto_sample(c, c->warm_ms, c->warm_fp32_ms);
        } else if (c->timed < AMP_AUTO_SAMPLES &&
                   c->untimed >= AMP_AUTO_UNTIMED_MAX) {
            c->failed = 1;
        }
    } else if (c && warmup && !c->warmups++) {
        c->warm_ms = candidate_ms; /* a later call measures it */
        c->warm_fp32_ms = fp32_ms;
    } else if (c) {
        amp_auto_sample(c, candidate_ms, fp32_ms);
    }
    if (c)
        amp_auto_after(site, v, c, bound, &note);
    pthread_mutex_unlock(&amp_auto_lock);
    amp_auto_note_log(site, &note);
}

void
amp_auto_failed(struct amp_site *site, int slot, enum amp_mode mode,
                const struct amp_auto_bound *bound)
{
    amp_auto_error(site, slot, mode, NULL, bound);
}

int
amp_auto_get(const struct amp_site *site, int slot, struct amp_auto_view *out)
{
    struct amp_auto_view **at = amp_site_shape_auto(slot);
    int found = -1;

    memset(out, 0, sizeof *out);
    if (!site || !at || amp_site_shape_site(slot) != site)
        return -1;
    pthread_mutex_lock(&amp_auto_lock);
    if (*at && (*at)->ncandidates) {
        *out = **at;
        found = 0;
    }
    pthread_mutex_unlock(&amp_auto_lock);
    return found;
}

int
amp_auto_chosen_worst(int slot, enum amp_norm norm,
                      struct amp_site_worst *out)
{
    struct amp_auto_view **at = amp_site_shape_auto(slot);
    const struct amp_auto_candidate *c;
    double err;
    int added = 0;

    if (!at)
        return 0;
    pthread_mutex_lock(&amp_auto_lock);
    if (*at && (*at)->state == AMP_AUTO_CHOSEN) {
        c = &(*at)->c[(*at)->choice];
        err = amp_error_in(&c->worst, norm);
        if (err > out->error || isnan(err))
            out->error = err;
        out->shadow_calls += c->errors;
        out->compared += c->worst.compared;
        added = 1;
    }
    pthread_mutex_unlock(&amp_auto_lock);
    return added;
}

void
amp_auto_forget(void)
{
    pthread_mutex_init(&amp_auto_lock, NULL);
}
