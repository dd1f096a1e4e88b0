/* The shim's own vendor objects (a handle and what goes with it), one per
 * thread and context: made on first use, left at thread exit for the next
 * thread that needs one in the same context (destroying a cuBLAS or cuDNN
 * handle synchronises the whole device, and a thread may exit after its
 * context has ended), never used in a forked child. Each hook file keeps
 * one thread-local table per kind. */
#ifndef AMP_OWN_H
#define AMP_OWN_H

#include "device/device.h"

#include <stddef.h>

#define AMP_OWN_SLOTS 8

struct amp_own_kind {
    const char *what;     /* "cuBLAS handle": the warning's words */
    size_t size;          /* bytes of one object */
    /* Makes *obj (zeroed) for the current context, in the relaxed
     * capture mode; 0 on success. */
    int (*make)(void *obj);
    /* Destroys what make made; `live` is 0 when its context has ended
     * (then it frees host parts only, and calls no driver function). */
    void (*drop)(void *obj, int live);
    /* The kind's thread-exit function: amp_own_release on its table. */
    void (*at_exit)(void);
};

struct amp_own_table {
    unsigned generation;
    int count;
    struct {
        struct amp_dev *dev;
        int made;         /* 0: make failed, stays failed */
        void *obj;        /* kind->size bytes, allocated once */
    } slot[AMP_OWN_SLOTS];
};

/* The calling thread's object of kind k for dev's context, made on first
 * use when `make`; NULL when there is none (then calls in that context
 * stay FP32). */
void *amp_own_get(struct amp_own_table *t, const struct amp_own_kind *k,
                  struct amp_dev *dev, int make);

/* Leaves the thread's objects of kind k for other threads (at thread
 * exit); those of ended contexts are dropped. */
void amp_own_release(struct amp_own_table *t, const struct amp_own_kind *k);

#endif
