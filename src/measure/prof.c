/* The profiler's records, their harvest, the (site, shape) statistics and
 * the trace events. */
#include "measure/prof.h"

#include "base/log.h"
#include "base/shim.h"
#include "decide/auto.h"
#include "measure/harvest.h"
#include "measure/nvtx.h"
#include "measure/replay.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Shapes and reasons ----------------------------------------------------- */

static const char *const amp_fallback_names[AMP_FALLBACK_COUNT] = {
    [AMP_FALLBACK_NONE] = "none",
    [AMP_FALLBACK_NO_DEVICE] = "no-device",
    [AMP_FALLBACK_SCRATCH_CAP] = "scratch-cap",
    [AMP_FALLBACK_BUSY] = "busy",
    [AMP_FALLBACK_DEVICE] = "device-error",
    [AMP_FALLBACK_VENDOR] = "vendor-error",
    [AMP_FALLBACK_NO_ALGORITHM] = "no-algorithm",
    [AMP_FALLBACK_COLD_CAPTURE] = "cold-capture",
    [AMP_FALLBACK_F16_RANGE] = "fp16-range",
};

static const char *const amp_kept_names[AMP_KEPT_COUNT] = {
    [AMP_KEPT_MODE] = "mode",
    [AMP_KEPT_RULE] = "rule",
    [AMP_KEPT_NO_RULE] = "no-rule",
    [AMP_KEPT_MIN_SIZE] = "min-size",
    [AMP_KEPT_DEMOTED] = "demoted",
    [AMP_KEPT_BROKEN] = "broken-policy",
    [AMP_KEPT_PEDANTIC] = "pedantic",
    [AMP_KEPT_NO_TC_ENGINE] = "no-tensor-core-engine",
    [AMP_KEPT_FUSED_GRAPH] = "fused-graph",
    [AMP_KEPT_UNSUPPORTED] = "unsupported",
    [AMP_KEPT_INVALID] = "invalid",
    [AMP_KEPT_EMPTY] = "empty",
    [AMP_KEPT_CAPTURE] = "capture",
    [AMP_KEPT_AUTO] = "auto",
    [AMP_KEPT_LIBRARY] = "library",
    [AMP_KEPT_ATOMIC_SYNC] = "atomic-sync",
    [AMP_KEPT_SHAPE_LIMIT] = "shape-limit",
    [AMP_KEPT_MEASURING] = "measuring",
    [AMP_KEPT_NO_EMULATION] = "no-emulation",
};

const char *
amp_kept_name(enum amp_kept why)
{
    if ((unsigned)why >= AMP_KEPT_COUNT)
        return "?";
    return amp_kept_names[why];
}

enum amp_kept
amp_kept_of(const struct amp_decision *dec)
{
    switch (dec->why) {
    case AMP_WHY_RULE:
        return dec->mode == AMP_MODE_FP32 ? AMP_KEPT_RULE : AMP_KEPT_MODE;
    case AMP_WHY_DEFAULT:
        return dec->mode == AMP_MODE_FP32 ? AMP_KEPT_NO_RULE : AMP_KEPT_MODE;
    case AMP_WHY_MIN_SIZE:
        return AMP_KEPT_MIN_SIZE;
    case AMP_WHY_DEMOTED:
        return AMP_KEPT_DEMOTED;
    case AMP_WHY_BROKEN:
        return AMP_KEPT_BROKEN;
    case AMP_WHY_AUTO:
        return AMP_KEPT_AUTO;
    case AMP_WHY_SHAPE_LIMIT:
        return AMP_KEPT_SHAPE_LIMIT;
    case AMP_WHY_AUTO_WAIT:
        return AMP_KEPT_MEASURING;
    case AMP_WHY_PEDANTIC:
        return AMP_KEPT_PEDANTIC;
    case AMP_WHY_CAPTURED:
        return AMP_KEPT_CAPTURE;
    default:
        return AMP_KEPT_MODE;
    }
}

const char *
amp_fallback_name(enum amp_fallback why)
{
    if ((unsigned)why >= AMP_FALLBACK_COUNT)
        return "?";
    return amp_fallback_names[why];
}

enum amp_fallback
amp_fallback_of(enum amp_status st)
{
    switch (st) {
    case AMP_ERR_TOO_BIG:
        return AMP_FALLBACK_SCRATCH_CAP;
    case AMP_ERR_UNAVAILABLE:
        return AMP_FALLBACK_BUSY;
    default:
        return AMP_FALLBACK_DEVICE;
    }
}

/* "AxBxC" of n values into buf. */
static int
amp_dims_format(const int64_t *v, int n, char *buf, size_t cap)
{
    int len = 0, i;

    buf[0] = '\0';
    for (i = 0; i < n && (size_t)len < cap; i++)
        len += snprintf(buf + len, cap - (size_t)len, "%s%lld", i ? "x" : "",
                        (long long)v[i]);
    return len;
}

void
amp_shape_format(const struct amp_shape *s, char *buf, size_t cap)
{
    char x[96], w[96];

    if (s->family == AMP_FAMILY_GEMM) {
        snprintf(buf, cap, "%lldx%lldx%lld %c%c", (long long)s->v[0],
                 (long long)s->v[1], (long long)s->v[2],
                 s->v[4] ? 'T' : 'N', s->v[5] ? 'T' : 'N');
        if (s->v[3] != 1 && strlen(buf) < cap)
            snprintf(buf + strlen(buf), cap - strlen(buf), " x%lld",
                     (long long)s->v[3]);
        if (s->v[6] != AMP_EPI_DEFAULT && strlen(buf) < cap)
            snprintf(buf + strlen(buf), cap - strlen(buf), " %s",
                     amp_epi_name((enum amp_epi)s->v[6]));
        return;
    }
    amp_dims_format(s->v, (int)s->v[10], x, sizeof x);
    amp_dims_format(s->v + 5, (int)s->v[10], w, sizeof w);
    snprintf(buf, cap, "x %s w %s", x, w);
    if (s->v[11] != 1 && strlen(buf) < cap)
        snprintf(buf + strlen(buf), cap - strlen(buf), " g%lld",
                 (long long)s->v[11]);
}

/* ---- State ------------------------------------------------------------------ */

/* Records made at once when none is free (as many as the device has
 * calls queued are pending: there is no bound but memory). */
#define AMP_PROF_RECORD_BLOCK 256
#define AMP_PROF_ENTRIES 4096
#define AMP_PROF_TRACKS 256
#define AMP_PROF_TRACE_MAX 200000

/* A converted call: START, END. A shadow or delivering call: START, the
 * candidate, SPLIT, its FP32 original, END, the comparison (and a
 * delivering call's copy of the result), CHECK; with fp32_first the
 * original before SPLIT and the candidate after it. */
enum { AMP_EV_START = 0, AMP_EV_SPLIT, AMP_EV_END, AMP_EV_CHECK,
       AMP_EV_COUNT };

enum amp_error_state {
    AMP_ERROR_NONE = 0,        /* no slot for this call */
    AMP_ERROR_EXPECTED,        /* its slot is pended */
    AMP_ERROR_DELIVERED,       /* err holds the slot's content */
    AMP_ERROR_FAILED,          /* the slot's work failed */
};

struct amp_prof_call {
    struct amp_prof_call *next_free;
    struct amp_prof_what what;
    struct amp_dev *dev;
    int ev[AMP_EV_COUNT];      /* pool indices; -1 none */
    int epoch;                 /* the context's trace origin; -1 none */
    int start_pending;         /* the start event is recorded at
                                  amp_prof_start */
    int fp32_first;            /* shadow: START, original, SPLIT,
                                  candidate, END */
    int fp32_sample;           /* a kept FP32 call's original, timed by
                                  sample: START, END */
    atomic_int error_state;
    struct amp_gemm_error err;
};

static pthread_mutex_t amp_prof_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned amp_prof_generation; /* moves when the table is reset */
static struct amp_prof_call *amp_free_records;
/* Every block of records made: a fork's child drops the parent's pending
 * records and keeps their memory here. */
static struct amp_record_block {
    struct amp_record_block *next;
    struct amp_prof_call records[AMP_PROF_RECORD_BLOCK];
} *amp_record_blocks;
static AMP_THREAD_HOT struct amp_prof_call *amp_prof_open;

static struct {
    int used;
    struct amp_prof_entry e;
} amp_entries[AMP_PROF_ENTRIES];
static int amp_order[AMP_PROF_ENTRIES], amp_nentries;
static unsigned long long amp_dropped;
/* Calls not counted per device: unknown device, or an entry's device
 * parts full. */
static unsigned long long amp_device_dropped;

static struct amp_trace_event *amp_trace_events;
static size_t amp_ntrace, amp_trace_cap;
static unsigned long long amp_trace_dropped;
static struct amp_trace_track amp_tracks[AMP_PROF_TRACKS];
static size_t amp_ntracks;

/* ---- Entries (lock held) ---------------------------------------------------- */

static size_t
amp_entry_hash(const struct amp_prof_what *w)
{
    uint64_t h = (uint64_t)(uintptr_t)w->site * 0x9e3779b97f4a7c15ull ^
                 (uint64_t)(uintptr_t)w->api;
    int i;

    for (i = 0; i < AMP_SHAPE_VALUES; i++)
        h = (h ^ (uint64_t)w->shape.v[i]) * 0x100000001b3ull;
    h ^= h >> 31;
    return (size_t)(h % AMP_PROF_ENTRIES);
}

static int
amp_entry_is(const struct amp_prof_entry *e, const struct amp_prof_what *w)
{
    return e->site == w->site && e->api == w->api &&
           e->shape.family == w->shape.family &&
           memcmp(e->shape.v, w->shape.v, sizeof e->shape.v) == 0;
}

/* The entry the calling thread found last: a converted call looks its
 * entry up when it begins, when it is counted and when it is harvested. */
static AMP_THREAD_HOT struct {
    struct amp_prof_entry *e;
    unsigned generation;
} amp_entry_last;

/* The entry of w, made on first use; NULL when the table is full. Lock
 * held. */
static struct amp_prof_entry *
amp_entry_get(const struct amp_prof_what *w)
{
    size_t at, i;

    if (amp_entry_last.e && amp_entry_last.generation == amp_prof_generation &&
        amp_entry_is(amp_entry_last.e, w))
        return amp_entry_last.e;
    at = amp_entry_hash(w);
    for (i = 0; i < AMP_PROF_ENTRIES; i++) {
        size_t k = (at + i) % AMP_PROF_ENTRIES;
        struct amp_prof_entry *e = &amp_entries[k].e;

        if (amp_entries[k].used && amp_entry_is(e, w)) {
            amp_entry_last.e = e;
            amp_entry_last.generation = amp_prof_generation;
            return e;
        }
        if (!amp_entries[k].used) {
            if (amp_nentries >= AMP_PROF_ENTRIES * 3 / 4)
                break;
            amp_entries[k].used = 1;
            memset(e, 0, sizeof *e);
            e->api = w->api;
            e->site = w->site;
            e->shape = w->shape;
            e->flops = w->flops;
            e->candidate = w->candidate;
            amp_order[amp_nentries++] = (int)k;
            amp_entry_last.e = e;
            amp_entry_last.generation = amp_prof_generation;
            return e;
        }
    }
    amp_dropped++;
    return NULL;
}

/* The part of e for device `ordinal`, made on first use when `make`;
 * NULL when the device is unknown or e's parts are full (with `make`, the
 * call is counted in amp_device_dropped). A record's harvest finds the
 * part its call's count made. Lock held. */
static struct amp_prof_device_part *
amp_entry_device(struct amp_prof_entry *e, int ordinal, int make)
{
    struct amp_prof_device_part *part;
    int i;

    for (i = 0; ordinal >= 0 && i < e->ndevices; i++)
        if (e->devices[i].ordinal == ordinal)
            return &e->devices[i];
    if (ordinal < 0 || e->ndevices == AMP_PROF_ENTRY_DEVICES || !make) {
        amp_device_dropped += make;
        return NULL;
    }
    part = &e->devices[e->ndevices++];
    memset(part, 0, sizeof *part);
    part->ordinal = ordinal;
    return part;
}

/* ---- Counting at the hook --------------------------------------------------- */

/* How a converted call went untimed, counted with the call. */
enum amp_untimed {
    AMP_UNTIMED_NO = 0,
    AMP_UNTIMED_SAMPLED_OUT, /* not due by sample: estimated */
    AMP_UNTIMED_UNMEASURED,  /* due, but its record was not had */
};

/* Counts a call at its entry, which the span that found it at its begin
 * (amp_prof_begin) passes on while the table stands, and how it went
 * untimed; for an FP32 outcome, returns 1 when the call is due to be
 * timed by sample. */
static int
amp_prof_tally(const struct amp_prof_what *w, const struct amp_prof_span *span,
               enum amp_outcome outcome, enum amp_fallback why,
               enum amp_kept kept, size_t scratch_bytes,
               enum amp_untimed untimed, struct amp_prof_place *place)
{
    struct amp_prof_device_part *part = NULL;
    struct amp_prof_entry *e;
    int due = 0;
    /* A shadow call whose result is FP32's; a delivering one counts as
     * its candidate's converted call (its times and error are shadow's:
     * amp_record_harvest). */
    int shadow = w->mode == AMP_MODE_SHADOW && !w->delivers;

    pthread_mutex_lock(&amp_prof_lock);
    e = span && span->entry && span->generation == amp_prof_generation
            ? span->entry
            : amp_entry_get(w);
    if (e)
        part = amp_entry_device(e, w->device, 1);
    if (part) {
        part->calls++;
        part->converted += outcome == AMP_OUTCOME_CONVERTED;
        part->shadow += outcome == AMP_OUTCOME_CONVERTED && shadow;
        part->fp32 += outcome == AMP_OUTCOME_FP32;
        part->fallback += outcome == AMP_OUTCOME_FALLBACK;
    }
    if (e) {
        e->calls++;
        e->outcomes[outcome]++;
        if (w->auto_shape)
            e->auto_shape = w->auto_shape;
        if (outcome == AMP_OUTCOME_CONVERTED) {
            e->modes[w->delivers ? w->candidate : w->mode]++;
            if (shadow)
                e->candidate = w->candidate;
            if (scratch_bytes > e->scratch_max)
                e->scratch_max = scratch_bytes;
            e->scratch_total += (double)scratch_bytes;
        }
        if (outcome == AMP_OUTCOME_FALLBACK)
            e->fallbacks[why]++;
        if (untimed == AMP_UNTIMED_SAMPLED_OUT) {
            e->sampled_out++;
            if (part)
                part->sampled_out++;
        } else if (untimed == AMP_UNTIMED_UNMEASURED) {
            e->unmeasured++;
        }
        if (outcome == AMP_OUTCOME_FP32) {
            /* By the calls' count, whatever became of the samples: a
             * context never made costs a look every 64 calls. */
            due = amp_prof_sample_due(e->kept_seen, e->kept_seen,
                                      AMP_PROF_FP32_FIRST,
                                      AMP_PROF_FP32_EVERY);
            e->kept_seen++;
            e->kept[kept]++;
        }
    }
    if (place) {
        place->entry = e;
        place->part = part;
        place->kept = kept;
        place->generation = amp_prof_generation;
    }
    pthread_mutex_unlock(&amp_prof_lock);
    /* A call captured into a graph runs again at each of its launches. */
    amp_replay_captured(w, outcome);
    return due;
}

static int
amp_prof_count(const struct amp_prof_what *w, enum amp_outcome outcome,
               enum amp_fallback why, enum amp_kept kept,
               size_t scratch_bytes, struct amp_prof_place *place)
{
    return amp_prof_tally(w, NULL, outcome, why, kept, scratch_bytes,
                          AMP_UNTIMED_NO, place);
}

/* The site as a call log line names it: its function (demangled), or
 * its offset in its module; "-" without a site (the table was full). */
static const char *
amp_site_name(struct amp_site *site)
{
    if (!site)
        return "-";
    amp_site_symbolize(site);
    return site->function[0] ? site->function : "unknown";
}

int
amp_prof_fp32_placed(const struct amp_prof_what *w, enum amp_kept why,
                     struct amp_prof_place *place)
{
    /* Under capture nothing can be timed: not due. */
    return amp_prof_count(w, AMP_OUTCOME_FP32, AMP_FALLBACK_NONE, why, 0,
                          place) &&
           why != AMP_KEPT_CAPTURE;
}

int
amp_prof_fp32(const struct amp_prof_what *w, enum amp_kept why)
{
    return amp_prof_fp32_placed(w, why, NULL);
}

int
amp_prof_fp32_again(const struct amp_prof_place *place)
{
    struct amp_prof_entry *e = place->entry;
    struct amp_prof_device_part *part = place->part;
    int counted = 0;

    pthread_mutex_lock(&amp_prof_lock);
    if (e && place->generation == amp_prof_generation) {
        /* amp_prof_count's FP32 arm, the entry and part already found
         * (neither moves once made); a call on no stream being captured
         * notes nothing for graph replays. */
        counted = 1 + amp_prof_sample_due(e->kept_seen, e->kept_seen,
                                          AMP_PROF_FP32_FIRST,
                                          AMP_PROF_FP32_EVERY);
        if (part) {
            part->calls++;
            part->fp32++;
        } else {
            amp_device_dropped++;
        }
        e->calls++;
        e->outcomes[AMP_OUTCOME_FP32]++;
        e->kept_seen++;
        e->kept[place->kept]++;
    }
    pthread_mutex_unlock(&amp_prof_lock);
    return counted;
}

void
amp_prof_fallback(const struct amp_prof_what *w, enum amp_fallback why)
{
    char shape[160];

    amp_prof_count(w, AMP_OUTCOME_FALLBACK, why, AMP_KEPT_MODE, 0, NULL);
    /* An auto candidate the path cannot run is ruled out; a fallback for
     * want of a slot, a device or set-up under capture says nothing of
     * the candidate, and a failed allocation, launch or record (memory
     * full for a while) counts as a call not timed: only four of them,
     * before its samples are in, rule it out. */
    if (w->auto_shape && w->mode == AMP_MODE_SHADOW &&
        why == AMP_FALLBACK_DEVICE)
        amp_auto_time(w->site, w->auto_shape - 1, w->candidate, -1.0, -1.0,
                      0, NULL);
    else if (w->auto_shape && w->mode == AMP_MODE_SHADOW &&
             why != AMP_FALLBACK_BUSY && why != AMP_FALLBACK_NO_DEVICE &&
             why != AMP_FALLBACK_COLD_CAPTURE)
        amp_auto_failed(w->site, w->auto_shape - 1, w->candidate, NULL);
    if (!amp_shim_config()->call_log)
        return;
    amp_shape_format(&w->shape, shape, sizeof shape);
    amp_log_line("call %s site=%s shape=%s mode=%s converted=- fp32=- "
                 "speedup=- max_rel_err=- fallback=%s", w->api,
                 amp_site_name(w->site), shape, amp_mode_name(w->mode),
                 amp_fallback_name(why));
}

/* ---- Records ------------------------------------------------------------------ */

/* A free record, from a new block when none is left; NULL when none can
 * be had. */
static struct amp_prof_call *
amp_record_take(void)
{
    struct amp_prof_call *c;
    int i;

    pthread_mutex_lock(&amp_prof_lock);
    if (!amp_free_records) {
        struct amp_record_block *block = calloc(1, sizeof *block);

        if (block) {
            block->next = amp_record_blocks;
            amp_record_blocks = block;
        }
        for (i = 0; block && i < AMP_PROF_RECORD_BLOCK; i++) {
            block->records[i].next_free = amp_free_records;
            amp_free_records = &block->records[i];
        }
    }
    c = amp_free_records;
    if (c)
        amp_free_records = c->next_free;
    pthread_mutex_unlock(&amp_prof_lock);
    return c;
}

/* Gives the record's events back and the record to the free list. */
static void
amp_record_free(struct amp_prof_call *c)
{
    int i;

    for (i = 0; i < AMP_EV_COUNT; i++)
        if (c->ev[i] >= 0)
            amp_dev_event_release(c->dev, c->ev[i]);
    pthread_mutex_lock(&amp_prof_lock);
    c->next_free = amp_free_records;
    amp_free_records = c;
    pthread_mutex_unlock(&amp_prof_lock);
}

/* The device time of c's timing events: each recorded one holds its
 * stream up for the cost the context measured. */
static double
amp_record_timing_ms(const struct amp_prof_call *c)
{
    int i, n = 0;

    for (i = 0; i < AMP_EV_COUNT; i++)
        n += c->ev[i] >= 0;
    return n * amp_dev_event_overhead_ms(c->dev);
}

/* Adds c's timing events to e and to its part on c's device. Lock held. */
static void
amp_record_timing_add(struct amp_prof_entry *e, const struct amp_prof_call *c,
                      double timing_ms)
{
    struct amp_prof_device_part *part;

    e->timing_ms += timing_ms;
    part = amp_entry_device(e, c->what.device, 0);
    if (part)
        part->timing_ms += timing_ms;
}

/* Takes and records one event of c; 0 on success. */
static int
amp_record_event(struct amp_prof_call *c, int which)
{
    if (amp_dev_event_take(c->dev, &c->ev[which]) != AMP_OK) {
        c->ev[which] = -1;
        return -1;
    }
    if (amp_dev_event_record(c->dev, c->ev[which], c->what.stream) !=
        AMP_OK) {
        amp_dev_event_release(c->dev, c->ev[which]);
        c->ev[which] = -1;
        return -1;
    }
    return 0;
}

/* Whether a converted call of w is timed: always when it is a shadow
 * call or a line or trace event per call is asked for, otherwise by
 * sample (AMP_PROF_CONVERTED_EVERY). The span keeps the entry it found
 * (hint's where it stands), for the call's count at its end; hint is
 * told it. */
static int
amp_converted_due(const struct amp_prof_what *w, struct amp_prof_span *span,
                  struct amp_prof_hint *hint)
{
    const struct amp_config *cfg = amp_shim_config();
    struct amp_prof_entry *e;
    int due = 1;

    if (w->mode == AMP_MODE_SHADOW || cfg->call_log || cfg->trace[0])
        return 1;
    pthread_mutex_lock(&amp_prof_lock);
    if (hint && hint->entry && hint->generation == amp_prof_generation) {
        e = hint->entry;
    } else {
        e = amp_entry_get(w);
        if (hint) {
            hint->entry = e;
            hint->generation = amp_prof_generation;
        }
    }
    if (e) {
        due = amp_prof_sample_due(e->converted_seen++, e->converted_taken,
                                  AMP_PROF_CONVERTED_FIRST,
                                  AMP_PROF_CONVERTED_EVERY);
        e->converted_taken += (unsigned long long)due;
    }
    span->entry = e;
    span->generation = amp_prof_generation;
    pthread_mutex_unlock(&amp_prof_lock);
    return due;
}

/* A record for a call of w on dev, its events none yet. */
static struct amp_prof_call *
amp_record_open(struct amp_dev *dev, const struct amp_prof_what *w)
{
    struct amp_prof_call *c = amp_record_take();
    int i;

    if (!c)
        return NULL;
    c->what = *w;
    c->dev = dev;
    for (i = 0; i < AMP_EV_COUNT; i++)
        c->ev[i] = -1;
    c->epoch = amp_shim_config()->trace[0] ? amp_dev_epoch(dev, w->stream)
                                           : -1;
    atomic_store(&c->error_state, AMP_ERROR_NONE);
    memset(&c->err, 0, sizeof c->err);
    c->start_pending = 1;
    c->fp32_first = 0;
    c->fp32_sample = 0;
    return c;
}

void
amp_prof_begin(struct amp_prof_span *span, struct amp_dev *dev,
               const struct amp_prof_what *w, struct amp_prof_hint *hint)
{
    struct amp_prof_call *c;

    if (w != &span->what)
        span->what = *w;
    span->call = NULL;
    span->open = 1;
    span->fp32 = 0;
    span->sampled_out = 0;
    span->entry = NULL;
    amp_nvtx_push(w->api, w->mode, w->flops);
    span->nvtx = 1;
    /* Events recorded in a capture can be neither queried nor timed. */
    if (amp_prof_capturing(w) != 0)
        return;
    if (!amp_converted_due(w, span, hint)) {
        span->sampled_out = 1;
        return;
    }
    c = amp_record_open(dev, w);
    if (!c)
        return;
    span->call = c;
    amp_prof_open = c;
}

int
amp_prof_capturing(const struct amp_prof_what *w)
{
    return amp_dev_capturing_as(w->capture, w->stream);
}

void
amp_prof_fp32_begin(struct amp_prof_span *span,
                    const struct amp_prof_what *w)
{
    struct amp_prof_call *c;
    struct amp_dev *dev;

    span->open = 0;
    span->call = NULL;
    span->nvtx = 0;
    span->fp32 = 0;
    span->sampled_out = 0;
    /* Never a context or the shim's state made for a sample. */
    if (amp_dev_stream_capturing(w->stream) != 0 ||
        !(dev = amp_dev_current_made()) || !(c = amp_record_open(dev, w)))
        return;
    c->fp32_sample = 1;
    c->what.mode = AMP_MODE_FP32;
    c->start_pending = 0;
    c->epoch = -1; /* on no trace */
    if (amp_record_event(c, AMP_EV_START) != 0) {
        amp_record_free(c);
        return;
    }
    span->what = *w;
    span->call = c;
    span->open = 1;
    span->fp32 = 1;
}

void
amp_prof_fp32_end(struct amp_prof_span *span, int original_ok)
{
    struct amp_prof_call *c = span->call;

    if (!span->open || !span->fp32)
        return;
    span->open = 0;
    span->fp32 = 0;
    span->call = NULL;
    if (!c)
        return;
    if (!original_ok || amp_record_event(c, AMP_EV_END) != 0 ||
        amp_harvest_record(c->dev, c->what.stream, c) != AMP_OK)
        amp_record_free(c);
}

void
amp_prof_start(void)
{
    struct amp_prof_call *c = amp_prof_open;

    if (!c || !c->start_pending)
        return;
    c->start_pending = 0;
    amp_record_event(c, AMP_EV_START);
}

void
amp_prof_warmup(struct amp_prof_span *span)
{
    span->what.warmup = 1;
    if (span->call)
        span->call->what.warmup = 1;
}

void
amp_prof_split(struct amp_prof_span *span)
{
    if (span->call && span->call->ev[AMP_EV_START] >= 0)
        amp_record_event(span->call, AMP_EV_SPLIT);
}

void
amp_prof_fp32_first(struct amp_prof_span *span)
{
    if (span->call)
        span->call->fp32_first = 1;
}

void
amp_prof_stop(struct amp_prof_span *span)
{
    struct amp_prof_call *c = span->call;

    if (!c || c->ev[AMP_EV_START] < 0)
        return;
    if (c->what.mode == AMP_MODE_SHADOW && c->ev[AMP_EV_SPLIT] < 0)
        return;
    amp_record_event(c, AMP_EV_END);
}

void
amp_prof_checked(void)
{
    struct amp_prof_call *c = amp_prof_open;

    if (c && c->ev[AMP_EV_END] >= 0)
        amp_record_event(c, AMP_EV_CHECK);
}

struct amp_prof_call *
amp_prof_current(void)
{
    return amp_prof_open;
}

void
amp_prof_expect_error(struct amp_prof_call *call)
{
    if (call)
        atomic_store(&call->error_state, AMP_ERROR_EXPECTED);
}

void
amp_prof_error(struct amp_prof_call *call, const struct amp_gemm_error *e)
{
    if (!call)
        return;
    if (e)
        call->err = *e;
    atomic_store_explicit(&call->error_state,
                          e ? AMP_ERROR_DELIVERED : AMP_ERROR_FAILED,
                          memory_order_release);
}

/* A record at its call's end: 1 when it goes to the harvest (timed, or
 * waiting for its error); otherwise it is freed. */
static int
amp_record_settle(struct amp_prof_call *c, int timed, enum amp_outcome outcome,
                  enum amp_mode mode)
{
    int state = atomic_load(&c->error_state), i;

    if (!timed) {
        for (i = 0; i < AMP_EV_COUNT; i++) {
            if (c->ev[i] >= 0)
                amp_dev_event_release(c->dev, c->ev[i]);
            c->ev[i] = -1;
        }
    }
    if (!timed && state != AMP_ERROR_EXPECTED && state != AMP_ERROR_DELIVERED) {
        amp_record_free(c);
        return 0;
    }
    c->what.mode = outcome == AMP_OUTCOME_CONVERTED ? mode : AMP_MODE_FP32;
    return 1;
}

void
amp_prof_end(struct amp_prof_span *span, enum amp_outcome outcome,
             enum amp_fallback why, size_t scratch_bytes)
{
    struct amp_prof_call *c = span->call;
    int timed;

    if (!span->open)
        return;
    if (span->fp32) { /* a sample's span: its call counted already */
        amp_prof_fp32_end(span, 0);
        return;
    }
    span->open = 0;
    span->call = NULL;
    amp_prof_open = NULL;
    if (span->nvtx)
        amp_nvtx_pop();
    span->nvtx = 0;
    timed = c && outcome == AMP_OUTCOME_CONVERTED && c->ev[AMP_EV_END] >= 0;
    if (outcome == AMP_OUTCOME_FALLBACK) {
        amp_prof_fallback(&span->what, why);
    } else {
        /* FP32 here: a shadow run under capture, or a mode this call
         * cannot run. */
        amp_prof_tally(&span->what, span, outcome, why,
                       outcome == AMP_OUTCOME_FP32 &&
                               amp_prof_capturing(&span->what) != 0
                           ? AMP_KEPT_CAPTURE
                           : AMP_KEPT_MODE,
                       scratch_bytes,
                       timed || outcome != AMP_OUTCOME_CONVERTED
                           ? AMP_UNTIMED_NO
                       : span->sampled_out ? AMP_UNTIMED_SAMPLED_OUT
                                           : AMP_UNTIMED_UNMEASURED,
                       NULL);
    }
    /* A record the harvest cannot take (no memory) stays: its slot, if
     * it has one, still names it. */
    if (c && amp_record_settle(c, timed, outcome, span->what.mode) &&
        amp_harvest_record(c->dev, span->what.stream, c) != AMP_OK)
        amp_log(AMP_LOG_INFO, "%s: no memory to harvest a call's record",
                span->what.api);
}

/* ---- Harvest -------------------------------------------------------------------- */

/* The track of (dev, stream). Lock held. */
static int
amp_track(const struct amp_dev *dev, amp_stream stream)
{
    size_t i;

    for (i = 0; i < amp_ntracks; i++)
        if (amp_tracks[i].dev == dev && amp_tracks[i].stream == stream)
            return (int)i;
    if (amp_ntracks == AMP_PROF_TRACKS)
        return AMP_PROF_TRACKS - 1;
    amp_tracks[amp_ntracks].dev = dev;
    amp_tracks[amp_ntracks].stream = stream;
    return (int)amp_ntracks++;
}

/* A span of a finished record on the trace: its start from the context's
 * origin and its length, read before the lock is taken. */
struct amp_trace_span {
    int ok;
    double ts, dur;
};

static void
amp_trace_span(const struct amp_prof_call *c, int from, int to,
               struct amp_trace_span *out)
{
    out->ts = out->dur = 0.0;
    out->ok = amp_dev_event_elapsed(c->dev, c->epoch, c->ev[from],
                                    &out->ts) == AMP_OK &&
              amp_dev_event_span(c->dev, c->ev[from], c->ev[to],
                                 &out->dur) == AMP_OK;
}

/* Lock held. */
static void
amp_trace_add(const struct amp_prof_call *c, int fp32,
              const struct amp_trace_span *span, double converted_ms,
              double fp32_ms, int measured)
{
    struct amp_trace_event *t;

    if (amp_ntrace == amp_trace_cap) {
        size_t cap = amp_trace_cap ? amp_trace_cap * 2 : 1024;
        struct amp_trace_event *more;

        if (cap > AMP_PROF_TRACE_MAX ||
            !(more = realloc(amp_trace_events, cap * sizeof *more))) {
            amp_trace_dropped++;
            return;
        }
        amp_trace_events = more;
        amp_trace_cap = cap;
    }
    if (!span->ok) {
        amp_trace_dropped++;
        return;
    }
    t = &amp_trace_events[amp_ntrace++];
    t->api = c->what.api;
    t->site = c->what.site;
    t->shape = c->what.shape;
    t->mode = fp32 ? AMP_MODE_FP32 : c->what.mode == AMP_MODE_SHADOW
                                         ? c->what.candidate
                                         : c->what.mode;
    t->fp32 = fp32;
    t->delivered = fp32 ? !c->what.delivers
                        : c->what.mode != AMP_MODE_SHADOW || c->what.delivers;
    t->track = amp_track(c->dev, c->what.stream);
    t->ts_us = span->ts * 1e3;
    t->dur_us = span->dur * 1e3;
    t->converted_ms = converted_ms;
    t->fp32_ms = fp32_ms;
    t->fp32_measured = measured;
}

static void
amp_call_log(const struct amp_prof_call *c, double converted_ms,
             double fp32_ms, int measured)
{
    char shape[160], conv[32] = "-", fp32[48] = "-", speed[32] = "-",
         err[32] = "-";
    const char *mode = amp_mode_name(c->what.mode);
    char shadow[48];
    int measured_error;

    amp_shape_format(&c->what.shape, shape, sizeof shape);
    if (c->what.delivers) { /* converted, FP32 measured beside it */
        mode = amp_mode_name(c->what.candidate);
    } else if (c->what.mode == AMP_MODE_SHADOW) {
        snprintf(shadow, sizeof shadow, "shadow:%s",
                 amp_mode_name(c->what.candidate));
        mode = shadow;
    }
    if (converted_ms >= 0.0)
        snprintf(conv, sizeof conv, "%.6fms", converted_ms);
    if (fp32_ms >= 0.0)
        snprintf(fp32, sizeof fp32, "%.6fms(%s)", fp32_ms,
                 measured ? "measured" : "estimated");
    if (converted_ms > 0.0 && fp32_ms >= 0.0)
        snprintf(speed, sizeof speed, "%.3f", fp32_ms / converted_ms);
    measured_error = atomic_load(&c->error_state) == AMP_ERROR_DELIVERED &&
                     c->what.mode == AMP_MODE_SHADOW;
    /* A call that compared no element (FP32's result had none finite)
     * measured nothing: not an error of 0. */
    if (measured_error && c->err.compared == 0)
        snprintf(err, sizeof err, "not-measurable");
    else if (measured_error)
        snprintf(err, sizeof err, "%.3g", c->err.max_rel);
    amp_log_line("call %s site=%s shape=%s mode=%s converted=%s fp32=%s "
                 "speedup=%s max_rel_err=%s fallback=-", c->what.api,
                 amp_site_name(c->what.site), shape, mode, conv, fp32, speed,
                 err);
}

/* A finished record into its entry, the log and the trace; the driver is
 * asked for its times before the lock is taken. */
static void
amp_record_harvest(struct amp_prof_call *c, int events_ok)
{
    struct amp_prof_entry *e;
    struct amp_prof_device_part *part = NULL;
    struct amp_trace_span spans[2];
    int shadow = c->what.mode == AMP_MODE_SHADOW;
    int had_end = c->ev[AMP_EV_END] >= 0, timed = events_ok && had_end;
    int traced, delivered, i;
    double total = -1.0, cand = -1.0, fp32 = -1.0, check = 0.0, base;
    double timing = amp_record_timing_ms(c);
    int measured = 0;

    if (timed && shadow &&
        (amp_dev_event_span(c->dev, c->ev[AMP_EV_START],
                            c->ev[AMP_EV_SPLIT],
                            c->fp32_first ? &fp32 : &cand) != AMP_OK ||
         amp_dev_event_span(c->dev, c->ev[AMP_EV_SPLIT], c->ev[AMP_EV_END],
                            c->fp32_first ? &cand : &fp32) != AMP_OK ||
         (c->ev[AMP_EV_CHECK] >= 0 &&
          amp_dev_event_span(c->dev, c->ev[AMP_EV_END],
                             c->ev[AMP_EV_CHECK], &check) != AMP_OK)))
        timed = 0;
    if (timed && !shadow &&
        amp_dev_event_span(c->dev, c->ev[AMP_EV_START], c->ev[AMP_EV_END],
                           &total) != AMP_OK)
        timed = 0;
    if (c->fp32_sample) { /* a kept FP32 call: its time, nothing else */
        pthread_mutex_lock(&amp_prof_lock);
        e = amp_entry_get(&c->what);
        if (e)
            amp_record_timing_add(e, c, timing);
        if (e && timed) {
            e->fp32_sampled++;
            e->fp32_sampled_ms += total;
        }
        pthread_mutex_unlock(&amp_prof_lock);
        return;
    }
    traced = timed && c->epoch >= 0;
    for (i = 0; traced && i < 1 + shadow; i++)
        amp_trace_span(c, shadow ? (i ? AMP_EV_SPLIT : AMP_EV_START)
                                 : AMP_EV_START,
                       shadow ? (i ? AMP_EV_END : AMP_EV_SPLIT) : AMP_EV_END,
                       &spans[i]);
    delivered = atomic_load_explicit(&c->error_state, memory_order_acquire) ==
                AMP_ERROR_DELIVERED;

    pthread_mutex_lock(&amp_prof_lock);
    e = amp_entry_get(&c->what);
    if (e)
        amp_record_timing_add(e, c, timing);
    if (e && timed)
        part = amp_entry_device(e, c->what.device, 0);
    if (e && timed && shadow) {
        e->shadow_timed++;
        e->shadow_fp32_ms += fp32;
        e->shadow_candidate_ms += cand;
        e->shadow_check_ms += check;
        if (part) {
            part->shadow_timed++;
            part->shadow_fp32_ms += fp32;
            part->shadow_candidate_ms += cand;
            part->shadow_check_ms += check;
        }
        total = cand;
        measured = 1;
    } else if (e && timed) {
        e->timed++;
        e->converted_ms += total;
        if (part) {
            part->timed++;
            part->converted_ms += total;
        }
        base = amp_prof_baseline(e);
        fp32 = base;
    } else if (e && had_end) {
        e->unmeasured++; /* counted untimed at the end otherwise */
    }
    if (e && delivered) {
        e->nonfinite += c->err.nonfinite;
        if (shadow) {
            e->error_calls++;
            e->compared += c->err.compared;
            e->measured_calls += c->err.compared > 0;
            e->sum_rel += c->err.max_rel;
            if (c->err.max_rel > e->max_rel)
                e->max_rel = c->err.max_rel;
            e->sum_fro += c->err.fro_rel;
            if (c->err.fro_rel > e->max_fro)
                e->max_fro = c->err.fro_rel;
            if (c->err.max_abs > e->max_abs)
                e->max_abs = c->err.max_abs;
            e->over_tolerance += amp_error_over(&c->err,
                                                amp_policy_tolerance(),
                                                amp_policy_tolerance_norm());
        }
    }
    if (traced && shadow) {
        /* The first span is the candidate's unless FP32 ran first. */
        amp_trace_add(c, c->fp32_first, &spans[0], cand, fp32, 1);
        amp_trace_add(c, !c->fp32_first, &spans[1], cand, fp32, 1);
    } else if (traced) {
        amp_trace_add(c, 0, &spans[0], total, fp32, 0);
    }
    pthread_mutex_unlock(&amp_prof_lock);
    /* A call with no end event was told to auto as missed at its end
     * (amp_prof_missed); one whose work or times failed is untimed. */
    if (had_end && shadow && c->what.auto_shape)
        amp_auto_time(c->what.site, c->what.auto_shape - 1,
                      c->what.candidate, timed ? cand : -1.0,
                      timed ? fp32 : -1.0, c->what.warmup, NULL);
    if (timed && amp_shim_config()->call_log)
        amp_call_log(c, total, fp32, measured);
}

int
amp_prof_record_done(struct amp_prof_call *c, int wait)
{
    int state = atomic_load_explicit(&c->error_state, memory_order_acquire);

    if (state == AMP_ERROR_EXPECTED && !wait)
        return 0;
    if (c->ev[AMP_EV_END] < 0)
        return 1;
    return amp_dev_event_done(c->dev,
                              c->ev[c->ev[AMP_EV_CHECK] >= 0 ? AMP_EV_CHECK
                                                             : AMP_EV_END],
                              wait);
}

void
amp_prof_record_harvest(struct amp_prof_call *c, int events_ok)
{
    amp_record_harvest(c, events_ok);
    amp_record_free(c);
}

void
amp_prof_forget(void)
{
    pthread_mutex_init(&amp_prof_lock, NULL);
    amp_free_records = NULL; /* the parent's pending ones are not ours */
    amp_prof_open = NULL;
    memset(amp_entries, 0, sizeof amp_entries);
    amp_prof_generation++;
    amp_nentries = 0;
    amp_dropped = 0;
    amp_device_dropped = 0;
    free(amp_trace_events);
    amp_trace_events = NULL;
    amp_ntrace = amp_trace_cap = 0;
    amp_trace_dropped = 0;
    amp_ntracks = 0;
}

void
amp_prof_replayed(const struct amp_prof_captured *calls, size_t n)
{
    struct amp_prof_entry *e;
    size_t i;

    pthread_mutex_lock(&amp_prof_lock);
    for (i = 0; i < n; i++) {
        e = amp_entry_get(&calls[i].what);
        if (!e)
            continue;
        e->replays++;
        e->replays_converted += (unsigned long long)calls[i].converted;
        e->replays_provisional += (unsigned long long)calls[i].provisional;
    }
    pthread_mutex_unlock(&amp_prof_lock);
}

/* ---- Statistics ------------------------------------------------------------------ */

struct amp_prof_entry *
amp_prof_snapshot(size_t *n)
{
    struct amp_prof_entry *copy = NULL;
    int i;

    pthread_mutex_lock(&amp_prof_lock);
    *n = (size_t)amp_nentries;
    if (amp_nentries > 0)
        copy = malloc((size_t)amp_nentries * sizeof *copy);
    for (i = 0; copy && i < amp_nentries; i++)
        copy[i] = amp_entries[amp_order[i]].e;
    pthread_mutex_unlock(&amp_prof_lock);
    if (!copy)
        *n = 0;
    return copy;
}

unsigned long long
amp_prof_dropped(void)
{
    unsigned long long n;

    pthread_mutex_lock(&amp_prof_lock);
    n = amp_dropped;
    pthread_mutex_unlock(&amp_prof_lock);
    return n;
}

double
amp_prof_baseline(const struct amp_prof_entry *e)
{
    if (e->shadow_timed)
        return e->shadow_fp32_ms / (double)e->shadow_timed;
    return e->fp32_sampled ? e->fp32_sampled_ms / (double)e->fp32_sampled
                           : -1.0;
}

double
amp_prof_converted_mean(const struct amp_prof_entry *e)
{
    return e->timed ? e->converted_ms / (double)e->timed : -1.0;
}

double
amp_prof_converted_total(const struct amp_prof_entry *e)
{
    double mean = amp_prof_converted_mean(e);

    return e->converted_ms +
           (mean >= 0.0 ? mean * (double)e->sampled_out : 0.0);
}

void
amp_prof_totals(const struct amp_prof_entry *e, struct amp_prof_totals *t)
{
    double base = amp_prof_baseline(e), mean = amp_prof_converted_mean(e);
    unsigned long long converted = e->outcomes[AMP_OUTCOME_CONVERTED];
    unsigned long long ran_fp32;
    /* The converted calls not timed by sampling, at their timed ones'
     * mean (there is one: the first calls are timed). */
    unsigned long long sampled = mean >= 0.0 ? e->sampled_out : 0;
    double converted_ms = amp_prof_converted_total(e);

    memset(t, 0, sizeof *t);
    t->converted_estimated = sampled;
    t->converted_estimated_ms = converted_ms - e->converted_ms;
    t->measured = e->shadow_timed;
    t->fp32_measured_ms = e->shadow_fp32_ms;
    t->timing_ms = e->timing_ms;
    t->actual_ms = e->shadow_fp32_ms + e->shadow_candidate_ms +
                   e->shadow_check_ms;
    if (base >= 0.0) {
        t->estimated = e->timed + sampled;
        t->fp32_estimated_ms = base * (double)(e->timed + sampled);
        t->actual_ms += converted_ms + e->timing_ms;
    } else {
        t->unknown = e->timed + sampled;
    }
    t->fp32_ms = t->fp32_measured_ms + t->fp32_estimated_ms;
    t->saved_ms = t->fp32_ms - t->actual_ms;
    ran_fp32 = e->outcomes[AMP_OUTCOME_FP32] + e->outcomes[AMP_OUTCOME_FALLBACK];
    t->device_ms = e->shadow_fp32_ms + e->shadow_candidate_ms +
                   e->shadow_check_ms + e->timing_ms + converted_ms +
                   (base >= 0.0 ? base * (double)ran_fp32 : 0.0);
    t->device_untimed = e->unmeasured + (e->sampled_out - sampled) +
                        (base >= 0.0 ? 0 : ran_fp32);
    t->flops_total = e->flops * (double)e->calls;
    t->flops_converted = e->flops *
                         (double)(converted - e->modes[AMP_MODE_SHADOW]);
}

/* Adds e's part on one device to its device's totals, as amp_prof_totals
 * adds up the entry. */
static void
amp_device_add(struct amp_prof_device *d, const struct amp_prof_entry *e,
               const struct amp_prof_device_part *p)
{
    double base = amp_prof_baseline(e), mean = amp_prof_converted_mean(e);
    unsigned long long sampled = mean >= 0.0 ? p->sampled_out : 0;

    d->calls += p->calls;
    d->converted += p->converted;
    d->shadow += p->shadow;
    d->fp32 += p->fp32;
    d->fallback += p->fallback;
    d->measured += p->shadow_timed;
    d->fp32_ms += p->shadow_fp32_ms;
    d->actual_ms += p->shadow_fp32_ms + p->shadow_candidate_ms +
                    p->shadow_check_ms;
    if (base >= 0.0) {
        d->estimated += p->timed + sampled;
        d->fp32_ms += base * (double)(p->timed + sampled);
        d->actual_ms += p->converted_ms + p->timing_ms +
                        (sampled ? mean * (double)sampled : 0.0);
    } else {
        d->unknown += p->timed + sampled;
    }
    d->flops_total += e->flops * (double)p->calls;
    d->flops_converted += e->flops * (double)(p->converted - p->shadow);
}

/* Adds entry e's devices to out (n of them so far, at most cap). */
static size_t
amp_devices_add(struct amp_prof_device *out, size_t n, size_t cap,
                const struct amp_prof_entry *e, unsigned long long *dropped)
{
    size_t k;
    int j;

    for (j = 0; j < e->ndevices; j++) {
        const struct amp_prof_device_part *p = &e->devices[j];

        /* In order of ordinal: its place, made when it is new. */
        for (k = 0; k < n && out[k].ordinal < p->ordinal; k++)
            ;
        if (k == n || out[k].ordinal != p->ordinal) {
            if (n == cap) {
                *dropped += p->calls; /* no room: not per device */
                continue;
            }
            memmove(&out[k + 1], &out[k], (n - k) * sizeof *out);
            memset(&out[k], 0, sizeof out[k]);
            out[k].ordinal = p->ordinal;
            n++;
        }
        amp_device_add(&out[k], e, p);
    }
    return n;
}

size_t
amp_prof_devices(struct amp_prof_device *out, size_t cap,
                 unsigned long long *dropped)
{
    size_t n = 0;
    int i;

    pthread_mutex_lock(&amp_prof_lock);
    *dropped = amp_device_dropped;
    for (i = 0; i < amp_nentries; i++)
        n = amp_devices_add(out, n, cap, &amp_entries[amp_order[i]].e,
                            dropped);
    pthread_mutex_unlock(&amp_prof_lock);
    return n;
}

size_t
amp_prof_devices_of(const struct amp_prof_entry *entries, size_t count,
                    struct amp_prof_device *out, size_t cap,
                    unsigned long long *dropped)
{
    size_t n = 0, i;

    pthread_mutex_lock(&amp_prof_lock);
    *dropped = amp_device_dropped;
    pthread_mutex_unlock(&amp_prof_lock);
    for (i = 0; i < count; i++)
        n = amp_devices_add(out, n, cap, &entries[i], dropped);
    return n;
}

const struct amp_trace_event *
amp_prof_trace(size_t *n, unsigned long long *dropped)
{
    *n = amp_ntrace;
    *dropped = amp_trace_dropped;
    return amp_trace_events;
}

const struct amp_trace_track *
amp_prof_tracks(size_t *n)
{
    *n = amp_ntracks;
    return amp_tracks;
}
