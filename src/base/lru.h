/* A bounded map of fixed-size keys, compared as bytes, to fixed-size
 * values: a hit makes its entry the most recently used, and a full map
 * evicts the least recently used entry its owner lets go. Not locked: one
 * thread's table, or the owner's lock around every call. */
#ifndef AMP_LRU_H
#define AMP_LRU_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

struct amp_lru {
    size_t key_size, value_size, entry_size;
    unsigned capacity, count, buckets;
    unsigned newest, oldest;   /* entry indexes, AMP_LRU_NONE when empty */
    unsigned vacant;           /* removed entries, chained; AMP_LRU_NONE */
    unsigned *bucket;          /* each chain's first entry */
    unsigned char *entries;    /* capacity entries: links, key, value */
};

#define AMP_LRU_NONE 0xffffffffu

/* Called for an entry about to be evicted (or, from amp_lru_fini, freed)
 * with its value: 1 lets it go (its value is the owner's to release
 * first), 0 keeps it (it is still in use). */
typedef int (*amp_lru_evict_fn)(void *value, void *arg);

/* Sets up an empty map of `capacity` entries (memory allocated once,
 * here). Fails with AMP_ERR_NOMEM, leaving the map as zeroed: a zeroed
 * map finds nothing and adds nothing. */
enum amp_status amp_lru_init(struct amp_lru *m, unsigned capacity,
                             size_t key_size, size_t value_size);

/* Hands every value to `drop` (when not NULL; its answer is ignored) and
 * frees the map's memory, leaving it zeroed. */
void amp_lru_fini(struct amp_lru *m, amp_lru_evict_fn drop, void *arg);

/* The value of `key`, made the most recently used; NULL when absent. */
void *amp_lru_find(struct amp_lru *m, const void *key);

/* A zeroed value for `key`, which is absent, as the most recently used
 * entry; when the map is full, the least recently used entry that
 * `evict` lets go (all of them when evict is NULL) is evicted first.
 * NULL when the map was never set up or every entry is kept. */
void *amp_lru_add(struct amp_lru *m, const void *key, amp_lru_evict_fn evict,
                  void *arg);

/* Forgets `key` (its value is the owner's to release first); nothing
 * when absent. */
void amp_lru_remove(struct amp_lru *m, const void *key);

/* Calls fn on every value, most recently used first. */
void amp_lru_each(struct amp_lru *m, void (*fn)(void *value, void *arg),
                  void *arg);

/* A hash of n bytes, 32 at a time (keys are a few hundred bytes). */
uint64_t amp_lru_hash(const void *p, size_t n);

#endif
