/* The pending work, in order per (context, stream), and its harvest. */
#include "measure/harvest.h"

#include "amp_math.h"
#include "base/shim.h"
#include "decide/auto.h"
#include "decide/policy.h"
#include "measure/prof.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Queues one harvest asks about at most without `wait`, and slots and
 * records it collects at most: a hooked call's cost does not grow with
 * the work queued, and a harvest catches up within a few calls once the
 * host has waited for the device. */
#define AMP_HARVEST_VISITS 4
#define AMP_HARVEST_ITEMS 32
/* Queues at most: a program with more streams shares the last one. */
#define AMP_HARVEST_QUEUES 1024
/* Items made at once when none is free. */
#define AMP_HARVEST_ITEM_BLOCK 256

enum amp_item_kind {
    AMP_ITEM_SLOT = 0,         /* a result slot, its consumers below */
    AMP_ITEM_RECORD,           /* a profiler's record (call) */
};

struct amp_item {
    struct amp_item *next;
    enum amp_item_kind kind;
    struct amp_dev *dev;
    int slot;
    amp_devptr slot_at;
    int shadow;
    struct amp_api_stats *stats;
    struct amp_site *site;
    int shape;                  /* 1 + the (site, shape) slot; 0: none */
    int auto_shape;             /* auto: 1 + the (site, shape) slot */
    enum amp_mode candidate;
    struct amp_prof_call *call; /* the profiler's record, or NULL */
};

/* The work of one (context, stream), oldest first: what is queued on one
 * stream finishes in order, so only the head is ever asked. `poll` is
 * held by the one thread asking (the driver calls are made under it,
 * never under amp_harvest_lock); head and tail are under
 * amp_harvest_lock, and only poll's holder takes the head off. */
struct amp_queue {
    pthread_mutex_t poll;
    struct amp_dev *dev;
    amp_stream stream;
    struct amp_item *head, *tail;
    int active;                 /* its place in amp_active; -1: empty */
    struct amp_queue *made_next; /* amp_made_queues */
};

/* A block of items, as allocated. */
struct amp_item_block {
    struct amp_item_block *next;
    struct amp_item items[AMP_HARVEST_ITEM_BLOCK];
};

/* The queues, the free items and the generation (bumped by a fork's
 * reset, so that a thread's cached queue is looked up again). */
static pthread_mutex_t amp_harvest_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_queue *amp_queues[AMP_HARVEST_QUEUES];
static int amp_nqueues;
/* The queues that hold work, the ones a harvest takes in turn: streams
 * that ended or went idle cost it nothing. */
static struct amp_queue *amp_active[AMP_HARVEST_QUEUES];
static int amp_nactive;
static struct amp_item *amp_free_items;
/* Every queue and item block made: a fork's child drops the parent's
 * queues and pending items, and keeps their memory here. */
static struct amp_queue *amp_made_queues;
static struct amp_item_block *amp_item_blocks;
static unsigned amp_harvest_generation;
static atomic_int amp_npending;     /* items queued, over all queues */
static atomic_uint amp_cursor;      /* the queue a harvest starts at */

static AMP_THREAD_HOT struct {
    struct amp_queue *queue;
    struct amp_dev *dev;
    amp_stream stream;
    unsigned generation;
} amp_last_queue;

/* The queue of (dev, stream), made on first use. Lock held. */
static struct amp_queue *
amp_queue_get(struct amp_dev *dev, amp_stream stream)
{
    struct amp_queue *q;
    int i;

    if (amp_last_queue.queue && amp_last_queue.dev == dev &&
        amp_last_queue.stream == stream &&
        amp_last_queue.generation == amp_harvest_generation)
        return amp_last_queue.queue;
    for (i = 0; i < amp_nqueues; i++) {
        q = amp_queues[i];
        if (q->dev == dev && q->stream == stream)
            goto out;
    }
    if (amp_nqueues == AMP_HARVEST_QUEUES) {
        q = amp_queues[AMP_HARVEST_QUEUES - 1]; /* in order still */
        goto out;
    }
    q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    pthread_mutex_init(&q->poll, NULL);
    q->active = -1;
    q->dev = dev;
    q->stream = stream;
    q->made_next = amp_made_queues;
    amp_made_queues = q;
    amp_queues[amp_nqueues++] = q;
out:
    amp_last_queue.queue = q;
    amp_last_queue.dev = dev;
    amp_last_queue.stream = stream;
    amp_last_queue.generation = amp_harvest_generation;
    return q;
}

/* A free item, from a new block when none is left; NULL when none can be
 * had. Lock held. */
static struct amp_item *
amp_item_take(void)
{
    struct amp_item *it;
    int i;

    if (!amp_free_items) {
        struct amp_item_block *block = calloc(1, sizeof *block);

        if (!block)
            return NULL;
        block->next = amp_item_blocks;
        amp_item_blocks = block;
        for (i = 0; i < AMP_HARVEST_ITEM_BLOCK; i++) {
            block->items[i].next = amp_free_items;
            amp_free_items = &block->items[i];
        }
    }
    it = amp_free_items;
    amp_free_items = it->next;
    return it;
}

/* Queues *item on (dev, stream); AMP_ERR_UNAVAILABLE when no memory. */
static enum amp_status
amp_queue_add(amp_stream stream, const struct amp_item *item)
{
    enum amp_status st = AMP_ERR_UNAVAILABLE;
    struct amp_queue *q;
    struct amp_item *it;

    pthread_mutex_lock(&amp_harvest_lock);
    q = amp_queue_get(item->dev, stream);
    it = q ? amp_item_take() : NULL;
    if (it) {
        *it = *item;
        it->next = NULL;
        if (q->tail)
            q->tail->next = it;
        else
            q->head = it;
        q->tail = it;
        if (q->active < 0) {
            q->active = amp_nactive;
            amp_active[amp_nactive++] = q;
        }
        atomic_fetch_add_explicit(&amp_npending, 1, memory_order_relaxed);
        st = AMP_OK;
    }
    pthread_mutex_unlock(&amp_harvest_lock);
    return st;
}

enum amp_status
amp_harvest_pend(struct amp_dev *dev, amp_stream stream, int slot,
                 amp_devptr slot_at, int shadow, struct amp_api_stats *stats,
                 struct amp_site *site, int shape, int auto_shape,
                 enum amp_mode candidate)
{
    struct amp_item item = {
        .kind = AMP_ITEM_SLOT, .dev = dev, .slot = slot,
        .slot_at = slot_at, .shadow = shadow, .stats = stats, .site = site,
        .shape = shape, .auto_shape = auto_shape, .candidate = candidate,
        .call = amp_prof_current(),
    };
    enum amp_status st = amp_queue_add(stream, &item);

    if (st == AMP_OK)
        amp_prof_expect_error(item.call);
    return st;
}

enum amp_status
amp_harvest_record(struct amp_dev *dev, amp_stream stream,
                   struct amp_prof_call *call)
{
    struct amp_item item = {
        .kind = AMP_ITEM_RECORD, .dev = dev, .call = call,
    };

    return amp_queue_add(stream, &item);
}

/* Hands one finished slot's content to its consumers. */
static void
amp_harvest_slot(const struct amp_item *p)
{
    struct amp_shadow_error bits;
    struct amp_gemm_error e;

    memcpy(&bits, (const void *)(uintptr_t)p->slot_at, sizeof bits);
    e.max_abs = amp_bits_f32(bits.max_abs);
    e.max_rel = amp_shadow_relative(amp_bits_f32(bits.max_abs),
                                    amp_bits_f32(bits.max_ref));
    e.fro_rel = sqrt(amp_shadow_relative_sq(bits.sq_diff, bits.sq_ref));
    e.nonfinite = bits.nonfinite;
    e.compared = bits.compared;
    amp_prof_error(p->call, &e);
    if (p->shadow && p->stats)
        amp_stats_shadow(p->stats, &e);
    /* An auto candidate's errors are its own: over the tolerance, it is
     * ruled out at its (site, shape), and the site is not demoted. */
    if (p->shadow && p->auto_shape) {
        amp_site_shadow_auto(p->site);
        amp_auto_error(p->site, p->auto_shape - 1, p->candidate, &e, NULL);
    } else if (p->shadow && p->site) {
        amp_site_shadow(p->site, p->shape - 1, &e,
                        amp_policy_tolerance_demotes(),
                        amp_policy_tolerance_norm(),
                        amp_shim_config()->tolerance >= 0
                            ? "AMPSHIM_TOLERANCE's"
                            : "the policy's");
    }
    if (e.nonfinite && p->site && !p->shadow)
        amp_site_demote(p->site, p->shape - 1,
                        "a converted call made a non-finite "
                        "result from finite inputs");
}

/* 1 when the item's work has finished (with `wait`, after waiting for
 * it), 0 when not yet, -1 when it failed. Driver calls: no lock held
 * but the queue's poll. */
static int
amp_item_done(const struct amp_item *it, int wait)
{
    if (it->kind == AMP_ITEM_SLOT)
        return amp_dev_slot_done(it->dev, it->slot, wait);
    return amp_prof_record_done(it->call, wait);
}

/* The finished item to its consumers, and its slot or record back. */
static void
amp_item_harvest(const struct amp_item *it, int done)
{
    if (it->kind == AMP_ITEM_RECORD) {
        amp_prof_record_harvest(it->call, done > 0);
        return;
    }
    if (done > 0) {
        amp_harvest_slot(it);
    } else {
        amp_prof_error(it->call, NULL);
        if (it->shadow && it->auto_shape)
            amp_auto_error(it->site, it->auto_shape - 1, it->candidate,
                           NULL, NULL);
    }
    amp_dev_slot_release(it->dev, it->slot);
}

/* Harvests q's finished items from its head until one is not finished,
 * *budget of them at most (counted down; no bound with `wait`, which
 * waits for each). Returns how many it harvested. Another thread asking
 * about q meanwhile: nothing (without `wait`). */
static uint64_t
amp_queue_harvest(struct amp_queue *q, int wait, int *budget)
{
    uint64_t harvested = 0;
    struct amp_item *it;
    int done;

    if (wait)
        pthread_mutex_lock(&q->poll);
    else if (pthread_mutex_trylock(&q->poll) != 0)
        return 0;
    while (wait || *budget > 0) {
        pthread_mutex_lock(&amp_harvest_lock);
        it = q->head;
        pthread_mutex_unlock(&amp_harvest_lock);
        if (!it)
            break;
        done = amp_item_done(it, wait);
        if (done == 0)
            break;
        --*budget;
        pthread_mutex_lock(&amp_harvest_lock);
        q->head = it->next;
        if (!q->head) {
            q->tail = NULL;
            amp_active[q->active] = amp_active[--amp_nactive];
            amp_active[q->active]->active = q->active;
            q->active = -1;
        }
        atomic_fetch_sub_explicit(&amp_npending, 1, memory_order_relaxed);
        pthread_mutex_unlock(&amp_harvest_lock);
        amp_item_harvest(it, done);
        harvested++;
        pthread_mutex_lock(&amp_harvest_lock);
        it->next = amp_free_items;
        amp_free_items = it;
        pthread_mutex_unlock(&amp_harvest_lock);
    }
    pthread_mutex_unlock(&q->poll);
    return harvested;
}

uint64_t
amp_harvest(int wait)
{
    uint64_t harvested = 0;
    int budget = AMP_HARVEST_ITEMS, n, visits, start, i;
    struct amp_queue *q;

    if (!wait &&
        atomic_load_explicit(&amp_npending, memory_order_relaxed) == 0)
        return 0;
    pthread_mutex_lock(&amp_harvest_lock);
    n = wait ? amp_nqueues : amp_nactive;
    pthread_mutex_unlock(&amp_harvest_lock);
    if (n == 0)
        return 0;
    /* The queues with work in turn: each harvest starts one further on,
     * so that every queue's head is asked however many there are. */
    start = (int)(atomic_fetch_add_explicit(&amp_cursor, 1,
                                            memory_order_relaxed) %
                  (unsigned)n);
    visits = wait || n < AMP_HARVEST_VISITS ? n : AMP_HARVEST_VISITS;
    for (i = 0; i < visits && (wait || budget > 0); i++) {
        pthread_mutex_lock(&amp_harvest_lock);
        /* The active set may have shrunk since: a queue asked twice, or
         * one left for the next harvest. */
        q = wait ? amp_queues[(start + i) % n]
            : amp_nactive ? amp_active[(start + i) % amp_nactive]
                          : NULL;
        pthread_mutex_unlock(&amp_harvest_lock);
        if (q)
            harvested += amp_queue_harvest(q, wait, &budget);
    }
    return harvested;
}

void
amp_harvest_forget(void)
{
    /* The parent's pending work is not the child's: its queues and
     * items are dropped (their memory stays in amp_made_queues and
     * amp_item_blocks, unused). */
    pthread_mutex_init(&amp_harvest_lock, NULL);
    amp_nqueues = 0;
    amp_nactive = 0;
    amp_free_items = NULL;
    amp_harvest_generation++;
    atomic_store(&amp_npending, 0);
}
