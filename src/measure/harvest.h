/* Results that device work writes into slots (page-locked host memory,
 * src/device.h) and the host collects later without ever blocking a hook:
 * shadow errors for the per-API statistics, and non-finite counts that
 * demote a call site to FP32. */
#ifndef AMP_HARVEST_H
#define AMP_HARVEST_H

#include "base/config.h"
#include "base/status.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/stats.h"

#include <stdint.h>

/* Slots handed over but not yet harvested, over all contexts. */
#define AMP_HARVEST_MAX_PENDING 256

/* Hands a slot whose struct amp_shadow_error is written by work queued
 * before its event record (amp_dev_slot_record) to the harvest, which
 * gives it back. With `shadow` the errors go to amp_stats_shadow(stats)
 * and to the (site, shape) of `shape` (1 + its slot; 0: the site), which
 * an error over the tolerance demotes; without, a non-zero non-finite
 * count demotes it (when site is not NULL). An auto
 * rule's shadow call (auto_shape, as struct amp_gemm_desc has it) gives
 * its errors to auto's candidate `candidate` instead of demoting. The
 * profiler's record of the call open on this thread (amp_prof_current)
 * gets the errors too. Fails with
 * AMP_ERR_UNAVAILABLE when too many are pending (the slot stays the
 * caller's). */
enum amp_status amp_harvest_pend(struct amp_dev *dev, int slot,
                                 amp_devptr slot_at, int shadow,
                                 struct amp_api_stats *stats,
                                 struct amp_site *site, int shape,
                                 int auto_shape, enum amp_mode candidate);

/* Collects every finished slot so far, then the profiler's finished
 * records (amp_prof_harvest), and returns how many that was.
 * Never blocks: slots whose work has not finished stay for a later
 * harvest. With `wait` (only at exit), waits for them first. */
uint64_t amp_harvest(int wait);

/* Forgets pending slots (a forked child starts clean). */
void amp_harvest_forget(void);

#endif
