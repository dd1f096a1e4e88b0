/* The profiler: every converted call bracketed by events from the
 * context's pool on the caller's stream (shadow calls split into the
 * candidate and the FP32 original), harvested later without blocking into
 * per-site, per-shape statistics, a log line per call and trace events.
 * The FP32 baseline of a (site, shape) comes from its shadow calls, or
 * without any from the samples of its calls kept FP32; a converted call's
 * FP32 time is measured (shadow) or estimated from it. */
#ifndef AMP_PROF_H
#define AMP_PROF_H

#include "base/config.h"
#include "decide/policy.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/stats.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---- What a call is ---------------------------------------------------------- */

/* A call's shape. GEMM: v = m n k batch transa transb; convolution:
 * v[0..4] the x dims, v[5..9] the w dims (nb_dims of each in v[10]),
 * v[11] groups. */
#define AMP_SHAPE_VALUES 12
struct amp_shape {
    enum amp_family family;
    int64_t v[AMP_SHAPE_VALUES];
};

/* "512x256x128 NT" (GEMM; " x8" for a batch of 8, " relu-bias" for a
 * cuBLASLt epilogue) or
 * "x 64x3x32x32 w 16x3x3x3" (convolution; " g2" for 2 groups). */
void amp_shape_format(const struct amp_shape *s, char *buf, size_t cap);

/* Why a conversion was tried and the original call ran instead. */
enum amp_fallback {
    AMP_FALLBACK_NONE = 0,
    AMP_FALLBACK_NO_DEVICE,    /* no driver, context, kernels or handle */
    AMP_FALLBACK_SCRATCH_CAP,  /* the scratch would exceed the cap */
    AMP_FALLBACK_BUSY,         /* every result slot was taken */
    AMP_FALLBACK_DEVICE,       /* an allocation, launch or record failed */
    AMP_FALLBACK_VENDOR,       /* the converted vendor call failed */
    AMP_FALLBACK_NO_ALGORITHM, /* no descriptor or algorithm for the
                                  converted types */
    AMP_FALLBACK_COLD_CAPTURE, /* the caller's stream is capturing and the
                                  shim's set-up for this context or thread
                                  is not made (it is not capture-safe) */
    AMP_FALLBACK_F16_RANGE,    /* an FP16 convolution whose reduction is
                                  too long for FP16's range once scaled
                                  (AMP_CONV_F16_MAX_LOG2_LEN) */
    AMP_FALLBACK_COUNT,
};

const char *amp_fallback_name(enum amp_fallback why);

/* Why a call at a site ran FP32 by decision (a fallback has its own
 * reasons: enum amp_fallback). */
enum amp_kept {
    AMP_KEPT_MODE = 0,         /* the mode (AMPSHIM_MODE or the rule's) is
                                  fp32 or cannot run this call */
    AMP_KEPT_RULE,             /* an fp32 rule matched */
    AMP_KEPT_NO_RULE,          /* no rule matched: the closing default */
    AMP_KEPT_MIN_SIZE,         /* under the policy's min-size */
    AMP_KEPT_DEMOTED,          /* the site's, or the (site, shape)'s,
                                  error went over the tolerance */
    AMP_KEPT_BROKEN,           /* the policy file has an error */
    AMP_KEPT_PEDANTIC,         /* pedantic or FMA-only math asked for */
    AMP_KEPT_NO_TC_ENGINE,     /* a cuDNN backend plan on an engine without
                                  Tensor Cores: the program chose FP32
                                  math by its engine */
    AMP_KEPT_FUSED_GRAPH,      /* a cuDNN backend plan of a convolution
                                  fused with pointwise operations: run as
                                  the program built it */
    AMP_KEPT_UNSUPPORTED,      /* valid, not for the converted path */
    AMP_KEPT_INVALID,          /* arguments the library refuses */
    AMP_KEPT_EMPTY,            /* nothing to compute (a size 0, alpha 0) */
    AMP_KEPT_CAPTURE,          /* a shadow run while the stream is being
                                  captured into a CUDA graph */
    AMP_KEPT_AUTO,             /* an auto rule: no candidate within the
                                  tolerance and faster than FP32 */
    AMP_KEPT_LIBRARY,          /* one of NVIDIA's libraries called, and the
                                  policy keeps such calls FP32 */
    AMP_KEPT_ATOMIC_SYNC,      /* a cuBLASLt call synchronised with other
                                  kernels through atomic counters */
    AMP_KEPT_SHAPE_LIMIT,      /* the (site, shape) table was full: no
                                  entry to measure or decide it */
    AMP_KEPT_MEASURING,        /* auto still measuring, its shadow calls'
                                  results on their way */
    AMP_KEPT_NO_EMULATION,     /* bf16x9 on a GPU without cuBLAS's BF16x9
                                  emulation (amp_dev_bf16x9) */
    AMP_KEPT_COUNT,
};

/* "min-size": the report's name of a reason. */
const char *amp_kept_name(enum amp_kept why);

/* The reason of an FP32 decision. */
enum amp_kept amp_kept_of(const struct amp_decision *dec);

/* The fallback a failed preparation means. */
enum amp_fallback amp_fallback_of(enum amp_status st);

/* A call as the profiler sees it. */
struct amp_prof_what {
    const char *api;           /* a static string */
    struct amp_site *site;     /* NULL: the site table is full */
    struct amp_shape shape;
    double flops;              /* 2 multiply-adds per reduction term */
    enum amp_mode mode;        /* the decision's */
    enum amp_mode candidate;   /* shadow's */
    int delivers;              /* a shadow call whose candidate's result
                                  the program gets: a converted call of
                                  its candidate with a measured FP32
                                  time (AMPSHIM_MODE's baseline) */
    amp_stream stream;
    int device;                /* the ordinal of the device the call runs
                                  on (its thread's current context), -1
                                  unknown */
    int auto_shape;            /* an auto rule's call: 1 + its (site,
                                  shape)'s slot (decide/auto.h); 0: not */
    int site_shape;            /* 1 + its (site, shape)'s slot
                                  (decide/site.h); 0: none */
    int warmup;                /* set by amp_prof_warmup */
    int capture;               /* the stream's capture state as the hook
                                  found it for this call: 2 +
                                  amp_dev_stream_capturing's answer; 0:
                                  not asked, so the profiler asks */
};

/* w's stream's capture state (amp_dev_stream_capturing's answer), as the
 * hook found it when it did. */
int amp_prof_capturing(const struct amp_prof_what *w);


/* ---- Sampling ------------------------------------------------------------------ */

/* A call kept FP32 at a (site, shape) is timed by sample: its first
 * AMP_PROF_FP32_FIRST calls, then 1 in AMP_PROF_FP32_EVERY, by their
 * count (a sample that could not be taken is not tried again at the next
 * call: a decided-FP32 call stays cheap). Each sample costs two event
 * records on its stream. */
#define AMP_PROF_FP32_FIRST 3
#define AMP_PROF_FP32_EVERY 64

/* A converted (not shadow) call of a (site, shape) is timed until
 * AMP_PROF_CONVERTED_FIRST of them were, then 1 in
 * AMP_PROF_CONVERTED_EVERY; the others are estimated at the sampled mean.
 * Shadow calls are always timed (auto compares them), and every call is
 * with AMPSHIM_CALL_LOG or AMPSHIM_TRACE (a line or event per call). */
#define AMP_PROF_CONVERTED_FIRST 8
#define AMP_PROF_CONVERTED_EVERY 16

/* Whether the nth call (from 0) of its kind at a (site, shape) is timed,
 * `taken` of the earlier ones having been: until `first` were, then 1 in
 * `every` (taken = nth: the first `first` calls, then 1 in `every`). */
static inline int
amp_prof_sample_due(unsigned long long nth, unsigned long long taken,
                    unsigned first, unsigned every)
{
    return taken < first || nth % every == 0;
}

/* ---- One call in a hook ------------------------------------------------------ */

struct amp_prof_call;

/* A hook's handle on the call it is running. */
struct amp_prof_span {
    struct amp_prof_what what;
    struct amp_prof_call *call; /* the measured record; NULL: unmeasured */
    int open;                   /* begun and not ended */
    int nvtx;                   /* an NVTX range is open */
    int fp32;                   /* a kept FP32 call's sample
                                   (amp_prof_fp32_begin) */
    int sampled_out;            /* a converted call not timed by
                                   sampling: estimated */
    struct amp_prof_entry *entry; /* its entry where its begin found it,
                                     while the table's generation stands */
    unsigned generation;
};

/* A call kept FP32 at its site for `why`: counted. 1 when it is due to be
 * timed by sample (AMP_PROF_FP32_FIRST, AMP_PROF_FP32_EVERY): the hook
 * then brackets the original call with amp_prof_fp32_begin and
 * amp_prof_fp32_end. */
int amp_prof_fp32(const struct amp_prof_what *w, enum amp_kept why);

/* Where a kept call was counted, to count more of its like there
 * (measure/settled.h). */
struct amp_prof_place {
    struct amp_prof_entry *entry;           /* NULL: nowhere */
    struct amp_prof_device_part *part;      /* its device's, or NULL */
    enum amp_kept kept;
    unsigned generation;                    /* the table's */
};

/* amp_prof_fp32, telling *place where the call was counted. */
int amp_prof_fp32_placed(const struct amp_prof_what *w, enum amp_kept why,
                         struct amp_prof_place *place);

/* Counts one more call kept FP32 at *place, as amp_prof_fp32 counted the
 * one that placed it, and returns 1, or 2 when this call is due to be
 * timed by sample; returns 0 having counted nothing when the table was
 * reset since (a forked child): the hook then takes its whole path. */
int amp_prof_fp32_again(const struct amp_prof_place *place);

/* Right before the original call of a call due to be sampled: records a
 * start event on w->stream, unless the stream is being captured, the
 * shim's state for the current context is not made (none is made for
 * this) or no record or event can be had: the call then goes untimed.
 * Nothing else of the call changes. */
void amp_prof_fp32_begin(struct amp_prof_span *span,
                         const struct amp_prof_what *w);

/* After the original call: records its end event (original_ok) and hands
 * the record to the harvest, or drops it. Nothing when span holds no
 * sample. */
void amp_prof_fp32_end(struct amp_prof_span *span, int original_ok);

/* A conversion that failed before anything was queued: counted. */
void amp_prof_fallback(const struct amp_prof_what *w, enum amp_fallback why);

/* Where the calls of one what are counted, as a caller keeps it for the
 * next call like it (measure/settled.h): while the table's generation
 * stands, the entry need not be looked up. */
struct amp_prof_hint {
    struct amp_prof_entry *entry; /* NULL: not known yet */
    unsigned generation;
};

/* Before the converted path is prepared: takes a record for the call
 * unless w->stream is being captured or no record is free (the call then
 * goes unmeasured), and opens an NVTX range. hint (or NULL): where w's
 * earlier calls were counted, updated when it was not known. w may be
 * the span's own what, filled in place. */
void amp_prof_begin(struct amp_prof_span *span, struct amp_dev *dev,
                    const struct amp_prof_what *w,
                    struct amp_prof_hint *hint);

/* After the path's host set-up (its scratch and layout), before its first
 * queued work: records the calling thread's open record's start event on
 * its stream (dev's context current), so that a device that has caught
 * up does not count the host's set-up in the call's time. Nothing
 * without an open record, or once started. */
void amp_prof_start(void);

/* The call sets up state its later calls of the kind reuse (the first
 * call of a delayed-scaling record takes the two passes they skip): its
 * time is not theirs (auto measures the candidate again). */
void amp_prof_warmup(struct amp_prof_span *span);

/* Shadow: after the first of the two products (the candidate, or the
 * FP32 original when amp_prof_fp32_first said so), before the second. */
void amp_prof_split(struct amp_prof_span *span);

/* Shadow: this call runs the FP32 original first, then the candidate
 * (START, original, SPLIT, candidate, END); the harvest reads its two
 * spans accordingly. */
void amp_prof_fp32_first(struct amp_prof_span *span);

/* After the call's last timed work (the converted result, or the shadow's
 * original call). */
void amp_prof_stop(struct amp_prof_span *span);

/* Shadow: after the comparison with FP32 (and a delivering call's copy of
 * its result) is queued, before the event of its result's slot: records
 * the calling thread's open record's last event (its stop recorded), so
 * that the call's actual time includes what the program waits for too;
 * the candidate's time, which auto compares, does not. Recorded before
 * the slot's event, the record is finished when its slot is. */
void amp_prof_checked(void);

/* Ends the span: a stopped call goes to the harvest, anything else is
 * counted now with its outcome and fallback reason. */
void amp_prof_end(struct amp_prof_span *span, enum amp_outcome outcome,
                  enum amp_fallback why, size_t scratch_bytes);

/* The record of the span open on this thread, for amp_harvest_pend. */
struct amp_prof_call *amp_prof_current(void);

/* Shadow errors and non-finite checks of a record, from the harvest of
 * its slot: amp_prof_expect_error when the slot is pended, then
 * amp_prof_error with its content (e NULL: the slot's work failed). */
void amp_prof_expect_error(struct amp_prof_call *call);
void amp_prof_error(struct amp_prof_call *call,
                    const struct amp_gemm_error *e);

/* For the harvest (measure/harvest.h), which holds a record that a call
 * timed or whose errors are to come from the end of its call: 1 when its
 * events and its slot's errors are in (with `wait`, after waiting for its
 * end event), 0 when not yet, -1 when its work failed. */
int amp_prof_record_done(struct amp_prof_call *call, int wait);

/* A record done (events_ok: its work did not fail) into its (site,
 * shape)'s statistics, auto's candidate, the call log and the trace, and
 * back to the free records. */
void amp_prof_record_harvest(struct amp_prof_call *call, int events_ok);

/* Forgets everything (a forked child starts clean). */
void amp_prof_forget(void);

/* A hooked call captured into a CUDA graph (measure/replay.h), which each
 * launch of the graph replays. */
struct amp_prof_captured {
    struct amp_prof_what what;
    int converted;              /* it runs converted in the graph */
    int provisional;            /* auto was still measuring its (site,
                                   shape) when it was captured */
};

/* One launch of a graph of n captured calls: each counted replayed at its
 * (site, shape). */
void amp_prof_replayed(const struct amp_prof_captured *calls, size_t n);

/* ---- Statistics, for the report ------------------------------------------------ */

/* Devices counted apart per (site, shape). */
#define AMP_PROF_ENTRY_DEVICES 8

/* One (site, shape). Times in milliseconds. */
struct amp_prof_entry {
    const char *api;
    struct amp_site *site;
    struct amp_shape shape;
    double flops;                   /* of one call */
    unsigned long long calls;       /* decided at the site */
    unsigned long long outcomes[AMP_OUTCOME_COUNT];
    unsigned long long modes[AMP_MODE_COUNT]; /* converted calls, by the
                                                 mode whose result the
                                                 program got (shadow:
                                                 FP32's) */
    enum amp_mode candidate;        /* the last shadow call's candidate */
    unsigned long long unmeasured;  /* converted, not timed (capture, no
                                       event or record free) */
    unsigned long long timed;       /* converted (not shadow), timed */
    double converted_ms;            /* their total */
    unsigned long long sampled_out; /* converted (not shadow), not timed
                                       by sampling
                                       (AMP_PROF_CONVERTED_EVERY): their
                                       time is the timed ones' mean */
    /* Calls kept FP32 and timed by sample (AMP_PROF_FP32_EVERY). */
    unsigned long long fp32_sampled;
    double fp32_sampled_ms;         /* their total */
    /* The sampling's counts: converted (not shadow) calls begun, and of
     * those given a record; kept FP32 calls. */
    unsigned long long converted_seen, converted_taken, kept_seen;
    /* Calls timed beside their FP32 original: shadow calls and
     * delivering ones. */
    unsigned long long shadow_timed;
    double shadow_fp32_ms;          /* the original FP32 calls */
    double shadow_candidate_ms;     /* the candidates beside them */
    double shadow_check_ms;         /* their comparisons with FP32 (and a
                                       delivering call's copy) */
    /* The device time of the timing events the shim recorded for these
     * calls (a record's events times the cost of one, as the context
     * measured it, amp_dev_event_overhead_ms): the timed spans above
     * leave it out, the calls' time under the shim holds it. */
    double timing_ms;
    /* Errors of the calls compared with FP32 (shadow and delivering ones),
     * relative in the max norm (max_rel,
     * sum_rel) and in the Frobenius norm (max_fro, sum_fro); the sums over
     * the measured calls, those that compared an element (an FP32 result
     * with no finite element has nothing to measure). */
    unsigned long long error_calls;
    unsigned long long measured_calls; /* of those, comparing an element */
    unsigned long long compared;    /* elements compared, summed */
    double max_rel, sum_rel, max_abs;
    double max_fro, sum_fro;
    unsigned long long over_tolerance, nonfinite;
    unsigned long long fallbacks[AMP_FALLBACK_COUNT];
    unsigned long long kept[AMP_KEPT_COUNT]; /* FP32 outcomes by reason */
    int auto_shape;                 /* an auto rule decided its calls: 1 +
                                       the (site, shape) slot of
                                       decide/auto.h; 0: none */
    size_t scratch_max;             /* bytes, largest call */
    double scratch_total;
    /* The same calls by the device they ran on, for the report's devices:
     * the first AMP_PROF_ENTRY_DEVICES devices that ran this (site,
     * shape); calls on others are counted in amp_prof_devices' dropped. */
    struct amp_prof_device_part {
        int ordinal;
        unsigned long long calls, converted, shadow, fp32, fallback;
        unsigned long long timed, shadow_timed, sampled_out;
        double converted_ms, shadow_fp32_ms, shadow_candidate_ms;
        double shadow_check_ms, timing_ms;
    } devices[AMP_PROF_ENTRY_DEVICES];
    int ndevices;
    /* Calls replayed by CUDA graph launches (not in `calls`): of those,
     * converted, and captured while auto was still measuring. */
    unsigned long long replays, replays_converted, replays_provisional;
    double replays_saved_ms;        /* the report's estimate (0 here) */
    double replays_flops;           /* the converted replays' (0 here) */
    unsigned long long replays_unestimated; /* converted replays it has
                                               no estimate for */
};

/* A copy of every entry, in first-seen order; *n entries. NULL when there
 * are none (or no memory). The caller frees it. */
struct amp_prof_entry *amp_prof_snapshot(size_t *n);

/* Calls the profiler could not keep (the entry table was full). */
unsigned long long amp_prof_dropped(void);

/* The FP32 baseline of an entry: the mean FP32 time of its shadow calls,
 * without any the mean of its kept FP32 calls' samples; a negative value
 * when it has neither. */
double amp_prof_baseline(const struct amp_prof_entry *e);

/* The mean time of an entry's timed converted (not shadow) calls, which
 * those not timed by sampling are estimated at; negative without any. */
double amp_prof_converted_mean(const struct amp_prof_entry *e);

/* The time of an entry's converted (not shadow) calls: the timed ones'
 * and, at their mean, those not timed by sampling. */
double amp_prof_converted_total(const struct amp_prof_entry *e);

/* What an entry's converted calls would have cost in FP32 and what they
 * cost, over the calls whose FP32 time is known (measured in shadow, or
 * estimated from the baseline): a shadow call cost its FP32 original, its
 * candidate and their comparison; a converted call not timed by sampling
 * its timed ones' mean. */
struct amp_prof_totals {
    double fp32_ms, actual_ms, saved_ms;
    double fp32_measured_ms, fp32_estimated_ms;
    unsigned long long measured, estimated;   /* calls */
    unsigned long long unknown;     /* converted, timed, no baseline */
    double flops_total, flops_converted;
    /* The device time of every call of the entry, whatever ran: the
     * timed ones as measured, those not timed by sampling at their timed
     * ones' mean, the ones that ran FP32 (kept or fallen back) at the
     * baseline; device_untimed: calls with neither (no baseline, or
     * converted but not timed and no mean). */
    double device_ms;
    unsigned long long device_untimed;
    unsigned long long converted_estimated; /* converted calls not timed
                                               by sampling, counted at
                                               their timed ones' mean */
    double converted_estimated_ms;          /* their time */
    double timing_ms;           /* the timing events' (in device_ms, and
                                   in actual_ms where it is known) */
};
void amp_prof_totals(const struct amp_prof_entry *e,
                     struct amp_prof_totals *t);

/* One device's share of every entry: what ran on it, and its times as
 * amp_prof_totals counts them (the FP32 time of a converted call
 * estimated from its (site, shape)'s baseline, which every device
 * shares). */
struct amp_prof_device {
    int ordinal;
    unsigned long long calls, converted, shadow, fp32, fallback;
    unsigned long long measured, estimated, unknown; /* as in totals */
    double fp32_ms, actual_ms;
    double flops_total, flops_converted;
};

/* The devices calls ran on, in order of ordinal, into out; returns how
 * many (at most cap). *dropped: calls not counted per device (the device
 * was unknown, an entry ran on more than AMP_PROF_ENTRY_DEVICES devices,
 * or out had no room). */
size_t amp_prof_devices(struct amp_prof_device *out, size_t cap,
                        unsigned long long *dropped);

/* The same over count entries of amp_prof_snapshot: a report's devices
 * add up to its totals, calls made while it is written left out of both.
 * *dropped is the process's count at this moment. */
size_t amp_prof_devices_of(const struct amp_prof_entry *entries, size_t count,
                           struct amp_prof_device *out, size_t cap,
                           unsigned long long *dropped);

/* ---- Trace events ------------------------------------------------------------ */

struct amp_trace_event {
    const char *api;
    struct amp_site *site;
    struct amp_shape shape;
    enum amp_mode mode;        /* what ran */
    int fp32;                  /* the shadow's original FP32 call */
    int delivered;             /* its result reached the program: a
                                  converted call, a delivering call's
                                  candidate, a shadow call's FP32 original */
    int track;                 /* amp_prof_tracks() index */
    double ts_us, dur_us;      /* from the context's first event */
    double converted_ms, fp32_ms; /* negative: unknown */
    int fp32_measured;
};

struct amp_trace_track {
    const struct amp_dev *dev;
    amp_stream stream;
};

/* Events kept for AMPSHIM_TRACE (only when it is set), and the tracks
 * (one per context and stream). Valid until amp_prof_forget. */
const struct amp_trace_event *amp_prof_trace(size_t *n,
                                             unsigned long long *dropped);
const struct amp_trace_track *amp_prof_tracks(size_t *n);

#endif
