/* Per-API counters of what the shim did with each call, and the exit
 * summary. */
#ifndef AMP_STATS_H
#define AMP_STATS_H

#include <stdatomic.h>

/* What became of one intercepted call. */
enum amp_outcome {
    AMP_OUTCOME_CONVERTED = 0, /* ran on the converted path */
    AMP_OUTCOME_FP32,          /* FP32 by decision (mode, arguments, size) */
    AMP_OUTCOME_FALLBACK,      /* conversion tried, failed, FP32 ran */
    AMP_OUTCOME_COUNT,
};

/* One hooked API; hooks define one each, statically initialised with
 * AMP_API_STATS_INIT("name"). */
struct amp_api_stats {
    const char *name;
    atomic_ullong calls;
    atomic_ullong outcomes[AMP_OUTCOME_COUNT];
    atomic_int listed;
    struct amp_api_stats *next;
};

#define AMP_API_STATS_INIT(api_name) {.name = (api_name)}

/* Counts one call and its outcome. */
void amp_stats_count(struct amp_api_stats *api, enum amp_outcome outcome);

/* Writes one summary line per API that saw a call:
 * "ampshim[pid]: summary <api> calls=N converted=N fp32=N fallback=N". */
void amp_stats_summary(void);

/* Zeroes every counter; only in a forked child, which starts clean. */
void amp_stats_reset(void);

#endif
