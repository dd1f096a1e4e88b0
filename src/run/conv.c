/* The convolution path: decision, plan of the shim's own tensors, and the
 * queued work around the one vendor convolution of a converted call. */
#include "run/conv.h"

#include "amp_kernels.h"
#include "base/log.h"
#include "base/lru.h"
#include "base/shim.h"
#include "measure/harvest.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

/* Tensor Cores want channels in multiples of 8 (per group). */
#define AMP_CONV_CHANNEL_MULTIPLE 8
_Static_assert(AMP_CONV_CHANNEL_MULTIPLE % AMP_CONV_CAST_WIDTH == 0,
               "the casts take padded channel groups in units of their width");

static const char *const amp_conv_skip_reasons[] = {
    [AMP_CONV_CONVERT] = "converted",
    [AMP_CONV_SKIP_MODE] = "mode",
    [AMP_CONV_SKIP_INVALID] = "invalid arguments",
    [AMP_CONV_SKIP_EMPTY] = "empty convolution or alpha 0",
    [AMP_CONV_SKIP_STRICT] = "FMA math on the descriptor",
    [AMP_CONV_SKIP_NO_TC_ENGINE] = "the plan's engine has no Tensor Cores",
    [AMP_CONV_SKIP_FUSED_GRAPH] = "the plan fuses pointwise operations",
    [AMP_CONV_SKIP_DEMOTED] = "site demoted",
    [AMP_CONV_SKIP_LIBRARY] = "called from a library of NVIDIA's",
};

static const float amp_one = 1.0f, amp_zero = 0.0f;

const char *
amp_conv_skip_reason(enum amp_conv_skip skip)
{
    if ((unsigned)skip >= AMP_CONV_SKIP_COUNT)
        return "?";
    return amp_conv_skip_reasons[skip];
}

enum amp_mode
amp_conv_mode(enum amp_mode mode)
{
    return mode == AMP_MODE_FP16X3 || mode == AMP_MODE_BF16X9 ? AMP_MODE_FP32
                                                              : mode;
}

static int64_t
amp_spatial(const struct amp_conv_layout *l)
{
    int64_t n = 1;
    int d;

    for (d = 2; d < l->nb_dims; d++)
        n *= l->dim[d];
    return n;
}

int64_t
amp_conv_reduction(const struct amp_conv_desc *d)
{
    switch (d->dir) {
    case AMP_CONV_BWD_DATA:
        return d->w.dim[0] / d->groups * amp_spatial(&d->w);
    case AMP_CONV_BWD_FILTER:
        return d->x.dim[0] * amp_spatial(&d->y);
    case AMP_CONV_FWD:
        break;
    }
    return d->w.dim[1] * amp_spatial(&d->w);
}

static int32_t
amp_ceil_log2(int64_t n)
{
    int32_t l = 0;

    while (l < 62 && ((int64_t)1 << l) < n)
        l++;
    return l;
}

int
amp_conv_f16_fits(const struct amp_conv_desc *d)
{
    return amp_ceil_log2(amp_conv_reduction(d)) <= AMP_CONV_F16_MAX_LOG2_LEN;
}

enum amp_conv_skip
amp_conv_decide(const struct amp_conv_desc *d, enum amp_mode mode)
{
    if (!d->valid)
        return AMP_CONV_SKIP_INVALID;
    if (d->from_library && !amp_policy_library_calls())
        return AMP_CONV_SKIP_LIBRARY;
    if (amp_conv_mode(mode) == AMP_MODE_FP32)
        return AMP_CONV_SKIP_MODE;
    if (d->no_tc_engine)
        return AMP_CONV_SKIP_NO_TC_ENGINE;
    if (d->fused_graph)
        return AMP_CONV_SKIP_FUSED_GRAPH;
    if (amp_conv_count(&d->x, 0) == 0 || amp_conv_count(&d->w, 0) == 0 ||
        amp_conv_count(&d->y, 0) == 0 || d->alpha == 0.0f)
        return AMP_CONV_SKIP_EMPTY;
    if (amp_site_demoted(d->site))
        return AMP_CONV_SKIP_DEMOTED;
    return AMP_CONV_CONVERT;
}

void
amp_conv_policy(const struct amp_conv_desc *d, struct amp_decision *out)
{
    struct amp_policy_call call = {.family = AMP_FAMILY_CONV,
                                   .symbol = d->api, .site = d->site};
    const struct amp_conv_layout *x = &d->x, *w = &d->w;

    amp_policy_call_set(&call, AMP_FIELD_CONV_N, x->dim[0]);
    amp_policy_call_set(&call, AMP_FIELD_CONV_C, x->dim[1]);
    amp_policy_call_set(&call, AMP_FIELD_CONV_K, w->dim[0]);
    amp_policy_call_set(&call, AMP_FIELD_GROUPS, d->groups);
    amp_policy_call_set(&call, AMP_FIELD_MATH, d->strict ? AMP_MATH_PEDANTIC
                                                        : AMP_MATH_DEFAULT);
    if (x->nb_dims >= 3) {
        amp_policy_call_set(&call, AMP_FIELD_CONV_H, x->dim[2]);
        amp_policy_call_set(&call, AMP_FIELD_CONV_R, w->dim[2]);
        /* Channels innermost: NHWC. */
        amp_policy_call_set(&call, AMP_FIELD_LAYOUT,
                            x->stride[1] == 1 ? AMP_LAYOUT_NHWC
                                              : AMP_LAYOUT_NCHW);
    }
    if (x->nb_dims >= 4) {
        amp_policy_call_set(&call, AMP_FIELD_CONV_W, x->dim[3]);
        amp_policy_call_set(&call, AMP_FIELD_CONV_S, w->dim[3]);
    }
    /* The verdicts of earlier shadow calls at the site decide this one:
     * the hook harvested before (conv_hook.c). */
    amp_policy_decide(&call, out);
    if (out->why == AMP_WHY_BASELINE &&
        amp_dev_stream_capturing(d->stream) != 0)
        amp_policy_no_baseline(out);
    amp_decision_keep_captured(out, d->stream);
}

double
amp_conv_flops(const struct amp_conv_desc *d)
{
    const struct amp_conv_layout *out =
        d->dir == AMP_CONV_FWD ? &d->y
                               : d->dir == AMP_CONV_BWD_DATA ? &d->x : &d->w;

    if (d->groups < 1)
        return 0.0;
    return 2.0 * (double)amp_conv_count(out, 0) *
           (double)amp_conv_reduction(d);
}

void
amp_conv_what(struct amp_prof_what *w, const struct amp_conv_desc *d,
              const struct amp_decision *dec)
{
    int i, n = (int)d->x.nb_dims;

    memset(w, 0, sizeof *w);
    w->api = d->api;
    w->site = d->site;
    w->shape.family = AMP_FAMILY_CONV;
    for (i = 0; i < n && i < 5; i++) {
        w->shape.v[i] = d->x.dim[i];
        w->shape.v[5 + i] = d->w.dim[i];
    }
    w->shape.v[10] = n < 0 ? 0 : n < 5 ? n : 5;
    w->shape.v[11] = d->groups;
    /* An invalid call (cuDNN refuses it) computes nothing, and may have
     * no groups. */
    w->flops = d->valid ? amp_conv_flops(d) : 0.0;
    w->mode = dec->mode;
    w->candidate = dec->candidate;
    w->delivers = dec->delivers;
    w->auto_shape = amp_decision_auto_shape(dec);
    w->site_shape = amp_decision_shape(dec);
    w->stream = d->stream;
    /* The device the call runs on: the calling thread's current one, as
     * for the state (amp_dev_current) a converted call uses. */
    w->device = amp_dev_current_ordinal();
}

/* ---- Plan ------------------------------------------------------------------- */

static int64_t
amp_round_up(int64_t v, int64_t multiple)
{
    return (v + multiple - 1) / multiple * multiple;
}

/* Per-group channel counts of dims 0 and 1, padded when `pad`; dim 0 of
 * an activation (N) is never padded. */
static void
amp_conv_pad(struct amp_conv_layout *l, int64_t per0, int64_t per1, int pad,
             int filter)
{
    int64_t m = pad ? AMP_CONV_CHANNEL_MULTIPLE : 1;

    l->per[0] = per0;
    l->per[1] = per1;
    l->per_pad[0] = filter ? amp_round_up(per0, m) : per0;
    l->per_pad[1] = amp_round_up(per1, m);
}

/* The packed copy of l as a descriptor: padded sizes, channels last. */
static enum amp_status
amp_conv_own_tensor(const struct amp_conv_layout *l, struct amp_conv_tensor *t)
{
    int64_t stride = amp_conv_packed_dim(l, 1);
    int d;

    t->nb_dims = (int)l->nb_dims;
    for (d = 0; d < l->nb_dims; d++)
        if (amp_conv_packed_dim(l, d) > INT_MAX)
            return AMP_ERR_TOO_BIG;
    t->stride[1] = 1;
    for (d = (int)l->nb_dims - 1; d >= 2; d--) {
        t->stride[d] = (int)stride;
        stride *= l->dim[d];
    }
    t->stride[0] = (int)stride;
    if (amp_conv_count(l, 1) > INT_MAX)
        return AMP_ERR_TOO_BIG;
    for (d = 0; d < l->nb_dims; d++)
        t->dim[d] = (int)amp_conv_packed_dim(l, d);
    return AMP_OK;
}

/* 1 when l's elements fill its span with no gap: its strides, by size,
 * those of a packed tensor in some order of its dims (dims of size 1 have
 * any stride). */
static int
amp_conv_dense(const struct amp_conv_layout *l)
{
    int64_t want = 1;
    int used = 0, d, i;

    for (i = 0; i < (int)l->nb_dims; i++) {
        int next = -1;

        for (d = 0; d < (int)l->nb_dims; d++)
            if (!(used & (1 << d)) && l->dim[d] > 1 &&
                (next < 0 || l->stride[d] < l->stride[next]))
                next = d;
        if (next < 0)
            return 1;
        if (l->stride[next] != want)
            return 0;
        want *= l->dim[next];
        used |= 1 << next;
    }
    return 1;
}

/* tf32x3: the inputs' copies with their reduction axis three times as
 * long (per_pad), which holds the three parts of each element: forward,
 * C of x and w; backward data, K of dy and w; backward filter, N of x and
 * dy. */
static void
amp_conv_split_axes(struct amp_conv_plan *p, enum amp_conv_dir dir)
{
    switch (dir) {
    case AMP_CONV_FWD:
        p->x.per_pad[1] *= 3;
        p->w.per_pad[1] *= 3;
        break;
    case AMP_CONV_BWD_DATA:
        p->y.per_pad[1] *= 3;
        p->w.per_pad[0] *= 3;
        break;
    case AMP_CONV_BWD_FILTER:
        p->x.per_pad[0] *= 3;
        p->y.per_pad[0] *= 3;
        break;
    }
}

/* How far apart the parts of a tf32x3 copy of l lie: its channels' count
 * when those are tripled, else (dim 0 tripled) the tensor's elements. One
 * group, no padding. */
static int64_t
amp_conv_split_part(const struct amp_conv_layout *l)
{
    return l->per_pad[1] != l->per[1] ? l->per[1] : amp_conv_count(l, 0);
}

/* The output tensor's index: y, x or w by direction. */
static int
amp_conv_out(enum amp_conv_dir dir)
{
    return dir == AMP_CONV_FWD ? AMP_CONV_Y
           : dir == AMP_CONV_BWD_DATA ? AMP_CONV_X : AMP_CONV_W;
}

/* Layouts found to fit the kernels' walks, per thread, by a hash of their
 * sizes and strides: amp_conv_walks_fit walks a tensor four ways (some
 * 2,000 instructions each), and a layer's tensors are the same at every
 * call. The answer is a function of the layout's bytes alone. */
#define AMP_CONV_FITS_KEPT 16

static AMP_THREAD_HOT struct amp_conv_fits_kept {
    int valid;
    struct amp_conv_layout l;
} amp_conv_fits_kept[AMP_CONV_FITS_KEPT];

static int
amp_conv_fits(const struct amp_conv_layout *l)
{
    uint64_t h = (uint64_t)l->nb_dims;
    struct amp_conv_fits_kept *k;
    int d;

    for (d = 0; d < AMP_CONV_MAX_DIMS; d++)
        h = (h ^ (uint64_t)l->dim[d] ^ ((uint64_t)l->stride[d] << 20)) *
            0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)l->per[1] ^ ((uint64_t)l->per_pad[1] << 8);
    k = &amp_conv_fits_kept[(h >> 40) % AMP_CONV_FITS_KEPT];
    if (k->valid && memcmp(&k->l, l, sizeof *l) == 0)
        return 1;
    if (!amp_conv_walks_fit(l))
        return 0;
    k->valid = 1;
    k->l = *l;
    return 1;
}

enum amp_status
amp_conv_plan(const struct amp_conv_desc *d, enum amp_mode mode,
              enum amp_mode candidate, struct amp_conv_plan *plan)
{
    struct amp_conv_layout *l[3];
    int half, split, out = amp_conv_out(d->dir), i;
    int64_t cg = d->w.dim[1], kg = d->w.dim[0] / d->groups;
    enum amp_status st = AMP_OK;

    memset(plan, 0, sizeof *plan);
    plan->mode = mode;
    plan->candidate = amp_conv_mode(mode == AMP_MODE_SHADOW ? candidate
                                                            : mode);
    switch (plan->candidate) {
    case AMP_MODE_FP16:
    case AMP_MODE_BF16:
        plan->type = plan->candidate == AMP_MODE_FP16 ? AMP_CONV_F16
                                                      : AMP_CONV_BF16;
        plan->math = AMP_CONV_MATH_TENSOR_OP;
        break;
    case AMP_MODE_TF32X3:
        /* TF32 math on FP32 copies, the parts along the reduction axis:
         * one group. */
        if (d->groups != 1)
            return AMP_ERR_UNAVAILABLE;
        plan->math = AMP_CONV_MATH_DEFAULT;
        break;
    case AMP_MODE_TF32:
        plan->math = AMP_CONV_MATH_DEFAULT;
        break;
    case AMP_MODE_ALLOW_CONVERSION:
        plan->math = AMP_CONV_MATH_ALLOW_CONVERSION;
        break;
    default:
        return AMP_ERR_UNAVAILABLE;
    }
    half = plan->type != AMP_CONV_F32;
    split = plan->candidate == AMP_MODE_TF32X3;
    plan->x = d->x;
    plan->w = d->w;
    plan->y = d->y;
    amp_conv_pad(&plan->x, d->x.dim[0], cg, half, 0);
    amp_conv_pad(&plan->w, kg, cg, half, 1);
    amp_conv_pad(&plan->y, d->y.dim[0], kg, half, 0);
    if (split)
        amp_conv_split_axes(plan, d->dir);
    l[AMP_CONV_X] = &plan->x;
    l[AMP_CONV_W] = &plan->w;
    l[AMP_CONV_Y] = &plan->y;
    for (i = 0; i < 3; i++) {
        /* FP32 data reads the caller's inputs (tf32x3 its split copies);
         * the output is the shim's unless tf32, tf32x3 or
         * allow-conversion writes the caller's directly, which they do
         * only with beta 0: a vendor call that fails may have written
         * part of its output, which the FP32 fallback then overwrites
         * whole, but with another beta it would read it.
         * allow-conversion's check then reads that output flat: it must
         * be dense. */
        plan->own[i] = half || (split && i != out) ||
                       (i == out && (mode == AMP_MODE_SHADOW ||
                                     d->beta != 0.0f ||
                                     (plan->candidate ==
                                          AMP_MODE_ALLOW_CONVERSION &&
                                      !amp_conv_dense(l[i]))));
        if (plan->own[i] && st == AMP_OK)
            st = amp_conv_own_tensor(l[i], &plan->tensor[i]);
    }
    /* The shim's kernels (with half copies or an output of its own) keep
     * their walks' moves in 32 bits: a tensor beyond them (2^31 elements
     * apart and more) runs FP32. */
    for (i = 0; i < 3 && st == AMP_OK && (half || split || plan->own[out]);
         i++)
        if (!amp_conv_fits(l[i]))
            st = AMP_ERR_TOO_BIG;
    return st;
}

/* ---- Scratch -------------------------------------------------------------- */

static size_t
amp_conv_elem(enum amp_conv_type t)
{
    return t == AMP_CONV_F32 ? 4 : 2;
}

static int32_t
amp_conv_format(enum amp_conv_type t)
{
    return t == AMP_CONV_F16 ? AMP_FORMAT_F16
           : t == AMP_CONV_BF16 ? AMP_FORMAT_BF16 : AMP_FORMAT_F32;
}

static const struct amp_conv_layout *
amp_plan_layout(const struct amp_conv_plan *p, int i)
{
    return i == AMP_CONV_X ? &p->x : i == AMP_CONV_W ? &p->w : &p->y;
}

static amp_devptr
amp_desc_ptr(const struct amp_conv_desc *d, int i)
{
    return i == AMP_CONV_X ? d->xp : i == AMP_CONV_W ? d->wp : d->yp;
}

/* The two inputs of a direction. */
static void
amp_conv_inputs(enum amp_conv_dir dir, int *a, int *b)
{
    *a = dir == AMP_CONV_BWD_DATA ? AMP_CONV_Y : AMP_CONV_X;
    *b = dir == AMP_CONV_BWD_FILTER ? AMP_CONV_Y : AMP_CONV_W;
}

static void
amp_conv_release(struct amp_conv_run *run)
{
    if (run->scratch)
        amp_dev_free_async(run->scratch, run->stream,
                           run->scratch_in_graph);
    run->scratch = 0;
    if (run->slot >= 0)
        amp_dev_slot_release(run->dev, run->slot);
    run->slot = -1;
}

static enum amp_status
amp_conv_launch(struct amp_conv_run *run, enum amp_kernel k, int64_t elems,
                void **params)
{
    return amp_dev_launch(run->dev, k, amp_dev_grid(run->dev, k, elems),
                          AMP_KERNEL_BLOCK, run->stream, params);
}

/* A kernel's units of work over l: its elements, or with `cast` its
 * packed copy's units (amp_conv_cast_units). */
static int64_t
amp_conv_work(const struct amp_conv_layout *l, int cast)
{
    return cast ? amp_conv_cast_units(l) : amp_conv_count(l, 0);
}

/* The grid of kernel k over both inputs l[0] and l[1], each its own share
 * (amp_dev_grid) of its work (amp_conv_work); *blocks_a gets the
 * first's. */
static unsigned
amp_conv_grid_both(const struct amp_conv_run *run, enum amp_kernel k,
                   const struct amp_conv_layout l[2], int cast,
                   int64_t *blocks_a)
{
    *blocks_a = amp_dev_grid(run->dev, k, amp_conv_work(&l[0], cast));
    return (unsigned)*blocks_a +
           amp_dev_grid(run->dev, k, amp_conv_work(&l[1], cast));
}

_Static_assert(sizeof(struct amp_conv_record) <= AMP_DEV_RECORD_BYTES,
               "a convolution's record fits");

/* A repeating FP16 call takes a record of the device layer per (site,
 * shape, stream) for delayed scaling (struct amp_conv_record): the first
 * call there takes the two passes and sets it, the next ones cast in one
 * pass. amp_dev_record refuses the streams a record cannot serve. */
static void
amp_conv_record(struct amp_conv_run *run)
{
    const struct amp_conv_plan *p = &run->plan;
    struct {
        const void *site;
        int64_t dir, groups;
        struct amp_conv_layout x, w, y;
    } key;
    amp_devptr at = 0;
    int fresh = 1;

    if (p->type != AMP_CONV_F16)
        return;
    memset(&key, 0, sizeof key);
    key.site = run->desc.site;
    key.dir = run->desc.dir;
    key.groups = run->desc.groups;
    key.x = p->x;
    key.w = p->w;
    key.y = p->y;
    run->record_key = amp_lru_hash(&key, sizeof key);
    if (amp_dev_record(run->dev, run->record_key, run->stream, run->capture,
                       &at, &fresh) != AMP_OK)
        return;
    run->record = at;
    run->delayed = !fresh;
}

int
amp_conv_warms_up(const struct amp_conv_run *run)
{
    return run->record && !run->delayed;
}

/* Zeroes the scalars and the error accumulator after them (parts 3 and
 * 4, adjacent: the check or the shadow errors need it zeroed later). */
static enum amp_status
amp_conv_zero_scalars(struct amp_conv_run *run)
{
    size_t words = (size_t)(run->accum - run->scalars) / 4 +
                   sizeof(struct amp_shadow_accum) / 4;

    return amp_dev_memset32_async(run->scalars, 0, words, run->stream);
}

/* The scalars' unscales at 1: the output kernel blends an FP32 result
 * as it is. */
static enum amp_status
amp_conv_unit_scales(struct amp_conv_run *run)
{
    return amp_dev_memset32_async(
        run->scalars + offsetof(struct amp_conv_scalars, unscale_a),
        0x3f800000u, 2, run->stream);
}

/* tf32x3: the scalars zeroed with unit scales (an output of the shim's
 * own is blended as FP32), then a launch per input splits it into its
 * copy. */
static enum amp_status
amp_conv_queue_split(struct amp_conv_run *run, amp_devptr *copies)
{
    int in[2], i;
    enum amp_status st = AMP_OK;

    amp_conv_inputs(run->desc.dir, &in[0], &in[1]);
    if (run->scalars)
        st = amp_conv_zero_scalars(run);
    if (st == AMP_OK && run->scalars)
        st = amp_conv_unit_scales(run);
    for (i = 0; i < 2 && st == AMP_OK; i++) {
        amp_devptr src = amp_desc_ptr(&run->desc, in[i]), dst = copies[in[i]];
        struct amp_conv_layout l = *amp_plan_layout(&run->plan, in[i]);
        int64_t part = amp_conv_split_part(&l);
        int32_t first = i == 0;
        void *params[] = {&src, &l, &dst, &part, &first};

        st = amp_conv_launch(run, AMP_KERNEL_CONV_SPLIT_TF32X3,
                             amp_conv_count(&l, 0), params);
    }
    return st;
}

/* The scalars zeroed, then the half copies: for FP16, one launch reduces
 * both inputs' maxima and its last block sets the scales, and one more
 * makes both copies; for a repeating FP16 call (delayed scaling) and for
 * BF16 (unscaled), one launch makes the copies and reduces the maxima,
 * and for FP16 one more casts again an input whose delayed scale does not
 * stand. FP32 data (allow-conversion: no copies, no scales) takes no
 * launch: unit unscales where the output kernel blends a result of the
 * shim's own, and the inputs are read only where the check finds
 * non-finite results (amp_conv_queue_output). */
static enum amp_status
amp_conv_queue_inputs(struct amp_conv_run *run, amp_devptr *copies)
{
    const struct amp_conv_plan *p = &run->plan;
    int32_t format = amp_conv_format(p->type);
    int32_t log2_len = amp_ceil_log2(amp_conv_reduction(&run->desc));
    int32_t redo = 0;
    amp_devptr s = run->scalars, rec = run->record;
    int in[2], i;
    int one_pass = p->type == AMP_CONV_BF16 || run->delayed;
    amp_devptr src[2], dst[2];
    struct amp_conv_layout l[2];
    int64_t blocks_a;
    unsigned grid;
    void *scales[] = {&src[0], &l[0], &src[1], &l[1], &blocks_a, &s,
                      &log2_len, &format, &rec};
    void *casts[] = {&src[0], &l[0], &dst[0], &src[1], &l[1], &dst[1],
                     &blocks_a, &s, &format, &redo};
    void *once[] = {&src[0], &l[0], &dst[0], &src[1], &l[1], &dst[1],
                    &blocks_a, &s, &log2_len, &format, &rec};
    enum amp_status st;

    amp_conv_inputs(run->desc.dir, &in[0], &in[1]);
    for (i = 0; i < 2; i++) {
        src[i] = amp_desc_ptr(&run->desc, in[i]);
        dst[i] = copies[in[i]];
        l[i] = *amp_plan_layout(p, in[i]);
    }
    st = amp_conv_zero_scalars(run);
    if (st == AMP_OK && p->type == AMP_CONV_F32)
        return p->own[amp_conv_out(run->desc.dir)] ? amp_conv_unit_scales(run)
                                                   : AMP_OK;
    if (st == AMP_OK && !one_pass) {
        grid = amp_conv_grid_both(run, AMP_KERNEL_CONV_SCALES, l, 0,
                                  &blocks_a);
        st = amp_dev_launch(run->dev, AMP_KERNEL_CONV_SCALES, grid,
                            AMP_KERNEL_BLOCK, run->stream, scales);
    }
    if (st != AMP_OK)
        return st;
    /* The same grid for the one-pass cast and the cast after it. */
    grid = amp_conv_grid_both(run,
                              one_pass ? AMP_KERNEL_CONV_CAST_ONE_PASS
                                       : AMP_KERNEL_CONV_CAST,
                              l, 1, &blocks_a);
    if (one_pass) {
        st = amp_dev_launch(run->dev, AMP_KERNEL_CONV_CAST_ONE_PASS, grid,
                            AMP_KERNEL_BLOCK, run->stream, once);
        if (st != AMP_OK || !run->delayed)
            return st;
        redo = 1;
    }
    return amp_dev_launch(run->dev, AMP_KERNEL_CONV_CAST, grid,
                          AMP_KERNEL_BLOCK, run->stream, casts);
}

/* Elements from the first to the last of l, whatever its strides. */
static size_t
amp_conv_span(const struct amp_conv_layout *l)
{
    int64_t last = 0;
    int d;

    for (d = 0; d < (int)l->nb_dims; d++)
        last += (l->dim[d] - 1) * l->stride[d];
    return (size_t)last + 1;
}

/* Scratch parts, then the slot of the check or the shadow errors. */
static enum amp_status
amp_conv_acquire(struct amp_conv_run *run, size_t workspace_bytes,
                 uint64_t scratch_max, size_t *parts)
{
    const struct amp_conv_plan *p = &run->plan;
    int shadow = p->mode == AMP_MODE_SHADOW, out = amp_conv_out(run->desc.dir);
    /* tf32 and tf32x3 (FP32's range) have nothing to check;
     * allow-conversion writing the caller's output itself is checked
     * there. */
    int unchecked = !shadow && (p->candidate == AMP_MODE_TF32 ||
                                p->candidate == AMP_MODE_TF32X3);
    int direct = !p->own[out] && unchecked;
    int capturing;
    size_t total = 0;
    int i;

    run->capture = 2 + amp_dev_stream_capturing(run->stream);
    capturing = run->capture != AMP_CAPTURE_NONE;
    parts[3] = direct ? SIZE_MAX
                      : amp_scratch_part(&total,
                                         sizeof(struct amp_conv_scalars));
    parts[4] = direct ? SIZE_MAX
                      : amp_scratch_part(&total,
                                         sizeof(struct amp_shadow_accum));
    for (i = 0; i < 3; i++) {
        size_t bytes = (size_t)amp_conv_count(amp_plan_layout(p, i), 1) *
                       amp_conv_elem(p->type);

        parts[i] = p->own[i] ? amp_scratch_part(&total, bytes) : SIZE_MAX;
    }
    parts[5] = shadow ? amp_scratch_part(&total,
                                         (size_t)amp_conv_count(
                                             amp_plan_layout(p, out), 0) * 4)
                      : SIZE_MAX;
    parts[6] = workspace_bytes ? amp_scratch_part(&total, workspace_bytes)
                               : SIZE_MAX;
    parts[7] = run->desc.output_in_scratch
                   ? amp_scratch_part(&total, amp_conv_span(&run->desc.y) * 4)
                   : SIZE_MAX;
    if (total == SIZE_MAX || total > scratch_max)
        return AMP_ERR_TOO_BIG;
    /* The check (and shadow's errors) need a slot, and never run in a
     * graph: shadow stays FP32 there, FP16 and BF16 are safe by
     * construction, allow-conversion is not. */
    if (capturing && (shadow || p->candidate == AMP_MODE_ALLOW_CONVERSION))
        return AMP_ERR_UNAVAILABLE;
    if (!capturing && !unchecked &&
        amp_dev_slot_take(run->dev, &run->slot, &run->slot_at) != AMP_OK)
        return AMP_ERR_UNAVAILABLE;
    run->scratch_bytes = total;
    return total ? amp_dev_alloc_async(run->dev, total, run->stream,
                                       run->capture,
                                       &run->scratch,
                                       &run->scratch_in_graph)
                 : AMP_OK;
}

static amp_devptr
amp_conv_at(amp_devptr scratch, size_t part)
{
    return part == SIZE_MAX ? 0 : scratch + part;
}

enum amp_status
amp_conv_prepare(struct amp_dev *dev, const struct amp_conv_desc *d,
                 const struct amp_conv_plan *plan, size_t workspace_bytes,
                 uint64_t scratch_max, int fp32_first,
                 struct amp_conv_run *run)
{
    amp_devptr copies[3];
    size_t parts[8];
    int out = amp_conv_out(d->dir), i;
    enum amp_status st;

    memset(run, 0, sizeof *run);
    run->plan = *plan;
    run->desc = *d;
    run->dev = dev;
    run->stream = d->stream;
    run->slot = -1;
    run->alpha = &amp_one;
    run->beta = &amp_zero;
    st = amp_conv_acquire(run, workspace_bytes, scratch_max, parts);
    if (st != AMP_OK) {
        amp_conv_release(run);
        return st;
    }
    if (d->output_in_scratch) {
        run->scratch_output = amp_conv_at(run->scratch, parts[7]);
        run->desc.yp = run->scratch_output;
    }
    for (i = 0; i < 3; i++)
        copies[i] = plan->own[i] ? amp_conv_at(run->scratch, parts[i])
                                 : amp_desc_ptr(&run->desc, i);
    run->x = copies[AMP_CONV_X];
    run->w = copies[AMP_CONV_W];
    run->y = copies[AMP_CONV_Y];
    run->scalars = amp_conv_at(run->scratch, parts[3]);
    run->accum = amp_conv_at(run->scratch, parts[4]);
    run->result = copies[out];
    run->candidate = amp_conv_at(run->scratch, parts[5]);
    run->workspace = amp_conv_at(run->scratch, parts[6]);
    run->workspace_bytes = workspace_bytes;
    run->needs_original = plan->mode == AMP_MODE_SHADOW;
    run->delivers = run->needs_original && d->delivers;
    /* The original first only where the candidate does not read the
     * caller's output (beta 0), which the original overwrites. */
    run->fp32_first = run->needs_original && fp32_first && d->beta == 0.0f &&
                      !d->output_in_scratch;
    if (!plan->own[out]) {
        /* tf32, tf32x3 and allow-conversion: the vendor call writes the
         * caller's result itself (tf32x3's split copies below;
         * allow-conversion's maxima kernel below, for the non-finite flag
         * its check reads). */
        run->alpha = &run->desc.alpha;
        run->beta = &run->desc.beta;
    }
    if (run->fp32_first)
        return AMP_OK; /* amp_conv_queue_candidate after the original */
    amp_prof_start(); /* the host's set-up is done: the timed work */
    return amp_conv_queue_candidate(run);
}

enum amp_status
amp_conv_queue_candidate(struct amp_conv_run *run)
{
    const struct amp_conv_plan *plan = &run->plan;
    int out = amp_conv_out(run->desc.dir);
    amp_devptr copies[3];
    enum amp_status st;

    copies[AMP_CONV_X] = run->x;
    copies[AMP_CONV_W] = run->w;
    copies[AMP_CONV_Y] = run->y;
    if (!plan->own[out] && plan->candidate == AMP_MODE_TF32)
        return AMP_OK;
    if (plan->candidate == AMP_MODE_TF32X3) {
        st = amp_conv_queue_split(run, copies);
        if (st != AMP_OK)
            amp_conv_release(run);
        return st;
    }
    if (plan->candidate == AMP_MODE_TF32 && !run->needs_original) {
        /* tf32 with beta != 0: the vendor call writes the FP32 result
         * into scratch, the output kernel blends it with unit scales. */
        st = amp_conv_unit_scales(run);
        if (st != AMP_OK)
            amp_conv_release(run);
        return st;
    }
    amp_conv_record(run);
    st = amp_conv_queue_inputs(run, copies);
    /* A first call that failed may not have set its record: the key's
     * next call starts afresh; its scales kernel may be queued already,
     * so the record drains before another stream may take it. Once
     * queued, later calls may take one pass (their kernels follow). */
    if (amp_conv_warms_up(run) && st != AMP_OK)
        amp_dev_record_drop(run->dev, run->record, run->record_key,
                            run->stream);
    else if (amp_conv_warms_up(run))
        amp_dev_record_ready(run->dev, run->record, run->record_key);
    if (st != AMP_OK)
        amp_conv_release(run);
    return st;
}

/* Queues the slot's event and hands it to the harvest. */
static enum amp_status
amp_conv_pend(struct amp_conv_run *run, int shadow)
{
    enum amp_status st = amp_dev_slot_record(run->dev, run->slot,
                                             run->stream);

    if (st == AMP_OK)
        st = amp_harvest_pend(run->dev, run->stream, run->slot,
                              run->slot_at, shadow,
                              run->desc.stats, run->desc.site,
                              run->desc.shape, run->desc.auto_shape,
                              run->desc.auto_candidate);
    if (st == AMP_OK)
        run->slot = -1; /* the harvest's now */
    return st;
}

/* Channels-last packed strides of l's real sizes (the shadow candidate). */
static struct amp_conv_layout
amp_conv_packed_layout(const struct amp_conv_layout *l)
{
    struct amp_conv_layout c = *l;
    int64_t stride = l->dim[1];
    int d;

    c.stride[1] = 1;
    for (d = (int)l->nb_dims - 1; d >= 2; d--) {
        c.stride[d] = stride;
        stride *= l->dim[d];
    }
    c.stride[0] = stride;
    return c;
}

/* allow-conversion after its check: one block of amp_k_conv_excuse over
 * the call's FP32 inputs. */
static enum amp_status
amp_conv_queue_excuse(struct amp_conv_run *run)
{
    const struct amp_conv_plan *p = &run->plan;
    struct amp_conv_layout la, lb;
    amp_devptr a, b;
    int in[2];
    void *params[] = {&a, &la, &b, &lb, &run->accum, &run->slot_at};

    amp_conv_inputs(run->desc.dir, &in[0], &in[1]);
    a = amp_desc_ptr(&run->desc, in[0]);
    b = amp_desc_ptr(&run->desc, in[1]);
    la = *amp_plan_layout(p, in[0]);
    lb = *amp_plan_layout(p, in[1]);
    return amp_dev_launch(run->dev, AMP_KERNEL_CONV_EXCUSE, 1,
                          AMP_KERNEL_BLOCK, run->stream, params);
}

/* dst = alpha * unscaled result + beta * the caller's destination; with
 * the call's slot (a converted call, not a shadow one), the non-finite
 * check of the vendor result in the same pass, then the slot's event.
 * A result the vendor call wrote into the caller's output (direct) is
 * checked there, and nothing is written. allow-conversion's check is
 * followed by amp_k_conv_excuse, which reads the caller's inputs where
 * the check counted non-finite results: such results are the program's
 * own where an input holds Inf or NaN. */
static enum amp_status
amp_conv_queue_output(struct amp_conv_run *run, int direct)
{
    const struct amp_conv_plan *p = &run->plan;
    int out = amp_conv_out(run->desc.dir);
    int32_t format = amp_conv_format(p->type);
    struct amp_conv_layout lr = *amp_plan_layout(p, out), lo = lr, ld = lr;
    amp_devptr dst = direct ? 0 : amp_desc_ptr(&run->desc, out), old = dst;
    float alpha = run->desc.alpha, beta = run->desc.beta;
    int check = !run->needs_original && run->slot >= 0;
    amp_devptr accum = check ? run->accum : 0;
    amp_devptr slot = check ? run->slot_at : 0;
    void *params[] = {&run->result, &format, &lr, &dst, &ld, &old, &lo,
                      &run->scalars, &alpha, &beta, &accum, &slot};
    enum amp_status st;

    if (run->needs_original) {
        dst = run->candidate;
        ld = amp_conv_packed_layout(&lr);
    }
    /* run->accum was zeroed with the scalars. */
    st = amp_conv_launch(run, AMP_KERNEL_CONV_OUTPUT,
                         amp_conv_output_units(&lr), params);
    /* The output kernel may have written the caller's output: the call
     * stands whatever follows. Without its excuse the check counts the
     * program's own Inf or NaN too, which demotes the site: FP32. */
    if (st == AMP_OK && check && p->candidate == AMP_MODE_ALLOW_CONVERSION &&
        amp_conv_queue_excuse(run) != AMP_OK)
        amp_log(AMP_LOG_INFO, "%s: the check's excuse not queued: "
                "non-finite inputs count against the conversion",
                run->desc.api);
    if (st == AMP_OK && check)
        st = amp_conv_pend(run, 0);
    return st;
}

enum amp_status
amp_conv_finish(struct amp_conv_run *run)
{
    enum amp_status st = AMP_OK;

    if (run->plan.own[amp_conv_out(run->desc.dir)])
        st = amp_conv_queue_output(run, 0);
    else if (run->slot >= 0)
        st = amp_conv_queue_output(run, 1);
    if (st != AMP_OK ||
        (!run->needs_original && !run->desc.output_in_scratch))
        amp_conv_release(run);
    return st;
}

/* A delivering run, after its comparison: the candidate (channels last,
 * packed by its real sizes) into the caller's output over the FP32
 * original's, by the output kernel with unit scales, alpha 1 and beta 0:
 * a copy (the output not read). The scales' earlier readers are queued
 * before it. */
static enum amp_status
amp_conv_queue_deliver(struct amp_conv_run *run)
{
    int out = amp_conv_out(run->desc.dir);
    struct amp_conv_layout lr = *amp_plan_layout(&run->plan, out), ld = lr;
    int32_t format = AMP_FORMAT_F32;
    amp_devptr dst = amp_desc_ptr(&run->desc, out);
    float alpha = 1.0f, beta = 0.0f;
    amp_devptr none = 0;
    void *params[] = {&run->candidate, &format, &lr, &dst, &ld, &dst, &ld,
                      &run->scalars, &alpha, &beta, &none, &none};
    enum amp_status st;

    lr.per_pad[0] = lr.per[0];
    lr.per_pad[1] = lr.per[1];
    st = amp_conv_unit_scales(run);
    if (st == AMP_OK)
        st = amp_conv_launch(run, AMP_KERNEL_CONV_OUTPUT,
                             amp_conv_output_units(&lr), params);
    return st;
}

enum amp_status
amp_conv_shadow_finish(struct amp_conv_run *run, int original_ok)
{
    int out = amp_conv_out(run->desc.dir);
    struct amp_conv_layout lref = *amp_plan_layout(&run->plan, out);
    amp_devptr ref = amp_desc_ptr(&run->desc, out);
    /* The candidate is packed channels last by its real sizes. */
    void *params[] = {&run->candidate, &ref, &lref, &run->accum,
                      &run->slot_at};
    enum amp_status st = original_ok ? AMP_OK : AMP_ERR_DRIVER;

    /* run->accum was zeroed with the scalars. */
    if (st == AMP_OK)
        st = amp_conv_launch(run, AMP_KERNEL_CONV_ERROR,
                             amp_conv_count(&lref, 0), params);
    if (st == AMP_OK && run->delivers)
        st = amp_conv_queue_deliver(run);
    if (st == AMP_OK) {
        amp_prof_checked(); /* the program waits for all of it */
        st = amp_conv_pend(run, 1);
    }
    if (!run->desc.output_in_scratch) {
        amp_conv_release(run);
    } else if (run->slot >= 0) {
        /* The output stays for the hook; the slot is not its. */
        amp_dev_slot_release(run->dev, run->slot);
        run->slot = -1;
    }
    return st;
}

void
amp_conv_abandon(struct amp_conv_run *run)
{
    amp_conv_release(run);
}
