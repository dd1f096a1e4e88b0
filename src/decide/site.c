/* The call-site table and the (site, shape) table: open addressing over
 * fixed arrays, lock-free lookups, inserts under a lock. */
#include "decide/site.h"

#include "base/caller.h"
#include "base/log.h"
#include "decide/auto.h"
#include "decide/policy.h"
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

/* One (site, shape): its key and site are set before `used` is
 * published, and never change. */
struct amp_shape_entry {
    atomic_int used;
    struct amp_site *site;
    uint64_t key;
    atomic_ullong calls;       /* calls decided (amp_site_shape_count) */
    atomic_int demoted;        /* 1: its calls stay FP32 */
    atomic_int captured;       /* its first captured call: 0 none yet,
                                  1 it ran FP32 in its graph, 2 converted
                                  (amp_site_shape_captured) */
    char demoted_why[160];
    /* Shadow measurements of its own rules (not auto's candidates), under
     * the site table's lock. */
    unsigned long long shadow_calls;
    double shadow_max_rel, shadow_max_fro;
    unsigned long long shadow_compared;
    struct amp_auto_view *autos; /* decide/auto.c's, under its lock */
};

static struct amp_site_entry amp_sites[AMP_SITE_MAX];
static pthread_mutex_t amp_site_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_shape_entry amp_shapes[AMP_SITE_SHAPE_TABLE];
static int amp_nshapes;        /* entries used, under amp_shape_lock */
static pthread_mutex_t amp_shape_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t
amp_site_mix(uint64_t h)
{
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
}

static size_t
amp_site_hash(const char *api, const void *const *stack, int depth)
{
    uint64_t h = (uint64_t)(uintptr_t)api * 0x9e3779b97f4a7c15ull;
    int i;

    for (i = 0; i < depth; i++)
        h = amp_site_mix(h ^ (uint64_t)(uintptr_t)stack[i]);
    return (size_t)(h % AMP_SITE_MAX);
}

static int
amp_site_is(const struct amp_site *s, const char *api,
            const void *const *stack, int depth)
{
    return s->api == api && s->depth == depth &&
           memcmp(s->stack, stack, (size_t)depth * sizeof *stack) == 0;
}

/* The entry of the key, or with `insert` the free entry where it goes;
 * NULL when neither is found. */
static struct amp_site_entry *
amp_site_probe(const char *api, const void *const *stack, int depth,
               int insert)
{
    size_t at = amp_site_hash(api, stack, depth), i;

    for (i = 0; i < AMP_SITE_MAX; i++) {
        struct amp_site_entry *e = &amp_sites[(at + i) % AMP_SITE_MAX];

        if (!atomic_load_explicit(&e->used, memory_order_acquire))
            return insert ? e : NULL;
        if (amp_site_is(&e->site, api, stack, depth))
            return e;
    }
    return NULL;
}

struct amp_site *
amp_site_get_stack(const char *api, const void *const *stack, int depth)
{
    struct amp_site_entry *e;

    if (depth < 1)
        return NULL;
    if (depth > AMP_SITE_FRAMES)
        depth = AMP_SITE_FRAMES;
    e = amp_site_probe(api, stack, depth, 0);
    if (e)
        return &e->site;
    pthread_mutex_lock(&amp_site_lock);
    e = amp_site_probe(api, stack, depth, 1);
    if (e && !atomic_load_explicit(&e->used, memory_order_relaxed)) {
        memset(&e->site, 0, sizeof e->site);
        e->site.api = api;
        e->site.caller = stack[0];
        memcpy(e->site.stack, stack, (size_t)depth * sizeof *stack);
        e->site.depth = depth;
        atomic_store_explicit(&e->used, 1, memory_order_release);
    }
    pthread_mutex_unlock(&amp_site_lock);
    return e ? &e->site : NULL;
}

struct amp_site *
amp_site_get(const char *api, const void *caller)
{
    const void *stack[AMP_SITE_FRAMES];
    int depth = amp_caller_stack(caller, stack, AMP_SITE_FRAMES);

    return amp_site_get_stack(api, stack, depth);
}

int
amp_site_demoted(const struct amp_site *site)
{
    return site && atomic_load_explicit(&site->demoted, memory_order_relaxed);
}

static struct amp_shape_entry *
amp_shape_at(int slot)
{
    if (slot < 0 || slot >= AMP_SITE_SHAPE_TABLE ||
        !atomic_load_explicit(&amp_shapes[slot].used, memory_order_acquire))
        return NULL;
    return &amp_shapes[slot];
}

int
amp_site_shape_demoted(int slot)
{
    const struct amp_shape_entry *e = amp_shape_at(slot);

    return e && atomic_load_explicit(&e->demoted, memory_order_relaxed);
}

void
amp_site_shape_captured(int slot, int converted)
{
    struct amp_shape_entry *e = amp_shape_at(slot);
    int none = 0;

    if (e)
        atomic_compare_exchange_strong(&e->captured, &none,
                                       converted ? 2 : 1);
}

int
amp_site_shape_captured_fp32(int slot)
{
    const struct amp_shape_entry *e = amp_shape_at(slot);

    return e && atomic_load_explicit(&e->captured, memory_order_relaxed) == 1;
}

void
amp_site_demote(struct amp_site *site, int slot, const char *reason)
{
    struct amp_shape_entry *e = amp_shape_at(slot);
    char label[AMP_LABEL_LEN];

    if (!site || (e && e->site != site))
        return;
    if (e) {
        if (atomic_exchange(&e->demoted, 1))
            return;
        amp_decision_epoch_next(); /* its reason is now the demotion */
        snprintf(e->demoted_why, sizeof e->demoted_why, "%s", reason);
        pthread_mutex_lock(&amp_site_lock);
        if (!site->demoted_why[0])
            snprintf(site->demoted_why, sizeof site->demoted_why, "%s",
                     reason);
        pthread_mutex_unlock(&amp_site_lock);
        atomic_fetch_add(&site->demoted_shapes, 1);
        amp_log(AMP_LOG_WARN, "%s called from %s: %s; that shape's calls "
                "from there stay FP32", site->api,
                amp_site_label(site, label, sizeof label), reason);
        return;
    }
    if (atomic_exchange(&site->demoted, 1))
        return;
    amp_decision_epoch_next();
    pthread_mutex_lock(&amp_site_lock);
    snprintf(site->demoted_why, sizeof site->demoted_why, "%s", reason);
    pthread_mutex_unlock(&amp_site_lock);
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

void
amp_site_count_again(struct amp_site *site, int slot, int site_too)
{
    struct amp_shape_entry *e = amp_shape_at(slot);

    if (site && site_too)
        atomic_fetch_add_explicit(&site->calls, 1, memory_order_relaxed);
    if (e)
        atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed);
}

static size_t
amp_shape_hash(const struct amp_site *site, uint64_t key)
{
    return (size_t)(amp_site_mix((uint64_t)(uintptr_t)site *
                                     0x9e3779b97f4a7c15ull ^ key) %
                    AMP_SITE_SHAPE_TABLE);
}

/* The entry of (site, key), or with `insert` the free entry where it
 * goes; -1 when neither is found. */
static int
amp_shape_probe(const struct amp_site *site, uint64_t key, int insert)
{
    size_t at = amp_shape_hash(site, key), i;

    for (i = 0; i < AMP_SITE_SHAPE_TABLE; i++) {
        size_t k = (at + i) % AMP_SITE_SHAPE_TABLE;
        const struct amp_shape_entry *e = &amp_shapes[k];

        if (!atomic_load_explicit(&e->used, memory_order_acquire))
            return insert ? (int)k : -1;
        if (e->site == site && e->key == key)
            return (int)k;
    }
    return -1;
}

/* The slot of (site, key), made on first use; -1 when the table holds
 * AMP_SITE_SHAPE_MAX entries. */
static int
amp_shape_find(struct amp_site *site, uint64_t key)
{
    int k = amp_shape_probe(site, key, 0);

    if (k >= 0)
        return k;
    pthread_mutex_lock(&amp_shape_lock);
    k = amp_shape_probe(site, key, 1);
    if (k >= 0 &&
        !atomic_load_explicit(&amp_shapes[k].used, memory_order_relaxed)) {
        if (amp_nshapes >= AMP_SITE_SHAPE_MAX) {
            k = -1;
        } else {
            struct amp_shape_entry *e = &amp_shapes[k];

            memset(e, 0, sizeof *e);
            e->site = site;
            e->key = key;
            amp_nshapes++;
            atomic_store_explicit(&e->used, 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&amp_shape_lock);
    return k;
}

uint64_t
amp_site_shape_count(struct amp_site *site, uint64_t key, int *slot)
{
    int k = site ? amp_shape_find(site, key ? key : 1) : -1;

    if (slot)
        *slot = k;
    if (!site)
        return 1;
    if (k < 0)
        return atomic_load_explicit(&site->calls, memory_order_relaxed);
    return atomic_fetch_add_explicit(&amp_shapes[k].calls, 1,
                                     memory_order_relaxed) + 1;
}

struct amp_auto_view **
amp_site_shape_auto(int slot)
{
    struct amp_shape_entry *e = amp_shape_at(slot);

    return e ? &e->autos : NULL;
}

struct amp_site *
amp_site_shape_site(int slot)
{
    struct amp_shape_entry *e = amp_shape_at(slot);

    return e ? e->site : NULL;
}

const char *
amp_site_frame_label(const struct amp_site *site, int i, char *buf,
                     size_t cap)
{
    struct amp_symbol sym;
    char offset[32];

    if (!site || i < 1 || i >= site->depth)
        return NULL;
    if (amp_symbolize(site->stack[i], &sym) != AMP_OK)
        return amp_symbol_label(buf, cap, NULL, NULL, 0);
    return amp_symbol_label(buf, cap,
                            amp_symbol_caller(&sym, offset, sizeof offset),
                            sym.module, sym.offset);
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
amp_site_shadow(struct amp_site *site, int slot,
                const struct amp_gemm_error *e, double tolerance,
                enum amp_norm norm, const char *source)
{
    struct amp_shape_entry *shape = amp_shape_at(slot);
    char reason[160];

    if (!site)
        return;
    if (shape && shape->site != site)
        shape = NULL;
    pthread_mutex_lock(&amp_site_lock);
    if (shape) {
        shape->shadow_calls++;
        if (e->max_rel > shape->shadow_max_rel || isnan(e->max_rel))
            shape->shadow_max_rel = e->max_rel;
        if (e->fro_rel > shape->shadow_max_fro || isnan(e->fro_rel))
            shape->shadow_max_fro = e->fro_rel;
        shape->shadow_compared += e->compared;
    }
    /* Atomic: read without the lock. */
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
    amp_site_demote(site, shape ? slot : -1, reason);
}

/* The index of site in amp_sites. */
static size_t
amp_site_index(const struct amp_site *site)
{
    return (size_t)((const struct amp_site_entry *)(const void *)(
                        (const char *)site -
                        offsetof(struct amp_site_entry, site)) -
                    amp_sites);
}

/* Adds one (site, shape)'s own shadow errors to *out. Lock held. */
static void
amp_shape_worst(const struct amp_shape_entry *e, enum amp_norm norm,
                struct amp_site_worst *out)
{
    double err = norm == AMP_NORM_FRO ? e->shadow_max_fro : e->shadow_max_rel;

    if (err > out->error || isnan(err))
        out->error = err;
    out->shadow_calls += e->shadow_calls;
    out->compared += e->shadow_compared;
}

void
amp_site_worst(enum amp_norm norm, struct amp_site_worst *out)
{
    unsigned char counted[AMP_SITE_MAX] = {0};
    size_t i;

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&amp_site_lock);
    for (i = 0; i < AMP_SITE_MAX; i++) {
        const struct amp_site *s = &amp_sites[i].site;

        if (atomic_load_explicit(&amp_sites[i].used, memory_order_acquire))
            out->demoted += atomic_load(&s->demoted) ||
                            atomic_load(&s->demoted_shapes) > 0;
    }
    /* The (site, shape)s whose converted calls stand. */
    for (i = 0; i < AMP_SITE_SHAPE_TABLE; i++) {
        const struct amp_shape_entry *e = &amp_shapes[i];
        size_t site;

        if (!atomic_load_explicit(&e->used, memory_order_acquire) ||
            atomic_load(&e->site->demoted) || atomic_load(&e->demoted))
            continue;
        site = amp_site_index(e->site);
        if (e->shadow_calls) {
            amp_shape_worst(e, norm, out);
            out->sites += !counted[site]++;
        }
    }
    pthread_mutex_unlock(&amp_site_lock);
    /* auto's choices, outside the site lock (auto's lock comes first
     * where both are taken); a site counted once. */
    for (i = 0; i < AMP_SITE_SHAPE_TABLE; i++) {
        const struct amp_shape_entry *e = &amp_shapes[i];
        size_t site;

        if (!atomic_load_explicit(&e->used, memory_order_acquire) ||
            atomic_load(&e->site->demoted) || atomic_load(&e->demoted))
            continue;
        site = amp_site_index(e->site);
        if (amp_auto_chosen_worst((int)i, norm, out) && !counted[site]++)
            out->sites++;
    }
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
    for (i = 0; i < AMP_SITE_SHAPE_TABLE; i++) {
        struct amp_shape_entry *e = &amp_shapes[i];
        char label[AMP_LABEL_LEN];

        if (!atomic_load_explicit(&e->used, memory_order_acquire) ||
            !atomic_load(&e->demoted) || atomic_load(&e->site->demoted))
            continue;
        amp_log_line("demoted %s at %s: %s", e->site->api,
                     amp_site_label(e->site, label, sizeof label),
                     e->demoted_why);
    }
}

void
amp_site_forget(void)
{
    size_t i;

    pthread_mutex_init(&amp_site_lock, NULL);
    pthread_mutex_init(&amp_shape_lock, NULL);
    /* auto's states are the child's copies: freed, not lost. */
    for (i = 0; i < AMP_SITE_SHAPE_TABLE; i++)
        free(amp_shapes[i].autos);
    memset(amp_shapes, 0, sizeof amp_shapes);
    amp_nshapes = 0;
    memset(amp_sites, 0, sizeof amp_sites);
}
