/* Per-API call counters: lock-free counting, a list of APIs seen. */
#include "measure/stats.h"

#include "base/log.h"

#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t amp_stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_api_stats *amp_stats_list_head;

/* Puts api on the list the first time it is counted. Linked with a
 * release store, so that a reader walking the list without the lock (a
 * report snapshot, amp_stats_list and amp_stats_next) sees a whole
 * entry. */
static void
amp_stats_list_add(struct amp_api_stats *api)
{
    struct amp_api_stats **tail;

    pthread_mutex_lock(&amp_stats_lock);
    if (!atomic_load(&api->listed)) {
        for (tail = &amp_stats_list_head; *tail; tail = &(*tail)->next)
            ;
        api->next = NULL;
        __atomic_store_n(tail, api, __ATOMIC_RELEASE);
        atomic_store(&api->listed, 1);
    }
    pthread_mutex_unlock(&amp_stats_lock);
}

void
amp_stats_count(struct amp_api_stats *api, enum amp_outcome outcome)
{
    if (!atomic_load_explicit(&api->listed, memory_order_acquire))
        amp_stats_list_add(api);
    atomic_fetch_add_explicit(&api->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&api->outcomes[outcome], 1,
                              memory_order_relaxed);
}

void
amp_stats_shadow(struct amp_api_stats *api, const struct amp_gemm_error *e)
{
    if (!atomic_load_explicit(&api->listed, memory_order_acquire))
        amp_stats_list_add(api);
    pthread_mutex_lock(&amp_stats_lock);
    api->shadow_calls++;
    if (e->max_abs > api->shadow_max_abs)
        api->shadow_max_abs = e->max_abs;
    if (e->max_rel > api->shadow_max_rel)
        api->shadow_max_rel = e->max_rel;
    if (e->fro_rel > api->shadow_max_fro)
        api->shadow_max_fro = e->fro_rel;
    api->shadow_nonfinite += e->nonfinite;
    api->shadow_compared += e->compared;
    pthread_mutex_unlock(&amp_stats_lock);
}

void
amp_stats_summary(void)
{
    struct amp_api_stats *api;
    char shadow[224];

    pthread_mutex_lock(&amp_stats_lock);
    for (api = amp_stats_list_head; api; api = api->next) {
        shadow[0] = '\0';
        if (api->shadow_calls && api->shadow_compared)
            snprintf(shadow, sizeof shadow,
                     " shadow=%llu max_abs_err=%.3g max_rel_err=%.3g "
                     "nonfinite=%llu fro_rel_err=%.3g compared=%llu",
                     api->shadow_calls, api->shadow_max_abs,
                     api->shadow_max_rel, api->shadow_nonfinite,
                     api->shadow_max_fro, api->shadow_compared);
        else if (api->shadow_calls) /* no element to compare: none */
            snprintf(shadow, sizeof shadow,
                     " shadow=%llu max_abs_err=- max_rel_err=- "
                     "nonfinite=%llu fro_rel_err=- compared=0",
                     api->shadow_calls, api->shadow_nonfinite);
        amp_log_line("summary %s calls=%llu converted=%llu fp32=%llu "
                     "fallback=%llu passthrough=%llu%s",
                     api->name, atomic_load(&api->calls),
                     atomic_load(&api->outcomes[AMP_OUTCOME_CONVERTED]),
                     atomic_load(&api->outcomes[AMP_OUTCOME_FP32]),
                     atomic_load(&api->outcomes[AMP_OUTCOME_FALLBACK]),
                     atomic_load(&api->outcomes[AMP_OUTCOME_PASSTHROUGH]),
                     shadow);
    }
    pthread_mutex_unlock(&amp_stats_lock);
}

const struct amp_api_stats *
amp_stats_list(void)
{
    const struct amp_api_stats *head;

    pthread_mutex_lock(&amp_stats_lock);
    head = amp_stats_list_head;
    pthread_mutex_unlock(&amp_stats_lock);
    return head;
}

const struct amp_api_stats *
amp_stats_next(const struct amp_api_stats *api)
{
    return __atomic_load_n(&api->next, __ATOMIC_ACQUIRE);
}

void
amp_stats_reset(void)
{
    struct amp_api_stats *api;
    int i;

    /* Only in a forked child: the lock may have been held by a thread that
     * does not exist here. */
    pthread_mutex_init(&amp_stats_lock, NULL);
    for (api = amp_stats_list_head; api; api = api->next) {
        atomic_store(&api->calls, 0);
        atomic_store(&api->plans_built, 0);
        atomic_store(&api->heuristic_queries, 0);
        for (i = 0; i < AMP_OUTCOME_COUNT; i++)
            atomic_store(&api->outcomes[i], 0);
        api->shadow_calls = 0;
        api->shadow_max_abs = 0.0;
        api->shadow_max_rel = 0.0;
        api->shadow_max_fro = 0.0;
        api->shadow_nonfinite = 0;
        api->shadow_compared = 0;
    }
}
