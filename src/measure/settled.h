/* Calls whose decision is settled: a per-thread memo of calls kept FP32
 * for good (decide/policy.h, struct amp_decision's `settled`), so that
 * the next call with the same fields from the same call stack is counted
 * where the first was and runs as made, without the site's look-up, the
 * policy, the harvest or the profiler's tables.
 *
 * A hook builds the key of its call (amp_settled_key), asks for it
 * (amp_settled_count) and takes its whole path when that says no, then
 * keeps what the whole path found (amp_settled_keep) when the call was
 * kept FP32 by a settled decision. A memo is stale once the decisions'
 * epoch moves (a demotion), its thread's process forked, or its place in
 * the profiler's table was reset; a call on a stream being captured and
 * a call at the debug log level take the whole path. A call due to be
 * timed by sample is timed on the memo's path. */
#ifndef AMP_MEASURE_SETTLED_H
#define AMP_MEASURE_SETTLED_H

#include "decide/policy.h"
#include "decide/site.h"
#include "measure/prof.h"

/* What tells a call's decision apart: the hook, the call stack (as the
 * site is told apart), the device, the fields a policy or the report
 * reads (the shape; math), and why the hook kept it before any decision
 * (`skip`, the hook's own reason: 0 for none). Zeroed, then filled, so
 * that it compares as bytes. */
struct amp_settled_key {
    const char *api;
    const void *frames[AMP_SITE_FRAMES];
    int depth;
    int device;
    int math;
    int skip;
    struct amp_shape shape;
};

/* What a kept call needs again. */
struct amp_settled {
    struct amp_site *site;
    int shape_slot;            /* the (site, shape) counted; -1: none */
    int site_counted;          /* the site's count moved too */
    int cover;                 /* the hook's coverage kind (enum amp_cover) */
    struct amp_prof_place place;
    unsigned epoch;            /* amp_decision_epoch() before deciding */
    int timed;                 /* its calls due to be timed by sample are
                                  (not a call the library refuses) */
    struct amp_prof_what what; /* the profiler's view, to time them */
};

/* The call stack of the hook whose return address is `caller`, into k
 * (the rest of k is the hook's to fill). */
void amp_settled_key_stack(struct amp_settled_key *k, const void *caller);

/* For a call with key k on `stream`: when the memo holds a settled
 * decision for it and the stream is not being captured, counts the call
 * as its first was counted, sets *cover and returns 1 (the hook runs the
 * original), or 2 when the call is due to be timed by sample: then
 * earlier calls' results are harvested, as the whole path would, and
 * `span` opened on the original where a sample can be taken
 * (amp_prof_fp32_begin; amp_prof_fp32_end closes it). Otherwise returns
 * 0 having counted nothing. */
int amp_settled_count(const struct amp_settled_key *k, amp_stream stream,
                      struct amp_prof_span *span, int *cover);

/* Keeps what the whole path found for a call with key k on `stream`
 * kept FP32 by a settled decision; nothing when the stream is being
 * captured (such calls note themselves for the graph's replays). 1 when
 * kept. */
int amp_settled_keep(const struct amp_settled_key *k,
                     const struct amp_settled *s, amp_stream stream);

/* A settled call as a hook holds it beside what tells its calls apart
 * there without a key (cuBLASLt: the descriptors' addresses and bytes and
 * the call's arguments): the key and the memo's record of it, copied when
 * the whole path kept them. */
struct amp_settled_held {
    int known;
    struct amp_settled_key key;
    struct amp_settled s;
    const void *stack_hint;    /* amp_caller_stack_hinted's, or NULL */
};

/* For a call like held's (same hook, shape, math and reason, which the
 * hook has checked) from the hook whose return address is `caller`: when
 * its call stack and device are held's, counts it as amp_settled_count
 * does and returns what that returns. */
int amp_settled_again(struct amp_settled_held *held, const void *caller,
                      amp_stream stream, struct amp_prof_span *span,
                      int *cover);

/* What the whole path read of a call whose decision is made at every
 * call (a converting one, or one that waits for auto): its site, what
 * the policy read of its fields (decide/policy.h) and what the profile
 * counts it as before any decision (the api, site, shape and FLOPs of
 * its what; the rest zero), the same for every call with its key, kept
 * per thread by the key so that the next such call skips the site's
 * look-up, the policy's reading and the profile's look-up (prof, which
 * the profile updates). */
struct amp_settled_read {
    struct amp_site *site;
    struct amp_policy_read policy;
    struct amp_prof_what what;
    struct amp_prof_hint prof;
};

/* amp_settled_count, and where it counts nothing and `read` is not NULL,
 * *read set to the read kept for key k, or NULL: the thread's own, which
 * its call may update (prof) until it keeps another read. Both tables
 * are looked at the key's one place. */
int amp_settled_count_or_read(const struct amp_settled_key *k,
                              amp_stream stream, struct amp_prof_span *span,
                              int *cover, struct amp_settled_read **read);

/* Keeps r (read valid) for key k: the kept copy, or NULL. */
struct amp_settled_read *
amp_settled_read_keep(const struct amp_settled_key *k,
                      const struct amp_settled_read *r);

/* 1 when the memo is in use: not at the debug log level, where every
 * call's decision is logged. */
int amp_settled_on(void);

#endif
