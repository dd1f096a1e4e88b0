/* Call sites: where in the program a hooked call comes from, keyed by the
 * hooked API and the return address of the exported hook, and what the
 * shim has learnt about that site. A minimal table for now; symbol names
 * and policy counters are to come. */
#ifndef AMP_SITE_H
#define AMP_SITE_H

#include <stdatomic.h>

/* One call site. Lives as long as the process; fields after the key are
 * read without a lock. */
struct amp_site {
    const char *api;          /* the hooked API's name (a static string) */
    const void *caller;       /* return address of the exported hook */
    atomic_int demoted;       /* 1: every call from here stays FP32 */
};

/* Most sites a process keeps; calls from further sites get NULL. */
#define AMP_SITE_MAX 1024

/* The site of (api, caller), made on its first call. Lock-free when the
 * site exists; NULL when the table is full. `api` is compared by address:
 * pass the same static string every time. */
struct amp_site *amp_site_get(const char *api, const void *caller);

/* 1 when calls from the site are to stay FP32. A NULL site is never
 * demoted. */
int amp_site_demoted(const struct amp_site *site);

/* Sends every later call from the site to FP32; the first demotion of a
 * site is logged once at warn with its address and `reason`. */
void amp_site_demote(struct amp_site *site, const char *reason);

/* Forgets every site (a forked child starts clean). */
void amp_site_forget(void);

#endif
