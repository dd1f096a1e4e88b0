/* Per-API counters of what the shim did with each call, and the exit
 * summary. */
#ifndef AMP_STATS_H
#define AMP_STATS_H

#include "decide/site.h"

#include <stdatomic.h>

/* What became of one intercepted call. */
enum amp_outcome {
    AMP_OUTCOME_CONVERTED = 0, /* ran on the converted path */
    AMP_OUTCOME_FP32,          /* FP32 by decision (mode, arguments, size) */
    AMP_OUTCOME_FALLBACK,      /* conversion tried, failed, FP32 ran */
    AMP_OUTCOME_PASSTHROUGH,   /* not an FP32 GEMM (half, mixed or complex
                                  types): the original call, untouched */
    AMP_OUTCOME_COUNT,
};

/* One hooked API; hooks define one each, statically initialised with
 * AMP_API_STATS_INIT("name"). */
struct amp_api_stats {
    const char *name;
    atomic_ullong calls;
    atomic_ullong outcomes[AMP_OUTCOME_COUNT];
    atomic_int listed;
    /* The vendor's host work the shim's own calls cost on a cache miss:
     * execution plans it finalized and heuristics it queried. */
    atomic_ullong plans_built, heuristic_queries;
    struct amp_api_stats *next;
    /* Shadow measurements, under the stats lock. */
    unsigned long long shadow_calls;
    double shadow_max_abs, shadow_max_rel;
    unsigned long long shadow_nonfinite;
    double shadow_max_fro;
    unsigned long long shadow_compared; /* elements compared, summed */
};

#define AMP_API_STATS_INIT(api_name) {.name = (api_name)}

/* Counts one call and its outcome. */
void amp_stats_count(struct amp_api_stats *api, enum amp_outcome outcome);

/* Adds one shadow call's errors to api's maxima and counts. */
void amp_stats_shadow(struct amp_api_stats *api, const struct amp_gemm_error *e);

/* Writes one summary line per API that saw a call:
 * "ampshim[pid]: summary <api> calls=N converted=N fp32=N fallback=N
 * passthrough=N", and when shadow calls were measured
 * " shadow=N max_abs_err=X max_rel_err=X nonfinite=N fro_rel_err=X
 * compared=N" (max_rel_err: the largest relative error in the max norm,
 * fro_rel_err: in the Frobenius norm; compared: the elements compared,
 * finite in FP32; when none was, the errors are "-": not measurable). */
void amp_stats_summary(void);


/* The APIs counted so far, in first-call order (->next); the list only
 * grows. */
const struct amp_api_stats *amp_stats_list(void);

/* The API after api on that list, or NULL: a walk without the lock (the
 * list may grow meanwhile) reads each link with this. */
const struct amp_api_stats *amp_stats_next(const struct amp_api_stats *api);

/* Zeroes every counter; only in a forked child, which starts clean. */
void amp_stats_reset(void);

#endif
