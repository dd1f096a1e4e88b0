/* Policies: the rule language of policy/README.md (parse, match a call,
 * cache decisions per site and shape), finding the file that applies to
 * this process, and the decision a hook asks for. */
#ifndef AMP_POLICY_H
#define AMP_POLICY_H

#include "base/config.h"
#include "base/status.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Bounds (each has its own error message) ----------------------------- */

#define AMP_POLICY_MAX_LINE 1024    /* bytes per line, newline excluded */
#define AMP_POLICY_MAX_RULES 256    /* rule lines, the default excluded */
#define AMP_POLICY_MAX_NODES 4096   /* tests and operators of all rules */
#define AMP_POLICY_MAX_DEPTH 8      /* nested parentheses and nots */
#define AMP_POLICY_MAX_MATCHES 32   /* match lines */
#define AMP_POLICY_STRINGS 16384    /* bytes of globs, NULs included */
#define AMP_POLICY_NAME_LEN 512     /* the file name kept for messages */
#define AMP_POLICY_BUILD_ID_MAX 64  /* bytes of an ELF build-id */

/* ---- A call, as the matcher sees it -------------------------------------- */

enum amp_family {
    AMP_FAMILY_GEMM = 0,
    AMP_FAMILY_CONV,
    AMP_FAMILY_COUNT,
};

/* The fields a condition can test. GEMM: m n k batch transa transb
 * epilogue; convolution: N C H W K R S groups layout; every call: math,
 * call. */
enum amp_field {
    AMP_FIELD_M = 0,
    AMP_FIELD_N,
    AMP_FIELD_K,
    AMP_FIELD_BATCH,
    AMP_FIELD_TRANSA,   /* AMP_OP_N 0, AMP_OP_T 1 */
    AMP_FIELD_TRANSB,
    AMP_FIELD_CONV_N,
    AMP_FIELD_CONV_C,
    AMP_FIELD_CONV_H,
    AMP_FIELD_CONV_W,
    AMP_FIELD_CONV_K,
    AMP_FIELD_CONV_R,
    AMP_FIELD_CONV_S,
    AMP_FIELD_GROUPS,
    AMP_FIELD_LAYOUT,   /* enum amp_layout */
    AMP_FIELD_EPILOGUE, /* enum amp_epi: GEMMs */
    AMP_FIELD_MATH,     /* enum amp_math: what the program asked for */
    AMP_FIELD_CALL,     /* 1-based call number at the site */
    AMP_FIELD_COUNT,
};

enum amp_layout {
    AMP_LAYOUT_NCHW = 0,
    AMP_LAYOUT_NHWC,
};

/* The math a call's program asked for: pedantic is cuBLAS's
 * CUBLAS_PEDANTIC_MATH or CUBLAS_COMPUTE_32F_PEDANTIC, a cuBLASLt compute
 * type of strict or emulated FP32, or cuDNN's CUDNN_FMA_MATH. Such a call
 * is decided only by a rule whose condition names `math` (the default and
 * the other rules leave it FP32, AMP_POLICY_PEDANTIC). */
enum amp_math {
    AMP_MATH_DEFAULT = 0,
    AMP_MATH_PEDANTIC,
};

/* What a GEMM does to its result: cuBLASLt's forward epilogues (a bias
 * added per row, then ReLU or GELU, with the auxiliary output the
 * backward pass reads); cuBLAS GEMMs are AMP_EPI_DEFAULT. */
enum amp_epi {
    AMP_EPI_DEFAULT = 0,
    AMP_EPI_RELU,
    AMP_EPI_RELU_AUX,
    AMP_EPI_BIAS,
    AMP_EPI_RELU_BIAS,
    AMP_EPI_RELU_AUX_BIAS,
    AMP_EPI_GELU,
    AMP_EPI_GELU_AUX,
    AMP_EPI_GELU_BIAS,
    AMP_EPI_GELU_AUX_BIAS,
    AMP_EPI_COUNT,
};

/* "relu-aux-bias": the name a policy and a report give it. */
const char *amp_epi_name(enum amp_epi e);

/* One call. Fields the call does not have are not in `present`; a
 * condition on such a field is false. */
struct amp_policy_call {
    enum amp_family family;
    const char *symbol;          /* the hooked API; a static string */
    int64_t field[AMP_FIELD_COUNT];
    unsigned present;            /* bit (1u << field) per field set */
    const char *caller;          /* the calling function as users know it
                                    (C++ demangled, compiler suffixes
                                    dropped), or its offset in the module
                                    ("0x1a2b"); NULL: unknown */
    const char *caller_symbol;   /* the same function's symbol, as the
                                    symbol table names it; NULL: none */
    size_t caller_symbol_base;   /* its length without the compiler's
                                    suffixes (amp_symbol_base) */
    const char *module;          /* the caller's module file; NULL: unknown */
    const void *site;            /* the cache key's site; NULL: none */
};

/* Sets a field and marks it present. */
/* 1 when the program asked the call for pedantic or FMA math (its math
 * field is AMP_MATH_PEDANTIC). */
int amp_policy_call_pedantic(const struct amp_policy_call *c);

void amp_policy_call_set(struct amp_policy_call *call, enum amp_field field,
                         int64_t value);

/* ---- A parsed policy --------------------------------------------------- */

struct amp_policy_action {
    enum amp_mode mode;          /* AMP_MODE_SHADOW: candidate is measured */
    enum amp_mode candidate;
    int automatic;               /* "auto" (decide/auto.h): each (site,
                                    shape) measures the candidates and
                                    converts with the fastest within the
                                    tolerance; mode is then fp16, the
                                    first candidate */
    int verify;                  /* "verify N": the first N calls of each
                                    shape at a site run as shadow:mode */
};

/* A condition is a tree of nodes. */
enum amp_node_kind {
    AMP_NODE_AND = 0,
    AMP_NODE_OR,
    AMP_NODE_NOT,
    AMP_NODE_FAMILY,             /* value: enum amp_family */
    AMP_NODE_LT,                 /* the call is a cuBLASLt matmul */
    AMP_NODE_SYMBOL,             /* text: glob */
    AMP_NODE_CALLER,
    AMP_NODE_MODULE,
    AMP_NODE_COMPARE,            /* field op value */
    AMP_NODE_DIVIDES,            /* field % modulus op value */
};

enum amp_cmp {
    AMP_CMP_LT = 0,
    AMP_CMP_LE,
    AMP_CMP_EQ,
    AMP_CMP_NE,
    AMP_CMP_GE,
    AMP_CMP_GT,
};

struct amp_policy_node {
    uint8_t kind;                /* enum amp_node_kind */
    uint8_t op;                  /* enum amp_cmp */
    uint8_t field;               /* enum amp_field */
    int16_t left, right;         /* operands of and, or, not */
    int64_t value, modulus;
    uint32_t text;               /* offset of a glob in strings */
};

struct amp_policy_rule {
    struct amp_policy_action action;
    int line, col;               /* where the rule starts */
    int root;                    /* condition node, -1: always */
    unsigned uses;               /* the fields its condition reads (1 <<
                                    enum amp_field) */
};

struct amp_policy_match {
    uint32_t exe;                /* offset of the glob, 0: any */
    unsigned char build_id[AMP_POLICY_BUILD_ID_MAX];
    size_t build_id_len;         /* 0: any */
    int line;
};

/* Settings: a negative value (-1) was not set. */
struct amp_policy_settings {
    double tolerance;            /* max shadow relative error */
    enum amp_norm tolerance_norm; /* in which norm (max unless named) */
    double shadow_rate;          /* share of converted calls measured */
    int64_t min_size;            /* multiply-adds under which calls stay FP32 */
    int64_t scratch_max;         /* bytes of scratch per call */
    int library_calls;           /* `set library-calls convert`: the calls
                                    NVIDIA's libraries make go to the
                                    rules; 0 (fp32): they stay FP32 */
};

struct amp_policy {
    char name[AMP_POLICY_NAME_LEN];
    int nmatches;
    struct amp_policy_match matches[AMP_POLICY_MAX_MATCHES];
    struct amp_policy_settings set;
    int nrules;
    struct amp_policy_rule rules[AMP_POLICY_MAX_RULES];
    struct amp_policy_action fallback; /* the closing default */
    int default_line;
    int uses_site;               /* a rule tests caller or module */
    int nnodes;
    struct amp_policy_node nodes[AMP_POLICY_MAX_NODES];
    size_t strings_used;
    char strings[AMP_POLICY_STRINGS];
};

/* Where a policy is wrong: "name:line:col: message". */
struct amp_policy_error {
    int line, col;
    char message[256];
    char text[AMP_POLICY_NAME_LEN + 300]; /* the whole line for a log */
};

/* Parses len bytes of text named `name` (a file name, "<built-in>") into
 * p. Fails with AMP_ERR_INVALID at the first error, which err describes;
 * p is then unusable as a whole. Allocates nothing. */
enum amp_status amp_policy_parse(const char *text, size_t len,
                                 const char *name, struct amp_policy *p,
                                 struct amp_policy_error *err);

/* Parses only the lines of text whose first word is `match` (each in
 * full, before any rule or default line), for a file with an error
 * elsewhere: p then holds its match lines and nothing else usable. */
enum amp_status amp_policy_parse_matches(const char *text, size_t len,
                                         const char *name,
                                         struct amp_policy *p,
                                         struct amp_policy_error *err);

/* Reads and parses a file; a file that cannot be read is an error at
 * line 0, column 0. */
enum amp_status amp_policy_load(const char *path, struct amp_policy *p,
                                struct amp_policy_error *err);

/* As amp_policy_load; when the file has an error, also parses just its
 * match lines into p (amp_policy_parse_matches): *matches_read is 1 when
 * they could be read (p->nmatches of them, maybe none), 0 when the file
 * could not be read or a match line has an error, which match_err (when
 * not NULL) describes. */
enum amp_status amp_policy_load_matches(const char *path,
                                        struct amp_policy *p,
                                        struct amp_policy_error *err,
                                        int *matches_read,
                                        struct amp_policy_error *match_err);

/* ---- Matching ------------------------------------------------------------- */

/* Why a decision was made. */
enum amp_decision_why {
    AMP_WHY_RULE = 0,            /* a rule matched */
    AMP_WHY_DEFAULT,             /* no rule matched: the closing default */
    AMP_WHY_MIN_SIZE,            /* smaller than min-size: FP32 */
    AMP_WHY_VERIFY,              /* a rule's verify: shadow:mode */
    AMP_WHY_SAMPLE,              /* shadow-rate: shadow:mode */
    AMP_WHY_DEMOTED,             /* the site's, or the (site, shape)'s,
                                    error exceeded tolerance */
    AMP_WHY_ENV_MODE,            /* AMPSHIM_MODE overrides the policy */
    AMP_WHY_BROKEN,              /* the policy has an error: FP32 */
    AMP_WHY_BASELINE,            /* the first call of its shape at its
                                    site (AMPSHIM_BASELINE): shadow:mode */
    AMP_WHY_AUTO,                /* an auto rule: its (site, shape)'s
                                    candidate in shadow, its choice, or
                                    FP32 when nothing qualifies */
    AMP_WHY_SHAPE_LIMIT,         /* the (site, shape) table is full: a
                                    shape with no entry stays FP32 */
    AMP_WHY_AUTO_WAIT,           /* an auto rule still measuring, every
                                    candidate's shadow calls out: FP32
                                    until their results are back */
    AMP_WHY_PEDANTIC,            /* the program asked for pedantic or FMA
                                    math and no rule naming `math` took
                                    the call: FP32 */
    AMP_WHY_CAPTURED,            /* a call on a stream being captured whose
                                    (site, shape) ran FP32 in its first
                                    capture: FP32, so that the captures
                                    have the same nodes
                                    (amp_site_shape_captured) */
};

struct amp_decision {
    enum amp_mode mode;          /* what to run */
    enum amp_mode candidate;     /* for AMP_MODE_SHADOW */
    enum amp_decision_why why;
    int line;                    /* the deciding rule's line, 0: none */
    uint64_t scratch_max;        /* bytes of scratch this call may use */
    int automatic;               /* an auto rule decided: its results go
                                    to (site, auto_slot) (decide/auto.h) */
    int auto_slot;               /* -1: the (site, shape) has no state */
    int shape_slot;              /* the (site, shape)'s entry
                                    (amp_site_shape_count); -1: none */
    int delivers;                /* a shadow run whose candidate's result
                                    the program gets, the FP32 original
                                    measured beside it: AMPSHIM_MODE's
                                    baseline call (a forced mode forces
                                    every call) */
    int fp32_first;              /* a shadow run times the FP32 original
                                    first, then the candidate: every
                                    other shadow run of a (site, shape)
                                    (amp_shadow_fp32_first) */
    int settled;                 /* every later call with the same
                                    fields at this (site, shape) gets this
                                    decision while amp_decision_epoch()
                                    stays: an FP32 decision that no count
                                    moves (no rule tests `call`, no verify
                                    or sample window, auto's FP32) */
    int site_counted;            /* the site's call count moved
                                    (amp_site_count) */
};

/* A number that moves whenever a settled decision may no longer hold
 * (an auto state, a demotion, the policy): memos of settled decisions
 * made under another number are stale. */
unsigned amp_decision_epoch(void);
void amp_decision_epoch_next(void);

/* Whether the nth shadow run (from 1) of its kind at a (site, shape)
 * runs the FP32 original first: the even ones, so that the two products
 * take turns at following the other (on a GPU the second finds the
 * operands the first left in its caches). */
int amp_shadow_fp32_first(int64_t nth);

const char *amp_decision_why_name(enum amp_decision_why why);

/* The rule for a call with count `count` at its site: the index of the
 * first matching rule, or p->nrules for the default; AMP_POLICY_SMALL
 * when the call is under min-size. No caching, no allocation. */
#define AMP_POLICY_SMALL (-1)
/* A pedantic call (AMP_MATH_PEDANTIC) no rule naming `math` matched. */
#define AMP_POLICY_PEDANTIC (-2)
int amp_policy_match(const struct amp_policy *p,
                     const struct amp_policy_call *call);

/* Turns a match (a rule index, p->nrules, AMP_POLICY_SMALL or
 * AMP_POLICY_PEDANTIC) into the
 * decision for the call number `count` of its shape at its site: verify
 * and shadow-rate make shadow:mode of a converting mode. */
void amp_policy_action(const struct amp_policy *p, int match, int64_t count,
                       struct amp_decision *out);

/* shadow-rate as a period: every Nth call of a shape is sampled; 0 for
 * none. */
int64_t amp_policy_sample_period(const struct amp_policy *p);

/* ---- The decision cache --------------------------------------------------- */

#define AMP_POLICY_CACHE_SIZE 4096 /* entries; further keys are not cached */
#define AMP_POLICY_CACHE_DYNAMIC 8 /* count-dependent rules kept per key */

struct amp_policy_cache_entry;

/* Decisions per (site, family, symbol, fields other than call). Lookups
 * are lock-free; inserts take a lock. */
struct amp_policy_cache {
    const struct amp_policy *policy;
    struct amp_policy_cache_entry *entries; /* AMP_POLICY_CACHE_SIZE */
    atomic_ullong hits, misses;             /* lookups that found a key,
                                               and that did not */
};

/* Sets up cache for p over caller-provided storage for
 * AMP_POLICY_CACHE_SIZE entries (amp_policy_cache_bytes()). */
size_t amp_policy_cache_bytes(void);
void amp_policy_cache_init(struct amp_policy_cache *cache,
                           const struct amp_policy *p, void *storage);

/* As amp_policy_match, cached: a repeated key costs a hash lookup (and
 * the count-dependent rules that matched the key otherwise). */
int amp_policy_cached_match(struct amp_policy_cache *cache,
                            const struct amp_policy_call *call);

/* ---- Which file applies to this process ----------------------------------- */

struct amp_program {
    char exe[4096];              /* the executable's path */
    const char *name;            /* its last component, inside exe */
    unsigned char build_id[AMP_POLICY_BUILD_ID_MAX];
    size_t build_id_len;         /* 0: none */
};

/* This process: /proc/self/exe and the main program's build-id note. */
void amp_program_self(struct amp_program *prog);

/* A file's NT_GNU_BUILD_ID; 0 on success. */
int amp_elf_build_id(const char *path, unsigned char *out, size_t cap,
                     size_t *len);

/* The program at path (resolved as /proc/self/exe would show it) and its
 * build-id note, as amp_program_self sees itself. */
void amp_program_of(const char *path, struct amp_program *prog);

/* 1 when p's match lines accept prog (a file with none accepts all). */
int amp_policy_applies(const struct amp_policy *p,
                       const struct amp_program *prog);

/* The line of p's first match line that accepts prog; 0 when p has no
 * match line (it accepts every program); -1 when none accepts it. */
int amp_policy_accepting_line(const struct amp_policy *p,
                              const struct amp_program *prog);

enum amp_policy_source {
    AMP_SOURCE_BUILTIN = 0,      /* no file applied */
    AMP_SOURCE_ENV,              /* AMPSHIM_POLICY */
    AMP_SOURCE_USER,             /* the per-user directory */
    AMP_SOURCE_SYSTEM,           /* a system directory */
};

/* How the chosen file came to apply to the program. */
enum amp_policy_accept {
    AMP_ACCEPT_NOT_CONSULTED = 0, /* AMPSHIM_POLICY, the built-in */
    AMP_ACCEPT_LINE,             /* its match line match_line accepts it */
    AMP_ACCEPT_NO_MATCH_LINE,    /* it has none: every program */
    AMP_ACCEPT_UNREADABLE,       /* broken, its match lines unreadable
                                    (match_error): every program */
};

/* A file the search looked at and passed over. */
struct amp_policy_skipped {
    char path[AMP_POLICY_NAME_LEN];
    enum amp_policy_source source;
    int broken;                  /* it has an error (error_*), but its
                                    match lines do not accept the program */
    int error_line, error_col;
    char error_message[256];
};

#define AMP_POLICY_SKIPPED_MAX 16 /* skipped files kept in the trail */

/* What amp_policy_find chose, and the trail that led there. */
struct amp_policy_found {
    enum amp_policy_source source;
    int broken;                  /* the chosen file has an error */
    struct amp_policy_error error;
    enum amp_policy_accept accept;
    int match_line;              /* AMP_ACCEPT_LINE: the accepting line */
    struct amp_policy_error match_error; /* AMP_ACCEPT_UNREADABLE: why */
    char path[4096];             /* "" for the built-in */
    char why[768];               /* one line for the log and the report */
    int nskipped;                /* files passed over before it; the
                                    first AMP_POLICY_SKIPPED_MAX kept */
    int nskipped_broken;         /* of them, with an error */
    struct amp_policy_skipped skipped[AMP_POLICY_SKIPPED_MAX];
};

/* Fills p with the policy for prog: AMPSHIM_POLICY; else the first file
 * (*.policy, in name order) of $XDG_CONFIG_HOME/ampshim/policies (default
 * ~/.config/ampshim/policies), then of each $XDG_CONFIG_DIRS entry's
 * ampshim/policies (default /etc/xdg), then /etc/ampshim/policies, whose
 * match lines accept prog; else the built-in default. A file with an
 * error applies to the programs its match lines accept (every program
 * when they cannot be read, or it has none): for those it ends the
 * search, found->broken, p unusable; for others it is skipped. */
void amp_policy_find(amp_getenv_fn getenv_fn, const struct amp_program *prog,
                     struct amp_policy *p, struct amp_policy_found *found);

/* The built-in default policy's text (policy/default.policy). */
const char *amp_policy_builtin(size_t *len);

/* ---- The process's policy, for the hooks ---------------------------------- */

/* Called once at start-up with the configuration: finds and loads the
 * policy (not when AMPSHIM_MODE is set) and logs which one and why. */
void amp_policy_start(const struct amp_config *cfg);

/* The decision for one call. call->site is the call's struct amp_site
 * (or NULL); its symbol and module are resolved when a rule needs them.
 * The site's verdicts are what is harvested so far: the caller harvests
 * first (amp_harvest, at a bounded cost).
 * Never fails. */
void amp_policy_decide(const struct amp_policy_call *call,
                       struct amp_decision *out);

struct amp_site;

/* What the policy reads of a call's fields (not its count): the same for
 * every call with the same fields at the same site, so that a hook can
 * keep it for the next such call (measure/settled.h) and decide that one
 * with amp_policy_decide_read alone. `valid` 0: the policy reads the
 * call's count too (a rule tests `call`), so it is read with each call. */
struct amp_policy_read {
    int valid;
    int pedantic;                /* amp_policy_call_pedantic */
    int match;                   /* an active policy's rules' match */
    uint64_t shape_key;          /* the (site, shape)'s key; 0: none */
    enum amp_family family;
    int half_fits;               /* amp_auto_half_fits */
};

/* Reads call (its site set, as for amp_policy_decide) into *r. */
void amp_policy_read(const struct amp_policy_call *call,
                     struct amp_policy_read *r);

/* The decision for a call at `site` whose fields read *r (valid), as
 * amp_policy_decide would give it: the call is counted at its site and
 * (site, shape) as there. */
void amp_policy_decide_read(struct amp_site *site,
                            const struct amp_policy_read *r,
                            struct amp_decision *out);

/* A baseline shadow decision (AMP_WHY_BASELINE) back to its mode, for a
 * call that cannot run in shadow (its stream is being captured), or whose
 * converted result could not reach the program from a shadow run (a
 * cuBLASLt epilogue's auxiliary output under AMPSHIM_MODE): that shape at
 * that site then has no FP32 time. Other decisions stay. */
void amp_policy_no_baseline(struct amp_decision *out);

/* 1 + the (site, shape) slot of an auto rule's decision (decide/auto.h),
 * as the paths and the profiler carry it; 0 for any other decision. */
int amp_decision_auto_shape(const struct amp_decision *dec);

/* 1 + the (site, shape) slot of a decision (its shadow errors demote
 * that (site, shape)); 0 when it has none. */
int amp_decision_shape(const struct amp_decision *dec);

/* 1 when dec converts (not in shadow) a (site, shape) whose first
 * captured call ran FP32 (decide/site.h, amp_site_shape_captured): on a
 * stream being captured the caller keeps the call FP32 (AMP_WHY_CAPTURED),
 * so that a graph update with the new capture finds the same nodes. */
int amp_decision_captured_fp32(const struct amp_decision *dec);

/* Keeps dec FP32 (AMP_WHY_CAPTURED) where amp_decision_captured_fp32
 * says so and `stream` (an amp_stream) is being captured: what the GEMM
 * and convolution policies do last. */
void amp_decision_keep_captured(struct amp_decision *dec, void *stream);

/* AMP_MODE_FP32 when no call can be converted (AMPSHIM_MODE=fp32, a
 * broken policy, a policy whose every action is fp32), else
 * AMP_MODE_FP16: an eligibility mode for amp_gemm_decide. */
enum amp_mode amp_policy_may_convert(void);

/* 1 when the active policy says `set library-calls convert`: a call that
 * one of NVIDIA's libraries makes (base/caller.h) is decided by its rules
 * like the program's own; 0 (AMPSHIM_MODE, a broken policy, none, and
 * every policy that does not say so): such calls stay FP32. */
int amp_policy_library_calls(void);

/* The tolerance shadow errors are held to, one precedence for every
 * reader: AMPSHIM_TOLERANCE when set (under AMPSHIM_MODE too), else the
 * active policy's `set tolerance`; HUGE_VAL when none applies (no
 * setting, AMPSHIM_MODE without AMPSHIM_TOLERANCE, a broken policy).
 * Compare an error with it only through amp_error_over (site.h). */
double amp_policy_tolerance(void);

/* The norm of amp_policy_tolerance (AMP_NORM_MAX when none applies). */
enum amp_norm amp_policy_tolerance_norm(void);

/* Where amp_policy_tolerance comes from, for messages, into buf:
 * "AMPSHIM_TOLERANCE", "the built-in policy", "policy FILE"; when none
 * applies, why: "AMPSHIM_MODE", "policy FILE sets none", "a broken
 * policy". Returns buf. */
const char *amp_policy_tolerance_source(char *buf, size_t cap);

/* The tolerance that demotes sites, as amp_site_shadow takes it: the
 * tolerance, or HUGE_VAL where one only measures (AMPSHIM_MODE=shadow,
 * whose results stay FP32). */
double amp_policy_tolerance_demotes(void);

/* Which policy decides this process's calls, for the report. */
struct amp_policy_info {
    const char *source;          /* "AMPSHIM_MODE", "AMPSHIM_POLICY",
                                    "user", "system", "built-in", or
                                    "none" before start-up */
    const char *path;            /* the file; NULL for none */
    const char *why;             /* one line: how it was chosen */
    int broken;                  /* it has an error: nothing converts */
    enum amp_mode mode;          /* AMPSHIM_MODE's, when source says so */
    enum amp_mode candidate;
};

void amp_policy_info(struct amp_policy_info *out);

#endif
