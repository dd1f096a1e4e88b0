/* The policy action `auto`: for each (site, shape) the first calls run
 * the candidate modes in shadow, in turn; once each candidate has an
 * error and AMP_AUTO_SAMPLES times (each beside FP32's), the fastest
 * candidate within the tolerance whose median time is below FP32's
 * converts the later calls (FP32 when none is): amp_auto_fastest's
 * rule, which timing noise does not sway between candidates of one
 * speed. A transient failure (no record or event, a capture, a refused
 * allocation) is not held against a candidate.
 * GEMMs try fp16, bf16 and tf32, and fp16x3 and tf32x3 when none of those
 * is within the tolerance; convolutions try allow-conversion, fp16 and
 * bf16. The candidates that run on half-precision copies (all but tf32
 * and tf32x3) need
 * Tensor Core friendly dimensions (amp_auto_half_fits): a GEMM without
 * them rules those out from the start and measures tf32 alone; a
 * convolution's copies pad its channels, so every one fits.
 * Sampled shadow calls (shadow-rate) keep measuring the choice; a choice
 * whose error goes over the tolerance gives way to the next fastest
 * candidate within it, or FP32. */
#ifndef AMP_AUTO_H
#define AMP_AUTO_H

#include "base/config.h"
#include "decide/policy.h"
#include "decide/site.h"

#define AMP_AUTO_CANDIDATES 6

/* Timed shadow calls a candidate needs before it is judged on their
 * median: one sample under timing noise decides by chance. */
#define AMP_AUTO_SAMPLES 3

/* The latest timed samples kept per candidate (its median's). */
#define AMP_AUTO_KEPT 5

/* FP32 calls a measuring (site, shape) waits for its shadow calls' results
 * before it issues one more. */
#define AMP_AUTO_WAIT_MAX 64

/* The least gain that counts: a candidate is faster than FP32 when FP32's
 * median time over its own (each pair timed in one call) is at least
 * this, and candidates whose median times are within this factor of the
 * fastest's are of one speed. A smaller difference is within what timing
 * noise makes of equal times. */
#define AMP_AUTO_GAIN 1.01

/* What a (site, shape) is doing. */
enum amp_auto_state {
    AMP_AUTO_MEASURING = 0,    /* candidates still run in shadow */
    AMP_AUTO_CHOSEN,           /* `choice` converts */
    AMP_AUTO_FP32,             /* no candidate within the tolerance and
                                  faster than FP32 */
};

/* One candidate at one (site, shape). Times are sums in milliseconds
 * over the timed shadow calls (the candidate, and the FP32 call beside
 * it), and the latest AMP_AUTO_KEPT of them one by one, which the choice
 * rests on (their medians); errors the worst over the measured ones. */
struct amp_auto_candidate {
    enum amp_mode mode;
    unsigned long long issued;   /* shadow calls decided */
    unsigned long long errors;   /* of those, errors harvested */
    unsigned long long timed;    /* of those, times harvested */
    unsigned long long untimed;  /* ran, its work or its times failed */
    unsigned long long warmups;  /* timed, but not counted: the first call
                                    of its delayed-scaling record, which
                                    takes the two passes later calls skip */
    double warm_ms, warm_fp32_ms; /* the first warm-up's times */
    struct amp_gemm_error worst; /* each field's worst over the measured
                                    calls (nonfinite, compared: their
                                    sums) */
    double candidate_ms, fp32_ms;
    double sample_ms[AMP_AUTO_KEPT];      /* sample `timed - 1` at */
    double sample_fp32_ms[AMP_AUTO_KEPT]; /*   index (timed - 1) % KEPT */
    int failed;                  /* fell back, or never timed: not chosen */
    int over;                    /* an error over the tolerance, or a
                                    non-finite element */
    int unfit;                   /* a half-precision candidate at a shape
                                    without the dimensions it needs
                                    (amp_auto_half_fits): never run */
};

/* A (site, shape)'s candidates and choice. */
struct amp_auto_view {
    enum amp_family family;
    int ncandidates;             /* tried so far (fp16x3, tf32x3 and
                                    bf16x9 join later) */
    int bf16x9;                  /* the GPU has BF16x9 (as the latest
                                    call's amp_auto_decide said) */
    struct amp_auto_candidate c[AMP_AUTO_CANDIDATES];
    enum amp_auto_state state;
    int choice;                  /* index in c when AMP_AUTO_CHOSEN */
    int changes;                 /* choices given up for drift */
    int waited;                  /* FP32 calls in a row while every
                                    unsettled candidate had enough shadow
                                    calls out (AMP_WHY_AUTO_WAIT) */
};

/* 1 when the call's dimensions suit the candidates that run on
 * half-precision copies (fp16, bf16, fp16x3, allow-conversion): a GEMM's
 * m, n and k, a convolution's C and K, all multiples of 8, the sizes
 * cuBLAS's and cuDNN's FP16 Tensor Core kernels are built for (16-byte
 * rows of FP16); else 0. tf32 runs on the program's own FP32 operands,
 * tf32x3 on FP32 copies, and they need nothing of them. */
int amp_auto_half_fits(const struct amp_policy_call *call);

/* The decision of an `auto` call, number `count` of its shape at its
 * site (`slot`: the (site, shape)'s, from amp_site_shape_count;
 * `half_fits`: amp_auto_half_fits of the call, which the (site, shape)'s
 * first call fixes; `bf16x9`: the call's GPU has cuBLAS's BF16x9
 * emulation, amp_dev_bf16x9), into
 * *out: shadow:CANDIDATE while measuring (the
 * candidate least tried of those still unsettled whose shadow calls out,
 * not yet harvested, are fewer than the samples it still needs), FP32
 * (AMP_WHY_AUTO_WAIT) while every unsettled candidate has enough out (a
 * host ahead of its device: its results are on their way), but for one
 * shadow call in every AMP_AUTO_WAIT_MAX such (results lost on the way
 * must not stop the measuring), the chosen mode (or
 * shadow:CHOSEN every `sample_period` calls; 0: never) once chosen, FP32
 * when nothing qualifies or the (site, shape) has no entry (a slot of
 * -1).
 * out->auto_slot names the (site, shape) for the results. */
void amp_auto_decide(struct amp_site *site, int slot,
                     enum amp_family family, int half_fits, int bf16x9,
                     int64_t count, int64_t sample_period,
                     struct amp_decision *out);

/* The tolerance the candidates are held to, in its norm (compared
 * through amp_error_over). A NULL bound, where a function takes one:
 * the policy's (amp_policy_tolerance, amp_policy_tolerance_norm). */
struct amp_auto_bound {
    double tolerance;
    enum amp_norm norm;
};

/* A harvested shadow error of `mode` at (site, slot); e NULL: the
 * candidate's work failed. A chosen mode over the bound gives way. */
void amp_auto_error(struct amp_site *site, int slot, enum amp_mode mode,
                    const struct amp_gemm_error *e,
                    const struct amp_auto_bound *bound);

/* A timed shadow call of `mode`: the candidate's and FP32's times; a
 * negative time: the call ran, or its work was refused (a failed
 * allocation), without being timed: four such calls before its samples
 * are in rule it out. `warmup`: the call set up state its later calls
 * reuse (delayed scaling's first call), so its time is not theirs: the
 * candidate's first such time is not counted and later shadow calls
 * measure it (a second one is: that state does not last at this shape,
 * and every call pays for it). A candidate warmed up but not timed
 * takes its warm-up time after 4 untimed calls. */
void amp_auto_time(struct amp_site *site, int slot, enum amp_mode mode,
                   double candidate_ms, double fp32_ms, int warmup,
                   const struct amp_auto_bound *bound);

/* A conversion of `mode` that fell back (the path could not run it). */
void amp_auto_failed(struct amp_site *site, int slot, enum amp_mode mode,
                     const struct amp_auto_bound *bound);

/* A copy of (site, slot)'s state; 0, or -1 when it has none. */
int amp_auto_get(const struct amp_site *site, int slot,
                 struct amp_auto_view *out);

/* FP32's time over c's, the median over its latest samples (each pair
 * timed together): what its choice rests on; NAN without samples. */
double amp_auto_median_speedup(const struct amp_auto_candidate *c);

/* Why candidate c was not chosen (NULL: it is eligible), into buf. */
const char *amp_auto_rejects(const struct amp_auto_candidate *c,
                             const struct amp_auto_bound *bound, char *buf,
                             size_t cap);

/* Adds to *out the worst error in `norm` of the candidate the (site,
 * shape) of `slot` converts with, and its shadow calls; 1 when it
 * converts with one (out->sites is the caller's to count), else 0. */
int amp_auto_chosen_worst(int slot, enum amp_norm norm,
                          struct amp_site_worst *out);

/* Forgets every state (a forked child starts clean). */
void amp_auto_forget(void);

#endif
