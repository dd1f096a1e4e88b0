/* The GEMM path: a call as a plain descriptor, the decision, and the
 * preparation of a converted call in any precision mode (scales, casts and
 * splits into stream-ordered scratch), as a list of vendor GEMM steps that
 * the hook issues. No vendor types: the hook translates. */
#ifndef AMP_GEMM_H
#define AMP_GEMM_H

#include "base/config.h"
#include "base/status.h"
#include "decide/policy.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/prof.h"
#include "measure/stats.h"

#include <stddef.h>
#include <stdint.h>

enum amp_op {
    AMP_OP_N = 0,
    AMP_OP_T = 1, /* CUBLAS_OP_T, and CUBLAS_OP_C on real data */
};

/* How a call's matrices are laid out. */
enum amp_batch {
    AMP_BATCH_NONE = 0, /* one GEMM: a, b, c are the matrices */
    AMP_BATCH_STRIDED,  /* matrix i of A at a + i * stride_a (elements) */
    AMP_BATCH_ARRAY,    /* a, b, c are device arrays of `batch` device
                           pointers, one matrix each */
};

/* One FP32 GEMM call as the application asked for it:
 * C_i = alpha * op(A_i) * op(B_i) + beta * C_i, column-major, for each of
 * `batch` problems. Grouped calls are one descriptor per group, whose a, b
 * and c point at the group's slice of the pointer arrays.
 *
 * A cuBLASLt call (lt) writes D_i = epilogue(alpha * op(A_i) * op(B_i) +
 * beta * C_i) into d, which is c for an in-place call; its matrices may be
 * row-major (row_a, row_b, row_cd: then ld is the distance between rows),
 * and the hook applies the epilogue, which gemm.c knows only as a flag of
 * the last step. For cuBLAS calls d is c. */
struct amp_gemm_desc {
    const char *api;           /* the exported name, for logs */
    struct amp_api_stats *stats; /* the hook's counters: shadow errors */
    enum amp_op transa, transb;
    int ops_valid;             /* both ops were N, T or C */
    int64_t m, n, k;
    int64_t lda, ldb, ldc;
    enum amp_batch batch_kind;
    int64_t batch;             /* problems; 1 for AMP_BATCH_NONE */
    int64_t stride_a, stride_b, stride_c; /* AMP_BATCH_STRIDED only */
    amp_devptr a, b, c;
    const float *alpha, *beta; /* host or device pointers, per... */
    int scalars_on_device;     /* ...CUBLAS_POINTER_MODE_DEVICE */
    int pedantic;              /* the handle asked for strict FP32 */
    int unsupported;           /* valid, but not a call the converted path
                                  takes (a cuBLASLt alpha vector, say) */
    int atomic_sync;           /* cuBLASLt: the call synchronises with
                                  other kernels through counters in device
                                  memory (atomic synchronisation): it runs
                                  as the program made it */
    amp_stream stream;         /* the application handle's stream */
    int capture;               /* its capture state as the hook found it
                                  (amp_dev_capturing_as); 0: not asked */
    int sm_count_target;       /* the SMs the program leaves its calls
                                  (cublasSetSmCountTarget, cuBLASLt's
                                  SM_COUNT_TARGET), which the converted
                                  steps get too; 0: the device's */
    const void *caller;        /* return address of the exported hook */
    int from_library;          /* called from one of NVIDIA's libraries
                                  (base/caller.h): FP32 unless the policy
                                  says `set library-calls convert` */
    struct amp_site *site;     /* set by amp_gemm_policy */
    int auto_shape;            /* an auto rule's call: 1 + its (site,
                                  shape)'s slot (decide/auto.h); 0: not */
    int shape;                 /* set by amp_gemm_policy: 1 + its (site,
                                  shape)'s slot, which its shadow errors
                                  demote; 0: none */
    int delivers;              /* set by amp_gemm_policy: a shadow run
                                  whose candidate's result then goes to
                                  the caller's C (D), the FP32 original
                                  measured beside it (the decision's) */
    int lt;                    /* a cuBLASLt call: the fields below */
    amp_devptr d;
    int64_t ldd, stride_d;
    int row_a, row_b, row_cd;  /* row-major A, B, C and D */
    enum amp_epi epilogue;     /* for policies and reports */
    /* cuBLASLt's vector pointer modes: alpha a device vector of m per row
     * (members alpha_stride apart, 0: one for the batch; scalars_on_device
     * is then 1), beta as beta_kind says. */
    int alpha_vector;
    enum amp_beta_kind {
        AMP_BETA_VECTOR = 0,   /* a device vector of m */
        AMP_BETA_ZERO,         /* none: C is not read */
        AMP_BETA_HOST,         /* a host scalar */
    } beta_kind;
    int64_t alpha_stride;
};

/* Why a call stays FP32 by decision. */
enum amp_gemm_skip {
    AMP_GEMM_CONVERT = 0,
    AMP_GEMM_SKIP_MODE,      /* the mode is fp32 */
    AMP_GEMM_SKIP_INVALID,   /* arguments cuBLAS refuses: it says so itself */
    AMP_GEMM_SKIP_EMPTY,     /* m, n, k or batch is 0, or a host alpha is 0 */
    AMP_GEMM_SKIP_PEDANTIC,  /* CUBLAS_PEDANTIC_MATH on the handle */
    AMP_GEMM_SKIP_UNSUPPORTED, /* valid, not for the converted path */
    AMP_GEMM_SKIP_LIBRARY,   /* a library of NVIDIA's calls: its own */
    AMP_GEMM_SKIP_ATOMIC_SYNC, /* cuBLASLt's atomic synchronisation */
    AMP_GEMM_SKIP_COUNT,
};

const char *amp_gemm_skip_reason(enum amp_gemm_skip skip);

/* 1 when cuBLAS accepts the arguments (ops, sizes, leading dimensions,
 * batch count). */
int amp_gemm_args_valid(const struct amp_gemm_desc *d);

/* Whether to convert this call in `mode`; reads a host alpha, never a
 * device one. */
enum amp_gemm_skip amp_gemm_decide(const struct amp_gemm_desc *d,
                                   enum amp_mode mode);

/* The policy's decision for d, an eligible call (amp_gemm_decide gave
 * AMP_GEMM_CONVERT in a converting mode); sets d->site where the caller
 * has not. `read`, when not NULL: what the policy read of d's fields,
 * kept from an earlier call like it when valid (then d->site is that
 * call's), else read now into it. */
void amp_gemm_policy(struct amp_gemm_desc *d, struct amp_policy_read *read,
                     struct amp_decision *out);

/* d's shape as reports key it: the family and seven values (m, n, k,
 * batch, the ops, the epilogue); the caller has zeroed the rest. */
void amp_gemm_shape(const struct amp_gemm_desc *d, struct amp_shape *shape);

/* The call as the profiler sees it (shape, FLOPs, the decision's modes)
 * on the device of ordinal `device` (amp_dev_current_ordinal's):
 * amp_gemm_what_call, then amp_gemm_what_decided. */
void amp_gemm_what(struct amp_prof_what *w, const struct amp_gemm_desc *d,
                   const struct amp_decision *dec, int device);

/* w: the call's api, site, shape and FLOPs, the rest zero. */
void amp_gemm_what_call(struct amp_prof_what *w,
                        const struct amp_gemm_desc *d);

/* Fills in the rest of amp_gemm_what_call's w: the decision, stream
 * and device. */
void amp_gemm_what_decided(struct amp_prof_what *w,
                           const struct amp_gemm_desc *d,
                           const struct amp_decision *dec, int device);

/* ---- A converted call ----------------------------------------------------- */

/* Element types of the vendor GEMM steps. */
enum amp_dtype {
    AMP_DTYPE_F32 = 0,
    AMP_DTYPE_F16,
    AMP_DTYPE_BF16,
};

/* Compute types of the vendor GEMM steps; the hook maps them to
 * CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 and
 * CUBLAS_COMPUTE_32F_EMULATED_16BFX9 (with the EAGER emulation strategy:
 * emulated wherever the GPU can). */
enum amp_compute {
    AMP_COMPUTE_32F = 0,
    AMP_COMPUTE_32F_FAST_TF32,
    AMP_COMPUTE_32F_EMULATED_16BFX9,
};

/* One vendor GEMM the hook issues, on the shim's own handle set to the
 * call's stream: D_i = alpha * op(A_i) * op(B_i) + beta * C_i with the
 * descriptor's transposes, m, n and k (D is C but for cuBLASLt steps). For
 * AMP_BATCH_NONE the hook calls the Ex GEMM, for STRIDED the
 * strided-batched Ex GEMM, for ARRAY the batched Ex GEMM (a, b, c then are
 * device pointer arrays); a cuBLASLt hook calls cublasLtMatmul, with the
 * orders of the descriptor's matrices (scratch copies keep them). */
struct amp_gemm_step {
    enum amp_dtype type_ab;    /* A and B */
    enum amp_dtype type_c;
    enum amp_compute compute;
    enum amp_batch batch_kind;
    int64_t batch;
    amp_devptr a, b, c;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;
    amp_devptr d;              /* the output: c but in cuBLASLt steps */
    int64_t ldd, stride_d;
    /* Float scalars: device pointers when scalars_on_device (the handle is
     * then put in device pointer mode for the step), else host pointers. */
    const float *alpha, *beta;
    int scalars_on_device;
    /* 1 when the step writes the application's C: then it is the last
     * step, beta is a host 0, and the call is done once it succeeds. */
    int writes_caller_c;
    /* cuBLASLt: alpha a device vector (the descriptor's, or the
     * compensated copy in scratch), beta as beta_kind says. */
    int alpha_vector;
    enum amp_beta_kind beta_kind;
    int64_t alpha_stride;
    /* cuBLASLt: the step applies the call's epilogue (the last step;
     * AMP_EPILOGUE_NO_AUX in shadow runs, which leave the caller's
     * auxiliary output alone); before it the hook calls
     * amp_gemm_before_step() when fold_before is set. */
    enum amp_epilogue { AMP_EPILOGUE_NONE = 0, AMP_EPILOGUE_CALL,
                        AMP_EPILOGUE_NO_AUX } epilogue;
    int fold_before;
    /* tf32x3's three products as one: the step's K is k_parts (3) times
     * the descriptor's, op(A) its m x 3k copy [hi'_A lo_A hi_A] and op(B)
     * its 3k x n [lo_B; hi'_B; hi_B] (laid out so: amp_gemm_layout), so
     * A's dimension along K triples, and B's. 0: the descriptor's K. */
    int k_parts;
};

#define AMP_GEMM_MAX_STEPS 3

/* A converted call in flight. The steps run in order; a step that fails
 * may have written part of its output, so a step writes the caller's C
 * only when it is the last and beta is a host 0 (the original call then
 * overwrites all of C); otherwise the result goes to scratch and a kernel
 * writes C after every step succeeded. So the hook can always fall back
 * to the original call. */
struct amp_gemm_run {
    enum amp_mode mode;        /* what ran (a shadow run: AMP_MODE_SHADOW) */
    int nsteps;                /* of steps[], at the end */
    /* Shadow: the hook runs the original FP32 call after the steps, then
     * calls amp_gemm_finish(), which compares the two results. */
    int needs_original;
    /* Shadow: the FP32 original runs first: amp_gemm_prepare() queued
     * only the copy of C, and the hook queues the candidate with
     * amp_gemm_queue_candidate() after the original. Shadow runs take
     * the two orders in turn (amp_decision's fp32_first), so that
     * neither product always finds the operands the other left in the
     * GPU's caches. */
    int fp32_first;
    /* Shadow: amp_gemm_finish() then gives the caller's C (D) the
     * candidate's result (desc's delivers). */
    int delivers;
    amp_stream stream;
    size_t scratch_bytes;
    struct amp_dev *dev;       /* the context it runs in */
    /* Private to gemm.c from here on, but for steps[]. */
    amp_devptr scratch;
    int scratch_in_graph;      /* owned by the graph being captured */
    amp_devptr result;         /* shadow candidate or routed result, FP32 */
    int routed;                /* the step writes result, one kernel C */
    amp_devptr scalars;        /* struct amp_gemm_scalars (a one-pass
                                  call's struct amp_gemm_delayed) */
    amp_devptr record;         /* FP16: the struct amp_gemm_record of the
                                  call's site, shape and stream, 0 none */
    uint64_t record_key;
    int delayed;               /* the record holds an earlier call's
                                  maxima: one-pass casts */
    amp_devptr alpha_vec;      /* cuBLASLt fp16, fp16x3: alpha' per row;
                                  tf32x3: the caller's alpha vector */
    int64_t alpha_vec_stride;
    int64_t ld_result;
    int64_t stride_result;     /* between the batch's results */
    int64_t rows_r, cols_r;    /* C and D as stored (column-major) */
    enum amp_mode candidate;   /* what computes: the mode, or shadow's */
    amp_devptr sum;            /* fp16x3: the two lo terms, FP32 */
    amp_devptr hi;             /* fp16x3: hi_A * hi_B, FP32 */
    amp_devptr accum;          /* shadow: the error reduction */
    int slot;                  /* shadow: the device slot, -1 for none */
    amp_devptr slot_at;
    int candidate_done;        /* shadow: the candidate's last kernel is
                                  queued */
    /* Written whole before they are read, so amp_gemm_prepare zeroes the
     * run up to here only: */
    struct amp_gemm_desc desc;
    struct amp_gemm_step steps[AMP_GEMM_MAX_STEPS]; /* the first nsteps */
};

/* Queues on d->stream everything the steps need: the scratch allocation,
 * absolute maxima, scales and compensated scalars (computed on the device
 * in either pointer mode: the call never synchronises), casts or splits,
 * pointer arrays for batched scratch, and for shadow a copy of C (before
 * the call's start event: untimed). Nothing of the caller's is written.
 * d is copied into run->desc, unless it is run->desc (then completed in
 * place). `mode` is the mode to run (for shadow, the caller passes
 * AMP_MODE_SHADOW and `candidate`). `fp32_first` (shadow only): queue
 * only the copy of C and record no start event; the hook records it,
 * runs the original, then amp_gemm_queue_candidate(). Fails with
 * AMP_ERR_TOO_BIG when the scratch would exceed scratch_max,
 * AMP_ERR_UNAVAILABLE when the mode cannot run this call (then it stays
 * FP32), or AMP_ERR_DRIVER; on failure nothing stays allocated. */
enum amp_status amp_gemm_prepare(struct amp_dev *dev,
                                 const struct amp_gemm_desc *d,
                                 enum amp_mode mode, enum amp_mode candidate,
                                 uint64_t scratch_max, int fp32_first,
                                 struct amp_gemm_run *run);

/* The candidate's own work (casts or splits, scalars, pointer arrays)
 * and its steps: amp_gemm_prepare() runs it, or the hook after the
 * original when run->fp32_first. Fails as amp_gemm_prepare(); on failure
 * nothing stays allocated (the run is released). */
enum amp_status amp_gemm_queue_candidate(struct amp_gemm_run *run);

/* 1 when a prepared run is the first call of its delayed-scaling record:
 * it takes the two passes the record's later calls skip. */
int amp_gemm_warms_up(const struct amp_gemm_run *run);

/* After every step (and for shadow the original call) succeeded: queues
 * what remains (fp16x3, tf32x3: C = alpha * (hi + sum) + beta * C in one
 * kernel that does not read C when beta is 0; fp16, bf16 and tf32 with a
 * beta that may not be 0: C = alpha * result + beta * C, the same kernel;
 * shadow: the error kernel, then for a delivering run the candidate's
 * result into C, D for cuBLASLt, in one kernel that runs whole or fails
 * before it writes) and the scratch free. On failure the caller's C is
 * untouched except in shadow mode, where C already holds the FP32 result
 * (a delivering run's candidate then did not reach it); the scratch free
 * is queued either way, so amp_gemm_abandon() never follows it. */
enum amp_status amp_gemm_finish(struct amp_gemm_run *run);

/* Shadow, after the steps and before the original call: queues the rest
 * of the candidate (fp16x3, tf32x3: its sum into the candidate's copy of
 * C), so that the candidate's time covers all of its work, as a converted
 * call's does. Fails as amp_gemm_finish(); nothing of the caller's is
 * written. */
enum amp_status amp_gemm_candidate_done(struct amp_gemm_run *run);

/* cuBLASLt fp16x3 and tf32x3, before the last step: the sum of the small
 * terms becomes alpha' * sum + beta * C (terms that are not finite
 * dropped: the large term carries them), which the last step adds as its
 * C. */
enum amp_status amp_gemm_before_step(struct amp_gemm_run *run);

/* After a step failed: queues the scratch free. */
void amp_gemm_abandon(struct amp_gemm_run *run);

#endif
