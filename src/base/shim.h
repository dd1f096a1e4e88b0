/* Process-wide state of the shim: the configuration, the re-entrancy
 * guard, the fork generation and the thread-exit releases. Hooks reach
 * them through src/process/process.h, which also starts the stages. */
#ifndef AMP_SHIM_H
#define AMP_SHIM_H

#include "base/config.h"

#include <stdatomic.h>

/* Per-thread state that hooked calls read: the initial-exec TLS model,
 * one load an access where the default model calls the loader. The shim
 * is loaded with the program (LD_PRELOAD), whose static TLS holds its
 * whole per-thread block (some 26 KiB): once one variable is so declared,
 * the loader places the module's every per-thread variable there, so the
 * shim cannot be opened later with dlopen ("cannot allocate memory in
 * static TLS block") whatever model the others use. */
#define AMP_THREAD_HOT _Thread_local __attribute__((tls_model("initial-exec")))

/* The configuration, loaded on first use (the log opened, bad values
 * warned about). */
const struct amp_config *amp_shim_config(void);

/* The guard: 1 when the shim may act on this call (enabled, not
 * re-entered from inside the shim), and amp_shim_leave() must follow; 0
 * to pass the call through. Hooks enter through amp_process_enter. */
int amp_shim_enter(void);
void amp_shim_leave(void);

/* At exit, before the summary and the report: no call enters any more
 * (other threads' calls go to the library untouched and uncounted), and
 * the calls inside the shim are waited for (at most
 * AMP_SHIM_CLOSE_WAIT_MS), so that every figure printed agrees. */
#define AMP_SHIM_CLOSE_WAIT_MS 2000
void amp_shim_close(void);

/* Changes in a forked child: per-thread state tagged with an older value
 * belongs to the parent's contexts and must be dropped, not used. Read
 * inline: every hooked call checks its per-thread state against it. */
extern atomic_uint amp_shim_gen;

static inline unsigned
amp_shim_generation(void)
{
    return atomic_load_explicit(&amp_shim_gen, memory_order_relaxed);
}

/* In a forked child, after the stages forgot their state: the parent's
 * per-thread state becomes stale. */
void amp_shim_new_generation(void);

/* Per-thread state tagged with *generation (0 at first): 1 when it is a
 * forked child's copy of its parent's, to be dropped, not used (then the
 * tag is brought up to date); 0 when it is this process's. */
static inline int
amp_shim_thread_stale(unsigned *generation)
{
    unsigned now = amp_shim_generation();

    if (*generation == now)
        return 0;
    *generation = now;
    return 1;
}

/* Calls release() when the calling thread exits (once per release and
 * thread, however often registered), so that a thread's own vendor
 * handles and tables do not outlive it. At most AMP_SHIM_THREAD_RELEASES
 * functions; when the handler cannot be registered, one warning and no
 * release. */
#define AMP_SHIM_THREAD_RELEASES 16
void amp_shim_at_thread_exit(void (*release)(void));

#endif
