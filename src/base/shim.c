/* The shim's process-wide base: the configuration (read once, with the
 * log opened), the re-entrancy guard, the fork generation and the
 * thread-exit releases. What the stages do at start-up, exit and fork is
 * src/process/process.c's. */
#include "base/shim.h"

#include "base/log.h"
#include "base/once.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static struct amp_config amp_shim_cfg;
static struct amp_once amp_shim_once = AMP_ONCE_INIT;
static AMP_THREAD_HOT int amp_shim_depth;
/* Calls between amp_shim_enter and amp_shim_leave, over all threads. */
static atomic_int amp_shim_inflight;
/* Set by amp_shim_close: no call enters any more. */
static atomic_int amp_shim_closed;
atomic_uint amp_shim_gen;

/* The thread-exit releases of the calling thread. */
static pthread_key_t amp_shim_thread_key;
static pthread_once_t amp_shim_thread_once = PTHREAD_ONCE_INIT;
static int amp_shim_thread_key_made;
static _Thread_local void (*amp_shim_releases[AMP_SHIM_THREAD_RELEASES])(void);
static _Thread_local int amp_shim_nreleases;

/* Set-uid programs get no configuration from their environment. */
static const char *
amp_shim_getenv(const char *name)
{
    return secure_getenv(name);
}

static void
amp_shim_start(void)
{
    int i;

    amp_config_load(&amp_shim_cfg, amp_shim_getenv);
    if (amp_shim_cfg.disabled) {
        /* Pure passthrough says nothing. */
        amp_log_open(AMP_LOG_OFF, NULL, 1);
        return;
    }
    amp_log_open(amp_shim_cfg.log_level, amp_shim_cfg.log_file,
                 amp_shim_cfg.quiet);
    for (i = 0; i < amp_shim_cfg.nproblems; i++)
        amp_log(AMP_LOG_WARN, "%s", amp_shim_cfg.problems[i]);
}

const struct amp_config *
amp_shim_config(void)
{
    amp_once(&amp_shim_once, amp_shim_start);
    return &amp_shim_cfg;
}

int
amp_shim_enter(void)
{
    if (amp_shim_config()->disabled || amp_shim_depth > 0)
        return 0;
    /* Counted in before the check, so that amp_shim_close either sees
     * this call or this call sees it closed. */
    atomic_fetch_add(&amp_shim_inflight, 1);
    if (atomic_load(&amp_shim_closed)) {
        atomic_fetch_sub(&amp_shim_inflight, 1);
        return 0;
    }
    amp_shim_depth++;
    return 1;
}

void
amp_shim_leave(void)
{
    amp_shim_depth--;
    atomic_fetch_sub(&amp_shim_inflight, 1);
}

void
amp_shim_close(void)
{
    int waited_ms;

    atomic_store(&amp_shim_closed, 1);
    /* The calling thread's own call, if exit() came from inside one. */
    for (waited_ms = 0; waited_ms < AMP_SHIM_CLOSE_WAIT_MS &&
                        atomic_load(&amp_shim_inflight) > amp_shim_depth;
         waited_ms++) {
        struct timespec ms = {0, 1000000};

        nanosleep(&ms, NULL);
    }
}

void
amp_shim_new_generation(void)
{
    atomic_fetch_add(&amp_shim_gen, 1);
    /* Only the forking thread lives on: its own call, if it is in one. */
    atomic_store(&amp_shim_inflight, amp_shim_depth);
    atomic_store(&amp_shim_closed, 0);
}

static void
amp_shim_thread_exit(void *unused)
{
    int i;

    (void)unused;
    for (i = 0; i < amp_shim_nreleases; i++)
        amp_shim_releases[i]();
    amp_shim_nreleases = 0;
}

static void
amp_shim_thread_key_make(void)
{
    amp_shim_thread_key_made =
        pthread_key_create(&amp_shim_thread_key, amp_shim_thread_exit) == 0;
    if (!amp_shim_thread_key_made)
        amp_log(AMP_LOG_WARN, "cannot register a thread-exit handler: "
                "the shim's vendor handles outlive their threads");
}

void
amp_shim_at_thread_exit(void (*release)(void))
{
    int i;

    for (i = 0; i < amp_shim_nreleases; i++)
        if (amp_shim_releases[i] == release)
            return;
    pthread_once(&amp_shim_thread_once, amp_shim_thread_key_make);
    if (!amp_shim_thread_key_made ||
        amp_shim_nreleases == AMP_SHIM_THREAD_RELEASES)
        return;
    amp_shim_releases[amp_shim_nreleases++] = release;
    /* Any value but NULL: the destructor runs only for those. */
    pthread_setspecific(amp_shim_thread_key, &amp_shim_nreleases);
}
