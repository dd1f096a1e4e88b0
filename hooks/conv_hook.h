/* What every cuDNN convolution hook shares, the legacy convolutions
 * (hooks/cudnn.c) and the backend's cudnnBackendExecute
 * (hooks/cudnn_graph.c): the decision, the converted path with its one
 * vendor call issued through the hook's issuer, and the record. No vendor
 * types. */
#ifndef AMP_CONV_HOOK_H
#define AMP_CONV_HOOK_H

#include "measure/coverage.h"
#include "measure/prof.h"
#include "measure/stats.h"
#include "run/conv.h"

#include <stddef.h>

/* One hooked convolution in flight. */
struct amp_conv_hook {
    struct amp_api_stats *stats;
    int entered;               /* amp_process_enter() succeeded */
    int shadow;                /* run waits for the original call */
    enum amp_outcome outcome;
    /* The coverage meter's view: the kind of a call kept FP32 (its
     * reason) or passed through (its precision), AMP_COVER_COUNT for one
     * the meter does not count; the call's FLOPs. The hook sets them for a
     * call it passes through; amp_conv_hook_run for the others. */
    enum amp_cover cover;
    double flops;
    struct amp_conv_run run;
    struct amp_prof_span prof; /* the converted call's measurement */
    int original_status;       /* AMP_CONV_HOOK_RAN: the original's */
};

/* The coverage kind of a convolution passed through, by its input's
 * cudnnDataType_t. */
enum amp_cover amp_conv_cover_of_data(int type);

/* How a converted call's one vendor convolution reaches the library. */
struct amp_conv_vendor {
    /* The calling thread's own objects (a handle and what goes with it)
     * for dev's context, made when `make`; NULL when there are none. */
    void *(*own)(struct amp_dev *dev, int make);
    /* Makes the vendor call of `plan` ready on own (its descriptors, its
     * algorithm or execution plan, kept in `call`, the hook's own record
     * of the call) and says the workspace it needs: 1; 0 when there is
     * none (no algorithm or engine takes it), -1 when it is not made yet
     * and cannot be while the stream is being captured. Host work only. */
    int (*ready)(void *own, void *call, const struct amp_conv_desc *d,
                 const struct amp_conv_plan *plan, size_t *workspace);
    /* Issues the vendor call on run's pointers, workspace and stream: 0
     * on success, else the library's status. */
    int (*issue)(void *own, void *call, const struct amp_conv_run *run);
    /* 1: the library has cuDNN's ALLOW_CONVERSION math type (the legacy
     * convolutions); 0: allow-conversion runs as fp16, the nearest mode
     * (the backend API has no such math type), as for GEMMs. */
    int conversion_math;
    /* Runs the program's own call, unchanged, as the hook would after
     * amp_conv_hook_run returned 0: the library's status. An FP32-first
     * shadow run makes it inside amp_conv_hook_run, where `call` lives. */
    int (*original)(void *call);
};

/* Decides d, which the hook filled from the call (d->valid: the library
 * accepts the call as made), and runs its converted path through v. 1:
 * the caller's result is the shim's, the call is counted and the guard
 * left; the hook returns success. 0: nothing of the caller's was written;
 * the hook runs the original call, then amp_conv_hook_end. For a d with
 * output_in_scratch, 1 says only that the convolution is queued into the
 * run's scratch (h->run.desc.yp): the hook queues its steps after it, then
 * calls amp_conv_hook_steps_end. AMP_CONV_HOOK_RAN: a shadow run that
 * made the original call first (v->original), then the candidate; the
 * call is counted and the guard left; the hook returns the original's
 * status, h->original_status. */
#define AMP_CONV_HOOK_RAN 2
int amp_conv_hook_run(struct amp_conv_hook *h, struct amp_conv_desc *d,
                      const struct amp_conv_vendor *v, void *call);

/* After the steps of an output_in_scratch call converted by
 * amp_conv_hook_run, the last of them queued (steps_ok) or one failed:
 * queues the scratch free, then counts the call converted and leaves the
 * guard, or, after a failure, marks it a fallback, for the hook to run the
 * original call, then amp_conv_hook_end. */
void amp_conv_hook_steps_end(struct amp_conv_hook *h, int steps_ok);

/* After the original call, whose success original_ok says: completes a
 * shadow run, counts the call and leaves the guard (nothing when the
 * hook did not enter). */
void amp_conv_hook_end(struct amp_conv_hook *h, int original_ok);

#endif
