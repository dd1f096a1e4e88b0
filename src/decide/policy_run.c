/* The process's policy: found and loaded once at start-up, asked by every
 * hook for a decision (AMPSHIM_MODE first, then a demoted site, then the
 * cached rules). */
#include "decide/policy.h"

#include "base/log.h"
#include "decide/site.h"

#include <math.h>
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

static const char *
amp_start_getenv(const char *name)
{
    return secure_getenv(name);
}

void
amp_policy_start(const struct amp_config *cfg)
{
    struct amp_program prog;
    void *storage;

    amp_cfg = cfg;
    if (cfg->mode_set) {
        amp_state = AMP_STATE_ENV;
        amp_log(AMP_LOG_DEBUG, "policy: none read: AMPSHIM_MODE=%s decides "
                "every call", amp_mode_name(cfg->mode));
        return;
    }
    amp_program_self(&prog);
    amp_policy_find(amp_start_getenv, &prog, &amp_active, &amp_found);
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
    amp_state = AMP_STATE_ACTIVE;
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

double
amp_policy_tolerance(void)
{
    if (amp_state != AMP_STATE_ACTIVE || amp_active.set.tolerance < 0)
        return HUGE_VAL;
    return amp_active.set.tolerance;
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

void
amp_policy_decide(const struct amp_policy_call *call_in,
                  struct amp_decision *out)
{
    struct amp_site *site = (struct amp_site *)call_in->site;
    struct amp_policy_call call = *call_in;
    int64_t count;
    int match;

    memset(out, 0, sizeof *out);
    out->mode = AMP_MODE_FP32;
    out->candidate = AMP_MODE_FP16;
    out->scratch_max = amp_cfg ? amp_cfg->scratch_max : 0;
    if (amp_state == AMP_STATE_ENV) {
        out->mode = amp_cfg->mode;
        out->candidate = amp_cfg->shadow_candidate;
        out->why = AMP_WHY_ENV_MODE;
        return;
    }
    if (amp_state != AMP_STATE_ACTIVE) {
        out->why = AMP_WHY_BROKEN;
        return;
    }
    count = (int64_t)amp_site_count(site);
    if (amp_site_demoted(site)) {
        out->why = AMP_WHY_DEMOTED;
        return;
    }
    if (amp_active.uses_site && site) {
        amp_site_symbolize(site);
        call.caller = site->function[0] ? site->function : NULL;
        call.caller_symbol = site->symbol[0] ? site->symbol : NULL;
        call.caller_symbol_base = site->symbol_base;
        call.module = site->module;
    }
    amp_policy_call_set(&call, AMP_FIELD_CALL, count);
    match = amp_cache_ready ? amp_policy_cached_match(&amp_cache, &call)
                            : amp_policy_match(&amp_active, &call);
    amp_policy_action(&amp_active, match, count, out);
    if (amp_active.set.scratch_max >= 0 &&
        (uint64_t)amp_active.set.scratch_max < out->scratch_max)
        out->scratch_max = (uint64_t)amp_active.set.scratch_max;
    if (out->mode == AMP_MODE_SHADOW && site)
        atomic_fetch_add_explicit(&site->shadowed, 1, memory_order_relaxed);
    if (amp_log_enabled(AMP_LOG_DEBUG))
        amp_policy_log(&call, count, out);
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
    out->why = amp_found.broken ? amp_found.error.text : amp_found.why;
    out->broken = amp_found.broken;
}
