/* A bounded least-recently-used map of byte keys: the shim's caches of
 * vendor answers (heuristics, algorithms, execution plans). */
#include "base/lru.h"

#include <stdlib.h>
#include <string.h>

/* The links ahead of each entry's key and value. */
struct amp_lru_links {
    unsigned newer, older;     /* the recency list */
    unsigned chain;            /* the next entry of the same bucket */
    unsigned bucket;           /* which bucket holds it */
};

#define AMP_LRU_ALIGN 16

static size_t
amp_lru_round(size_t n)
{
    return (n + AMP_LRU_ALIGN - 1) / AMP_LRU_ALIGN * AMP_LRU_ALIGN;
}

static struct amp_lru_links *
amp_lru_links(const struct amp_lru *m, unsigned i)
{
    return (struct amp_lru_links *)(void *)(m->entries + (size_t)i *
                                                             m->entry_size);
}

static unsigned char *
amp_lru_key(const struct amp_lru *m, unsigned i)
{
    return m->entries + (size_t)i * m->entry_size +
           amp_lru_round(sizeof(struct amp_lru_links));
}

static void *
amp_lru_value(const struct amp_lru *m, unsigned i)
{
    return amp_lru_key(m, i) + amp_lru_round(m->key_size);
}

static uint64_t
amp_lru_rotl(uint64_t x, int r)
{
    return x << r | x >> (64 - r);
}

/* Four lanes, 32 bytes a round (a word: xor, multiply, rotate; the lanes
 * run side by side), then the lanes, the length and the last bytes folded
 * and mixed (MurmurHash3's finaliser), so that every input bit reaches
 * the low bits a bucket index uses. */
/* One word into a lane. */
static uint64_t
amp_lru_mix(uint64_t lane, const unsigned char *at)
{
    uint64_t w;

    memcpy(&w, at, 8);
    return amp_lru_rotl((lane ^ w) * 0x9fb21c651e98df25ull, 29);
}

/* Four lanes, 32 bytes a round (a word: xor, multiply, rotate; the lanes
 * run side by side), then the lanes, the length and the last bytes folded
 * and mixed (MurmurHash3's finaliser), so that every input bit reaches
 * the low bits a bucket index uses. */
uint64_t
amp_lru_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t l0 = 0x9e3779b97f4a7c15ull, l1 = 0xc2b2ae3d27d4eb4full;
    uint64_t l2 = 0x165667b19e3779f9ull, l3 = 0x27d4eb2f165667c5ull, h;
    size_t i = 0;

    for (; i + 32 <= n; i += 32) {
        l0 = amp_lru_mix(l0, b + i);
        l1 = amp_lru_mix(l1, b + i + 8);
        l2 = amp_lru_mix(l2, b + i + 16);
        l3 = amp_lru_mix(l3, b + i + 24);
    }
    if (i + 8 <= n) {
        l0 = amp_lru_mix(l0, b + i);
        i += 8;
    }
    if (i + 8 <= n) {
        l1 = amp_lru_mix(l1, b + i);
        i += 8;
    }
    if (i + 8 <= n) {
        l2 = amp_lru_mix(l2, b + i);
        i += 8;
    }
    h = l0 ^ amp_lru_rotl(l1, 16) ^ amp_lru_rotl(l2, 32) ^
        amp_lru_rotl(l3, 48) ^ (uint64_t)n;
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

enum amp_status
amp_lru_init(struct amp_lru *m, unsigned capacity, size_t key_size,
             size_t value_size)
{
    unsigned i;

    memset(m, 0, sizeof *m);
    if (capacity == 0 || capacity >= AMP_LRU_NONE / 2)
        return AMP_ERR_INVALID;
    m->key_size = key_size;
    m->value_size = value_size;
    m->entry_size = amp_lru_round(sizeof(struct amp_lru_links)) +
                    amp_lru_round(key_size) + amp_lru_round(value_size);
    /* Twice as many buckets as entries: chains of one or two. */
    m->buckets = 2 * capacity;
    m->bucket = malloc(m->buckets * sizeof *m->bucket);
    m->entries = calloc(capacity, m->entry_size);
    if (!m->bucket || !m->entries) {
        free(m->bucket);
        free(m->entries);
        memset(m, 0, sizeof *m);
        return AMP_ERR_NOMEM;
    }
    for (i = 0; i < m->buckets; i++)
        m->bucket[i] = AMP_LRU_NONE;
    m->capacity = capacity;
    m->newest = m->oldest = m->vacant = AMP_LRU_NONE;
    return AMP_OK;
}

void
amp_lru_fini(struct amp_lru *m, amp_lru_evict_fn drop, void *arg)
{
    unsigned i;

    for (i = m->newest; drop && i != AMP_LRU_NONE;
         i = amp_lru_links(m, i)->older)
        (void)drop(amp_lru_value(m, i), arg);
    free(m->bucket);
    free(m->entries);
    memset(m, 0, sizeof *m);
}

void
amp_lru_each(struct amp_lru *m, void (*fn)(void *value, void *arg), void *arg)
{
    unsigned i;

    for (i = m->newest; i != AMP_LRU_NONE; i = amp_lru_links(m, i)->older)
        fn(amp_lru_value(m, i), arg);
}

/* Takes entry i out of the recency list. */
static void
amp_lru_unlink(struct amp_lru *m, unsigned i)
{
    struct amp_lru_links *e = amp_lru_links(m, i);

    if (e->newer != AMP_LRU_NONE)
        amp_lru_links(m, e->newer)->older = e->older;
    else
        m->newest = e->older;
    if (e->older != AMP_LRU_NONE)
        amp_lru_links(m, e->older)->newer = e->newer;
    else
        m->oldest = e->newer;
}

/* Puts entry i at the recency list's head. */
static void
amp_lru_push(struct amp_lru *m, unsigned i)
{
    struct amp_lru_links *e = amp_lru_links(m, i);

    e->newer = AMP_LRU_NONE;
    e->older = m->newest;
    if (m->newest != AMP_LRU_NONE)
        amp_lru_links(m, m->newest)->newer = i;
    m->newest = i;
    if (m->oldest == AMP_LRU_NONE)
        m->oldest = i;
}

/* The entry of key, or AMP_LRU_NONE. */
static unsigned
amp_lru_lookup(const struct amp_lru *m, const void *key)
{
    unsigned i;

    if (!m->entries)
        return AMP_LRU_NONE;
    i = m->bucket[amp_lru_hash(key, m->key_size) % m->buckets];
    for (; i != AMP_LRU_NONE; i = amp_lru_links(m, i)->chain)
        if (memcmp(amp_lru_key(m, i), key, m->key_size) == 0)
            break;
    return i;
}

void *
amp_lru_find(struct amp_lru *m, const void *key)
{
    unsigned i = amp_lru_lookup(m, key);

    if (i == AMP_LRU_NONE)
        return NULL;
    if (m->newest != i) {
        amp_lru_unlink(m, i);
        amp_lru_push(m, i);
    }
    return amp_lru_value(m, i);
}

/* Takes entry i out of its bucket's chain. */
static void
amp_lru_unchain(struct amp_lru *m, unsigned i)
{
    unsigned *p = &m->bucket[amp_lru_links(m, i)->bucket];

    while (*p != i)
        p = &amp_lru_links(m, *p)->chain;
    *p = amp_lru_links(m, i)->chain;
}

void *
amp_lru_add(struct amp_lru *m, const void *key, amp_lru_evict_fn evict,
            void *arg)
{
    struct amp_lru_links *e;
    unsigned i, b;

    if (!m->entries)
        return NULL;
    if (m->vacant != AMP_LRU_NONE) {
        i = m->vacant;
        m->vacant = amp_lru_links(m, i)->chain;
    } else if (m->count < m->capacity) {
        i = m->count++;
    } else {
        for (i = m->oldest; i != AMP_LRU_NONE; i = amp_lru_links(m, i)->newer)
            if (!evict || evict(amp_lru_value(m, i), arg))
                break;
        if (i == AMP_LRU_NONE)
            return NULL;
        amp_lru_unlink(m, i);
        amp_lru_unchain(m, i);
    }
    b = (unsigned)(amp_lru_hash(key, m->key_size) % m->buckets);
    e = amp_lru_links(m, i);
    e->bucket = b;
    e->chain = m->bucket[b];
    m->bucket[b] = i;
    amp_lru_push(m, i);
    memcpy(amp_lru_key(m, i), key, m->key_size);
    memset(amp_lru_value(m, i), 0, m->value_size);
    return amp_lru_value(m, i);
}

void
amp_lru_remove(struct amp_lru *m, const void *key)
{
    unsigned i = amp_lru_lookup(m, key);

    if (i == AMP_LRU_NONE)
        return;
    amp_lru_unlink(m, i);
    amp_lru_unchain(m, i);
    amp_lru_links(m, i)->chain = m->vacant;
    m->vacant = i;
}
