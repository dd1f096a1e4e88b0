/* What every cuBLAS GEMM hook shares (cublas_hook.h), cuBLAS's own, the
 * legacy API's and cuBLASLt's: the guard, the decision, the converted
 * path through a vendor's steps, the shadow run's end and the record; and
 * the coverage kind of a call by what became of it. */
#include "cublas_hook.h"

#include "base/log.h"
#include "base/shim.h"
#include "device/device.h"
#include "measure/coverage.h"
#include "measure/settled.h"
#include "measure/stats.h"
#include "process/process.h"
#include "run/gemm.h"

#include <limits.h>
#include <stdatomic.h>
#include <string.h>

/* The step functions take int sizes. */
int
amp_desc_fits_int(const struct amp_gemm_desc *d)
{
    return d->m <= INT_MAX && d->n <= INT_MAX && d->k <= INT_MAX &&
           d->lda <= INT_MAX && d->ldb <= INT_MAX && d->ldc <= INT_MAX &&
           d->batch <= INT_MAX;
}

/* How a prepare failure is counted: a mode that cannot run this call
 * (shadow during capture) keeps it FP32 by decision; anything else,
 * AMPSHIM_SCRATCH_MAX included, is a conversion that fell back. */
static enum amp_outcome
amp_prepare_outcome(enum amp_status st)
{
    return st == AMP_ERR_UNAVAILABLE ? AMP_OUTCOME_FP32
                                     : AMP_OUTCOME_FALLBACK;
}

/* The coverage kind of a call kept FP32 for `skip` (AMP_GEMM_CONVERT: a
 * mode that cannot run the call). */
enum amp_cover
amp_cover_of_skip(enum amp_gemm_skip skip)
{
    switch (skip) {
    case AMP_GEMM_SKIP_INVALID:
        return AMP_COVER_INVALID;
    case AMP_GEMM_SKIP_EMPTY:
        return AMP_COVER_EMPTY;
    case AMP_GEMM_SKIP_PEDANTIC:
        return AMP_COVER_PEDANTIC;
    case AMP_GEMM_SKIP_UNSUPPORTED:
    case AMP_GEMM_SKIP_ATOMIC_SYNC:
        return AMP_COVER_UNCONVERTED;
    case AMP_GEMM_SKIP_LIBRARY:
        return AMP_COVER_LIBRARY;
    default:
        return AMP_COVER_POLICY;
    }
}

/* A call kept FP32 before any decision (invalid, empty, pedantic, not for
 * the converted path) is still a call of its site: the report says why it
 * stayed FP32 there. */
static void
amp_gemm_kept(struct amp_hook *h, struct amp_gemm_desc *d,
              enum amp_gemm_skip skip, struct amp_settled *settled)
{
    static const enum amp_kept kept[AMP_GEMM_SKIP_COUNT] = {
        [AMP_GEMM_SKIP_MODE] = AMP_KEPT_MODE,
        [AMP_GEMM_SKIP_INVALID] = AMP_KEPT_INVALID,
        [AMP_GEMM_SKIP_EMPTY] = AMP_KEPT_EMPTY,
        [AMP_GEMM_SKIP_PEDANTIC] = AMP_KEPT_PEDANTIC,
        [AMP_GEMM_SKIP_UNSUPPORTED] = AMP_KEPT_UNSUPPORTED,
        [AMP_GEMM_SKIP_LIBRARY] = AMP_KEPT_LIBRARY,
        [AMP_GEMM_SKIP_ATOMIC_SYNC] = AMP_KEPT_ATOMIC_SYNC,
    };
    struct amp_decision dec = {.mode = AMP_MODE_FP32, .auto_slot = -1,
                               .shape_slot = -1};
    struct amp_prof_what what;

    if (!d->site)
        d->site = amp_site_get(d->api, d->caller);
    amp_gemm_what(&what, d, &dec, amp_dev_current_ordinal());
    if (skip == AMP_GEMM_SKIP_INVALID)
        what.flops = 0.0; /* the library computes nothing */
    /* Timed by sample, unless the library refuses it. */
    if (amp_prof_fp32_placed(&what, kept[skip], &settled->place) &&
        skip != AMP_GEMM_SKIP_INVALID)
        amp_prof_fp32_begin(&h->prof, &what);
    settled->site = d->site;
    settled->shape_slot = -1;
    settled->site_counted = 0;
    settled->timed = skip != AMP_GEMM_SKIP_INVALID;
    settled->what = what;
}

/* The memo's key of d, kept for `skip` (AMP_GEMM_CONVERT: by the
 * policy). */
static void
amp_gemm_settled_key(struct amp_settled_key *k, const struct amp_gemm_desc *d,
                     enum amp_gemm_skip skip)
{
    memset(k, 0, sizeof *k);
    k->api = d->api;
    amp_settled_key_stack(k, d->caller);
    k->device = amp_dev_current_ordinal();
    k->math = d->pedantic;
    k->skip = (int)skip;
    amp_gemm_shape(d, &k->shape);
}

/* The coverage kind of a call after it ran, from its outcome. */
enum amp_cover
amp_hook_cover(const struct amp_hook *h)
{
    if (h->outcome == AMP_OUTCOME_CONVERTED)
        return h->prof.what.mode == AMP_MODE_SHADOW && !h->prof.what.delivers
                   ? AMP_COVER_SHADOW
                   : AMP_COVER_CONVERTED;
    if (h->outcome == AMP_OUTCOME_FALLBACK)
        return AMP_COVER_FALLBACK;
    return h->cover;
}

/* A decision of bf16x9 (or shadow:bf16x9) on a GPU without cuBLAS's
 * BF16x9 emulation, where cuBLAS would compute plain FP32 under its name:
 * the call stays FP32, counted under `no-emulation`, and the log says so
 * once. 1 when so. */
static int
amp_gemm_no_emulation(struct amp_hook *h, struct amp_dev *dev,
                      const struct amp_gemm_desc *d,
                      const struct amp_decision *dec,
                      struct amp_prof_what *what)
{
    static atomic_int told;
    enum amp_mode runs =
        dec->mode == AMP_MODE_SHADOW ? dec->candidate : dec->mode;

    if (runs != AMP_MODE_BF16X9 || amp_dev_bf16x9(dev))
        return 0;
    if (!atomic_exchange(&told, 1))
        amp_log(AMP_LOG_WARN, "%s: bf16x9 needs cuBLAS's BF16x9 emulation, "
                "which only GPUs of compute capability 10.0 and 10.3 have "
                "(%s is %d.%d): such calls stay FP32", d->api,
                amp_dev_name(dev), amp_dev_cc_major(dev),
                amp_dev_cc_minor(dev));
    h->outcome = AMP_OUTCOME_FP32;
    h->cover = amp_cover_of_skip(AMP_GEMM_SKIP_MODE);
    if (amp_prof_fp32(what, AMP_KEPT_NO_EMULATION))
        amp_prof_fp32_begin(&h->prof, what);
    return 1;
}

/* Decides d and runs its converted path without counting it: fills
 * h->outcome and h->shadow. AMP_HOOK_DONE when the caller's C holds the
 * result; otherwise the original call must run (then, for a shadow run,
 * amp_hook_end finishes it). */
enum amp_hook_next
amp_gemm_try(struct amp_hook *h, const struct amp_gemm_desc *call,
             const struct amp_gemm_vendor *v, const void *vendor_call)
{
    /* Eligibility first (a converting mode), then the policy's mode. */
    enum amp_gemm_skip skip = amp_gemm_decide(call, AMP_MODE_FP16);
    /* The call's descriptor, which the path completes, where its run
     * keeps it (a hook may have described the call there). */
    struct amp_gemm_desc *d = &h->run.desc;
    struct amp_decision dec = {.mode = AMP_MODE_FP32, .auto_slot = -1,
                               .shape_slot = -1};
    /* The call's part of its profile view, built where its span keeps
     * it (amp_prof_begin then copies nothing). */
    struct amp_prof_what *what = &h->prof.what;
    struct amp_settled_key key;
    struct amp_settled settled;
    /* seen: what a call read that no earlier one like it kept, filled
     * as the path reads it. */
    struct amp_settled_read *kept = NULL, seen;
    struct amp_dev *dev;
    void *own;
    enum amp_status st;
    int capturing, settle, cover;

    h->shadow = 0;
    h->outcome = AMP_OUTCOME_FP32;
    h->flops = amp_cover_gemm_flops(
        call->m, call->n, call->k,
        call->batch_kind == AMP_BATCH_NONE ? 1 : call->batch, 0);
    if (skip == AMP_GEMM_CONVERT && v == &amp_cublas_vendor &&
        !amp_desc_fits_int(call))
        skip = AMP_GEMM_SKIP_INVALID; /* beyond the int Ex GEMMs: FP32 */
    if (skip == AMP_GEMM_CONVERT && v->accepts && !v->accepts(vendor_call))
        skip = AMP_GEMM_SKIP_INVALID; /* the library's to refuse */
    h->cover = amp_cover_of_skip(skip);
    /* A call like an earlier one kept FP32 for good: counted as it was. */
    settle = amp_settled_on();
    if (settle) {
        amp_gemm_settled_key(&key, call, skip);
        if (amp_settled_count_or_read(&key, call->stream, &h->prof, &cover,
                                      skip == AMP_GEMM_CONVERT ? &kept
                                                               : NULL)) {
            h->cover = (enum amp_cover)cover;
            return AMP_HOOK_ORIGINAL;
        }
        settled.epoch = amp_decision_epoch();
    }
    /* The whole path: its site and what the policy reads of the call
     * as an earlier call like it found them, where one did. */
    if (call != d)
        *d = *call;
    if (kept)
        d->site = kept->site;
    else if (settle)
        d->site = amp_site_get_stack(d->api, key.frames, key.depth);
    memset(&settled.place, 0, sizeof settled.place);
    if (skip == AMP_GEMM_CONVERT) {
        seen.policy.valid = 0;
        amp_gemm_policy(d, kept ? &kept->policy : settle ? &seen.policy
                                                        : NULL,
                        &dec);
        if (kept) {
            *what = kept->what;
        } else {
            amp_gemm_what_call(what, d);
            if (settle) {
                seen.site = d->site;
                seen.what = *what;
                seen.prof.entry = NULL;
                kept = amp_settled_read_keep(&key, &seen);
            }
        }
        amp_gemm_what_decided(what, d, &dec,
                              settle ? key.device
                                     : amp_dev_current_ordinal());
        if (dec.mode == AMP_MODE_FP32) {
            /* Pedantic math that no rule naming `math` took. */
            skip = dec.why == AMP_WHY_PEDANTIC ? AMP_GEMM_SKIP_PEDANTIC
                                               : AMP_GEMM_SKIP_MODE;
            h->cover = amp_cover_of_skip(skip);
            if (amp_prof_fp32_placed(what, amp_kept_of(&dec),
                                     &settled.place))
                amp_prof_fp32_begin(&h->prof, what);
            settled.site = d->site;
            settled.shape_slot = dec.shape_slot;
            settled.site_counted = dec.site_counted;
            settled.timed = 1;
            settled.what = *what;
            settle = settle && dec.settled;
        }
    } else {
        amp_gemm_kept(h, d, skip, &settled);
    }
    if (skip != AMP_GEMM_CONVERT && settle) {
        settled.cover = (int)h->cover;
        if (amp_settled_keep(&key, &settled, d->stream) && h->held) {
            h->held->key = key;
            h->held->s = settled;
            h->held->stack_hint = NULL;
            h->held->known = 1;
        }
    }
    if (skip != AMP_GEMM_CONVERT) {
        amp_log(AMP_LOG_DEBUG, "%s %lldx%lldx%lld: FP32 (%s)", d->api,
                (long long)d->m, (long long)d->n, (long long)d->k,
                amp_gemm_skip_reason(skip));
        return AMP_HOOK_ORIGINAL;
    }
    h->outcome = AMP_OUTCOME_FALLBACK;
    /* Loading the kernels and creating a handle are not capture-safe: a
     * call on a capturing stream uses only what earlier calls made. */
    what->capture = 2 + amp_dev_stream_capturing(d->stream);
    d->capture = what->capture;
    capturing = what->capture > 2;
    dev = capturing ? amp_dev_current_made() : amp_dev_current();
    if (dev && amp_gemm_no_emulation(h, dev, d, &dec, what))
        return AMP_HOOK_ORIGINAL;
    own = dev ? v->own(dev, !capturing) : NULL;
    if (!own) {
        amp_prof_fallback(what, !own && capturing ? AMP_FALLBACK_COLD_CAPTURE
                                                   : AMP_FALLBACK_NO_DEVICE);
        return AMP_HOOK_ORIGINAL;
    }
    amp_prof_begin(&h->prof, dev, what, kept ? &kept->prof : NULL);
    st = amp_gemm_prepare(dev, d, dec.mode, dec.candidate, dec.scratch_max,
                          dec.mode == AMP_MODE_SHADOW && dec.fp32_first,
                          &h->run);
    if (st != AMP_OK) {
        h->outcome = amp_prepare_outcome(st);
        amp_prof_end(&h->prof, h->outcome, amp_fallback_of(st), 0);
        amp_log(AMP_LOG_DEBUG, "%s: %s path not prepared (%d): FP32",
                d->api, amp_mode_name(dec.mode), (int)st);
        return AMP_HOOK_ORIGINAL;
    }
    if (amp_gemm_warms_up(&h->run))
        amp_prof_warmup(&h->prof);
    if (h->run.fp32_first) {
        /* The original first, timed from here; the candidate after it
         * (amp_shadow_complete). */
        h->outcome = AMP_OUTCOME_CONVERTED;
        h->shadow = 1;
        h->vendor = v;
        h->vendor_call = vendor_call;
        h->own = own;
        amp_prof_fp32_first(&h->prof);
        amp_prof_start();
        return AMP_HOOK_ORIGINAL;
    }
    if (v->issue(own, vendor_call, &h->run) != AMP_OK) {
        amp_gemm_abandon(&h->run);
        amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_VENDOR, 0);
        return AMP_HOOK_ORIGINAL;
    }
    h->outcome = AMP_OUTCOME_CONVERTED;
    if (h->run.needs_original) {
        /* The candidate's time ends with its last kernel, not the
         * original's. */
        if (amp_gemm_candidate_done(&h->run) != AMP_OK) {
            amp_gemm_abandon(&h->run);
            h->outcome = AMP_OUTCOME_FALLBACK;
            amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_DEVICE, 0);
            return AMP_HOOK_ORIGINAL;
        }
        h->shadow = 1;
        amp_prof_split(&h->prof);
        return AMP_HOOK_ORIGINAL;
    }
    if (amp_gemm_finish(&h->run) != AMP_OK) {
        h->outcome = AMP_OUTCOME_FALLBACK;
        amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_DEVICE, 0);
        return AMP_HOOK_ORIGINAL;
    }
    amp_prof_stop(&h->prof);
    amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_NONE,
                 h->run.scratch_bytes);
    amp_log(AMP_LOG_DEBUG, "%s %lldx%lldx%lld: %s", d->api, (long long)d->m,
            (long long)d->n, (long long)d->k, amp_mode_name(h->run.mode));
    return AMP_HOOK_DONE;
}

/* An FP32-first shadow run after its original: the split event, then
 * the candidate's work, steps and last kernel. 1 when all are queued;
 * else the run is released. */
static int
amp_shadow_candidate(struct amp_hook *h)
{
    amp_prof_split(&h->prof);
    if (amp_gemm_queue_candidate(&h->run) != AMP_OK)
        return 0; /* released */
    if (h->vendor->issue(h->own, h->vendor_call, &h->run) != AMP_OK ||
        amp_gemm_candidate_done(&h->run) != AMP_OK) {
        amp_gemm_abandon(&h->run);
        return 0;
    }
    return 1;
}

/* A shadow run after its original call. A delivering run whose
 * candidate's result did not reach the caller's C leaves it FP32's: a
 * fallback. */
void
amp_shadow_complete(struct amp_hook *h, int original_ok)
{
    enum amp_fallback why = AMP_FALLBACK_NONE;

    amp_prof_fp32_end(&h->prof, original_ok); /* a kept call's sample */
    if (!h->shadow)
        return;
    h->shadow = 0;
    if (!original_ok) {
        amp_gemm_abandon(&h->run);
        amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_NONE, 0);
        return;
    }
    if (h->run.fp32_first && !amp_shadow_candidate(h)) {
        /* The program has FP32's result; the candidate is unmeasured. */
        h->outcome = AMP_OUTCOME_FALLBACK;
        amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_VENDOR, 0);
        return;
    }
    amp_prof_stop(&h->prof); /* the second product's end */
    if (amp_gemm_finish(&h->run) != AMP_OK) {
        amp_log(AMP_LOG_INFO, "%s: shadow comparison%s not queued%s",
                h->stats->name, h->run.delivers ? " or its result's copy" : "",
                h->run.delivers ? ": the FP32 result stands" : "");
        if (h->run.delivers) {
            h->outcome = AMP_OUTCOME_FALLBACK;
            why = AMP_FALLBACK_DEVICE;
        }
    }
    amp_prof_end(&h->prof, h->outcome, why, h->run.scratch_bytes);
}

/* ---- The shared hook steps (cublas_hook.h) ---------------------------------- */

int
amp_hook_enter(struct amp_hook *h, struct amp_api_stats *stats)
{
    h->stats = stats;
    h->shadow = 0;
    h->outcome = AMP_OUTCOME_FP32;
    h->cover = AMP_COVER_COUNT; /* no GEMM until one is described */
    h->flops = 0.0;
    h->prof.open = 0;
    h->held = NULL;
    h->entered = amp_process_enter();
    return h->entered;
}

enum amp_hook_next
amp_hook_gemm(struct amp_hook *h, const struct amp_gemm_desc *d)
{
    return amp_hook_gemm_on(h, d, &amp_cublas_vendor, NULL);
}

enum amp_hook_next
amp_hook_gemm_on(struct amp_hook *h, const struct amp_gemm_desc *d,
                 const struct amp_gemm_vendor *v, const void *call)
{
    if (amp_gemm_try(h, d, v, call) == AMP_HOOK_ORIGINAL)
        return AMP_HOOK_ORIGINAL;
    amp_stats_count(h->stats, AMP_OUTCOME_CONVERTED);
    amp_cover_add(AMP_COVER_CONVERTED, h->flops);
    amp_shim_leave();
    return AMP_HOOK_DONE;
}

void
amp_hook_end(struct amp_hook *h, int original_ok)
{
    if (!h->entered)
        return;
    if (h->shadow || h->prof.open)
        amp_shadow_complete(h, original_ok);
    amp_stats_count(h->stats, h->outcome);
    amp_cover_add(amp_hook_cover(h), original_ok ? h->flops : 0.0);
    amp_shim_leave();
}
