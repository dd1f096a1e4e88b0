/* The convolution hooks' shared path: decision, the converted call around
 * the one vendor convolution a hook's issuer makes, and the record. */
#include "conv_hook.h"

#include "base/log.h"
#include "base/shim.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/harvest.h"
#include "measure/settled.h"

#include <cudnn.h>
#include <string.h>

/* An FP32-first shadow run's candidate, after the original and the split
 * event: its own work, the vendor call and the output kernel into the
 * candidate's scratch. 1 when all are queued; else the run is released. */
static int
amp_conv_hook_candidate(struct amp_conv_hook *h,
                        const struct amp_conv_vendor *v, void *own,
                        void *call)
{
    int s;

    amp_prof_split(&h->prof);
    if (amp_conv_queue_candidate(&h->run) != AMP_OK)
        return 0; /* released */
    if (amp_conv_warms_up(&h->run))
        amp_prof_warmup(&h->prof);
    s = v->issue(own, call, &h->run);
    if (s != 0) {
        amp_log(AMP_LOG_INFO, "%s: the %s call returned cuDNN status %d; "
                "FP32", h->run.desc.api,
                amp_mode_name(h->run.plan.candidate), s);
        amp_conv_abandon(&h->run);
        return 0;
    }
    return amp_conv_finish(&h->run) == AMP_OK;
}

/* A prepared shadow run that takes the FP32 original first (beta 0:
 * amp_conv_prepare's fp32_first): the start event, the program's own
 * call, then the candidate, timed from the split event; the run ends as
 * after any original (amp_conv_hook_end: the stop event, the comparison,
 * the count). A candidate that cannot run leaves the call a fallback,
 * the program's result FP32's. */
static int
amp_conv_hook_fp32_first(struct amp_conv_hook *h,
                         const struct amp_conv_vendor *v, void *own,
                         void *call)
{
    int ok;

    h->outcome = AMP_OUTCOME_CONVERTED;
    h->shadow = 1;
    amp_prof_fp32_first(&h->prof);
    amp_prof_start();
    h->original_status = v->original(call);
    ok = h->original_status == 0; /* CUDNN_STATUS_SUCCESS */
    if (ok && !amp_conv_hook_candidate(h, v, own, call)) {
        h->shadow = 0;
        h->outcome = AMP_OUTCOME_FALLBACK;
        amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_VENDOR, 0);
    }
    amp_conv_hook_end(h, ok);
    return AMP_CONV_HOOK_RAN;
}

/* Plans, prepares and issues the converted call: 1 when the caller's
 * result is (or for shadow, will be) the shim's doing, 0 when the original
 * call must run with nothing of the caller's written, AMP_CONV_HOOK_RAN
 * when an FP32-first shadow run made it. */
static int
amp_conv_hook_convert(struct amp_conv_hook *h, const struct amp_conv_desc *d,
                      const struct amp_decision *dec,
                      const struct amp_prof_what *what,
                      const struct amp_conv_vendor *v, void *call)
{
    enum amp_mode mode = dec->mode, candidate = dec->candidate;
    struct amp_conv_plan plan;
    struct amp_dev *dev;
    size_t bytes = 0;
    int capturing, ready, s;
    enum amp_status st;
    void *own;

    if (!v->conversion_math && mode == AMP_MODE_ALLOW_CONVERSION)
        mode = AMP_MODE_FP16;
    if (!v->conversion_math && candidate == AMP_MODE_ALLOW_CONVERSION)
        candidate = AMP_MODE_FP16;
    st = amp_conv_plan(d, mode, candidate, &plan);
    if (st == AMP_ERR_UNAVAILABLE) {
        if (amp_prof_fp32(what, AMP_KEPT_MODE))
            amp_prof_fp32_begin(&h->prof, what); /* timed by sample */
        return 0; /* a mode with no convolution candidate: FP32 */
    }
    h->outcome = AMP_OUTCOME_FALLBACK;
    /* The shim's own FP16 copies: a reduction too long for FP16's range
     * once scaled runs FP32 (an auto candidate is ruled out). */
    if (plan.type == AMP_CONV_F16 && !amp_conv_f16_fits(d)) {
        amp_prof_fallback(what, AMP_FALLBACK_F16_RANGE);
        return 0;
    }
    /* Loading the kernels and creating a handle are not capture-safe: a
     * call on a capturing stream uses only what earlier calls made. */
    capturing = amp_dev_stream_capturing(d->stream) > 0;
    dev = capturing ? amp_dev_current_made() : amp_dev_current();
    own = dev ? v->own(dev, !capturing) : NULL;
    /* Shadow work is never captured into a graph: FP32, as for GEMMs,
     * and nothing said of the candidate (its twin plan may not be built
     * yet, which a capture does not allow). */
    if (st == AMP_OK && own && capturing && plan.mode == AMP_MODE_SHADOW) {
        h->outcome = AMP_OUTCOME_FP32;
        amp_prof_fp32(what, AMP_KEPT_CAPTURE);
        return 0;
    }
    ready = st == AMP_OK && own ? v->ready(own, call, d, &plan, &bytes) : 0;
    if (ready <= 0) {
        amp_prof_fallback(what, st != AMP_OK ? amp_fallback_of(st)
                                : !own && capturing ? AMP_FALLBACK_COLD_CAPTURE
                                : !own ? AMP_FALLBACK_NO_DEVICE
                                : ready < 0 ? AMP_FALLBACK_COLD_CAPTURE
                                            : AMP_FALLBACK_NO_ALGORITHM);
        return 0;
    }
    amp_prof_begin(&h->prof, dev, what, NULL);
    st = amp_conv_prepare(dev, d, &plan, bytes, dec->scratch_max,
                          dec->fp32_first && v->original != NULL, &h->run);
    if (st != AMP_OK) {
        h->outcome = st == AMP_ERR_UNAVAILABLE && plan.mode == AMP_MODE_SHADOW
                         ? AMP_OUTCOME_FP32
                         : AMP_OUTCOME_FALLBACK;
        amp_prof_end(&h->prof, h->outcome, amp_fallback_of(st), 0);
        return 0;
    }
    if (h->run.fp32_first)
        return amp_conv_hook_fp32_first(h, v, own, call);
    if (amp_conv_warms_up(&h->run))
        amp_prof_warmup(&h->prof);
    s = v->issue(own, call, &h->run);
    if (s != 0) {
        amp_log(AMP_LOG_INFO, "%s: the %s call returned cuDNN status %d; "
                "FP32", d->api, amp_mode_name(plan.candidate), s);
        amp_conv_abandon(&h->run);
        amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_VENDOR, 0);
        return 0;
    }
    if (amp_conv_finish(&h->run) != AMP_OK) {
        amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_DEVICE, 0);
        return 0;
    }
    h->outcome = AMP_OUTCOME_CONVERTED;
    h->shadow = h->run.needs_original;
    if (h->shadow) {
        amp_prof_split(&h->prof);
        return 0;
    }
    amp_prof_stop(&h->prof);
    if (d->output_in_scratch)
        return 1; /* the hook's steps first: amp_conv_hook_steps_end */
    amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_NONE,
                 h->run.scratch_bytes);
    return 1;
}

enum amp_cover
amp_conv_cover_of_data(int type)
{
    switch ((cudnnDataType_t)type) {
    case CUDNN_DATA_FLOAT:
        return AMP_COVER_UNCONVERTED; /* Tensor Core math already, or a
                                         layout the shim does not take */
    case CUDNN_DATA_DOUBLE:
        return AMP_COVER_FP64;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
        return AMP_COVER_HALF;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_INT8x4:
    case CUDNN_DATA_UINT8x4:
    case CUDNN_DATA_INT8x32:
        return AMP_COVER_INT8;
    default:
        return AMP_COVER_OTHER;
    }
}

/* The coverage kind of an FP32 convolution kept FP32 for `skip`. */
static enum amp_cover
amp_conv_cover_of_skip(enum amp_conv_skip skip)
{
    switch (skip) {
    case AMP_CONV_SKIP_INVALID:
        return AMP_COVER_INVALID;
    case AMP_CONV_SKIP_EMPTY:
        return AMP_COVER_EMPTY;
    case AMP_CONV_SKIP_STRICT:
        return AMP_COVER_PEDANTIC;
    case AMP_CONV_SKIP_NO_TC_ENGINE:
        return AMP_COVER_UNCONVERTED; /* FP32 math by the program's engine */
    case AMP_CONV_SKIP_FUSED_GRAPH:
        return AMP_COVER_UNCONVERTED; /* a fusion the path does not run */
    case AMP_CONV_SKIP_LIBRARY:
        return AMP_COVER_LIBRARY;
    default:
        return AMP_COVER_POLICY; /* mode, demoted site, no candidate */
    }
}

/* Why a convolution kept FP32 before its policy was asked stayed so. */
static const enum amp_kept amp_conv_kept[AMP_CONV_SKIP_COUNT] = {
    [AMP_CONV_SKIP_MODE] = AMP_KEPT_MODE,
    [AMP_CONV_SKIP_INVALID] = AMP_KEPT_INVALID,
    [AMP_CONV_SKIP_EMPTY] = AMP_KEPT_EMPTY,
    [AMP_CONV_SKIP_STRICT] = AMP_KEPT_PEDANTIC,
    [AMP_CONV_SKIP_NO_TC_ENGINE] = AMP_KEPT_NO_TC_ENGINE,
    [AMP_CONV_SKIP_FUSED_GRAPH] = AMP_KEPT_FUSED_GRAPH,
    [AMP_CONV_SKIP_DEMOTED] = AMP_KEPT_DEMOTED,
    [AMP_CONV_SKIP_LIBRARY] = AMP_KEPT_LIBRARY,
};

/* The memo's key of d, kept for `skip` (AMP_CONV_CONVERT: by the
 * policy): its site's stack stands for the call stack, and the layout
 * (channels innermost or not), which a policy reads, joins the shape. */
static void
amp_conv_settled_key(struct amp_settled_key *k, const struct amp_conv_desc *d,
                     enum amp_conv_skip skip)
{
    struct amp_prof_what what;
    struct amp_decision none = {.mode = AMP_MODE_FP32, .auto_slot = -1,
                                .shape_slot = -1};

    memset(k, 0, sizeof *k);
    k->api = d->api;
    memcpy(k->frames, d->site->stack, sizeof k->frames);
    k->depth = d->site->depth;
    k->math = d->strict | (d->x.nb_dims >= 3 && d->x.stride[1] == 1) << 1;
    k->skip = (int)skip;
    amp_conv_what(&what, d, &none);
    k->device = what.device;
    k->shape = what.shape;
}

int
amp_conv_hook_run(struct amp_conv_hook *h, struct amp_conv_desc *d,
                  const struct amp_conv_vendor *v, void *call)
{
    struct amp_decision dec = {.mode = AMP_MODE_FP32, .auto_slot = -1,
                               .shape_slot = -1};
    struct amp_prof_what what;
    struct amp_settled_key key;
    struct amp_settled settled;
    enum amp_conv_skip skip;
    int ran, settle, cover;

    d->api = h->stats->name;
    d->stats = h->stats;
    /* Eligibility first (a converting mode), then the policy's mode. */
    skip = amp_conv_decide(d, AMP_MODE_FP16);
    /* A call like an earlier one kept FP32 for good: counted as it was
     * (a graph that is not one FP32 convolution has no site). */
    settle = d->site && amp_settled_on();
    if (settle) {
        amp_conv_settled_key(&key, d, skip);
        if (amp_settled_count(&key, d->stream, &h->prof, &cover)) {
            h->cover = (enum amp_cover)cover;
            h->flops = d->valid ? amp_conv_flops(d) : 0.0;
            return 0;
        }
        settled.epoch = amp_decision_epoch();
    }
    memset(&settled.place, 0, sizeof settled.place);
    settled.site = d->site;
    settled.shape_slot = -1;
    settled.site_counted = 0;
    /* Demotions and verdicts of earlier calls, never blocking, at a
     * bounded cost (also while the stream is being captured); then
     * eligibility again, as a demotion they bring is this call's. */
    amp_harvest(0);
    skip = amp_conv_decide(d, AMP_MODE_FP16);
    key.skip = (int)skip;
    if (skip == AMP_CONV_CONVERT) {
        amp_conv_policy(d, &dec);
        d->auto_shape = amp_decision_auto_shape(&dec);
        d->shape = amp_decision_shape(&dec);
        d->auto_candidate = dec.candidate;
        d->delivers = dec.delivers;
        if (amp_conv_mode(dec.mode) == AMP_MODE_FP32) {
            skip = dec.why == AMP_WHY_PEDANTIC ? AMP_CONV_SKIP_STRICT
                                               : AMP_CONV_SKIP_MODE;
            settled.shape_slot = dec.shape_slot;
            settled.site_counted = dec.site_counted;
            settle = settle && dec.settled;
        }
    }
    amp_conv_what(&what, d, &dec);
    /* A call of its site, kept FP32 (a graph that is not one FP32
     * convolution has no site). */
    if (skip != AMP_CONV_CONVERT &&
        (d->site || skip != AMP_CONV_SKIP_INVALID) &&
        amp_prof_fp32_placed(&what,
                             skip == AMP_CONV_SKIP_MODE ? amp_kept_of(&dec)
                                                        : amp_conv_kept[skip],
                             &settled.place) &&
        skip != AMP_CONV_SKIP_INVALID)
        amp_prof_fp32_begin(&h->prof, &what); /* timed by sample */
    h->cover = amp_conv_cover_of_skip(skip);
    h->flops = d->valid ? amp_conv_flops(d) : 0.0;
    if (skip != AMP_CONV_CONVERT && settle) {
        settled.cover = (int)h->cover;
        settled.timed = skip != AMP_CONV_SKIP_INVALID;
        settled.what = what;
        amp_settled_keep(&key, &settled, d->stream);
    }
    if (skip != AMP_CONV_CONVERT) {
        amp_log(AMP_LOG_DEBUG, "%s: FP32 (%s)", d->api,
                amp_conv_skip_reason(skip));
        return 0;
    }
    ran = amp_conv_hook_convert(h, d, &dec, &what, v, call);
    if (ran != 1)
        return ran; /* 0, or AMP_CONV_HOOK_RAN: counted */
    if (d->output_in_scratch)
        return 1; /* recorded by amp_conv_hook_steps_end */
    amp_stats_count(h->stats, AMP_OUTCOME_CONVERTED);
    amp_cover_add(AMP_COVER_CONVERTED, h->flops);
    amp_shim_leave();
    return 1;
}

void
amp_conv_hook_steps_end(struct amp_conv_hook *h, int steps_ok)
{
    amp_conv_abandon(&h->run);
    if (!steps_ok) {
        h->outcome = AMP_OUTCOME_FALLBACK;
        amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_VENDOR, 0);
        return;
    }
    amp_prof_end(&h->prof, h->outcome, AMP_FALLBACK_NONE,
                 h->run.scratch_bytes);
    amp_stats_count(h->stats, AMP_OUTCOME_CONVERTED);
    amp_cover_add(AMP_COVER_CONVERTED, h->flops);
    amp_shim_leave();
}

void
amp_conv_hook_end(struct amp_conv_hook *h, int original_ok)
{
    enum amp_fallback why = AMP_FALLBACK_NONE;

    if (!h->entered)
        return;
    amp_prof_fp32_end(&h->prof, original_ok); /* a kept call's sample */
    if (h->shadow && original_ok)
        amp_prof_stop(&h->prof); /* the FP32 original's end */
    if (h->shadow && amp_conv_shadow_finish(&h->run, original_ok) != AMP_OK) {
        amp_log(AMP_LOG_INFO, "%s: shadow comparison%s not queued%s",
                h->stats->name, h->run.delivers ? " or its result's copy" : "",
                h->run.delivers && original_ok ? ": the FP32 result stands"
                                               : "");
        /* A delivering run whose candidate did not reach the caller's
         * output leaves it FP32's: a fallback. */
        if (h->run.delivers && original_ok) {
            h->outcome = AMP_OUTCOME_FALLBACK;
            why = AMP_FALLBACK_DEVICE;
        }
    }
    if (h->prof.open) /* a shadow run: prepared, so run is set */
        amp_prof_end(&h->prof, h->outcome, why, h->run.scratch_bytes);
    amp_stats_count(h->stats, h->outcome);
    if (h->cover != AMP_COVER_COUNT)
        amp_cover_add(h->outcome == AMP_OUTCOME_CONVERTED
                          ? (h->prof.what.mode == AMP_MODE_SHADOW &&
                                     !h->prof.what.delivers
                                 ? AMP_COVER_SHADOW
                                 : AMP_COVER_CONVERTED)
                      : h->outcome == AMP_OUTCOME_FALLBACK ? AMP_COVER_FALLBACK
                                                           : h->cover,
                      original_ok ? h->flops : 0.0);
    amp_shim_leave();
}
