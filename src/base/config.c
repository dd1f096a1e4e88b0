/* Parses the AMPSHIM_* environment variables into struct amp_config. */
#include "base/config.h"
#include "base/path.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct amp_name_value {
    const char *name;
    int value;
};

static const struct amp_name_value amp_log_levels[] = {
    {"off", AMP_LOG_OFF},   {"error", AMP_LOG_ERROR}, {"warn", AMP_LOG_WARN},
    {"info", AMP_LOG_INFO}, {"debug", AMP_LOG_DEBUG}, {NULL, 0},
};

/* NVIDIA's numbering of log levels (CUBLASLT_LOG_LEVEL, CUDNN_LOGLEVEL_DBG):
 * 0 off, 1 errors, 2 warnings, 3 information, 4 more, 5 everything. The
 * shim has nothing beyond debug. */
static const enum amp_log_level amp_log_numbers[] = {
    AMP_LOG_OFF, AMP_LOG_ERROR, AMP_LOG_WARN, AMP_LOG_INFO, AMP_LOG_DEBUG,
    AMP_LOG_DEBUG,
};
#define AMP_LOG_NUMBERS \
    ((int)(sizeof amp_log_numbers / sizeof amp_log_numbers[0]))

static const char *const amp_mode_names[AMP_MODE_COUNT] = {
    [AMP_MODE_FP32] = "fp32",     [AMP_MODE_FP16] = "fp16",
    [AMP_MODE_BF16] = "bf16",     [AMP_MODE_TF32] = "tf32",
    [AMP_MODE_FP16X3] = "fp16x3", [AMP_MODE_SHADOW] = "shadow",
    [AMP_MODE_ALLOW_CONVERSION] = "allow-conversion",
    [AMP_MODE_TF32X3] = "tf32x3", [AMP_MODE_BF16X9] = "bf16x9",
};

/* AMPSHIM_MODE values: mode + AMP_MODE_COUNT * shadow candidate. */
#define AMP_MODE_VALUE(mode, candidate) ((mode) + AMP_MODE_COUNT * (candidate))

static const struct amp_name_value amp_modes[] = {
    {"fp32", AMP_MODE_VALUE(AMP_MODE_FP32, AMP_MODE_FP16)},
    {"fp16", AMP_MODE_VALUE(AMP_MODE_FP16, AMP_MODE_FP16)},
    {"bf16", AMP_MODE_VALUE(AMP_MODE_BF16, AMP_MODE_FP16)},
    {"tf32", AMP_MODE_VALUE(AMP_MODE_TF32, AMP_MODE_FP16)},
    {"fp16x3", AMP_MODE_VALUE(AMP_MODE_FP16X3, AMP_MODE_FP16)},
    {"tf32x3", AMP_MODE_VALUE(AMP_MODE_TF32X3, AMP_MODE_FP16)},
    {"bf16x9", AMP_MODE_VALUE(AMP_MODE_BF16X9, AMP_MODE_FP16)},
    {"shadow", AMP_MODE_VALUE(AMP_MODE_SHADOW, AMP_MODE_FP16)},
    {"shadow:fp16", AMP_MODE_VALUE(AMP_MODE_SHADOW, AMP_MODE_FP16)},
    {"shadow:bf16", AMP_MODE_VALUE(AMP_MODE_SHADOW, AMP_MODE_BF16)},
    {"shadow:tf32", AMP_MODE_VALUE(AMP_MODE_SHADOW, AMP_MODE_TF32)},
    {"shadow:fp16x3", AMP_MODE_VALUE(AMP_MODE_SHADOW, AMP_MODE_FP16X3)},
    {"shadow:tf32x3", AMP_MODE_VALUE(AMP_MODE_SHADOW, AMP_MODE_TF32X3)},
    {"shadow:bf16x9", AMP_MODE_VALUE(AMP_MODE_SHADOW, AMP_MODE_BF16X9)},
    {"allow-conversion",
     AMP_MODE_VALUE(AMP_MODE_ALLOW_CONVERSION, AMP_MODE_FP16)},
    {"shadow:allow-conversion",
     AMP_MODE_VALUE(AMP_MODE_SHADOW, AMP_MODE_ALLOW_CONVERSION)},
    {NULL, 0},
};

static const struct amp_name_value amp_bools[] = {
    {"1", 1},     {"0", 0},      {"true", 1}, {"false", 0},
    {"yes", 1},   {"no", 0},     {"on", 1},   {"off", 0},
    {NULL, 0},
};

static const struct amp_name_value amp_baselines[] = {
    {"first", 1}, {"off", 0}, {"1", 1}, {"0", 0}, {NULL, 0},
};

const char *const amp_config_fp32_env_names[AMP_CONFIG_FP32_ENV] = {
    "NVIDIA_TF32_OVERRIDE", "CUBLAS_EMULATE_SINGLE_PRECISION",
    "CUBLAS_EMULATION_STRATEGY", "CUBLAS_WORKSPACE_CONFIG",
};

static void amp_config_problem(struct amp_config *cfg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
amp_config_problem(struct amp_config *cfg, const char *fmt, ...)
{
    va_list ap;

    if (cfg->nproblems >= AMP_CONFIG_MAX_PROBLEMS)
        return;
    va_start(ap, fmt);
    vsnprintf(cfg->problems[cfg->nproblems++], AMP_CONFIG_PROBLEM_LEN, fmt,
              ap);
    va_end(ap);
}

/* The names of table, comma-separated, into out. */
static void
amp_config_names(const struct amp_name_value *table, char *out, size_t cap)
{
    const struct amp_name_value *e;

    out[0] = '\0';
    for (e = table; e->name; e++) {
        strncat(out, e->name, cap - strlen(out) - 1);
        if (e[1].name)
            strncat(out, ", ", cap - strlen(out) - 1);
    }
}

/* Looks value up in table (case-insensitive); on a miss, records a problem
 * listing the accepted names (and `more`, when not NULL) and leaves *out
 * alone. */
static void
amp_config_enum(struct amp_config *cfg, const char *var, const char *value,
                const struct amp_name_value *table, const char *more,
                int *out)
{
    char accepted[AMP_CONFIG_PROBLEM_LEN] = "";
    const struct amp_name_value *e;

    for (e = table; e->name; e++) {
        if (strcasecmp(value, e->name) == 0) {
            *out = e->value;
            return;
        }
    }
    amp_config_names(table, accepted, sizeof accepted);
    amp_config_problem(cfg, "%s=\"%.40s\" is not one of: %s%s; ignored",
                       var, value, accepted, more ? more : "");
}

/* AMPSHIM_LOG_LEVEL: a level's name, or NVIDIA's number 0 to 5. */
static void
amp_config_level(struct amp_config *cfg, const char *value)
{
    int level = (int)cfg->log_level;

    if (value[0] >= '0' && value[0] < '0' + AMP_LOG_NUMBERS && !value[1]) {
        cfg->log_level = amp_log_numbers[value[0] - '0'];
        return;
    }
    amp_config_enum(cfg, "AMPSHIM_LOG_LEVEL", value, amp_log_levels,
                    ", or 0 (off) to 5 (everything)", &level);
    cfg->log_level = (enum amp_log_level)level;
}

/* A byte count: decimal digits with an optional K, M or G (powers of 1024). */
static void
amp_config_bytes(struct amp_config *cfg, const char *var, const char *value,
                 uint64_t *out)
{
    char *end = NULL;
    unsigned long long n;
    unsigned shift = 0;

    errno = 0;
    if (value[0] < '0' || value[0] > '9')
        goto bad;
    n = strtoull(value, &end, 10);
    if (errno != 0)
        goto bad;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift != 0)
        end++;
    if (*end != '\0' || n > (UINT64_MAX >> shift))
        goto bad;
    *out = (uint64_t)n << shift;
    return;
bad:
    amp_config_problem(cfg,
                       "%s=\"%.40s\" is not a byte count (digits with an "
                       "optional K, M or G); ignored",
                       var, value);
}

/* Seconds: decimal digits up to AMP_SNAPSHOT_MAX_S, or "off" (0). */
static void
amp_config_seconds(struct amp_config *cfg, const char *var, const char *value,
                   unsigned *out)
{
    char *end = NULL;
    unsigned long n;

    if (strcasecmp(value, "off") == 0) {
        *out = 0;
        return;
    }
    errno = 0;
    if (value[0] >= '0' && value[0] <= '9') {
        n = strtoul(value, &end, 10);
        if (errno == 0 && *end == '\0' && n <= AMP_SNAPSHOT_MAX_S) {
            *out = (unsigned)n;
            return;
        }
    }
    amp_config_problem(cfg,
                       "%s=\"%.40s\" is not a number of seconds (0 to %d, "
                       "or off); ignored",
                       var, value, AMP_SNAPSHOT_MAX_S);
}

/* A path into out (AMP_CONFIG_PATH_LEN bytes); a longer one is a
 * problem and leaves out empty. */
static void
amp_config_path(struct amp_config *cfg, const char *var, const char *value,
                char *out)
{
    if (strlen(value) >= AMP_CONFIG_PATH_LEN) {
        amp_config_problem(cfg, "%s is longer than %d bytes; ignored", var,
                           AMP_CONFIG_PATH_LEN - 1);
        return;
    }
    strcpy(out, value);
}

static const struct amp_name_value amp_norms[] = {
    {"max", AMP_NORM_MAX},      {"inf", AMP_NORM_MAX},
    {"infinity", AMP_NORM_MAX}, {"fro", AMP_NORM_FRO},
    {"frobenius", AMP_NORM_FRO}, {"l2", AMP_NORM_FRO},
    {NULL, 0},
};

enum amp_status
amp_norm_parse(const char *name, enum amp_norm *out)
{
    const struct amp_name_value *e;

    for (e = amp_norms; e->name; e++) {
        if (strcasecmp(name, e->name) == 0) {
            *out = (enum amp_norm)e->value;
            return AMP_OK;
        }
    }
    return AMP_ERR_INVALID;
}

const char *
amp_norm_name(enum amp_norm norm)
{
    return norm == AMP_NORM_FRO ? "fro" : "max";
}

enum amp_status
amp_tolerance_parse(const char *text, double *tol, enum amp_norm *norm)
{
    char number[64];
    const char *colon = strchr(text, ':');
    size_t len = colon ? (size_t)(colon - text) : strlen(text);
    enum amp_norm n = AMP_NORM_MAX;
    char *end = NULL;
    double x;

    if (len == 0 || len >= sizeof number)
        return AMP_ERR_INVALID;
    memcpy(number, text, len);
    number[len] = '\0';
    /* strtod alone would take " 1e-3", "inf" or "0x1p-3". */
    if (!((number[0] >= '0' && number[0] <= '9') || number[0] == '.') ||
        strspn(number, "0123456789.eE+-") != len)
        return AMP_ERR_INVALID;
    errno = 0;
    x = strtod(number, &end);
    if (errno != 0 || *end != '\0' || !(x >= 0.0) || isinf(x))
        return AMP_ERR_INVALID;
    if (colon && amp_norm_parse(colon + 1, &n) != AMP_OK)
        return AMP_ERR_INVALID;
    *tol = x;
    *norm = n;
    return AMP_OK;
}

void
amp_config_load(struct amp_config *cfg, amp_getenv_fn getenv_fn)
{
    const char *v;
    int value, i;

    memset(cfg, 0, sizeof *cfg);
    cfg->mode = AMP_MODE_FP16;
    cfg->shadow_candidate = AMP_MODE_FP16;
    cfg->log_level = AMP_LOG_WARN;
    cfg->summary = 1;
    cfg->scratch_max = AMP_SCRATCH_MAX_DEFAULT;
    cfg->snapshot_s = AMP_SNAPSHOT_DEFAULT_S;
    cfg->baseline = 1;
    cfg->tolerance = -1.0;

    if ((v = getenv_fn("AMPSHIM_DISABLE")) && *v)
        amp_config_enum(cfg, "AMPSHIM_DISABLE", v, amp_bools, NULL,
                        &cfg->disabled);
    if ((v = getenv_fn("AMPSHIM_MODE")) && *v) {
        value = -1; /* stays -1 for a bad value: the policy decides */
        amp_config_enum(cfg, "AMPSHIM_MODE", v, amp_modes, NULL, &value);
        if (value >= 0) {
            cfg->mode_set = 1;
            cfg->mode = (enum amp_mode)(value % AMP_MODE_COUNT);
            cfg->shadow_candidate = (enum amp_mode)(value / AMP_MODE_COUNT);
        }
    }
    if ((v = getenv_fn("AMPSHIM_BASELINE")) && *v)
        amp_config_enum(cfg, "AMPSHIM_BASELINE", v, amp_baselines, NULL,
                        &cfg->baseline);
    if ((v = getenv_fn("AMPSHIM_TOLERANCE")) && *v &&
        amp_tolerance_parse(v, &cfg->tolerance, &cfg->tolerance_norm) !=
            AMP_OK)
        amp_config_problem(cfg, "AMPSHIM_TOLERANCE=\"%.40s\" is not a "
                           "tolerance (a non-negative number, with :NORM "
                           "for a norm, NORM " AMP_NORM_WORDS
                           ", as 1e-6:fro); ignored", v);
    if ((v = getenv_fn("AMPSHIM_LOG_LEVEL")) && *v)
        amp_config_level(cfg, v);
    if ((v = getenv_fn("AMPSHIM_QUIET")) && *v)
        amp_config_enum(cfg, "AMPSHIM_QUIET", v, amp_bools, NULL,
                        &cfg->quiet);
    if ((v = getenv_fn("AMPSHIM_LOG_FILE")) && *v) {
        if (strlen(v) >= sizeof cfg->log_file)
            amp_config_problem(cfg, "AMPSHIM_LOG_FILE is longer than %zu "
                               "bytes; logging to stderr",
                               sizeof cfg->log_file - 1);
        else
            strcpy(cfg->log_file, v);
    }
    if ((v = getenv_fn("AMPSHIM_SUMMARY")) && *v)
        amp_config_enum(cfg, "AMPSHIM_SUMMARY", v, amp_bools, NULL,
                        &cfg->summary);
    if ((v = getenv_fn("AMPSHIM_SCRATCH_MAX")) && *v)
        amp_config_bytes(cfg, "AMPSHIM_SCRATCH_MAX", v, &cfg->scratch_max);
    if ((v = getenv_fn("AMPSHIM_SNAPSHOT")) && *v)
        amp_config_seconds(cfg, "AMPSHIM_SNAPSHOT", v, &cfg->snapshot_s);
    if ((v = getenv_fn("AMPSHIM_CALL_LOG")) && *v)
        amp_config_enum(cfg, "AMPSHIM_CALL_LOG", v, amp_bools, NULL,
                        &cfg->call_log);
    if (cfg->log_level >= AMP_LOG_INFO)
        cfg->call_log = 1;
    if ((v = getenv_fn("AMPSHIM_REPORT")) && *v) {
        if (strcasecmp(v, "off") == 0)
            cfg->report_off = 1;
        else
            amp_config_path(cfg, "AMPSHIM_REPORT", v, cfg->report);
    }
    if ((v = getenv_fn("AMPSHIM_TRACE")) && *v)
        amp_config_path(cfg, "AMPSHIM_TRACE", v, cfg->trace);
    amp_state_dir(getenv_fn("XDG_STATE_HOME"), getenv_fn("HOME"),
                  cfg->state_dir, sizeof cfg->state_dir);
    for (i = 0; i < AMP_CONFIG_FP32_ENV; i++)
        if ((v = getenv_fn(amp_config_fp32_env_names[i])))
            snprintf(cfg->fp32_env[cfg->nfp32_env++], AMP_CONFIG_PROBLEM_LEN,
                     "%s=%.200s", amp_config_fp32_env_names[i], v);
}

enum amp_status
amp_config_mode(const char *name, enum amp_mode *mode,
                enum amp_mode *candidate)
{
    const struct amp_name_value *e;

    for (e = amp_modes; e->name; e++) {
        if (strcasecmp(name, e->name) == 0) {
            *mode = (enum amp_mode)(e->value % AMP_MODE_COUNT);
            *candidate = (enum amp_mode)(e->value / AMP_MODE_COUNT);
            return AMP_OK;
        }
    }
    return AMP_ERR_INVALID;
}

void
amp_config_mode_names(char *out, size_t cap)
{
    amp_config_names(amp_modes, out, cap);
}

/* The optimal string alignment distance of a and b (insertions,
 * deletions, substitutions and swaps of adjacent bytes, each 1), ignoring
 * ASCII case; both at most 31 bytes (else a large distance). */
static int
amp_config_distance(const char *a, const char *b)
{
    int d[32][32], i, j, la = (int)strlen(a), lb = (int)strlen(b);

    if (la > 31 || lb > 31)
        return 99;
    for (i = 0; i <= la; i++)
        d[i][0] = i;
    for (j = 0; j <= lb; j++)
        d[0][j] = j;
    for (i = 1; i <= la; i++) {
        for (j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]);
            int cb = tolower((unsigned char)b[j - 1]);
            int best = d[i - 1][j - 1] + (ca != cb);

            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                cb == tolower((unsigned char)a[i - 2]) &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

const char *
amp_config_mode_near(const char *name)
{
    const struct amp_name_value *e;
    const char *best = NULL;
    size_t len = strlen(name);
    /* Near enough: one edit up to five bytes, two up to eight, three
     * beyond; none for one or two bytes. */
    int dist = len <= 2 ? 1 : len <= 5 ? 2 : len <= 8 ? 3 : 4, d;

    for (e = amp_modes; e->name; e++) {
        d = amp_config_distance(name, e->name);
        if (d > 0 && d < dist) {
            dist = d;
            best = e->name;
        }
    }
    return best;
}

const char *
amp_mode_name(enum amp_mode mode)
{
    if ((unsigned)mode >= AMP_MODE_COUNT)
        return "?";
    return amp_mode_names[mode];
}

size_t
amp_mode_list_add(char *buf, size_t cap, const char *prefix,
                  const char *word)
{
    size_t len = strlen(buf), n = strlen(word);
    const char *at;

    for (at = strstr(buf, word); at; at = strstr(at + 1, word))
        if (at > buf && (at[-1] == ',' || at[-1] == ':') &&
            (at[n] == ',' || at[n] == '\0'))
            return len;
    return len + (size_t)snprintf(buf + len, cap - len, "%s%s",
                                  len ? "," : prefix, word);
}
