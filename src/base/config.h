/* Configuration from the AMPSHIM_* environment variables, read once. */
#ifndef AMP_CONFIG_H
#define AMP_CONFIG_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

enum amp_log_level {
    AMP_LOG_OFF = 0,
    AMP_LOG_ERROR,
    AMP_LOG_WARN,
    AMP_LOG_INFO,
    AMP_LOG_DEBUG,
};

/* Precision modes (docs/design.md). */
enum amp_mode {
    AMP_MODE_FP32 = 0, /* the original call */
    AMP_MODE_FP16,     /* scaled FP16 operands, FP32 accumulation */
    AMP_MODE_BF16,     /* BF16 operands, FP32 accumulation */
    AMP_MODE_TF32,     /* FP32 operands, CUBLAS_COMPUTE_32F_FAST_TF32 */
    AMP_MODE_FP16X3,   /* hi + lo FP16 split, three FP16 GEMMs */
    AMP_MODE_SHADOW,   /* FP32 result; the candidate mode measured beside */
    /* Convolutions: FP32 data, cuDNN's CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
     * on the shim's copy of the descriptor. GEMMs run it as fp16. */
    AMP_MODE_ALLOW_CONVERSION,
    AMP_MODE_TF32X3,   /* hi + lo TF32 split, two TF32 GEMMs (one of twice
                          K): FP32 accuracy, FP32's range */
    AMP_MODE_BF16X9,   /* FP32 operands, cuBLAS's own BF16x9 emulation
                          (CUBLAS_COMPUTE_32F_EMULATED_16BFX9): FP32
                          accuracy; GEMMs on compute capability 10.0 and
                          10.3 only */
    AMP_MODE_COUNT,
};

/* The norm a tolerance bounds the candidate's error in, relative to the
 * FP32 result's norm (decide/site.h, amp_error_in). */
enum amp_norm {
    AMP_NORM_MAX = 0,  /* max |cand - fp32| / max |fp32| over a call */
    AMP_NORM_FRO,      /* ||cand - fp32||_F / ||fp32||_F over a call */
};

#define AMP_CONFIG_MAX_PROBLEMS 8
#define AMP_CONFIG_PROBLEM_LEN 320
#define AMP_CONFIG_PATH_LEN 4096
#define AMP_CONFIG_FP32_ENV 4

struct amp_config {
    int disabled;                 /* AMPSHIM_DISABLE: pure passthrough */
    enum amp_mode mode;           /* AMPSHIM_MODE */
    int mode_set;                 /* AMPSHIM_MODE was set (and valid): it
                                     overrides the policy */
    /* The mode a shadow run measures: AMPSHIM_MODE=shadow is shadow:fp16;
     * shadow:bf16, shadow:tf32, shadow:fp16x3, shadow:tf32x3,
     * shadow:bf16x9 and shadow:allow-conversion choose another. */
    enum amp_mode shadow_candidate;
    /* AMPSHIM_BASELINE=first (default): the first call of each shape at
     * a site that would convert without being measured runs its FP32
     * original beside it (a shadow run; under AMPSHIM_MODE one that gives
     * the program the mode's result), so that every converted (site,
     * shape) has an FP32 time; off: no. */
    int baseline;
    /* AMPSHIM_TOLERANCE=X[:NORM]: the largest relative error a shadow
     * call may show, overriding the policy's `set tolerance`; negative
     * when not set (or not valid). */
    double tolerance;
    enum amp_norm tolerance_norm;
    enum amp_log_level log_level; /* AMPSHIM_LOG_LEVEL: a name or 0-5 */
    int quiet;                    /* AMPSHIM_QUIET: nothing on stderr */
    char log_file[AMP_CONFIG_PATH_LEN]; /* AMPSHIM_LOG_FILE, "" = stderr */
    int summary;                  /* AMPSHIM_SUMMARY */
    uint64_t scratch_max;         /* AMPSHIM_SCRATCH_MAX, bytes per call */
    int call_log;                 /* AMPSHIM_CALL_LOG, or log level info:
                                     one line per harvested call */
    unsigned snapshot_s;          /* AMPSHIM_SNAPSHOT: seconds between
                                     report snapshots during the run;
                                     0: none */
    int report_off;               /* AMPSHIM_REPORT=off */
    char report[AMP_CONFIG_PATH_LEN]; /* AMPSHIM_REPORT, "" = the default
                                         ampshim-<program>-<pid>.json */
    char trace[AMP_CONFIG_PATH_LEN];  /* AMPSHIM_TRACE, "" = none */
    /* Where the report goes by default (amp_state_dir of XDG_STATE_HOME
     * and HOME); "" when neither gives a directory. */
    char state_dir[AMP_CONFIG_PATH_LEN];
    /* The variables that change what FP32 means before the shim acts
     * (amp_config_fp32_env_names), as "NAME=value", for the report. */
    int nfp32_env;
    char fp32_env[AMP_CONFIG_FP32_ENV][AMP_CONFIG_PROBLEM_LEN];
    /* Bad values, kept until the log is open (it depends on this): each
     * names the variable and ends with "; " and what the shim does
     * instead ("; ignored"). */
    int nproblems;
    char problems[AMP_CONFIG_MAX_PROBLEMS][AMP_CONFIG_PROBLEM_LEN];
};

#define AMP_SCRATCH_MAX_DEFAULT (1ull << 30)
#define AMP_SNAPSHOT_DEFAULT_S 30
/* The first snapshot, this long after the first hooked call (or after
 * the interval, when shorter): a run that dies within seconds leaves
 * what the shim knew. */
#define AMP_SNAPSHOT_FIRST_S 1
#define AMP_SNAPSHOT_MAX_S 86400

/* Where values come from: secure_getenv in the shim, a table in tests. */
typedef const char *(*amp_getenv_fn)(const char *name);

/* Fills cfg from the variables; a bad value keeps the default and adds a
 * problem naming the variable and the accepted values. Never fails. */
void amp_config_load(struct amp_config *cfg, amp_getenv_fn getenv_fn);

const char *amp_mode_name(enum amp_mode mode);

/* Adds `word` to the comma-separated list in buf, after `prefix` when the
 * list is empty ("auto:tf32,fp32"), unless it is in it already; the
 * list's length (cap or more when cut). */
size_t amp_mode_list_add(char *buf, size_t cap, const char *prefix,
                         const char *word);

/* A norm's name as a user types it (case-insensitive): "max" (also
 * "inf", "infinity"), "fro" (also "frobenius", "l2"). AMP_ERR_INVALID
 * for another word. */
enum amp_status amp_norm_parse(const char *name, enum amp_norm *out);

/* The canonical name of a norm: "max" or "fro". */
const char *amp_norm_name(enum amp_norm norm);

/* The words for the norms amp_norm_parse accepts, for a message. */
#define AMP_NORM_WORDS "max or fro"

/* A tolerance as a user types it: "X" or "X:NORM", X a non-negative
 * finite number (1e-6), NORM as amp_norm_parse (max when left out).
 * AMP_ERR_INVALID when it is not one; *tol and *norm are then left
 * alone. */
enum amp_status amp_tolerance_parse(const char *text, double *tol,
                                    enum amp_norm *norm);

/* An AMPSHIM_MODE value (case-insensitive) as amp_config_load reads it:
 * the mode and a shadow mode's candidate; AMP_ERR_INVALID for a name
 * that is not one. */
enum amp_status amp_config_mode(const char *name, enum amp_mode *mode,
                                enum amp_mode *candidate);

/* The AMPSHIM_MODE values, comma-separated, into out. */
void amp_config_mode_names(char *out, size_t cap);

/* The mode name nearest name, for "did you mean": one edit away (a swap
 * of adjacent letters counts one) up to five bytes, two up to eight,
 * three beyond; NULL when none is that near. */
const char *amp_config_mode_near(const char *name);

/* NVIDIA_TF32_OVERRIDE and the CUBLAS_* variables that change FP32
 * results (as NVIDIA documents them): AMP_CONFIG_FP32_ENV names. */
extern const char *const amp_config_fp32_env_names[AMP_CONFIG_FP32_ENV];

#endif
