/* Call sites: where in the program a hooked call comes from, keyed by the
 * hooked API and a short call stack (the return address of the exported
 * hook and those of the functions above it: a wrapper that every layer
 * calls is as many sites as the layers that call it), and what the shim
 * has learnt about that site: the calling function and its module
 * (resolved once, when a policy rule or the summary needs them), how many
 * calls the policy decided there, and the shadow errors measured there;
 * and per (site, shape), in one bounded table for the process, its calls,
 * its demotion and its auto state. */
#ifndef AMP_SITE_H
#define AMP_SITE_H

#include "base/config.h"
#include "decide/symbolize.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Errors of a candidate mode against the FP32 result over one call (a
 * GEMM's batch or a convolution's output). */
struct amp_gemm_error {
    double max_abs;            /* max |candidate - fp32| */
    double max_rel;            /* max |candidate - fp32| / max |fp32|:
                                  relative error in the max norm */
    unsigned long long nonfinite; /* elements finite in FP32 but not in the
                                     candidate */
    double fro_rel;            /* ||candidate - fp32||_F / ||fp32||_F:
                                  relative error in the Frobenius norm */
    unsigned long long compared; /* elements compared: finite in FP32; 0
                                    when none was, and the errors above
                                    measure nothing */
};

/* The relative error of e in `norm`: max_rel or fro_rel. */
double amp_error_in(const struct amp_gemm_error *e, enum amp_norm norm);

/* The one comparison of a shadow error with a tolerance, for every
 * caller (site demotion, the report's over_tolerance, calibrate, the
 * policy's actions): 1 when the relative error in `norm` is over `tol`
 * (or NaN), or when the candidate made a non-finite element where FP32
 * did not; 0 when it is within. A HUGE_VAL tol (none applies) is over
 * only for a non-finite element or a NaN error. */
int amp_error_over(const struct amp_gemm_error *e, double tol,
                   enum amp_norm norm);

/* Return addresses a site is keyed by: the hook's and the one above it,
 * the function that called the hook's caller. Enough to tell apart the
 * layers that call one wrapper; a deeper key would also split one
 * layer's calls by the path above it (training and evaluation), each
 * then measuring and deciding on its own. */
#define AMP_SITE_FRAMES 2

/* (site, shape)s the process tells apart (amp_site_shape_count), over all
 * sites; a shape beyond them stays FP32 (AMP_WHY_SHAPE_LIMIT). The table
 * holds AMP_SITE_SHAPE_TABLE entries, filled to three quarters at most. */
#define AMP_SITE_SHAPE_TABLE 8192
#define AMP_SITE_SHAPE_MAX (AMP_SITE_SHAPE_TABLE / 4 * 3)

struct amp_auto_view;

/* One call site. Lives as long as the process; fields after the key are
 * read without a lock. */
struct amp_site {
    const char *api;          /* the hooked API's name (a static string) */
    const void *caller;       /* return address of the exported hook:
                                 stack[0] */
    const void *stack[AMP_SITE_FRAMES]; /* the call stack, the hook's
                                           return address first */
    int depth;                /* return addresses in stack, from 1 */
    atomic_int demoted;       /* 1: every call from here stays FP32 */
    atomic_int demoted_shapes; /* its (site, shape)s demoted */
    atomic_ullong calls;      /* calls the policy decided (amp_site_count) */
    atomic_ullong shadowed;   /* of those, decided to run in shadow mode */
    /* amp_site_symbolize(): 1 once caller and module are set. */
    atomic_int symbolized;
    char function[AMP_SYMBOL_LEN]; /* the caller as users know it (C++
                                      demangled, compiler suffixes
                                      dropped), or "0x1a2b" (its offset
                                      in the module) when no symbol
                                      covers it; "" outside any module */
    char symbol[AMP_SYMBOL_LEN];   /* the caller's symbol as the module's
                                      symbol table names it; "" if none */
    size_t symbol_base;       /* its length without compiler suffixes */
    char module[512];         /* the caller's module file */
    uintptr_t offset;         /* the return address in the module */
    /* Shadow measurements at this site, under the table's lock. */
    unsigned long long shadow_calls;   /* auto's included */
    unsigned long long auto_shadow_calls; /* auto's candidates' */
    double shadow_max_abs, shadow_max_rel, shadow_max_fro;
    unsigned long long shadow_nonfinite;
    unsigned long long shadow_compared; /* elements compared, summed */
    char demoted_why[160];    /* the first demotion's reason, the
                                 site's or one of its shapes' */
};

/* Most sites a process keeps; calls from further sites get NULL. */
#define AMP_SITE_MAX 1024

/* The site of a call of `api` whose hook returns to `caller`, made on
 * its first call: keyed by the call stack from caller up
 * (amp_caller_stack, AMP_SITE_FRAMES return addresses; call it from
 * within the hook's call). Lock-free when the site exists; NULL when the
 * table is full. `api` is compared by address: pass the same static
 * string every time. */
struct amp_site *amp_site_get(const char *api, const void *caller);

/* The site of (api, stack[0..depth)) as amp_site_get keys it. */
struct amp_site *amp_site_get_stack(const char *api, const void *const *stack,
                                    int depth);

/* 1 when every call from the site is to stay FP32. A NULL site is never
 * demoted. */
int amp_site_demoted(const struct amp_site *site);

/* 1 when the (site, shape) of `slot` (amp_site_shape_count) is to stay
 * FP32; a slot of -1 (none) is never demoted. */
int amp_site_shape_demoted(int slot);

/* A call of the (site, shape) of `slot` was captured into a CUDA graph,
 * where it runs converted or FP32: the first such call's is kept. A
 * program may capture the same calls again and update its executable
 * graph with the new capture, which the driver takes only if the two
 * have the same nodes; a converted call has other nodes than an FP32 one,
 * so a (site, shape) whose first capture ran FP32 (captured before the
 * shim set up in its context, while auto measured, in shadow) stays FP32
 * in later captures (amp_site_shape_captured_fp32). */
void amp_site_shape_captured(int slot, int converted);

/* 1 when the first captured call of the (site, shape) of `slot` ran FP32
 * in its graph; 0 otherwise, and for a slot of -1. */
int amp_site_shape_captured_fp32(int slot);

/* Sends every later call of the (site, shape) of `slot` to FP32, or with
 * a slot of -1 every later call from the site; the first demotion of
 * each is logged once at warn with the site's label and `reason`
 * (symbolizing the site). */
void amp_site_demote(struct amp_site *site, int slot, const char *reason);

/* Counts one call the policy decides at the site; returns its number,
 * from 1 (1 for a NULL site). */
uint64_t amp_site_count(struct amp_site *site);

/* Counts a call again as its decision counted an earlier one with the
 * same fields (a memo of a settled decision): the site's count when
 * `site_too`, the (site, shape)'s when slot >= 0. */
void amp_site_count_again(struct amp_site *site, int slot, int site_too);

/* Counts one call of the shape `key` (any value but 0, the same for the
 * same shape) at the site; returns its number among that shape's calls,
 * from 1. *slot (when slot is not NULL): the (site, shape)'s entry in the
 * process's table, from 0, made on its first call; -1 for a NULL site or
 * when the table holds AMP_SITE_SHAPE_MAX (site, shape)s already (the
 * call is then counted with its site, amp_site_count's last value, and
 * is to stay FP32: no (site, shape) can keep its results). Lock-free once
 * the entry exists. */
uint64_t amp_site_shape_count(struct amp_site *site, uint64_t key,
                              int *slot);

/* The auto state of the (site, shape) of `slot` (decide/auto.c's, read
 * and written under its lock): where its pointer lives, NULL for a slot
 * out of range. */
struct amp_auto_view **amp_site_shape_auto(int slot);

/* The site of `slot`, or NULL. */
struct amp_site *amp_site_shape_site(int slot);

/* The site's label for its frame `i` (1 to depth - 1: the functions
 * above its caller), as amp_site_label's; reads the module. Returns buf,
 * or NULL when the site has no such frame. */
const char *amp_site_frame_label(const struct amp_site *site, int i,
                                 char *buf, size_t cap);

/* Resolves the site's caller and module (once; reads the module's file). */
void amp_site_symbolize(struct amp_site *site);

/* The site's label, "FUNCTION (MODULE+0xOFFSET)" (amp_symbol_label),
 * symbolizing it; for a NULL site (the table was full) "other call sites
 * (the site table is full)". Returns buf; AMP_LABEL_LEN bytes hold it. */
const char *amp_site_label(struct amp_site *site, char *buf, size_t cap);

/* Adds one shadow call's errors to the site's and its (site, shape)'s
 * (`slot`, -1: none); an error over `tolerance` in `norm`
 * (amp_error_over, a non-finite element included) demotes that (site,
 * shape) (the site, without one), the reason naming the tolerance and
 * `source` (where it came from: "the policy's", "AMPSHIM_TOLERANCE's");
 * HUGE_VAL (no tolerance acts) only measures. */
void amp_site_shadow(struct amp_site *site, int slot,
                     const struct amp_gemm_error *e, double tolerance,
                     enum amp_norm norm, const char *source);

/* Counts one shadow call of an auto rule at the site, whose errors are
 * its candidate's (decide/auto.h), not the site's: they neither demote
 * it nor stand for its converted results. */
void amp_site_shadow_auto(struct amp_site *site);

/* The largest shadow error in `norm` over the (site, shape)s that are not
 * demoted (whose converted calls stand), and the shadow calls measured
 * there; for an auto rule's shapes, those of the candidate each converts
 * with (amp_auto_chosen_worst). */
struct amp_site_worst {
    double error;              /* 0 when nothing was measured */
    unsigned long long shadow_calls;
    unsigned long long compared; /* elements their shadow calls compared:
                                    0 when none was measurable */
    int sites;                 /* sites with shadow calls among them */
    int demoted;               /* sites left out: demoted, or with a
                                  demoted shape */
};
void amp_site_worst(enum amp_norm norm, struct amp_site_worst *out);

/* At exit: one line per demoted site and (site, shape), "ampshim[pid]:
 * demoted API at LABEL: REASON" (amp_site_label). */
void amp_site_summary(void);

/* Forgets every site (a forked child starts clean). */
void amp_site_forget(void);

#endif
