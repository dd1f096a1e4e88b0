/* `ampshim report`: a report file as a terminal table sorted by time
 * saved, a self-contained HTML page with SVG charts, and CSV. */
#include "base/json.h"
#include "base/path.h"
#include "decide/site.h"
#include "decide/symbolize.h"
#include "measure/report.h"
#include "tool/tool.h"
#include "tool/tool_report.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char amp_tool_report_help[] =
    "usage: ampshim report [FILE] [--html OUT] [--csv OUT [--shapes]]\n"
    "       ampshim report FILE... | DIR [--html OUT] [--csv OUT]\n"
    "       ampshim report --diff A B [--csv OUT]\n"
    "\n"
    "Reads a report that the shim wrote at a program's exit (its schema:\n"
    "docs/report-schema.md) and prints the program, device and policy and\n"
    "a table of its call sites, sorted by time saved, after a verdict line\n"
    "(faster, slower, still measuring, or nothing to gain here, and why):\n"
    "calls, converted calls (whose converted result reached the program),\n"
    "shadow calls (measured beside FP32; the program got FP32's result),\n"
    "modes, FP32 and actual time, speedup, steady-state speedup, time\n"
    "saved, the error of what the program got against the tolerance (in\n"
    "its norm: 'max rel' or 'fro rel', the Frobenius norm's; 'exactly\n"
    "FP32' where nothing was converted), and the totals. FILE '-'\n"
    "reads the report from standard input. Without FILE, the latest\n"
    "ampshim-*.json report (by modification time) of the working directory\n"
    "(where 'ampshim run' writes them) and of the state directory (where a\n"
    "program preloaded without 'ampshim run' writes them:\n"
    "$XDG_STATE_HOME/ampshim, by default ~/.local/state/ampshim).\n"
    "\n"
    "Several reports, or a directory (its *.json reports), are one job's\n"
    "processes: one summary of them, a line per rank, the totals, the\n"
    "slowest rank, each site's spread across the ranks (calls, speedup,\n"
    "error: min/median/max) and the sites whose decisions differ; --csv\n"
    "writes a row per site, --html a page of the summary.\n"
    "\n"
    "--diff A B compares two reports (before and after a change of policy\n"
    "or code): per site and shape, calls, mode, time under the shim, B's\n"
    "time over A's, speedup and the error of what the program got, side by\n"
    "side; rows that match nothing are marked only in A or only in B.\n"
    "Sites match by API, calling function and module file name (the k-th\n"
    "such site by offset in A is the k-th in B), shapes by their text.\n"
    "--csv writes the comparison, one row per (site, shape).\n"
    "\n"
    "options:\n"
    "  --html OUT   also write a self-contained HTML page (no external\n"
    "               resources): the run's metadata, captioned charts (time\n"
    "               saved, speedup, error against the tolerance, FP32\n"
    "               versus actual time per site), a table per shape, why\n"
    "               calls stayed FP32, and what to do next\n"
    "  --csv OUT    also write one CSV row per site\n"
    "  --shapes     with --csv: one row per (site, shape), its text in the\n"
    "               column shape, the site's identity in every row\n"
    "  --diff       compare the two reports A and B\n"
    "  -h, --help   this help\n"
    "\n"
    "OUT is replaced if it exists. OUT '-' writes the page or the CSV to\n"
    "standard output instead of the table (one of them at a time), so that\n"
    "'ampshim report --csv - FILE' prints the CSV alone. Options take their\n"
    "value as --opt VALUE or --opt=VALUE, before or after FILE.\n"
    "\n"
    "exit status:\n"
    "  0; 1 when FILE (A or B) cannot be read or is not a report (named,\n"
    "  before anything is printed), or OUT cannot be written; 2 on a usage\n"
    "  error.\n";

const char *
amp_or(const char *s, const char *otherwise)
{
    return s ? s : otherwise;
}

double
amp_num(const struct amp_json *obj, const char *key)
{
    return amp_json_num(amp_json_get(obj, key), NAN);
}

int
amp_fp32_known(const struct amp_json *time)
{
    double known = amp_num(time, "calls_fp32_measured") +
                   amp_num(time, "calls_fp32_estimated");

    return isnan(known) || known > 0.0;
}

static void
amp_row_modes(struct amp_row *r, const struct amp_json *modes)
{
    size_t i, len = 0;

    r->modes[0] = '\0';
    for (i = 0; modes && modes->type == AMP_JSON_OBJECT && i < modes->count;
         i++) {
        int shadow = strcmp(modes->keys[i], "shadow") == 0;

        len += (size_t)snprintf(r->modes + len, sizeof r->modes - len,
                                "%s%s%s%s", len ? "+" : "", modes->keys[i],
                                shadow && r->candidate ? ":" : "",
                                shadow && r->candidate ? r->candidate : "");
        if (len >= sizeof r->modes)
            break;
    }
    if (!r->modes[0])
        snprintf(r->modes, sizeof r->modes, "fp32");
}

/* r->shown, the table's mode cell, from s (a site, or a shape): under
 * auto the distinct choices of its shapes ("auto:tf32", "auto:bf16,tf32",
 * "auto:measuring" while one is measured), then "+" and r->modes when a shape
 * without auto converted; else r->modes. */
static void
amp_row_shown(struct amp_row *r, const struct amp_json *s)
{
    const struct amp_json *shapes = amp_json_get(s, "shapes");
    size_t i, n = 1, len;
    int others = 0;

    if (shapes && shapes->type == AMP_JSON_ARRAY)
        n = shapes->count;
    else
        shapes = NULL;
    r->shown[0] = '\0';
    for (i = 0; i < n; i++) {
        const struct amp_json *shape = shapes ? &shapes->items[i] : s;
        const struct amp_json *a = amp_json_get(shape, "auto");
        const char *choice;

        if (!a || a->type != AMP_JSON_OBJECT) {
            others |= amp_num(shape, "converted") > 0;
            continue;
        }
        choice = amp_or(amp_json_str(amp_json_get(a, "choice")),
                        "measuring");
        amp_mode_list_add(r->shown, sizeof r->shown, "auto:", choice);
    }
    len = strlen(r->shown);
    if (!len) {
        memcpy(r->shown, r->modes, sizeof r->shown);
    } else if (others && len + 1 < sizeof r->shown &&
               snprintf(r->shown + len, sizeof r->shown - len, "+%s",
                        r->modes) < 0) {
        r->shown[len] = '\0';
    }
}

/* "min-size 12, no-rule 3" from a fp32_reasons object, largest first;
 * "" for none (or a report without them). */
static void
amp_reasons_text(const struct amp_json *reasons, char *buf, size_t cap)
{
    size_t len = 0, i, n = reasons && reasons->type == AMP_JSON_OBJECT
                               ? reasons->count : 0;
    unsigned char used[64] = {0};

    buf[0] = '\0';
    for (;;) {
        size_t best = n;

        for (i = 0; i < n && i < sizeof used; i++)
            if (!used[i] &&
                (best == n || reasons->items[i].number >
                                  reasons->items[best].number))
                best = i;
        if (best == n || len >= cap)
            return;
        used[best] = 1;
        len += (size_t)snprintf(buf + len, cap - len, "%s%s %.0f",
                                len ? ", " : "", reasons->keys[best],
                                reasons->items[best].number);
    }
}

void
amp_row_delivered(struct amp_row *r, const struct amp_json *s)
{
    const struct amp_json *time = amp_json_get(s, "time");
    const struct amp_json *err = amp_json_get(s, "errors");

    /* Calls whose converted result the program got apart from those
     * measured in shadow (an older report counts both as converted). */
    r->shadow = amp_num(amp_json_get(s, "modes"), "shadow");
    if (isnan(r->shadow))
        r->shadow = 0.0;
    r->converted = amp_num(s, "delivered");
    if (isnan(r->converted))
        r->converted = amp_num(s, "converted") - r->shadow;
    r->steady = amp_num(time, "steady_speedup");
    if (!amp_json_get(time, "steady_speedup"))
        r->steady = amp_num(time, "converted_speedup");
    r->delivered_rel = amp_num(err, "delivered_max_rel");
    r->delivered_fro = amp_num(err, "delivered_max_fro");
    if (!amp_json_get(err, "delivered_max_rel")) { /* an older report */
        r->delivered_rel = r->converted > 0.0 ? amp_num(err, "max_rel") : 0.0;
        r->delivered_fro = r->converted > 0.0 ? amp_num(err, "max_fro") : 0.0;
    }
}

void
amp_row_read(struct amp_row *r, const struct amp_json *s)
{
    const struct amp_json *time = amp_json_get(s, "time");
    const struct amp_json *err = amp_json_get(s, "errors");
    const struct amp_json *demoted = amp_json_get(s, "demoted");

    memset(r, 0, sizeof *r);
    r->site = s;
    r->api = amp_json_str(amp_json_get(s, "api"));
    r->function = amp_json_str(amp_json_get(s, "function"));
    r->module = amp_json_str(amp_json_get(s, "module"));
    r->candidate = amp_json_str(amp_json_get(s, "shadow_candidate"));
    r->demoted_reason = amp_json_str(amp_json_get(s, "demoted_reason"));
    r->offset = amp_num(s, "offset");
    r->calls = amp_num(s, "calls");
    r->fp32_calls = amp_num(s, "fp32");
    r->fallback = amp_num(s, "fallback");
    r->fp32_ms = amp_num(time, "fp32_ms");
    r->actual_ms = amp_num(time, "actual_ms");
    r->saved_ms = amp_num(time, "saved_ms");
    r->speedup = amp_num(time, "speedup");
    r->max_rel = amp_num(err, "max_rel");
    r->max_fro = amp_num(err, "max_fro");
    r->tolerance_norm = amp_json_str(amp_json_get(err, "tolerance_norm"));
    r->tolerance = amp_num(err, "tolerance");
    r->over_tolerance = amp_num(err, "over_tolerance");
    r->shadow_calls = amp_num(err, "shadow_calls");
    r->compared = amp_num(err, "compared");
    r->demoted = demoted && demoted->type == AMP_JSON_BOOL && demoted->boolean;
    amp_row_delivered(r, s);
    r->time_known = amp_fp32_known(time);
    if (!r->time_known) /* 0 ms there stands for unknown, not for 0 */
        r->fp32_ms = r->actual_ms = r->saved_ms = NAN;
    r->unknown_reason = amp_json_str(amp_json_get(time,
                                                  "fp32_unknown_reason"));
    amp_reasons_text(amp_json_get(s, "fp32_reasons"), r->reasons,
                     sizeof r->reasons);
    if (r->function)
        amp_function_name(r->function, r->function_name,
                          sizeof r->function_name);
    amp_symbol_label(r->name, sizeof r->name, r->function_name, r->module,
                     isnan(r->offset) ? 0 : (uintptr_t)r->offset);
    amp_row_modes(r, amp_json_get(s, "modes"));
    amp_row_shown(r, s);
}

void
amp_row_shape(struct amp_row *shape, const struct amp_row *site,
              const struct amp_json *s)
{
    amp_row_read(shape, s);
    shape->api = site->api;
    shape->function = site->function;
    shape->module = site->module;
    shape->offset = site->offset;
    memcpy(shape->function_name, site->function_name,
           sizeof shape->function_name);
    memcpy(shape->name, site->name, sizeof shape->name);
    shape->shape = amp_or(amp_json_str(amp_json_get(s, "shape")), "?");
    shape->candidate = site->candidate;
    amp_row_modes(shape, amp_json_get(s, "modes"));
    amp_row_shown(shape, s);
    shape->tolerance = site->tolerance;
    shape->tolerance_norm = site->tolerance_norm;
}

static int
amp_by_saved(const void *a, const void *b)
{
    const struct amp_row *x = a, *y = b;
    double sx = isnan(x->saved_ms) ? -INFINITY : x->saved_ms;
    double sy = isnan(y->saved_ms) ? -INFINITY : y->saved_ms;

    return (sx < sy) - (sx > sy);
}

char *
amp_tool_read_file(const char *path, size_t *len)
{
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    char *text = NULL, *more;
    size_t cap = 0, n;

    *len = 0;
    if (!f)
        return NULL;
    do {
        if (*len + 65536 + 1 > cap) {
            more = realloc(text, cap = *len + 65536 + 1 + cap);
            if (!more) {
                free(text);
                if (!is_stdin)
                    fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            text = more;
        }
        n = fread(text + *len, 1, cap - *len - 1, f);
        *len += n;
    } while (n > 0);
    if (ferror(f)) {
        int saved = errno;

        free(text);
        if (!is_stdin)
            fclose(f);
        errno = saved ? saved : EIO;
        return NULL;
    }
    if (!is_stdin)
        fclose(f);
    text[*len] = '\0';
    return text;
}

int
amp_doc_load(const char *path, struct amp_doc *doc)
{
    const struct amp_json *sites, *schema;
    char err[160];
    double version;
    size_t len, i;
    char *text;

    memset(doc, 0, sizeof *doc);
    text = amp_tool_read_file(path, &len);
    if (strcmp(path, "-") == 0)
        path = "standard input";
    if (!text) {
        fprintf(stderr, "ampshim report: %s: %s\n", path, strerror(errno));
        return -1;
    }
    doc->root = amp_json_parse(text, len, err, sizeof err);
    free(text);
    if (!doc->root) {
        fprintf(stderr, "ampshim report: %s: not JSON: %s\n", path, err);
        return -1;
    }
    schema = amp_json_get(doc->root, "schema");
    sites = amp_json_get(doc->root, "sites");
    if (!amp_json_str(schema) ||
        strcmp(amp_json_str(schema), "ampshim-report") != 0 || !sites ||
        sites->type != AMP_JSON_ARRAY) {
        fprintf(stderr, "ampshim report: %s: not an ampshim report\n", path);
        return -1;
    }
    /* Version 1 lacks the keys version 2 added (they read as unknown);
     * a later version adds keys this reader skips. */
    version = amp_num(doc->root, "version");
    if (!(version >= 1.0))
        fprintf(stderr, "ampshim report: %s: no schema version; reading it "
                "as version %d\n", path, AMP_REPORT_VERSION);
    else if (version > AMP_REPORT_VERSION)
        fprintf(stderr, "ampshim report: %s: schema version %.0f, newer "
                "than this ampshim's %d: what it added is not shown\n",
                path, version, AMP_REPORT_VERSION);
    doc->rows = calloc(sites->count ? sites->count : 1, sizeof *doc->rows);
    if (!doc->rows)
        return -1;
    for (i = 0; i < sites->count; i++)
        amp_row_read(&doc->rows[doc->nrows++], &sites->items[i]);
    qsort(doc->rows, doc->nrows, sizeof *doc->rows, amp_by_saved);
    return 0;
}

void
amp_doc_free(struct amp_doc *doc)
{
    free(doc->rows);
    amp_json_free(doc->root);
    doc->rows = NULL;
    doc->root = NULL;
}

/* v as "%.Nf" or "%.Ne" (fmt) says; "-" for NaN. */
const char *
amp_fmt(char *buf, size_t cap, const char *fmt, double v)
{
    int digits = fmt[2] - '0';

    if (isnan(v))
        snprintf(buf, cap, "-");
    else if (fmt[3] == 'e')
        snprintf(buf, cap, "%.*e", digits, v);
    else
        snprintf(buf, cap, "%.*f", digits, v);
    return buf;
}

/* ---- Coverage ---------------------------------------------------------------- */

/* The coverage object's kinds, in the report's order: where each sits
 * ("" for the top level) and how the table names it. */
const struct amp_cover_row amp_cover_rows[] = {
    {"", "converted", "FP32, converted"},
    {"fp32_kept", "shadow", "FP32 kept: shadow runs"},
    {"fp32_kept", "policy", "FP32 kept: policy or mode"},
    {"fp32_kept", "invalid", "FP32 kept: invalid arguments"},
    {"fp32_kept", "empty", "FP32 kept: empty or alpha 0"},
    {"fp32_kept", "pedantic", "FP32 kept: pedantic math"},
    {"fp32_kept", "fallback", "FP32 kept: fallback"},
    {"fp32_kept", "unconverted", "FP32 kept: path not converted"},
    {"fp32_kept", "library", "FP32 kept: NVIDIA library's call"},
    {"other", "fp64", "FP64"},
    {"other", "complex", "complex"},
    {"other", "fp16_bf16", "FP16/BF16"},
    {"other", "int8", "INT8"},
    {"other", "other", "other precisions"},
};

#define AMP_COVER_ROWS (sizeof amp_cover_rows / sizeof *amp_cover_rows)

const size_t amp_cover_nrows = AMP_COVER_ROWS;

/* Row i's object in the report's coverage; NULL when it has none. */
const struct amp_json *
amp_cover_kind(const struct amp_json *cov, size_t i)
{
    const struct amp_cover_row *r = &amp_cover_rows[i];

    return amp_json_get(r->section[0] ? amp_json_get(cov, r->section) : cov,
                        r->key);
}

/* The one-line answer: how much of the work the shim could reach. */
void
amp_cover_summary(const struct amp_json *cov, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.3g GFLOP of GEMM and convolution work in %.0f "
             "calls: %.1f%% FP32 within the shim's reach (converted %.1f%%, "
             "kept FP32 %.1f%%), %.1f%% in other precisions",
             amp_num(cov, "flops") / 1e9, amp_num(cov, "calls"),
             100.0 * amp_num(cov, "fp32_share"),
             100.0 * amp_num(cov, "converted_share"),
             100.0 * amp_num(cov, "fp32_kept_share"),
             100.0 * amp_num(cov, "other_share"));
}

/* The coverage section of the terminal table; nothing for a report
 * without one (an older shim's). */
static void
amp_print_coverage(const struct amp_doc *doc)
{
    const struct amp_json *cov = amp_json_get(doc->root, "coverage");
    char line[256], b[32];
    size_t i;

    if (!cov || amp_num(cov, "calls") <= 0.0)
        return;
    amp_cover_summary(cov, line, sizeof line);
    printf("\ncoverage: %s\n%-32s %9s %14s %7s\n", line, "work", "calls",
           "GFLOP", "share");
    for (i = 0; i < AMP_COVER_ROWS; i++) {
        const struct amp_json *k = amp_cover_kind(cov, i);

        if (!k || amp_num(k, "calls") <= 0.0)
            continue;
        printf("%-32s %9.0f %14.6g %6s%%\n", amp_cover_rows[i].label,
               amp_num(k, "calls"), amp_num(k, "flops") / 1e9,
               amp_fmt(b, sizeof b, "%.1f", 100.0 * amp_num(k, "share")));
    }
}

/* ---- The terminal table ----------------------------------------------------- */

/* 1 for a snapshot written during the run ("complete": false); reports
 * without the key were written at exit. */
int
amp_report_incomplete(const struct amp_doc *doc)
{
    const struct amp_json *c = amp_json_get(doc->root, "complete");

    return c && c->type == AMP_JSON_BOOL && !c->boolean;
}

/* A process that drove several devices: one line per device, what ran
 * there (reports before the key, or of one device, print nothing). */
static void
amp_print_devices(const struct amp_json *devices)
{
    size_t i;

    if (!devices || devices->type != AMP_JSON_ARRAY || devices->count < 2)
        return;
    for (i = 0; i < devices->count; i++) {
        const struct amp_json *d = &devices->items[i];
        char b[3][32];

        printf("  device %.0f: %s: %.0f calls, %.0f converted, fp32 %s ms, "
               "actual %s ms, speedup %s\n", amp_num(d, "ordinal"),
               amp_or(amp_json_str(amp_json_get(d, "name")), "?"),
               amp_num(d, "calls"), amp_num(d, "converted"),
               amp_fmt(b[0], 32, "%.3f", amp_num(d, "fp32_ms")),
               amp_fmt(b[1], 32, "%.3f", amp_num(d, "actual_ms")),
               amp_fmt(b[2], 32, "%.2f", amp_num(d, "speedup")));
    }
}

/* The policy object's tolerance as a line says it: "5e-03 (max norm),
 * the built-in policy", or "none (AMPSHIM_MODE)". */
static const char *
amp_tolerance_words(const struct amp_json *pol, char *buf, size_t cap)
{
    double tol = amp_num(pol, "tolerance");
    const char *norm = amp_json_str(amp_json_get(pol, "tolerance_norm"));
    const char *source = amp_json_str(amp_json_get(pol, "tolerance_source"));

    if (isnan(tol))
        snprintf(buf, cap, "none (%s): shadow errors are measured, never "
                 "acted on", amp_or(source, "?"));
    else
        snprintf(buf, cap, "%g (%s norm), %s", tol,
                 norm && strcmp(norm, "fro") == 0 ? "Frobenius" : "max",
                 amp_or(source, "?"));
    return buf;
}

/* The totals' shadow calls, converted calls whose result the program got
 * (an older report counts shadow calls as converted), steady state (an
 * older report's: the converted calls alone). */
static double
amp_doc_shadow(const struct amp_json *tot)
{
    double n = amp_num(tot, "shadow");

    return isnan(n) ? 0.0 : n;
}

double
amp_doc_delivered(const struct amp_json *tot)
{
    double n = amp_num(tot, "delivered");

    return isnan(n) ? amp_num(tot, "converted") - amp_doc_shadow(tot) : n;
}

static double
amp_doc_steady(const struct amp_json *tot)
{
    return amp_json_get(tot, "steady_speedup")
               ? amp_num(tot, "steady_speedup")
               : amp_num(tot, "converted_speedup");
}

/* The auto shapes still measuring, of an older report's sites. */
static double
amp_doc_measuring(const struct amp_doc *doc, double *shapes)
{
    const struct amp_json *sites = amp_json_get(doc->root, "sites");
    double n = 0.0;
    size_t i, k;

    *shapes = 0.0;
    for (i = 0; sites && sites->type == AMP_JSON_ARRAY && i < sites->count;
         i++) {
        const struct amp_json *sh = amp_json_get(&sites->items[i], "shapes");

        for (k = 0; sh && sh->type == AMP_JSON_ARRAY && k < sh->count; k++) {
            const char *state = amp_json_str(amp_json_get(
                amp_json_get(&sh->items[k], "auto"), "state"));

            *shapes += 1.0;
            n += state && strcmp(state, "measuring") == 0;
        }
    }
    return n;
}

const char *
amp_doc_verdict(const struct amp_doc *doc, char *buf, size_t cap)
{
    const struct amp_json *tot = amp_json_get(doc->root, "totals");
    const struct amp_json *reasons = amp_json_get(tot, "fp32_reasons");
    const char *said = amp_json_str(amp_json_get(tot, "verdict"));
    struct amp_verdict v;
    double best = 0.0;
    size_t i;

    if (said) {
        snprintf(buf, cap, "%s", said);
        return buf;
    }
    memset(&v, 0, sizeof v);
    v.calls = amp_num(tot, "calls");
    v.delivered = amp_doc_delivered(tot);
    v.shadow = amp_doc_shadow(tot);
    v.speedup = amp_num(tot, "speedup");
    v.steady = amp_doc_steady(tot);
    v.saved_ms = amp_num(tot, "saved_ms");
    v.measuring = amp_doc_measuring(doc, &v.shapes);
    for (i = 0; reasons && reasons->type == AMP_JSON_OBJECT &&
                i < reasons->count; i++)
        if (reasons->items[i].number > best) {
            best = reasons->items[i].number;
            v.why_fp32 = reasons->keys[i];
        }
    v.broken = amp_json_get(amp_json_get(doc->root, "policy"), "broken") &&
               amp_json_get(amp_json_get(doc->root, "policy"), "broken")
                   ->boolean;
    return amp_verdict_line(&v, buf, cap);
}

const char *
amp_doc_time(const struct amp_doc *doc, char *buf, size_t cap)
{
    const struct amp_json *tot = amp_json_get(doc->root, "totals");
    double device_ms = amp_num(tot, "device_ms");

    if (isnan(device_ms))
        return NULL;
    return amp_time_line(device_ms, amp_num(tot, "calls_untimed"),
                         amp_num(tot, "wall_ms"), amp_num(tot, "saved_ms"),
                         buf, cap);
}

static void
amp_print_header(const struct amp_doc *doc)
{
    char b[AMP_LABEL_LEN], verdict[512];
    const struct amp_json *prog = amp_json_get(doc->root, "program");
    const struct amp_json *dev = amp_json_get(doc->root, "device");
    const struct amp_json *pol = amp_json_get(doc->root, "policy");
    const char *reported = amp_json_str(amp_json_get(dev, "reported_name"));

    printf("verdict: %s\n", amp_doc_verdict(doc, verdict, sizeof verdict));
    if (amp_doc_time(doc, verdict, sizeof verdict))
        printf("time:    %s\n", verdict);
    printf("program: %s (pid %.0f)\n",
           amp_or(amp_json_str(amp_json_get(prog, "path")), "?"),
           amp_num(prog, "pid"));
    printf("device:  %s, times %s\n", reported ? reported : "none",
           amp_or(amp_json_str(amp_json_get(dev, "timing")), "not taken"));
    amp_print_devices(amp_json_get(doc->root, "devices"));
    printf("policy:  %s: %s\n",
           amp_or(amp_json_str(amp_json_get(pol, "source")), "?"),
           amp_or(amp_json_str(amp_json_get(pol, "why")), "?"));
    /* A report that names where the tolerance came from (AMPSHIM_TOLERANCE
     * may override the policy's). */
    if (amp_json_str(amp_json_get(pol, "tolerance_source")))
        printf("tolerance: %s\n", amp_tolerance_words(pol, b, sizeof b));
    if (amp_report_incomplete(doc))
        printf("status:  incomplete: a snapshot taken during the run, at "
               "%s; the program did not reach exit\n",
               amp_or(amp_json_str(amp_json_get(doc->root, "generated")),
                      "?"));
}

/* 1 when the row's tolerance is in the Frobenius norm: its error
 * column is then the Frobenius one. */
static int
amp_row_fro(const struct amp_row *r)
{
    return r->tolerance_norm && strcmp(r->tolerance_norm, "fro") == 0;
}

/* The row's errors as the shim's comparison takes them. */
static void
amp_row_errors(const struct amp_row *r, struct amp_gemm_error *e,
               enum amp_norm *norm)
{
    memset(e, 0, sizeof *e);
    e->max_rel = r->max_rel;
    e->fro_rel = r->max_fro;
    *norm = amp_row_fro(r) ? AMP_NORM_FRO : AMP_NORM_MAX;
}

double
amp_row_error(const struct amp_row *r)
{
    return amp_row_fro(r) ? r->delivered_fro : r->delivered_rel;
}

const char *
amp_row_error_text(const struct amp_row *r, char *buf, size_t cap)
{
    if (!(r->converted > 0.0))
        snprintf(buf, cap, "exactly FP32");
    else if (isnan(amp_row_error(r)) && r->shadow_calls > 0.0 &&
             r->compared == 0.0)
        snprintf(buf, cap, "not measurable");
    else
        amp_fmt(buf, cap, "%.2e", amp_row_error(r));
    return buf;
}

int
amp_row_over(const struct amp_row *r)
{
    struct amp_gemm_error e;
    enum amp_norm norm;

    if (r->over_tolerance > 0.0)
        return 1;
    amp_row_errors(r, &e, &norm);
    /* Not measured, or no tolerance: nothing to be over. */
    if (isnan(amp_error_in(&e, norm)) || isnan(r->tolerance))
        return 0;
    return amp_error_over(&e, r->tolerance, norm);
}

/* One line of the table: a site, or (indented) one of its shapes. */
static void
amp_print_row(const struct amp_row *r, const char *name, const char *api)
{
    char b[7][32];
    /* A label wider than its column gets a line of its own, whole. */
    int own_line = strlen(name) > 32;

    if (own_line) {
        printf("%s\n", name);
        name = "";
    }
    printf("%-32s %-26s %7.0f %7.0f %7.0f %-18.18s %10s %10s %8s %8s %10s "
           "%12s %9s%s%s%s\n", name, api, r->calls, r->converted, r->shadow,
           r->shown,
           amp_fmt(b[0], 32, "%.3f", r->fp32_ms),
           amp_fmt(b[1], 32, "%.3f", r->actual_ms),
           amp_fmt(b[2], 32, "%.2f", r->speedup),
           amp_fmt(b[6], 32, "%.2f", r->steady),
           amp_fmt(b[3], 32, "%.3f", r->saved_ms),
           amp_row_error_text(r, b[4], 32),
           amp_fmt(b[5], 32, "%.1e", r->tolerance),
           r->demoted ? "  DEMOTED" : "", r->reasons[0] ? "  fp32: " : "",
           r->reasons);
}

/* Under a shape an auto rule decided: its choice and each candidate's
 * modelled speedup and error (in the tolerance's norm), or why it was not
 * chosen:
 * "    auto: tf32 (fp16 0.42x 2.5e-04: not faster than fp32; ...)". */
const char *
amp_auto_text(const struct amp_json *shape, char *buf, size_t cap)
{
    const struct amp_json *a = amp_json_get(shape, "auto");
    const struct amp_json *cands = amp_json_get(a, "candidates");
    const char *choice = amp_json_str(amp_json_get(a, "choice"));
    const char *norm = amp_json_str(amp_json_get(amp_json_get(shape,
                                                 "errors"),
                                                 "tolerance_norm"));
    /* Each candidate's error in the tolerance's norm. */
    const char *key = norm && strcmp(norm, "fro") == 0 ? "fro_rel"
                                                       : "max_rel";
    char b[2][32];
    size_t i, len;

    if (!a || a->type != AMP_JSON_OBJECT)
        return NULL;
    len = (size_t)snprintf(buf, cap, "%s (",
                           choice ? choice : "still measuring");
    for (i = 0; cands && cands->type == AMP_JSON_ARRAY && i < cands->count &&
                len < cap;
         i++) {
        const struct amp_json *c = &cands->items[i];
        const char *no = amp_json_str(amp_json_get(c, "rejected"));

        len += (size_t)snprintf(
            buf + len, cap - len, "%s%s %sx %s%s%s", i ? "; " : "",
            amp_or(amp_json_str(amp_json_get(c, "mode")), "?"),
            amp_fmt(b[0], 32, "%.2f", amp_num(c, "speedup")),
            amp_fmt(b[1], 32, "%.1e", amp_num(c, key)), no ? ": " : "",
            no ? no : "");
    }
    if (len < cap)
        snprintf(buf + len, cap - len, ")");
    return buf;
}

const char *
amp_shadow_text(const struct amp_row *r, char *buf, size_t cap)
{
    char b[32];

    if (!(r->shadow > 0.0) || !(r->shadow_calls > 0.0))
        return NULL;
    if (r->compared == 0.0)
        snprintf(b, sizeof b, "not measurable");
    else
        amp_fmt(b, sizeof b, "%.2e", amp_row_fro(r) ? r->max_fro
                                                     : r->max_rel);
    snprintf(buf, cap, "%s candidate, %s rel err %s in %.0f call%s measured "
             "beside FP32 (%s discarded)",
             amp_or(r->candidate, "?"), amp_row_fro(r) ? "fro" : "max", b,
             r->shadow, r->shadow == 1.0 ? "" : "s",
             r->shadow == 1.0 ? "its result" : "their results");
    return buf;
}

/* The reasons of unknown times, each once, as footnotes. */
static void
amp_print_unknown(const struct amp_row *r, const char **seen, size_t *nseen,
                  size_t cap)
{
    size_t i;

    if (!r->unknown_reason)
        return;
    for (i = 0; i < *nseen; i++)
        if (strcmp(seen[i], r->unknown_reason) == 0)
            return;
    if (*nseen < cap)
        seen[(*nseen)++] = r->unknown_reason;
}

static void
amp_print_table(const struct amp_doc *doc)
{
    const struct amp_json *tot = amp_json_get(doc->root, "totals");
    const char *unknown[8];
    size_t i, j, nunknown = 0;
    char b[6][32], reasons[160];
    /* Times summed over no call with an FP32 time are unknown, not 0. */
    double ms = amp_fp32_known(tot) ? 1.0 : NAN;

    amp_print_header(doc);
    printf("\n%-32s %-26s %7s %7s %7s %-18s %10s %10s %8s %8s %10s %12s "
           "%9s\n", "site / shape", "api", "calls", "conv", "shadow", "mode",
           "fp32 ms",
           "actual ms", "speedup", "steady", "saved ms",
           doc->nrows && amp_row_fro(&doc->rows[0]) ? "fro rel" : "max rel",
           "tolerance");
    for (i = 0; i < doc->nrows; i++) {
        const struct amp_row *r = &doc->rows[i];
        const struct amp_json *shapes = amp_json_get(r->site, "shapes");

        amp_print_row(r, r->name, r->api ? r->api : "?");
        amp_print_unknown(r, unknown, &nunknown, 8);
        for (j = 0; shapes && shapes->type == AMP_JSON_ARRAY &&
                    j < shapes->count; j++) {
            struct amp_row shape;
            char name[200], text[1024];

            amp_row_shape(&shape, r, &shapes->items[j]);
            snprintf(name, sizeof name, "  %s", shape.shape);
            amp_print_row(&shape, name, "");
            if (amp_auto_text(&shapes->items[j], text, sizeof text))
                printf("    auto: %s\n", text);
            else if (amp_shadow_text(&shape, text, sizeof text))
                printf("    shadow: %s\n", text);
        }
    }
    for (i = 0; i < nunknown; i++)
        printf("-: %s\n", unknown[i]);
    printf("\nconv: calls whose converted result the program got; shadow: "
           "measured beside FP32 (the program got FP32's result); steady: "
           "once measuring is over; error: of what the program got\n");
    printf("total: %.0f calls, %.0f converted, %.0f measured in shadow; "
           "fp32 %s ms, actual %s ms, saved %s ms, speedup %s (steady state "
           "%s); %s%% of the FP32 FLOPs converted\n",
           amp_num(tot, "calls"), amp_doc_delivered(tot),
           amp_doc_shadow(tot),
           amp_fmt(b[0], 32, "%.3f", ms * amp_num(tot, "fp32_ms")),
           amp_fmt(b[1], 32, "%.3f", ms * amp_num(tot, "actual_ms")),
           amp_fmt(b[2], 32, "%.3f", ms * amp_num(tot, "saved_ms")),
           amp_fmt(b[3], 32, "%.2f", amp_num(tot, "speedup")),
           amp_fmt(b[5], 32, "%.2f", amp_doc_steady(tot)),
           amp_fmt(b[4], 32, "%.1f",
                   100.0 * amp_num(tot, "converted_share")));
    amp_reasons_text(amp_json_get(tot, "fp32_reasons"), reasons,
                     sizeof reasons);
    if (reasons[0])
        printf("FP32 calls by reason: %s\n", reasons);
    amp_print_coverage(doc);
}

/* ---- CSV -------------------------------------------------------------------- */

void
amp_csv_field(FILE *f, const char *s, int last)
{
    if (s && strpbrk(s, ",\"\n\r")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else if (s) {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

void
amp_csv_number(FILE *f, double v, int last)
{
    char buf[40];

    amp_csv_field(f, isnan(v) ? "" : (snprintf(buf, sizeof buf, "%.9g", v),
                                      buf), last);
}

/* OUT: "-" is standard output. */
FILE *
amp_out_open(const char *path)
{
    return strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
}

int
amp_out_close(FILE *f)
{
    if (f == stdout)
        return fflush(f) == 0 && !ferror(f) ? 0 : -1;
    return fclose(f) == 0 ? 0 : -1;
}

/* The columns of a row after its site's (or shape's) identity. */
static const char amp_csv_columns[] =
    "calls,converted,fp32,fallback,modes,fp32_ms,actual_ms,saved_ms,"
    "speedup,max_rel_err,tolerance,over_tolerance,demoted,steady_speedup,"
    "fp32_reasons,fp32_unknown_reason,fro_rel_err,tolerance_norm,shadow,"
    "delivered_rel_err,delivered_fro_err\n";

static void
amp_csv_row(FILE *f, const struct amp_row *r)
{
    amp_csv_number(f, r->calls, 0);
    amp_csv_number(f, r->converted, 0);
    amp_csv_number(f, r->fp32_calls, 0);
    amp_csv_number(f, r->fallback, 0);
    amp_csv_field(f, r->modes, 0);
    amp_csv_number(f, r->fp32_ms, 0);
    amp_csv_number(f, r->actual_ms, 0);
    amp_csv_number(f, r->saved_ms, 0);
    amp_csv_number(f, r->speedup, 0);
    amp_csv_number(f, r->max_rel, 0);
    amp_csv_number(f, r->tolerance, 0);
    amp_csv_number(f, r->over_tolerance, 0);
    amp_csv_field(f, r->demoted ? "yes" : "no", 0);
    amp_csv_number(f, r->steady, 0);
    amp_csv_field(f, r->reasons, 0);
    amp_csv_field(f, r->unknown_reason, 0);
    amp_csv_number(f, r->max_fro, 0);
    amp_csv_field(f, r->tolerance_norm, 0);
    amp_csv_number(f, r->shadow, 0);
    amp_csv_number(f, r->delivered_rel, 0);
    amp_csv_number(f, r->delivered_fro, 1);
}

/* One row per site, or with shapes one per (site, shape): the site's
 * identity, the shape's text, then the same columns. */
static int
amp_write_csv(const struct amp_doc *doc, const char *path, int shapes)
{
    FILE *f = amp_out_open(path);
    size_t i, j;

    if (!f)
        return -1;
    fprintf(f, "api,function,module,offset,%s%s", shapes ? "shape," : "",
            amp_csv_columns);
    for (i = 0; i < doc->nrows; i++) {
        const struct amp_row *r = &doc->rows[i];
        const struct amp_json *sh = amp_json_get(r->site, "shapes");
        size_t n = shapes && sh && sh->type == AMP_JSON_ARRAY ? sh->count
                                                               : 0;

        for (j = 0; j < (shapes ? n : 1); j++) {
            struct amp_row shape;
            const struct amp_row *row = r;

            if (shapes) {
                amp_row_shape(&shape, r, &sh->items[j]);
                row = &shape;
            }
            amp_csv_field(f, r->api, 0);
            amp_csv_field(f, r->function ? r->function_name : NULL, 0);
            amp_csv_field(f, r->module, 0);
            amp_csv_number(f, r->offset, 0);
            if (shapes)
                amp_csv_field(f, row->shape, 0);
            amp_csv_row(f, row);
        }
    }
    return amp_out_close(f);
}

/* What `ampshim report` was asked. */
struct amp_report_args {
    char **files;
    size_t nfiles;
    const char *html, *csv;
    int shapes, diff;
};

/* 0 with the arguments in *a; 1 after --help; 2 after a usage message. */
static int
amp_report_parse(int argc, char **argv, struct amp_report_args *a)
{
    static const struct option longopts[] = {
        {"html", required_argument, NULL, 'H'},
        {"csv", required_argument, NULL, 'C'},
        {"shapes", no_argument, NULL, 'S'},
        {"diff", no_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct amp_opt opt = {"ampshim report", "-:h", longopts, argc, argv, 0};
    const char *why = NULL;
    int c;

    while ((c = amp_opt_next(&opt)) != -1) {
        switch (c) {
        case 'H': a->html = optarg; break;
        case 'C': a->csv = optarg; break;
        case 'S': a->shapes = 1; break;
        case 'D': a->diff = 1; break;
        case 'h':
            printf("%s", amp_tool_report_help);
            return 1;
        case 1:
            a->files[a->nfiles++] = optarg;
            break;
        default:
            return AMP_TOOL_USAGE;
        }
    }
    /* After "--", the rest is arguments. */
    for (; optind < argc; optind++)
        a->files[a->nfiles++] = argv[optind];
    if (a->html && a->csv && strcmp(a->html, "-") == 0 &&
        strcmp(a->csv, "-") == 0)
        why = "--html - and --csv - both write to standard output; choose "
              "one";
    else if (a->shapes && !a->csv)
        why = "--shapes needs --csv (it gives the CSV a row per shape)";
    else if (a->diff && a->nfiles != 2)
        why = "--diff compares two reports: --diff A.json B.json";
    else if (a->diff && a->html)
        why = "--diff has no page: --csv writes the comparison";
    else if (a->shapes && a->diff)
        why = "--diff compares per shape already; --shapes is not needed";
    else if (a->shapes && a->nfiles > 1)
        why = "--shapes is for one report's CSV";
    if (why) {
        amp_opt_usage("ampshim report", "%s", why);
        return AMP_TOOL_USAGE;
    }
    return 0;
}

/* 1 when path is a directory. */
static int
amp_is_dir(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void
amp_latest_in(const char *dir, char *best, size_t cap, struct timespec *when)
{
    char path[PATH_MAX];
    struct dirent *e;
    struct stat st;
    DIR *d = opendir(dir);
    size_t len;

    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        len = strlen(e->d_name);
        if (strncmp(e->d_name, "ampshim-", 8) != 0 || len < 13 ||
            strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >=
                (int)sizeof path ||
            stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (best[0] && (st.st_mtim.tv_sec < when->tv_sec ||
                        (st.st_mtim.tv_sec == when->tv_sec &&
                         st.st_mtim.tv_nsec <= when->tv_nsec)))
            continue;
        *when = st.st_mtim;
        snprintf(best, cap, "%s", strcmp(dir, ".") == 0 ? e->d_name : path);
    }
    closedir(d);
}

/* The latest report of the working directory and the state directory
 * into path; 0, or 1 after saying where none was found. */
static int
amp_latest_report(char *path, size_t cap)
{
    char state[PATH_MAX];
    struct timespec when = {0, 0};
    int have_state = amp_state_dir(getenv("XDG_STATE_HOME"), getenv("HOME"),
                                   state, sizeof state) == AMP_OK;

    path[0] = '\0';
    amp_latest_in(".", path, cap, &when);
    if (have_state)
        amp_latest_in(state, path, cap, &when);
    if (path[0]) {
        fprintf(stderr, "ampshim report: the latest report: %s\n", path);
        return 0;
    }
    fprintf(stderr, "ampshim report: no report named, and no ampshim-*.json "
            "in the working directory%s%s; name one (FILE, or - for standard "
            "input)\n", have_state ? " nor in " : "",
            have_state ? state : "");
    return 1;
}

int
amp_tool_report(int argc, char **argv)
{
    struct amp_report_args a = {NULL, 0, NULL, NULL, 0, 0};
    const char *file, *html, *csv;
    char latest[PATH_MAX];
    struct amp_doc doc;
    int rc;

    a.files = calloc((size_t)argc + 1, sizeof *a.files);
    rc = a.files ? amp_report_parse(argc, argv, &a) : 1;
    html = a.html;
    csv = a.csv;
    if (rc != 0) {
        free(a.files);
        return rc == 1 ? 0 : rc;
    }
    if (a.diff) {
        rc = amp_tool_report_diff(a.files[0], a.files[1], csv);
        free(a.files);
        return rc;
    }
    /* Several reports, or a directory of them: one job's summary. */
    if (a.nfiles > 1 || (a.nfiles == 1 && amp_is_dir(a.files[0]))) {
        if (a.shapes) {
            amp_opt_usage("ampshim report", "--shapes is for one report's "
                          "CSV");
            free(a.files);
            return AMP_TOOL_USAGE;
        }
        rc = amp_tool_report_job(a.files, a.nfiles, html, csv);
        free(a.files);
        return rc;
    }
    file = a.nfiles ? a.files[0] : NULL;
    free(a.files);
    if (!file) {
        if (amp_latest_report(latest, sizeof latest) != 0)
            return 1;
        file = latest;
    }
    if (amp_doc_load(file, &doc) != 0) {
        amp_doc_free(&doc);
        return 1;
    }
    /* Standard output holds the table, or the page or CSV alone. */
    if (!(html && strcmp(html, "-") == 0) && !(csv && strcmp(csv, "-") == 0))
        amp_print_table(&doc);
    if (html && amp_write_html(&doc, html) != 0) {
        fprintf(stderr, "ampshim report: %s: %s\n",
                strcmp(html, "-") == 0 ? "standard output" : html,
                strerror(errno));
        rc = 1;
    }
    if (csv && amp_write_csv(&doc, csv, a.shapes) != 0) {
        fprintf(stderr, "ampshim report: %s: %s\n",
                strcmp(csv, "-") == 0 ? "standard output" : csv,
                strerror(errno));
        rc = 1;
    }
    amp_doc_free(&doc);
    return rc;
}
