/* The decision a matched rule makes for a call's count (verify, shadow-rate
 * samples), the reasons' names, and the decision cache: per key, what does
 * not depend on the count. */
#include "decide/policy_match.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* ---- The decision of a matched rule ----------------------------------------- */

int64_t
amp_policy_sample_period(const struct amp_policy *p)
{
    int64_t period;

    if (!(p->set.shadow_rate > 0))
        return 0;
    period = (int64_t)(1.0 / p->set.shadow_rate + 0.5);
    return period >= 1 ? period : 0;
}

void
amp_policy_action(const struct amp_policy *p, int match, int64_t count,
                  struct amp_decision *out)
{
    const struct amp_policy_action *a;
    int64_t period;

    out->why = AMP_WHY_RULE;
    out->candidate = AMP_MODE_FP16;
    if (match == AMP_POLICY_SMALL || match == AMP_POLICY_PEDANTIC) {
        out->mode = AMP_MODE_FP32;
        out->why = match == AMP_POLICY_SMALL ? AMP_WHY_MIN_SIZE
                                             : AMP_WHY_PEDANTIC;
        out->line = 0;
        return;
    }
    if (match >= p->nrules) {
        a = &p->fallback;
        out->why = AMP_WHY_DEFAULT;
        out->line = p->default_line;
    } else {
        a = &p->rules[match].action;
        out->line = p->rules[match].line;
    }
    out->mode = a->mode;
    out->candidate = a->candidate;
    if (a->automatic) {
        out->why = AMP_WHY_AUTO; /* the site decides: amp_auto_decide */
        return;
    }
    if (a->mode == AMP_MODE_SHADOW)
        out->fp32_first = amp_shadow_fp32_first(count);
    if (a->mode == AMP_MODE_FP32 || a->mode == AMP_MODE_SHADOW)
        return;
    if (a->verify > 0 && count <= a->verify) {
        out->candidate = a->mode;
        out->mode = AMP_MODE_SHADOW;
        out->why = AMP_WHY_VERIFY;
        out->fp32_first = amp_shadow_fp32_first(count);
        return;
    }
    period = amp_policy_sample_period(p);
    if (period > 0 && count % period == 0) {
        out->candidate = a->mode;
        out->mode = AMP_MODE_SHADOW;
        out->why = AMP_WHY_SAMPLE;
        out->fp32_first = amp_shadow_fp32_first(count / period);
    }
}

static atomic_uint amp_epoch = 1;

unsigned
amp_decision_epoch(void)
{
    return atomic_load_explicit(&amp_epoch, memory_order_acquire);
}

void
amp_decision_epoch_next(void)
{
    atomic_fetch_add_explicit(&amp_epoch, 1, memory_order_acq_rel);
}

int
amp_shadow_fp32_first(int64_t nth)
{
    return nth > 0 && nth % 2 == 0;
}

static const char *const amp_why_names[] = {
    [AMP_WHY_RULE] = "rule",
    [AMP_WHY_DEFAULT] = "default",
    [AMP_WHY_MIN_SIZE] = "under min-size",
    [AMP_WHY_VERIFY] = "verify",
    [AMP_WHY_SAMPLE] = "shadow-rate sample",
    [AMP_WHY_DEMOTED] = "site or shape demoted",
    [AMP_WHY_ENV_MODE] = "AMPSHIM_MODE",
    [AMP_WHY_BROKEN] = "policy has an error",
    [AMP_WHY_BASELINE] = "FP32 baseline of the shape",
    [AMP_WHY_AUTO] = "auto",
    [AMP_WHY_SHAPE_LIMIT] = "no (site, shape) entry left",
    [AMP_WHY_AUTO_WAIT] = "auto awaits its measurements",
    [AMP_WHY_PEDANTIC] = "pedantic math, no rule names math",
    [AMP_WHY_CAPTURED] = "FP32 in its first capture",
};

const char *
amp_decision_why_name(enum amp_decision_why why)
{
    return (unsigned)why < sizeof amp_why_names / sizeof *amp_why_names
               ? amp_why_names[why]
               : "?";
}

/* ---- The decision cache ----------------------------------------------------- */

/* What does not change between calls with one key: the first rule that
 * matches whatever the count (or the default, or AMP_POLICY_SMALL), and
 * the count-dependent rules before it that may match. */
struct amp_policy_cache_entry {
    atomic_int used;
    const void *site;
    enum amp_family family;
    const char *symbol;
    unsigned present;
    int64_t field[AMP_FIELD_CALL];
    int rule;
    int ndynamic;
    int16_t dynamic[AMP_POLICY_CACHE_DYNAMIC];
};

static pthread_mutex_t amp_cache_lock = PTHREAD_MUTEX_INITIALIZER;

size_t
amp_policy_cache_bytes(void)
{
    return sizeof(struct amp_policy_cache_entry) * AMP_POLICY_CACHE_SIZE;
}

void
amp_policy_cache_init(struct amp_policy_cache *cache,
                      const struct amp_policy *p, void *storage)
{
    memset(storage, 0, amp_policy_cache_bytes());
    cache->policy = p;
    cache->entries = storage;
    atomic_init(&cache->hits, 0);
    atomic_init(&cache->misses, 0);
}

static unsigned
amp_present_key(const struct amp_policy_call *c)
{
    return c->present & ~(1u << AMP_FIELD_CALL);
}

static size_t
amp_cache_hash(const struct amp_policy_call *c)
{
    uint64_t h = (uint64_t)(uintptr_t)c->site * 0x9e3779b97f4a7c15ull ^
                 (uint64_t)(uintptr_t)c->symbol ^ (uint64_t)c->family << 7 ^
                 amp_present_key(c);
    int f;

    for (f = 0; f < AMP_FIELD_CALL; f++) {
        if (c->present & (1u << f)) {
            h ^= (uint64_t)c->field[f] + 0x9e3779b97f4a7c15ull + (h << 6) +
                 (h >> 2);
        }
    }
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return (size_t)(h % AMP_POLICY_CACHE_SIZE);
}

static int
amp_cache_same(const struct amp_policy_cache_entry *e,
               const struct amp_policy_call *c)
{
    int f;

    if (e->site != c->site || e->family != c->family ||
        e->symbol != c->symbol || e->present != amp_present_key(c))
        return 0;
    for (f = 0; f < AMP_FIELD_CALL; f++)
        if ((c->present & (1u << f)) && e->field[f] != c->field[f])
            return 0;
    return 1;
}

/* The static part of a match: fills e's rule and dynamic list; 0 when
 * more count-dependent rules may match than the entry holds. */
static int
amp_cache_fill(const struct amp_policy *p, const struct amp_policy_call *c,
               struct amp_policy_cache_entry *e)
{
    int i;

    e->ndynamic = 0;
    e->rule = amp_unmatched(p, c);
    if (amp_policy_small(p, c)) {
        e->rule = AMP_POLICY_SMALL;
        return 1;
    }
    for (i = 0; i < p->nrules; i++) {
        enum amp_truth t = amp_rule_eval(p, i, c, 0);

        if (t == AMP_TRUE) {
            e->rule = i;
            break;
        }
        if (t == AMP_UNKNOWN) {
            if (e->ndynamic == AMP_POLICY_CACHE_DYNAMIC)
                return 0;
            e->dynamic[e->ndynamic++] = (int16_t)i;
        }
    }
    return 1;
}

static int
amp_cache_use(const struct amp_policy *p,
              const struct amp_policy_cache_entry *e,
              const struct amp_policy_call *c)
{
    int i;

    for (i = 0; i < e->ndynamic; i++)
        if (amp_rule_eval(p, e->dynamic[i], c, 1) == AMP_TRUE)
            return e->dynamic[i];
    return e->rule;
}

int
amp_policy_cached_match(struct amp_policy_cache *cache,
                        const struct amp_policy_call *call)
{
    const struct amp_policy *p = cache->policy;
    struct amp_policy_cache_entry *e = NULL, fresh;
    size_t at = amp_cache_hash(call), i;
    int rule;

    for (i = 0; i < AMP_POLICY_CACHE_SIZE; i++) {
        e = &cache->entries[(at + i) % AMP_POLICY_CACHE_SIZE];
        if (!atomic_load_explicit(&e->used, memory_order_acquire))
            break;
        if (amp_cache_same(e, call)) {
            atomic_fetch_add_explicit(&cache->hits, 1, memory_order_relaxed);
            return amp_cache_use(p, e, call);
        }
    }
    atomic_fetch_add_explicit(&cache->misses, 1, memory_order_relaxed);
    if (!amp_cache_fill(p, call, &fresh))
        return amp_policy_match(p, call);
    rule = amp_cache_use(p, &fresh, call);
    pthread_mutex_lock(&amp_cache_lock);
    e = NULL;
    for (i = 0; i < AMP_POLICY_CACHE_SIZE; i++) {
        struct amp_policy_cache_entry *slot =
            &cache->entries[(at + i) % AMP_POLICY_CACHE_SIZE];

        if (!atomic_load_explicit(&slot->used, memory_order_relaxed)) {
            e = slot;
            break;
        }
        if (amp_cache_same(slot, call))
            break; /* another thread was first */
    }
    if (e) {
        int f;

        e->site = call->site;
        e->family = call->family;
        e->symbol = call->symbol;
        e->present = amp_present_key(call);
        for (f = 0; f < AMP_FIELD_CALL; f++)
            e->field[f] = (call->present & (1u << f)) ? call->field[f] : 0;
        e->rule = fresh.rule;
        e->ndynamic = fresh.ndynamic;
        memcpy(e->dynamic, fresh.dynamic, sizeof e->dynamic);
        atomic_store_explicit(&e->used, 1, memory_order_release);
    }
    pthread_mutex_unlock(&amp_cache_lock);
    return rule;
}
