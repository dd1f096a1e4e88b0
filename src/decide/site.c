/* The call-site table: open addressing over a fixed array, lock-free
 * lookups, inserts under a lock. */
#include "decide/site.h"

#include "base/log.h"
#include "decide/auto.h"
#include "decide/symbolize.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct amp_site_entry {
    atomic_int used;          /* 1 once key and site are published */
    struct amp_site site;
};

static struct amp_site_entry amp_sites[AMP_SITE_MAX];
static pthread_mutex_t amp_site_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t
amp_site_hash(const char *api, const void *caller)
{
    uint64_t h = (uint64_t)(uintptr_t)caller ^
                 ((uint64_t)(uintptr_t)api * 0x9e3779b97f4a7c15ull);

    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (size_t)(h % AMP_SITE_MAX);
}

/* The entry of the key, or with `insert` the free entry where it goes;
 * NULL when neither is found. */
static struct amp_site_entry *
amp_site_probe(const char *api, const void *caller, int insert)
{
    size_t at = amp_site_hash(api, caller), i;

    for (i = 0; i < AMP_SITE_MAX; i++) {
        struct amp_site_entry *e = &amp_sites[(at + i) % AMP_SITE_MAX];

        if (!atomic_load_explicit(&e->used, memory_order_acquire))
            return insert ? e : NULL;
        if (e->site.api == api && e->site.caller == caller)
            return e;
    }
    return NULL;
}

struct amp_site *
amp_site_get(const char *api, const void *caller)
{
    struct amp_site_entry *e = amp_site_probe(api, caller, 0);

    if (e)
        return &e->site;
    pthread_mutex_lock(&amp_site_lock);
    e = amp_site_probe(api, caller, 1);
    if (e && !atomic_load_explicit(&e->used, memory_order_relaxed)) {
        memset(&e->site, 0, sizeof e->site);
        e->site.api = api;
        e->site.caller = caller;
        atomic_store_explicit(&e->used, 1, memory_order_release);
    }
    pthread_mutex_unlock(&amp_site_lock);
    return e ? &e->site : NULL;
}

int
amp_site_demoted(const struct amp_site *site)
{
    return site && atomic_load_explicit(&site->demoted, memory_order_relaxed);
}

void
amp_site_demote(struct amp_site *site, const char *reason)
{
    char label[AMP_LABEL_LEN];

    if (!site || atomic_exchange(&site->demoted, 1))
        return;
    snprintf(site->demoted_why, sizeof site->demoted_why, "%s", reason);
    amp_log(AMP_LOG_WARN, "%s called from %s: %s; calls from there stay "
            "FP32", site->api, amp_site_label(site, label, sizeof label),
            reason);
}

uint64_t
amp_site_count(struct amp_site *site)
{
    if (!site)
        return 1;
    return atomic_fetch_add_explicit(&site->calls, 1,
                                     memory_order_relaxed) + 1;
}

/* The slot of the shape `key` at the site, claimed when `claim` and the
 * key has none; -1 when the slots are full (or, without `claim`, when
 * the key has none). */
static int
amp_site_shape_find(struct amp_site *site, uint64_t key, int claim)
{
    size_t at, i;

    if (key == 0)
        key = 1;
    at = (size_t)(key % AMP_SITE_SHAPES);
    for (i = 0; i < AMP_SITE_SHAPES; i++) {
        size_t k = (at + i) % AMP_SITE_SHAPES;
        unsigned long long seen =
            atomic_load_explicit(&site->shape_keys[k], memory_order_acquire);

        if (seen == 0 && !claim)
            return -1;
        if (seen == 0) {
            unsigned long long free_key = 0;

            /* Claim the slot; another thread may claim it first, for
             * this key or another. */
            if (atomic_compare_exchange_strong(&site->shape_keys[k],
                                               &free_key, key))
                seen = key;
            else
                seen = free_key;
        }
        if (seen == key)
            return (int)k;
    }
    return -1;
}

uint64_t
amp_site_shape_count(struct amp_site *site, uint64_t key, int *slot)
{
    int k = site ? amp_site_shape_find(site, key, 1) : -1;

    if (slot)
        *slot = k < 0 ? AMP_SITE_SHAPES : k;
    if (!site)
        return 1;
    if (k < 0)
        return atomic_load_explicit(&site->calls, memory_order_relaxed);
    return atomic_fetch_add_explicit(&site->shape_calls[k], 1,
                                     memory_order_relaxed) + 1;
}

void
amp_site_symbolize(struct amp_site *site)
{
    struct amp_symbol sym;
    enum amp_status found;

    if (!site || atomic_load_explicit(&site->symbolized, memory_order_acquire))
        return;
    /* Outside the lock: it reads the module's file and may load the C++
     * runtime's demangler. Threads that get here at once find the same. */
    found = amp_symbolize(site->caller, &sym);
    pthread_mutex_lock(&amp_site_lock);
    if (!atomic_load_explicit(&site->symbolized, memory_order_relaxed)) {
        if (found == AMP_OK) {
            char offset[32];

            snprintf(site->function, sizeof site->function, "%s",
                     amp_symbol_caller(&sym, offset, sizeof offset));
            snprintf(site->symbol, sizeof site->symbol, "%s", sym.symbol);
            site->symbol_base = amp_symbol_base(site->symbol);
            snprintf(site->module, sizeof site->module, "%.511s", sym.module);
            site->offset = sym.offset;
        }
        atomic_store_explicit(&site->symbolized, 1, memory_order_release);
    }
    pthread_mutex_unlock(&amp_site_lock);
}

const char *
amp_site_label(struct amp_site *site, char *buf, size_t cap)
{
    if (!site) {
        snprintf(buf, cap, "other call sites (the site table is full)");
        return buf;
    }
    amp_site_symbolize(site);
    return amp_symbol_label(buf, cap, site->function, site->module,
                            site->offset);
}

double
amp_error_in(const struct amp_gemm_error *e, enum amp_norm norm)
{
    return norm == AMP_NORM_FRO ? e->fro_rel : e->max_rel;
}

int
amp_error_over(const struct amp_gemm_error *e, double tol, enum amp_norm norm)
{
    /* Written so that a NaN error is over. */
    return e->nonfinite > 0 || !(amp_error_in(e, norm) <= tol);
}

void
amp_site_shadow_auto(struct amp_site *site)
{
    if (!site)
        return;
    pthread_mutex_lock(&amp_site_lock);
    __atomic_store_n(&site->shadow_calls, site->shadow_calls + 1,
                     __ATOMIC_RELAXED);
    site->auto_shadow_calls++;
    pthread_mutex_unlock(&amp_site_lock);
}

void
amp_site_shadow(struct amp_site *site, const struct amp_gemm_error *e,
                double tolerance, enum amp_norm norm, const char *source)
{
    char reason[160];

    if (!site)
        return;
    pthread_mutex_lock(&amp_site_lock);
    /* Atomic for amp_site_unmeasured, which reads it without the lock. */
    __atomic_store_n(&site->shadow_calls, site->shadow_calls + 1,
                     __ATOMIC_RELAXED);
    if (e->max_abs > site->shadow_max_abs)
        site->shadow_max_abs = e->max_abs;
    if (e->max_rel > site->shadow_max_rel)
        site->shadow_max_rel = e->max_rel;
    if (e->fro_rel > site->shadow_max_fro)
        site->shadow_max_fro = e->fro_rel;
    site->shadow_nonfinite += e->nonfinite;
    site->shadow_compared += e->compared;
    pthread_mutex_unlock(&amp_site_lock);
    /* No tolerance acts (AMPSHIM_MODE decides): measured, never demoted. */
    if (tolerance == HUGE_VAL || !amp_error_over(e, tolerance, norm))
        return;
    if (e->nonfinite)
        snprintf(reason, sizeof reason, "a shadow call's candidate made %llu "
                 "non-finite elements where FP32 did not", e->nonfinite);
    else if (norm == AMP_NORM_FRO)
        snprintf(reason, sizeof reason, "shadow fro_rel_err=%.3g exceeds "
                 "%s tolerance %.3g (Frobenius norm)", e->fro_rel,
                 source ? source : "the policy's", tolerance);
    else
        snprintf(reason, sizeof reason, "shadow max_rel_err=%.3g exceeds "
                 "%s tolerance %.3g", e->max_rel,
                 source ? source : "the policy's", tolerance);
    amp_site_demote(site, reason);
}

void
amp_site_worst(enum amp_norm norm, struct amp_site_worst *out)
{
    size_t i;

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&amp_site_lock);
    for (i = 0; i < AMP_SITE_MAX; i++) {
        struct amp_site *s = &amp_sites[i].site;
        double err;

        if (!atomic_load_explicit(&amp_sites[i].used, memory_order_acquire))
            continue;
        if (atomic_load(&s->demoted)) {
            out->demoted++;
            continue;
        }
        if (s->shadow_calls == s->auto_shadow_calls)
            continue;
        err = norm == AMP_NORM_FRO ? s->shadow_max_fro : s->shadow_max_rel;
        if (err > out->error || isnan(err))
            out->error = err;
        out->shadow_calls += s->shadow_calls - s->auto_shadow_calls;
        out->compared += s->shadow_compared;
        out->sites++;
    }
    pthread_mutex_unlock(&amp_site_lock);
    /* auto's choices, outside the site lock (auto's lock comes first
     * where both are taken). */
    for (i = 0; i < AMP_SITE_MAX; i++) {
        struct amp_site *s = &amp_sites[i].site;

        if (atomic_load_explicit(&amp_sites[i].used, memory_order_acquire) &&
            !atomic_load(&s->demoted))
            amp_auto_chosen_worst(s, norm, out);
    }
}

int
amp_site_unmeasured(const struct amp_site *site)
{
    return site && (atomic_load_explicit(&site->shadowed,
                                         memory_order_relaxed) >
                        __atomic_load_n(&site->shadow_calls,
                                        __ATOMIC_RELAXED) ||
                    atomic_load_explicit(&site->auto_measuring,
                                         memory_order_relaxed) > 0);
}

void
amp_site_summary(void)
{
    size_t i;

    for (i = 0; i < AMP_SITE_MAX; i++) {
        struct amp_site *s = &amp_sites[i].site;
        char label[AMP_LABEL_LEN];

        if (!atomic_load_explicit(&amp_sites[i].used, memory_order_acquire) ||
            !atomic_load(&s->demoted))
            continue;
        amp_log_line("demoted %s at %s: %s", s->api,
                     amp_site_label(s, label, sizeof label), s->demoted_why);
    }
}

void
amp_site_forget(void)
{
    size_t i;

    pthread_mutex_init(&amp_site_lock, NULL);
    /* auto's states are the child's copies: freed, not lost. */
    for (i = 0; i < AMP_SITE_MAX; i++)
        free(amp_sites[i].site.autos);
    memset(amp_sites, 0, sizeof amp_sites);
}
