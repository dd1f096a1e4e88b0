/* The call-site table: open addressing over a fixed array, lock-free
 * lookups, inserts under a lock. */
#include "site.h"

#include "log.h"

#include <pthread.h>
#include <stdint.h>
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
        e->site.api = api;
        e->site.caller = caller;
        atomic_store_explicit(&e->site.demoted, 0, memory_order_relaxed);
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
    if (!site || atomic_exchange(&site->demoted, 1))
        return;
    amp_log(AMP_LOG_WARN, "%s called from %p: %s; calls from there stay "
            "FP32", site->api, site->caller, reason);
}

void
amp_site_forget(void)
{
    pthread_mutex_init(&amp_site_lock, NULL);
    memset(amp_sites, 0, sizeof amp_sites);
}
