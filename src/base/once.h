/* pthread_once whose done case is one load: every hooked call passes
 * several of the shim's initialisations (the configuration, the stages,
 * the driver, a library's functions). */
#ifndef AMP_BASE_ONCE_H
#define AMP_BASE_ONCE_H

#include <pthread.h>
#include <stdatomic.h>

struct amp_once {
    pthread_once_t once;
    atomic_int done;           /* init has returned */
};

#define AMP_ONCE_INIT {PTHREAD_ONCE_INIT, 0}

/* Runs init once in the process, as pthread_once does; returns after it
 * has run, in whichever thread. */
static inline void
amp_once(struct amp_once *o, void (*init)(void))
{
    if (!atomic_load_explicit(&o->done, memory_order_acquire)) {
        pthread_once(&o->once, init);
        atomic_store_explicit(&o->done, 1, memory_order_release);
    }
}

#endif
