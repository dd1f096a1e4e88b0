/* The process's policy: found and loaded once at start-up, asked by every
 * hook for a decision (AMPSHIM_MODE first, then a demoted site, then the
 * cached rules). */
#include "decide/policy.h"

#include "base/log.h"
#include "decide/auto.h"
#include "decide/site.h"
#include "device/device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum amp_policy_state {
    AMP_STATE_NONE = 0,          /* not started: FP32 */
    AMP_STATE_ENV,               /* AMPSHIM_MODE decides every call */
    AMP_STATE_ACTIVE,            /* the policy decides */
    AMP_STATE_BROKEN,            /* the policy has an error: FP32 */
};

static enum amp_policy_state amp_state;
static const struct amp_config *amp_cfg;
static struct amp_policy amp_active;
static struct amp_policy_found amp_found;
static struct amp_policy_cache amp_cache;
static int amp_cache_ready;
static int amp_counts_calls;   /* a rule tests `call`: no decision settles */

static const char *
amp_start_getenv(const char *name)
{
    return secure_getenv(name);
}

/* The files the search passed over, one debug line each. */
static void
amp_policy_log_skipped(const struct amp_program *prog)
{
    int i, n = amp_found.nskipped < AMP_POLICY_SKIPPED_MAX
                   ? amp_found.nskipped
                   : AMP_POLICY_SKIPPED_MAX;

    for (i = 0; i < n; i++) {
        const struct amp_policy_skipped *s = &amp_found.skipped[i];

        if (s->broken)
            amp_log(AMP_LOG_DEBUG, "policy: skipped %s: it has an error "
                    "(%s:%d:%d: %s), but its match lines do not accept %s",
                    s->path, s->path, s->error_line, s->error_col,
                    s->error_message, prog->name);
        else
            amp_log(AMP_LOG_DEBUG, "policy: skipped %s: its match lines do "
                    "not accept %s", s->path, prog->name);
    }
    if (amp_found.nskipped > n)
        amp_log(AMP_LOG_DEBUG, "policy: skipped %d more files",
                amp_found.nskipped - n);
}

void
amp_policy_start(const struct amp_config *cfg)
{
    struct amp_program prog;
    void *storage;
    int i;

    amp_cfg = cfg;
    if (cfg->mode_set) {
        amp_state = AMP_STATE_ENV;
        amp_log(AMP_LOG_DEBUG, "policy: none read: AMPSHIM_MODE=%s decides "
                "every call", amp_mode_name(cfg->mode));
        return;
    }
    amp_program_self(&prog);
    amp_policy_find(amp_start_getenv, &prog, &amp_active, &amp_found);
    amp_policy_log_skipped(&prog);
    if (amp_found.broken) {
        amp_state = AMP_STATE_BROKEN;
        amp_log(AMP_LOG_WARN, "policy %s; nothing is converted",
                amp_found.error.text);
        return;
    }
    storage = malloc(amp_policy_cache_bytes());
    if (storage) {
        amp_policy_cache_init(&amp_cache, &amp_active, storage);
        amp_cache_ready = 1;
    }
    for (i = 0; i < amp_active.nrules; i++)
        if (amp_active.rules[i].uses & (1u << AMP_FIELD_CALL))
            amp_counts_calls = 1;
    amp_state = AMP_STATE_ACTIVE;
    amp_decision_epoch_next();
    amp_log(AMP_LOG_DEBUG, "policy: %s", amp_found.why);
}

enum amp_mode
amp_policy_may_convert(void)
{
    int i;

    if (amp_state == AMP_STATE_ENV)
        return amp_cfg->mode == AMP_MODE_FP32 ? AMP_MODE_FP32 : AMP_MODE_FP16;
    if (amp_state != AMP_STATE_ACTIVE)
        return AMP_MODE_FP32;
    if (amp_active.fallback.mode != AMP_MODE_FP32)
        return AMP_MODE_FP16;
    for (i = 0; i < amp_active.nrules; i++)
        if (amp_active.rules[i].action.mode != AMP_MODE_FP32)
            return AMP_MODE_FP16;
    return AMP_MODE_FP32;
}

int
amp_policy_library_calls(void)
{
    return amp_state == AMP_STATE_ACTIVE && amp_active.set.library_calls;
}

double
amp_policy_tolerance(void)
{
    if (amp_state == AMP_STATE_NONE)
        return HUGE_VAL;
    if (amp_cfg->tolerance >= 0)
        return amp_cfg->tolerance;
    if (amp_state != AMP_STATE_ACTIVE || amp_active.set.tolerance < 0)
        return HUGE_VAL;
    return amp_active.set.tolerance;
}

enum amp_norm
amp_policy_tolerance_norm(void)
{
    if (amp_state == AMP_STATE_NONE)
        return AMP_NORM_MAX;
    if (amp_cfg->tolerance >= 0)
        return amp_cfg->tolerance_norm;
    if (amp_state != AMP_STATE_ACTIVE || amp_active.set.tolerance < 0)
        return AMP_NORM_MAX;
    return amp_active.set.tolerance_norm;
}

const char *
amp_policy_tolerance_source(char *buf, size_t cap)
{
    if (amp_state != AMP_STATE_NONE && amp_cfg->tolerance >= 0)
        snprintf(buf, cap, "AMPSHIM_TOLERANCE");
    else if (amp_state == AMP_STATE_ENV)
        snprintf(buf, cap, "AMPSHIM_MODE");
    else if (amp_state != AMP_STATE_ACTIVE)
        snprintf(buf, cap, "a broken policy");
    else if (amp_found.source == AMP_SOURCE_BUILTIN)
        snprintf(buf, cap, "the built-in policy%s",
                 amp_active.set.tolerance < 0 ? " sets none" : "");
    else
        snprintf(buf, cap, "policy %s%s", amp_found.path,
                 amp_active.set.tolerance < 0 ? " sets none" : "");
    return buf;
}

double
amp_policy_tolerance_demotes(void)
{
    /* Under AMPSHIM_MODE=shadow every result is FP32: nothing to undo. */
    if (amp_state == AMP_STATE_ENV && amp_cfg->mode == AMP_MODE_SHADOW)
        return HUGE_VAL;
    return amp_policy_tolerance();
}

static void
amp_policy_log(const struct amp_policy_call *call, int64_t count,
               const struct amp_decision *out)
{
    char label[AMP_LABEL_LEN];

    amp_log(AMP_LOG_DEBUG, "%s call %lld from %s: %s%s%s (%s, %s line %d)",
            call->symbol, (long long)count,
            amp_site_label((struct amp_site *)call->site, label,
                           sizeof label),
            amp_mode_name(out->mode), out->mode == AMP_MODE_SHADOW ? ":" : "",
            out->mode == AMP_MODE_SHADOW ? amp_mode_name(out->candidate) : "",
            amp_decision_why_name(out->why), amp_active.name, out->line);
}

/* A key for the call's shape: its family, symbol and every field but the
 * call count; never 0. */
static uint64_t
amp_call_shape_key(const struct amp_policy_call *call)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)call->family;
    int f;

    h = (h ^ (uint64_t)(uintptr_t)call->symbol) * 0x100000001b3ull;
    for (f = 0; f < AMP_FIELD_COUNT; f++) {
        if (f == AMP_FIELD_CALL || !(call->present & (1u << f)))
            continue;
        h = (h ^ (uint64_t)f) * 0x100000001b3ull;
        h = (h ^ (uint64_t)call->field[f]) * 0x100000001b3ull;
    }
    h ^= h >> 29;
    return h ? h : 1;
}

/* AMPSHIM_BASELINE: a call that would convert unmeasured runs in shadow
 * when it is the first of its shape at its site (shape_count 1), so that
 * the (site, shape) has an FP32 time to compare its converted calls
 * with. */
static void
amp_policy_baseline_at(struct amp_decision *out, int64_t shape_count)
{
    if (!amp_cfg->baseline || shape_count != 1 ||
        out->mode == AMP_MODE_FP32 || out->mode == AMP_MODE_SHADOW)
        return;
    out->candidate = out->mode;
    out->mode = AMP_MODE_SHADOW;
    out->why = AMP_WHY_BASELINE;
}

int
amp_decision_auto_shape(const struct amp_decision *dec)
{
    return dec->automatic && dec->auto_slot >= 0 ? dec->auto_slot + 1 : 0;
}

int
amp_decision_shape(const struct amp_decision *dec)
{
    return dec->shape_slot >= 0 ? dec->shape_slot + 1 : 0;
}

int
amp_decision_captured_fp32(const struct amp_decision *dec)
{
    return dec->mode != AMP_MODE_FP32 && dec->mode != AMP_MODE_SHADOW &&
           amp_site_shape_captured_fp32(dec->shape_slot);
}

void
amp_decision_keep_captured(struct amp_decision *dec, void *stream)
{
    if (amp_decision_captured_fp32(dec) &&
        amp_dev_stream_capturing(stream) > 0) {
        dec->mode = AMP_MODE_FP32;
        dec->why = AMP_WHY_CAPTURED;
    }
}

void
amp_policy_no_baseline(struct amp_decision *out)
{
    if (out->why != AMP_WHY_BASELINE)
        return;
    out->mode = out->candidate;
    out->why = amp_state == AMP_STATE_ENV ? AMP_WHY_ENV_MODE : AMP_WHY_RULE;
    out->delivers = 0;
}

/* AMPSHIM_MODE's decision for the call numbered shape_count of its
 * (site, shape), with its baseline call: a forced mode forces every call,
 * so the baseline's shadow run gives the program the candidate's result
 * (a program that makes each shape once, a test or a benchmark, gets that
 * mode's results), its FP32 original measured beside it. Under
 * AMPSHIM_TOLERANCE a demoted site or (site, shape) stays FP32, and so
 * does a shape without an entry: its errors would demote nothing. */
static void
amp_policy_env(struct amp_decision *out, const struct amp_site *site,
               int64_t shape_count)
{
    if (amp_cfg->tolerance >= 0 &&
        (amp_site_demoted(site) || amp_site_shape_demoted(out->shape_slot))) {
        out->why = AMP_WHY_DEMOTED;
        return;
    }
    if (amp_cfg->tolerance >= 0 && site && out->shape_slot < 0 &&
        amp_cfg->mode != AMP_MODE_FP32) {
        out->why = AMP_WHY_SHAPE_LIMIT;
        return;
    }
    out->mode = amp_cfg->mode;
    out->candidate = amp_cfg->shadow_candidate;
    out->why = AMP_WHY_ENV_MODE;
    if (out->mode == AMP_MODE_SHADOW)
        out->fp32_first = amp_shadow_fp32_first(shape_count);
    if (!amp_cfg->baseline || out->mode == AMP_MODE_FP32 ||
        out->mode == AMP_MODE_SHADOW || !site)
        return;
    amp_policy_baseline_at(out, shape_count);
    out->delivers = out->why == AMP_WHY_BASELINE;
}

/* The decision's start: FP32, nothing counted. */
static void
amp_decision_init(struct amp_decision *out)
{
    memset(out, 0, sizeof *out);
    out->auto_slot = -1;
    out->shape_slot = -1;
    out->mode = AMP_MODE_FP32;
    out->candidate = AMP_MODE_FP16;
    out->scratch_max = amp_cfg ? amp_cfg->scratch_max : 0;
}

/* The active policy's rules' match for call at `count`. */
static int
amp_policy_call_match(const struct amp_policy_call *call_in, int64_t count)
{
    struct amp_site *site = (struct amp_site *)call_in->site;
    struct amp_policy_call call = *call_in;

    if (amp_active.uses_site && site) {
        amp_site_symbolize(site);
        call.caller = site->function[0] ? site->function : NULL;
        call.caller_symbol = site->symbol[0] ? site->symbol : NULL;
        call.caller_symbol_base = site->symbol_base;
        call.module = site->module;
    }
    amp_policy_call_set(&call, AMP_FIELD_CALL, count);
    return amp_cache_ready ? amp_policy_cached_match(&amp_cache, &call)
                           : amp_policy_match(&amp_active, &call);
}

/* The key of the call's (site, shape) under the rules' `match`: verify
 * and shadow-rate count the calls of the call's shape at its site, and
 * small calls at a site do not use up its large calls' window (0: not
 * counted). */
static uint64_t
amp_policy_shape_key(const struct amp_policy_call *call, int match)
{
    return match == AMP_POLICY_SMALL || match == AMP_POLICY_PEDANTIC
               ? 0
               : amp_call_shape_key(call);
}

void
amp_policy_read(const struct amp_policy_call *call, struct amp_policy_read *r)
{
    memset(r, 0, sizeof *r);
    r->family = call->family;
    r->pedantic = amp_policy_call_pedantic(call);
    r->half_fits = amp_auto_half_fits(call);
    if (amp_state == AMP_STATE_ENV) {
        r->shape_key = call->site ? amp_call_shape_key(call) : 0;
        r->valid = 1;
        return;
    }
    if (amp_state != AMP_STATE_ACTIVE || amp_counts_calls)
        return;
    r->match = amp_policy_call_match(call, 0);
    r->shape_key = amp_policy_shape_key(call, r->match);
    r->valid = 1;
}

/* An active policy's decision for a call at `site`, counted there, its
 * match and shape key in r. */
static void
amp_policy_decide_active(struct amp_site *site,
                         const struct amp_policy_read *r,
                         const struct amp_policy_call *call,
                         struct amp_decision *out)
{
    int64_t count, shape_count;
    uint64_t key;
    int match, slot = -1;

    count = (int64_t)amp_site_count(site);
    out->site_counted = 1;
    if (amp_site_demoted(site)) {
        out->why = AMP_WHY_DEMOTED;
        out->settled = 1;
        return;
    }
    if (r->valid) {
        match = r->match;
        key = r->shape_key;
    } else {
        match = amp_policy_call_match(call, count);
        key = amp_policy_shape_key(call, match);
    }
    shape_count = key ? (int64_t)amp_site_shape_count(site, key, &slot) : 0;
    out->shape_slot = slot;
    amp_policy_action(&amp_active, match, shape_count, out);
    if (amp_site_shape_demoted(slot)) {
        out->mode = AMP_MODE_FP32;
        out->why = AMP_WHY_DEMOTED;
    } else if (key && site && slot < 0 &&
               (out->why == AMP_WHY_AUTO || out->mode != AMP_MODE_FP32)) {
        /* No entry of its own: it would share no one's measurements and
         * keep none of its own, so it is not converted unchecked. */
        out->mode = AMP_MODE_FP32;
        out->why = AMP_WHY_SHAPE_LIMIT;
    } else if (out->why == AMP_WHY_AUTO) {
        /* The device is asked only of auto's calls: whether it has
         * BF16x9 matters once a (site, shape) measures the FP32-accurate
         * modes, and a decided call need not pay for the question. */
        amp_auto_decide(site, slot, r->family, r->half_fits,
                        r->family == AMP_FAMILY_GEMM &&
                            amp_dev_bf16x9(amp_dev_current_made()),
                        shape_count, amp_policy_sample_period(&amp_active),
                        out);
    }
    if (out->why == AMP_WHY_RULE || out->why == AMP_WHY_DEFAULT)
        amp_policy_baseline_at(out, shape_count);
    if (amp_active.set.scratch_max >= 0 &&
        (uint64_t)amp_active.set.scratch_max < out->scratch_max)
        out->scratch_max = (uint64_t)amp_active.set.scratch_max;
    if (out->mode == AMP_MODE_SHADOW && site)
        atomic_fetch_add_explicit(&site->shadowed, 1, memory_order_relaxed);
    /* auto's FP32 is settled when its (site, shape) chose FP32 (it said
     * so in out->settled); any other FP32 is, unless it waits for auto's
     * results or a rule counts calls. */
    out->settled = out->mode == AMP_MODE_FP32 && !amp_counts_calls &&
                   (out->why == AMP_WHY_AUTO ? out->settled
                                             : out->why != AMP_WHY_AUTO_WAIT);
    if (call && amp_log_enabled(AMP_LOG_DEBUG))
        amp_policy_log(call, count, out);
}

/* The decision for a call at `site` whose fields read r (valid, or the
 * call itself when a rule counts calls). */
static void
amp_policy_decide_at(struct amp_site *site, const struct amp_policy_read *r,
                     const struct amp_policy_call *call,
                     struct amp_decision *out)
{
    int64_t shape_count;
    int slot = -1;

    amp_decision_init(out);
    /* AMPSHIM_MODE is no rule: a pedantic call stays FP32 under it. */
    if (amp_state == AMP_STATE_ENV && r->pedantic) {
        out->why = AMP_WHY_PEDANTIC;
        out->settled = 1;
        return;
    }
    if (amp_state == AMP_STATE_ENV) {
        shape_count = site ? (int64_t)amp_site_shape_count(
                                 site, r->shape_key, &slot)
                           : 0;
        out->shape_slot = slot;
        amp_policy_env(out, site, shape_count);
        out->settled = out->mode == AMP_MODE_FP32;
        /* Counted so that the site's next call harvests this one's error
         * first, and stays FP32 when it is over. */
        if (amp_cfg->tolerance >= 0 && out->mode == AMP_MODE_SHADOW && site)
            atomic_fetch_add_explicit(&site->shadowed, 1,
                                      memory_order_relaxed);
        return;
    }
    if (amp_state != AMP_STATE_ACTIVE) {
        out->why = AMP_WHY_BROKEN;
        out->settled = 1;
        return;
    }
    amp_policy_decide_active(site, r, call, out);
}

void
amp_policy_decide_read(struct amp_site *site, const struct amp_policy_read *r,
                       struct amp_decision *out)
{
    amp_policy_decide_at(site, r, NULL, out);
}

void
amp_policy_decide(const struct amp_policy_call *call, struct amp_decision *out)
{
    struct amp_site *site = (struct amp_site *)call->site;
    struct amp_policy_read r;

    amp_policy_read(call, &r);
    amp_policy_decide_at(site, &r, call, out);
}

void
amp_policy_info(struct amp_policy_info *out)
{
    static const char *const sources[] = {
        [AMP_SOURCE_BUILTIN] = "built-in", [AMP_SOURCE_ENV] = "AMPSHIM_POLICY",
        [AMP_SOURCE_USER] = "user", [AMP_SOURCE_SYSTEM] = "system",
    };

    memset(out, 0, sizeof *out);
    out->source = "none";
    out->why = "no hooked call started the shim";
    if (amp_state == AMP_STATE_ENV) {
        out->source = "AMPSHIM_MODE";
        out->why = "AMPSHIM_MODE overrides any policy";
        out->mode = amp_cfg->mode;
        out->candidate = amp_cfg->shadow_candidate;
        return;
    }
    if (amp_state == AMP_STATE_NONE)
        return;
    out->source = (unsigned)amp_found.source < 4 ? sources[amp_found.source]
                                                 : "?";
    out->path = amp_found.path[0] ? amp_found.path : NULL;
    out->why = amp_found.why;
    out->broken = amp_found.broken;
}
