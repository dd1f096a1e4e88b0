/* CUDA graph replays (measure/replay.h): a list of captured calls per
 * graph and per executable graph, under one lock; a framework keeps a
 * few graphs, each with a step's calls, so a list is searched in full. */
#include "measure/replay.h"

#include "base/log.h"
#include "decide/auto.h"
#include "device/device.h"
#include "measure/prof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The calls captured into one graph, or replayed by one executable
 * graph (`handle`). */
struct amp_replay_list {
    void *handle;
    struct amp_prof_captured *calls;
    size_t n, cap;
    struct amp_replay_list *next;
};

static pthread_mutex_t amp_replay_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_replay_list *amp_replay_lists;
static atomic_int amp_replay_used; /* a list was ever made */
static unsigned long long amp_replay_launch_count;

/* The list of `handle`, made when `make`; NULL when none (or no memory).
 * Lock held. */
static struct amp_replay_list *
amp_replay_list(void *handle, int make)
{
    struct amp_replay_list *l;

    for (l = amp_replay_lists; l; l = l->next)
        if (l->handle == handle)
            return l;
    if (!make)
        return NULL;
    l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->handle = handle;
    l->next = amp_replay_lists;
    amp_replay_lists = l;
    atomic_store(&amp_replay_used, 1);
    return l;
}

/* Appends n calls to l; AMP_ERR_NOMEM when they do not fit. Lock
 * held. */
static enum amp_status
amp_replay_append(struct amp_replay_list *l,
                  const struct amp_prof_captured *calls, size_t n)
{
    struct amp_prof_captured *grown;
    size_t cap = l->cap ? l->cap : 64;

    while (cap < l->n + n)
        cap *= 2;
    if (cap != l->cap) {
        grown = realloc(l->calls, cap * sizeof *grown);
        if (!grown)
            return AMP_ERR_NOMEM;
        l->calls = grown;
        l->cap = cap;
    }
    memcpy(l->calls + l->n, calls, n * sizeof *calls);
    l->n += n;
    return AMP_OK;
}

void
amp_replay_captured(const struct amp_prof_what *w, enum amp_outcome outcome)
{
    struct amp_prof_captured c;
    struct amp_auto_view v;
    struct amp_replay_list *l;
    void *graph;

    /* A stream the hook found not capturing: nothing to note. */
    if (amp_prof_capturing(w) == 0 ||
        !(graph = amp_dev_capture_graph(w->stream)))
        return;
    memset(&c, 0, sizeof c);
    c.what = *w;
    /* A shadow call is FP32 in a graph (shadow work is never captured). */
    c.converted = outcome == AMP_OUTCOME_CONVERTED &&
                  w->mode != AMP_MODE_SHADOW;
    c.provisional = w->auto_shape &&
                    amp_auto_get(w->site, w->auto_shape - 1, &v) == 0 &&
                    v.state == AMP_AUTO_MEASURING;
    amp_site_shape_captured(w->site_shape - 1, c.converted);
    pthread_mutex_lock(&amp_replay_lock);
    l = amp_replay_list(graph, 1);
    if (!l || amp_replay_append(l, &c, 1) != AMP_OK)
        amp_log(AMP_LOG_INFO, "%s: no memory to note a captured call; its "
                "graph's replays go uncounted", w->api);
    pthread_mutex_unlock(&amp_replay_lock);
}

/* The calls of `from_handle`'s list into `to_handle`'s, in place of what
 * it had (`replace`) or after it; `what` names the receiving graph for
 * the log. Lock taken. */
static void
amp_replay_carry(void *from_handle, void *to_handle, int replace,
                 const char *what)
{
    struct amp_replay_list *from, *to;
    int calls;

    pthread_mutex_lock(&amp_replay_lock);
    from = amp_replay_list(from_handle, 0);
    calls = from && from->n;
    to = amp_replay_list(to_handle, calls);
    if (to && replace)
        to->n = 0;
    if (to && calls && amp_replay_append(to, from->calls, from->n) != AMP_OK)
        amp_log(AMP_LOG_INFO, "no memory to note the calls of %s; its "
                "replays go uncounted", what);
    pthread_mutex_unlock(&amp_replay_lock);
}

void
amp_replay_instantiated(void *graph, void *exec)
{
    amp_replay_carry(graph, exec, 1, "an executable graph");
}

void
amp_replay_updated(void *graph, void *exec)
{
    amp_replay_carry(graph, exec, 1, "an updated executable graph");
}

/* How a captured call runs in its graph: its mode, FP32 when it was not
 * converted. */
static enum amp_mode
amp_replay_mode(const struct amp_prof_captured *c)
{
    return c->converted ? c->what.mode : AMP_MODE_FP32;
}

void
amp_replay_update_failed(void *graph, void *exec)
{
    static atomic_int told;
    struct amp_replay_list *from, *to;
    char api[64] = "", was[24] = "", now[24] = "";
    size_t i;

    pthread_mutex_lock(&amp_replay_lock);
    from = amp_replay_list(graph, 0);
    to = amp_replay_list(exec, 0);
    for (i = 0; from && to && i < from->n && i < to->n && !api[0]; i++) {
        enum amp_mode a = amp_replay_mode(&to->calls[i]);
        enum amp_mode b = amp_replay_mode(&from->calls[i]);

        if (a == b)
            continue;
        snprintf(api, sizeof api, "%s", from->calls[i].what.api);
        snprintf(was, sizeof was, "%s", amp_mode_name(a));
        snprintf(now, sizeof now, "%s", amp_mode_name(b));
    }
    pthread_mutex_unlock(&amp_replay_lock);
    if (api[0] && !atomic_exchange(&told, 1))
        amp_log(AMP_LOG_WARN, "a CUDA graph update failed: the shim ran "
                "a captured %s in %s in the executable graph and in %s in "
                "the new capture, so the two graphs have other nodes (a "
                "call captured before the shim set up in its context, or "
                "while auto still measures its shape, stays FP32; a later "
                "capture may convert)", api, was, now);
}

void
amp_replay_child(void *parent, void *child)
{
    amp_replay_carry(child, parent, 0, "a graph with a child graph node");
}

void
amp_replay_cloned(void *clone, void *graph)
{
    amp_replay_carry(graph, clone, 1, "a cloned graph");
}

void
amp_replay_launched(void *exec)
{
    struct amp_replay_list *l;

    pthread_mutex_lock(&amp_replay_lock);
    l = amp_replay_list(exec, 0);
    if (l && l->n) {
        amp_replay_launch_count++;
        amp_prof_replayed(l->calls, l->n);
    }
    pthread_mutex_unlock(&amp_replay_lock);
}

void
amp_replay_gone(void *handle)
{
    struct amp_replay_list **at, *l;

    pthread_mutex_lock(&amp_replay_lock);
    for (at = &amp_replay_lists; *at; at = &(*at)->next) {
        if ((*at)->handle != handle)
            continue;
        l = *at;
        *at = l->next;
        free(l->calls);
        free(l);
        break;
    }
    pthread_mutex_unlock(&amp_replay_lock);
}

int
amp_replay_any(void)
{
    return atomic_load_explicit(&amp_replay_used, memory_order_relaxed);
}

unsigned long long
amp_replay_launches(void)
{
    unsigned long long n;

    pthread_mutex_lock(&amp_replay_lock);
    n = amp_replay_launch_count;
    pthread_mutex_unlock(&amp_replay_lock);
    return n;
}

void
amp_replay_forget(void)
{
    pthread_mutex_init(&amp_replay_lock, NULL);
    amp_replay_lists = NULL; /* the parent's graphs are not ours */
    amp_replay_launch_count = 0;
    atomic_store(&amp_replay_used, 0);
}
