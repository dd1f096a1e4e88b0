/* The memo of settled calls (measure/settled.h): per thread, a table of
 * AMP_SETTLED_WAYS entries, one per key's hash, each the key and where its
 * call was counted (with the epoch of the decisions it was kept under),
 * and a table of as many reads of calls decided anew. An empty entry's
 * key is zeroed, which no hook's key is (its api is set). */
#include "measure/settled.h"

#include "base/caller.h"
#include "base/log.h"
#include "base/shim.h"
#include "decide/policy.h"
#include "device/device.h"
#include "measure/harvest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A framework's one call site sends hundreds of shapes: 256 entries
 * of each kind (some 140 KiB a thread, allocated at its first kept
 * call). */
#define AMP_SETTLED_WAYS 256

struct amp_settled_entry {
    struct amp_settled_key key;
    struct amp_settled s;
};

struct amp_settled_read_entry {
    struct amp_settled_key key;
    struct amp_settled_read r;
};

/* A thread's settled calls, then its reads of calls decided anew. */
struct amp_settled_tables {
    struct amp_settled_entry settled[AMP_SETTLED_WAYS];
    struct amp_settled_read_entry read[AMP_SETTLED_WAYS];
};

static AMP_THREAD_HOT struct {
    struct amp_settled_tables *tables; /* NULL: not had yet, or none */
    unsigned generation;               /* amp_shim_thread_stale's tag */
    int tried;
} amp_settled_thread;

static void
amp_settled_thread_exit(void)
{
    free(amp_settled_thread.tables);
    amp_settled_thread.tables = NULL;
}

/* The calling thread's tables, made at first use; NULL when none can be
 * had (every call then takes its whole path). */
static struct amp_settled_tables *
amp_settled_tables(int make)
{
    if (amp_shim_thread_stale(&amp_settled_thread.generation)) {
        /* A forked child's copy of its parent's: it points at counts
         * the child reset. */
        amp_settled_thread_exit();
        amp_settled_thread.tried = 0;
    }
    if (amp_settled_thread.tables || !make || amp_settled_thread.tried)
        return amp_settled_thread.tables;
    amp_settled_thread.tried = 1;
    amp_settled_thread.tables =
        calloc(1, sizeof *amp_settled_thread.tables);
    if (amp_settled_thread.tables)
        amp_shim_at_thread_exit(amp_settled_thread_exit);
    return amp_settled_thread.tables;
}

/* The place of a key in a table: its stack, hook and first shape values
 * mixed (the rest of the key is compared, not hashed). */
static unsigned
amp_settled_place(const struct amp_settled_key *k)
{
    uint64_t h = (uint64_t)(uintptr_t)k->frames[0] * 0x9e3779b97f4a7c15ull;
    int i;

    for (i = 1; i < AMP_SITE_FRAMES; i++)
        h = (h ^ (uint64_t)(uintptr_t)k->frames[i]) * 0xbf58476d1ce4e5b9ull;
    h ^= (uint64_t)(uintptr_t)k->api;
    for (i = 0; i < 4; i++)
        h = (h ^ (uint64_t)k->shape.v[i]) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    return (unsigned)(h % AMP_SETTLED_WAYS);
}

void
amp_settled_key_stack(struct amp_settled_key *k, const void *caller)
{
    k->depth = amp_caller_stack(caller, k->frames, AMP_SITE_FRAMES);
}

int
amp_settled_on(void)
{
    return !amp_log_enabled(AMP_LOG_DEBUG);
}

/* Counts a call again where s was counted (amp_settled_count's
 * answer): 0, nothing counted, when the decisions moved on since or the
 * stream is being captured. */
static inline int
amp_settled_count_at(const struct amp_settled *s, amp_stream stream,
                     struct amp_prof_span *span, int *cover)
{
    struct amp_prof_what w;
    int counted;

    if (s->epoch != amp_decision_epoch() ||
        amp_dev_stream_capturing(stream) != 0 ||
        !(counted = amp_prof_fp32_again(&s->place)))
        return 0;
    amp_site_count_again(s->site, s->shape_slot, s->site_counted);
    *cover = s->cover;
    if (counted == 2 && s->timed) {
        /* Timed by sample: what the whole path did before it, then the
         * sample on this call's stream. */
        amp_harvest(0);
        w = s->what;
        w.stream = stream;
        w.capture = 0;
        amp_prof_fp32_begin(span, &w);
    }
    return counted;
}

int
amp_settled_count_or_read(const struct amp_settled_key *k,
                          amp_stream stream, struct amp_prof_span *span,
                          int *cover, struct amp_settled_read **read)
{
    struct amp_settled_tables *t = amp_settled_tables(0);
    unsigned place;
    int counted;

    if (read)
        *read = NULL;
    if (!t)
        return 0;
    place = amp_settled_place(k);
    if (memcmp(&t->settled[place].key, k, sizeof *k) == 0 &&
        (counted = amp_settled_count_at(&t->settled[place].s, stream, span,
                                        cover)) != 0)
        return counted;
    if (read && memcmp(&t->read[place].key, k, sizeof *k) == 0)
        *read = &t->read[place].r;
    return 0;
}

int
amp_settled_count(const struct amp_settled_key *k, amp_stream stream,
                  struct amp_prof_span *span, int *cover)
{
    return amp_settled_count_or_read(k, stream, span, cover, NULL);
}

int
amp_settled_again(struct amp_settled_held *held, const void *caller,
                  amp_stream stream, struct amp_prof_span *span, int *cover)
{
    const void *frames[AMP_SITE_FRAMES];
    int depth, i;

    /* Held only where the memo was on (the log level is set once). */
    if (!held->known)
        return 0;
    depth = amp_caller_stack_hinted(caller, frames, AMP_SITE_FRAMES,
                                    &held->stack_hint);
    if (depth != held->key.depth)
        return 0;
    for (i = 0; i < depth; i++)
        if (frames[i] != held->key.frames[i])
            return 0;
    if (amp_dev_current_ordinal() != held->key.device)
        return 0;
    return amp_settled_count_at(&held->s, stream, span, cover);
}

int
amp_settled_keep(const struct amp_settled_key *k, const struct amp_settled *s,
                 amp_stream stream)
{
    struct amp_settled_tables *t;
    struct amp_settled_entry *e;

    if (!s->place.entry || amp_dev_stream_capturing(stream) != 0 ||
        !(t = amp_settled_tables(1)))
        return 0;
    e = &t->settled[amp_settled_place(k)];
    e->key = *k;
    e->s = *s;
    return 1;
}

struct amp_settled_read *
amp_settled_read_keep(const struct amp_settled_key *k,
                      const struct amp_settled_read *r)
{
    struct amp_settled_tables *t = amp_settled_tables(1);
    struct amp_settled_read_entry *e;

    if (!t || !r->policy.valid)
        return NULL;
    e = &t->read[amp_settled_place(k)];
    e->key = *k;
    e->r = *r;
    return &e->r;
}
