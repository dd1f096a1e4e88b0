/* The convolution path: a cuDNN convolution as a plain descriptor, the
 * decision, the plan of the shim's own tensors, and the preparation and
 * completion of a converted call on the caller's stream. No vendor types:
 * the hook (hooks/cudnn.c) translates descriptors and issues the one
 * vendor convolution of a converted call. */
#ifndef AMP_CONV_H
#define AMP_CONV_H

#include "amp_math.h"
#include "base/config.h"
#include "base/status.h"
#include "decide/policy.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/prof.h"
#include "measure/stats.h"

#include <stddef.h>
#include <stdint.h>

/* What the call computes: y (forward), dx (backward data) or dw (backward
 * filter). */
enum amp_conv_dir {
    AMP_CONV_FWD = 0,
    AMP_CONV_BWD_DATA,
    AMP_CONV_BWD_FILTER,
};

/* One FP32 convolution as the application asked for it. x, w and y are the
 * tensors in their forward roles (for backward data x is dx and y is dy;
 * for backward filter w is dw), laid out by the caller's descriptors
 * (per and per_pad are the plan's). */
struct amp_conv_desc {
    const char *api;
    struct amp_api_stats *stats;
    struct amp_site *site;       /* NULL when the site table is full */
    int auto_shape;              /* an auto rule's call: 1 + its (site,
                                    shape)'s slot (decide/auto.h); 0: not */
    int shape;                   /* 1 + its (site, shape)'s slot, which
                                    its shadow errors demote; 0: none */
    enum amp_mode auto_candidate; /* the candidate it measures, as the
                                     decision names it (a backend graph
                                     runs allow-conversion as fp16) */
    int delivers;                /* the decision's: a shadow run whose
                                    candidate's result then goes to the
                                    caller's output */
    enum amp_conv_dir dir;
    int64_t groups;
    struct amp_conv_layout x, w, y;
    amp_devptr xp, wp, yp;
    float alpha, beta;           /* the caller's host scalars */
    int valid;                   /* cuDNN accepts the arguments */
    int strict;                  /* CUDNN_FMA_MATH: no Tensor Cores */
    int no_tc_engine;            /* a backend plan whose engine has no
                                    Tensor Cores */
    int fused_graph;             /* a backend plan whose graph fuses the
                                    convolution with pointwise
                                    operations */
    int from_library;            /* called from one of NVIDIA's libraries
                                    (base/caller.h): FP32 unless the
                                    policy says `set library-calls
                                    convert` */
    amp_stream stream;
    /* The fused forward's (forward only, beta 0): the converted path
     * writes y into an FP32 tensor of y's layout in its own scratch, not
     * the caller's yp, and keeps it until amp_conv_abandon() (the run's
     * scratch_output says where) for the hook's steps after the
     * convolution. */
    int output_in_scratch;
};

enum amp_conv_skip {
    AMP_CONV_CONVERT = 0,
    AMP_CONV_SKIP_MODE,          /* fp32, or fp16x3 or bf16x9 (not
                                    defined for convolutions) */
    AMP_CONV_SKIP_INVALID,       /* cuDNN refuses the call: it says so */
    AMP_CONV_SKIP_EMPTY,         /* a size is 0, or alpha is 0 */
    AMP_CONV_SKIP_STRICT,        /* the program forbade Tensor Cores */
    AMP_CONV_SKIP_NO_TC_ENGINE,  /* the program's plan runs on an engine
                                    without Tensor Cores */
    AMP_CONV_SKIP_FUSED_GRAPH,   /* the program's plan fuses pointwise
                                    operations after the convolution */
    AMP_CONV_SKIP_DEMOTED,       /* the site made a non-finite result */
    AMP_CONV_SKIP_LIBRARY,       /* a library of NVIDIA's calls: its own */
    AMP_CONV_SKIP_COUNT,
};

const char *amp_conv_skip_reason(enum amp_conv_skip skip);

/* The mode a convolution runs in `mode` (fp16x3 and bf16x9 are fp32 for
 * them: cuDNN has no engine for bf16x9). */
enum amp_mode amp_conv_mode(enum amp_mode mode);

enum amp_conv_skip amp_conv_decide(const struct amp_conv_desc *d,
                                   enum amp_mode mode);

/* The policy's decision for d, an eligible call (amp_conv_decide gave
 * AMP_CONV_CONVERT in a converting mode). */
void amp_conv_policy(const struct amp_conv_desc *d, struct amp_decision *out);

/* The call as the profiler sees it (shape, FLOPs, the decision's modes);
 * any call, an invalid one with no FLOPs. */
void amp_conv_what(struct amp_prof_what *w, const struct amp_conv_desc *d,
                 const struct amp_decision *dec);

/* The work of the call: 2 FLOPs per term of each output element's
 * reduction; 0 without a group. Any data type: the descriptor's sizes
 * only. */
double amp_conv_flops(const struct amp_conv_desc *d);

/* Reduction length of one output element: C/groups R S (forward),
 * K/groups R S (backward data), N P Q (backward filter). */
int64_t amp_conv_reduction(const struct amp_conv_desc *d);

/* 1 when d's reduction is short enough for FP16 once scaled
 * (AMP_CONV_F16_MAX_LOG2_LEN, kernels/amp_math.h); a longer one runs
 * FP32. */
int amp_conv_f16_fits(const struct amp_conv_desc *d);

/* ---- The plan: the vendor convolution of a converted call ------------------ */

/* Data types of the vendor call; math types, mapped by the hook to
 * CUDNN_TENSOR_OP_MATH, CUDNN_DEFAULT_MATH and
 * CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION. */
enum amp_conv_type { AMP_CONV_F32 = 0, AMP_CONV_F16, AMP_CONV_BF16 };
enum amp_conv_math {
    AMP_CONV_MATH_TENSOR_OP = 0,
    AMP_CONV_MATH_DEFAULT,
    AMP_CONV_MATH_ALLOW_CONVERSION,
};

/* A tensor of the shim's own, for a vendor descriptor (sizes and strides
 * in logical order, packed channels last). */
struct amp_conv_tensor {
    int nb_dims;
    int dim[AMP_CONV_MAX_DIMS];
    int stride[AMP_CONV_MAX_DIMS];
};

struct amp_conv_plan {
    enum amp_mode mode;          /* as asked; AMP_MODE_SHADOW for shadow */
    enum amp_mode candidate;     /* what computes */
    enum amp_conv_type type;     /* of the vendor call's data */
    enum amp_conv_math math;
    /* Which of x, w, y the vendor call takes from the shim (own[i]: the
     * tensor below, in scratch) rather than the caller. */
    int own[3];
    struct amp_conv_tensor tensor[3];
    /* The caller's layouts with the padding of the own copies. */
    struct amp_conv_layout x, w, y;
};

enum { AMP_CONV_X = 0, AMP_CONV_W, AMP_CONV_Y };

/* Plans d in `mode` (shadow: with `candidate`). AMP_ERR_UNAVAILABLE when
 * the mode does not convert, AMP_ERR_TOO_BIG when a size exceeds the int
 * of cuDNN's descriptors. */
enum amp_status amp_conv_plan(const struct amp_conv_desc *d,
                              enum amp_mode mode, enum amp_mode candidate,
                              struct amp_conv_plan *plan);

/* ---- A converted call ------------------------------------------------------- */

struct amp_conv_run {
    struct amp_conv_plan plan;
    /* The vendor call: x, w, y device pointers (own or the caller's), the
     * workspace, and host alpha and beta. */
    amp_devptr x, w, y;
    amp_devptr workspace;
    size_t workspace_bytes;
    const float *alpha, *beta;
    /* Shadow: the hook runs the original call after amp_conv_finish(),
     * then amp_conv_shadow_finish(), which for a delivering run gives the
     * caller's output the candidate's result (desc's delivers). */
    int needs_original;
    int delivers;
    /* Shadow with beta 0: the original runs first; amp_conv_prepare()
     * queued nothing, and the hook queues the candidate with
     * amp_conv_queue_candidate() after the original (as GEMMs do on
     * every other shadow run, amp_shadow_fp32_first). */
    int fp32_first;
    size_t scratch_bytes;
    /* desc's output_in_scratch: where in scratch the output is, in the
     * caller's layout of y. */
    amp_devptr scratch_output;
    /* Private to conv.c from here on. */
    struct amp_dev *dev;
    struct amp_conv_desc desc;
    amp_stream stream;
    int capture;               /* the stream's capture state as the scratch
                                  found it (amp_dev_capturing_as) */
    amp_devptr scratch, scalars, accum, result, candidate;
    int scratch_in_graph;      /* owned by the graph being captured */
    int slot;
    amp_devptr slot_at;
    amp_devptr record;         /* its delayed-scaling record (FP16), or 0 */
    uint64_t record_key;
    int delayed;               /* the record holds an earlier call's
                                  exponents: the one-pass cast */
};

/* Queues on d->stream the scratch allocation (with `workspace_bytes` for
 * the vendor call), then the call's start event and the inputs' maxima
 * and scales and their half copies (amp_conv_queue_candidate). Nothing of
 * the caller's is written. `fp32_first` (a shadow run with beta 0 and the
 * output not in scratch; else ignored): the scratch alone, no start event;
 * run->fp32_first says so. Fails with AMP_ERR_TOO_BIG beyond scratch_max,
 * AMP_ERR_UNAVAILABLE when no slot is free for the check, or
 * AMP_ERR_DRIVER; on failure nothing stays allocated. */
enum amp_status amp_conv_prepare(struct amp_dev *dev,
                                 const struct amp_conv_desc *d,
                                 const struct amp_conv_plan *plan,
                                 size_t workspace_bytes, uint64_t scratch_max,
                                 int fp32_first, struct amp_conv_run *run);

/* The candidate's own work before its vendor call (the split copies, the
 * maxima, scales and half copies, or the unit scales): amp_conv_prepare()
 * runs it, or the hook after the original when run->fp32_first. Fails as
 * amp_conv_prepare(); on failure nothing stays allocated. */
enum amp_status amp_conv_queue_candidate(struct amp_conv_run *run);

/* 1 when a prepared run is the first call of its delayed-scaling record:
 * it takes the two passes its later calls skip (amp_prof_warmup). */
int amp_conv_warms_up(const struct amp_conv_run *run);

/* After the vendor call succeeded: queues the non-finite check and the
 * output cast (shadow: into the candidate; the caller's destination is read
 * for beta before the original call overwrites it). Without shadow the
 * scratch free is queued too, unless the output is in scratch. On failure
 * the caller's memory is untouched and everything is released. */
enum amp_status amp_conv_finish(struct amp_conv_run *run);

/* Shadow, after the original call (original_ok: it succeeded): queues the
 * error kernel, for a delivering run then the candidate's result into the
 * caller's output (one kernel, which runs whole or fails before it
 * writes: on failure the output is the FP32 original's), and releases the
 * run (its slot only when the output is in scratch). */
enum amp_status amp_conv_shadow_finish(struct amp_conv_run *run,
                                       int original_ok);

/* After a failure before amp_conv_finish(), or once the hook has queued
 * its last reader of an output_in_scratch: queues the scratch free. */
void amp_conv_abandon(struct amp_conv_run *run);

#endif
