/* What every cuBLAS GEMM hook shares (cublas_hook.c; the types of a
 * call, cublas.c): the guard, the converted path on the shim's own
 * handle and the record. No vendor
 * types, so that the legacy hooks (cublas.h) and the v2 hooks
 * (cublas_v2.h) can both use it. */
#ifndef AMP_CUBLAS_HOOK_H
#define AMP_CUBLAS_HOOK_H

#include "measure/coverage.h"
#include "measure/prof.h"
#include "measure/stats.h"
#include "run/gemm.h"

struct amp_settled_held;

/* One hooked call in flight. */
struct amp_hook {
    struct amp_api_stats *stats;
    int entered;              /* amp_process_enter() succeeded */
    int shadow;               /* run waits for the original call */
    enum amp_outcome outcome;
    /* The coverage meter's view: the kind of an FP32 call kept FP32 (its
     * reason) or of a passthrough (its precision), AMP_COVER_COUNT for a
     * call that is no GEMM; the call's FLOPs. */
    enum amp_cover cover;
    double flops;
    struct amp_gemm_run run;
    struct amp_prof_span prof; /* the converted call's measurement */
    /* An FP32-first shadow run's candidate, queued after the original
     * (amp_shadow_complete): its vendor and the hook's record of the
     * call, which lives until amp_hook_end. */
    const struct amp_gemm_vendor *vendor;
    const void *vendor_call;
    void *own;
    /* Where the hook holds its call's settled decision (measure/settled.h)
     * when the whole path keeps one; NULL (amp_hook_enter's): nowhere. */
    struct amp_settled_held *held;
};

enum amp_hook_next {
    AMP_HOOK_ORIGINAL = 0,    /* run the original call, then amp_hook_end */
    AMP_HOOK_DONE,            /* the hook returns now (converted: success) */
};

/* The guard: 1 when the shim acts on this call (counted by the
 * amp_hook_gemm or amp_hook_end that must follow), 0 to pass it through
 * uncounted (disabled, or re-entered from inside the shim). */
int amp_hook_enter(struct amp_hook *h, struct amp_api_stats *stats);

/* Decides d and runs its converted path: AMP_HOOK_DONE when the caller's C
 * holds the result. Otherwise nothing of the caller's was written and the
 * hook runs the original call with its unchanged arguments. The steps go
 * to cuBLAS's Ex GEMMs. */
enum amp_hook_next amp_hook_gemm(struct amp_hook *h,
                                 const struct amp_gemm_desc *d);

/* 1 when a cublasComputeType_t is an FP32 compute type (*pedantic: one
 * that asks for strict or emulated FP32, which stays FP32), 0 else. */
int amp_compute_fp32(int compute, int *pedantic);

/* The cublasComputeType_t, as an int, that a step's compute type names
 * (CUBLAS_COMPUTE_32F, _32F_FAST_TF32, _32F_EMULATED_16BFX9): for the
 * cuBLAS and cuBLASLt steps alike. */
int amp_compute_vendor(enum amp_compute c);

/* The coverage kind of a call the shim passes through, by the
 * cudaDataType of its A (and C): FP32 operands with another compute or
 * output type are FP32 the shim does not convert. */
enum amp_cover amp_cover_of_data(int type_a, int type_c);

/* How a converted call's steps reach a library other than cuBLAS. */
struct amp_gemm_vendor {
    /* The calling thread's own handle (and what goes with it) for dev's
     * context, made when `make`; NULL when there is none. */
    void *(*own)(struct amp_dev *dev, int make);
    /* Issues run's steps in order on own, on run->stream; `call` is the
     * hook's own record of the call. AMP_OK when every step succeeded. */
    enum amp_status (*issue)(void *own, const void *call,
                             struct amp_gemm_run *run);
    /* 1 when the library would accept the call as made (what the
     * descriptor cannot say: the program's algorithm, its workspace);
     * NULL: every call the descriptor says is valid. */
    int (*accepts)(const void *call);
};

/* The converted path of one GEMM, for a hook that counts on its own (the
 * grouped calls, one descriptor per group): amp_gemm_try decides d and
 * runs it without counting, filling h->outcome and h->shadow, and
 * AMP_HOOK_DONE when the caller's C holds the result; after the original
 * call, amp_shadow_complete ends a shadow run; amp_hook_cover is the
 * call's coverage kind from its outcome; amp_cover_of_skip the kind of a
 * call kept FP32 for skip; amp_desc_fits_int 1 when d's sizes fit the int
 * Ex GEMMs. */
enum amp_hook_next amp_gemm_try(struct amp_hook *h,
                                const struct amp_gemm_desc *call,
                                const struct amp_gemm_vendor *v,
                                const void *vendor_call);
void amp_shadow_complete(struct amp_hook *h, int original_ok);
enum amp_cover amp_hook_cover(const struct amp_hook *h);
enum amp_cover amp_cover_of_skip(enum amp_gemm_skip skip);
int amp_desc_fits_int(const struct amp_gemm_desc *d);

/* cuBLAS's own steps on the Ex GEMMs (cublas_steps.c): amp_hook_gemm's
 * vendor. */
extern const struct amp_gemm_vendor amp_cublas_vendor;

/* amp_hook_gemm with the steps issued through v. */
enum amp_hook_next amp_hook_gemm_on(struct amp_hook *h,
                                    const struct amp_gemm_desc *d,
                                    const struct amp_gemm_vendor *v,
                                    const void *call);

/* After the original call, whose success original_ok says: completes a
 * shadow run, counts the call and leaves the guard. */
void amp_hook_end(struct amp_hook *h, int original_ok);

#endif
