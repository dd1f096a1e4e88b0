/* Results that device work writes into slots (page-locked host memory,
 * src/device.h), and the profiler's records of timed calls, which the
 * host collects later without ever blocking a hook: shadow errors for the
 * per-API statistics, non-finite counts that demote a call site to FP32,
 * and times. */
#ifndef AMP_HARVEST_H
#define AMP_HARVEST_H

#include "base/config.h"
#include "base/status.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/stats.h"

#include <stdint.h>

struct amp_prof_call;

/* Hands a slot whose struct amp_shadow_error is written by work queued
 * on `stream` before its event record (amp_dev_slot_record) to the
 * harvest, which gives it back. With `shadow` the errors go to
 * amp_stats_shadow(stats) and to the (site, shape) of `shape` (1 + its
 * slot; 0: the site), which an error over the tolerance demotes; without,
 * a non-zero non-finite count demotes it (when site is not NULL). An auto
 * rule's shadow call (auto_shape, as struct amp_gemm_desc has it) gives
 * its errors to auto's candidate `candidate` instead of demoting. The
 * profiler's record of the call open on this thread (amp_prof_current)
 * gets the errors too. Fails with AMP_ERR_UNAVAILABLE when no memory for
 * its place in the queue can be had (the slot stays the caller's). */
enum amp_status amp_harvest_pend(struct amp_dev *dev, amp_stream stream,
                                 int slot, amp_devptr slot_at, int shadow,
                                 struct amp_api_stats *stats,
                                 struct amp_site *site, int shape,
                                 int auto_shape, enum amp_mode candidate);

/* Hands the profiler's record of a call on `stream` to the harvest
 * (after the call's slot, if it has one), which gives it to
 * amp_prof_record_harvest once amp_prof_record_done says it is done.
 * AMP_ERR_UNAVAILABLE as amp_harvest_pend. */
enum amp_status amp_harvest_record(struct amp_dev *dev, amp_stream stream,
                                   struct amp_prof_call *call);

/* Collects finished slots and records: the work handed over is kept per
 * (context, stream) in the order it was queued, and only each queue's
 * oldest is asked about (a few queues per harvest, taken in turn from one
 * harvest to the next, and a few dozen items at most). Never blocks, and
 * holds no lock of the shim's but the queue's own while it asks the
 * driver: a queue another thread is asking about is left to it. Legal
 * while a stream is being captured: the queries are made in the relaxed
 * capture mode (amp_dev_relax) of events recorded outside any capture.
 * With `wait` (at exit, or before a context ends), waits for everything.
 * Returns how many slots and records it collected. */
uint64_t amp_harvest(int wait);

/* Forgets pending work (a forked child starts clean). */
void amp_harvest_forget(void);

#endif
