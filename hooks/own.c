/* The shim's own vendor objects, per thread and context. */
#include "own.h"

#include "base/log.h"
#include "base/shim.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Objects left by threads that exited, for the next thread in their
 * context. Entries of ended contexts are swept as the shelf is searched;
 * a forked child's copy of its parent's entries is dropped unused. */
struct amp_own_shelved {
    const struct amp_own_kind *kind;
    struct amp_dev *dev;
    void *obj;
    unsigned generation;
    struct amp_own_shelved *next;
};

static pthread_mutex_t amp_own_shelf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_own_shelved *amp_own_shelf;

/* Takes obj (from malloc) for dev's context: 0, or -1 when it cannot (the
 * caller keeps it). */
static int
amp_own_shelve(const struct amp_own_kind *kind, struct amp_dev *dev,
               void *obj)
{
    struct amp_own_shelved *e = malloc(sizeof *e);

    if (!e)
        return -1;
    e->kind = kind;
    e->dev = dev;
    e->obj = obj;
    e->generation = amp_shim_generation();
    pthread_mutex_lock(&amp_own_shelf_lock);
    e->next = amp_own_shelf;
    amp_own_shelf = e;
    pthread_mutex_unlock(&amp_own_shelf_lock);
    return 0;
}

/* An object of kind for dev's context left by an exited thread, or NULL;
 * the entries of ended contexts and a forked child's copies of its
 * parent's go meanwhile. */
static void *
amp_own_unshelve(const struct amp_own_kind *kind, struct amp_dev *dev)
{
    struct amp_own_shelved **p, *e, *gone = NULL;
    unsigned generation = amp_shim_generation();
    void *obj = NULL;

    pthread_mutex_lock(&amp_own_shelf_lock);
    for (p = &amp_own_shelf; (e = *p) != NULL;) {
        int stale = e->generation != generation;

        if (!obj && !stale && e->kind == kind && e->dev == dev) {
            obj = e->obj;
            *p = e->next;
            free(e);
        } else if (stale || amp_dev_retired(e->dev)) {
            *p = e->next;
            e->next = gone;
            gone = e;
        } else {
            p = &e->next;
        }
    }
    pthread_mutex_unlock(&amp_own_shelf_lock);
    while ((e = gone) != NULL) {
        gone = e->next;
        /* An ended context's objects died with it (host parts aside); a
         * forked child's copies of its parent's are not its own. */
        if (e->generation == generation)
            e->kind->drop(e->obj, 0);
        free(e->obj);
        free(e);
    }
    return obj;
}

static void
amp_own_drop(const struct amp_own_kind *k, struct amp_own_table *t, int i)
{
    int relaxed;

    if (!t->slot[i].made)
        return;
    t->slot[i].made = 0;
    relaxed = amp_dev_relax();
    k->drop(t->slot[i].obj, !amp_dev_retired(t->slot[i].dev));
    amp_dev_unrelax(relaxed);
}

void
amp_own_release(struct amp_own_table *t, const struct amp_own_kind *k)
{
    int i;

    if (t->generation != amp_shim_generation())
        return; /* a forked child's copy of its parent's objects */
    for (i = 0; i < t->count; i++) {
        if (t->slot[i].made && !amp_dev_retired(t->slot[i].dev) &&
            amp_own_shelve(k, t->slot[i].dev, t->slot[i].obj) == 0) {
            t->slot[i].obj = NULL;
            continue;
        }
        amp_own_drop(k, t, i);
        free(t->slot[i].obj);
        t->slot[i].obj = NULL;
    }
    t->count = 0;
}

void *
amp_own_get(struct amp_own_table *t, const struct amp_own_kind *k,
            struct amp_dev *dev, int make)
{
    void *shelved;
    int i, relaxed;

    if (amp_shim_thread_stale(&t->generation)) {
        /* Forked child: the parent's objects are not ours. */
        for (i = 0; i < t->count; i++)
            t->slot[i].made = 0;
        t->count = 0;
    }
    for (i = 0; i < t->count; i++)
        if (t->slot[i].dev == dev)
            return t->slot[i].made ? t->slot[i].obj : NULL;
    if (!make)
        return NULL;
    /* A new slot, or the slot of a context that has ended. */
    for (i = 0; t->count == AMP_OWN_SLOTS && i < AMP_OWN_SLOTS; i++)
        if (amp_dev_retired(t->slot[i].dev))
            break;
    if (i == AMP_OWN_SLOTS)
        return NULL;
    amp_shim_at_thread_exit(k->at_exit);
    if (t->count < AMP_OWN_SLOTS)
        i = t->count++;
    else
        amp_own_drop(k, t, i);
    t->slot[i].dev = dev;
    t->slot[i].made = 0;
    shelved = amp_own_unshelve(k, dev);
    if (shelved) {
        /* An exited thread's, made in this context. */
        free(t->slot[i].obj);
        t->slot[i].obj = shelved;
        t->slot[i].made = 1;
        return shelved;
    }
    if (!t->slot[i].obj)
        t->slot[i].obj = malloc(k->size);
    if (!t->slot[i].obj)
        return NULL;
    memset(t->slot[i].obj, 0, k->size);
    relaxed = amp_dev_relax();
    t->slot[i].made = k->make(t->slot[i].obj) == 0;
    amp_dev_unrelax(relaxed);
    if (!t->slot[i].made) {
        amp_log(AMP_LOG_WARN, "cannot create the shim's %s; this thread's "
                "calls on it stay FP32", k->what);
        return NULL;
    }
    return t->slot[i].obj;
}
