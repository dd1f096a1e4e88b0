/* The shim's own vendor objects, per thread and context. */
#include "own.h"

#include "base/log.h"
#include "base/shim.h"

#include <stdlib.h>
#include <string.h>

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
