/* `ampshim report`: a report file as a terminal table sorted by time
 * saved, a self-contained HTML page with SVG charts, and CSV. */
#include "base/json.h"
#include "base/path.h"
#include "decide/symbolize.h"
#include "tool/tool.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char amp_tool_report_help[] =
    "usage: ampshim report [FILE] [--html OUT] [--csv OUT]\n"
    "\n"
    "Reads a report that the shim wrote at a program's exit (its schema:\n"
    "docs/report-schema.md) and prints the program, device and policy and\n"
    "a table of its call sites, sorted by time saved: calls, converted\n"
    "calls, modes, FP32 and actual time, speedup, time saved, the largest\n"
    "shadow error against the policy's tolerance, and the totals. FILE '-'\n"
    "reads the report from standard input. Without FILE, the latest\n"
    "ampshim-*.json report (by modification time) of the working directory\n"
    "(where 'ampshim run' writes them) and of the state directory (where a\n"
    "program preloaded without 'ampshim run' writes them:\n"
    "$XDG_STATE_HOME/ampshim, by default ~/.local/state/ampshim).\n"
    "\n"
    "options:\n"
    "  --html OUT   also write a self-contained HTML page (no external\n"
    "               resources) with charts: time saved per site, speedup\n"
    "               per site, error against the bound, FP32 versus actual\n"
    "               time\n"
    "  --csv OUT    also write one CSV row per site\n"
    "  -h, --help   this help\n"
    "\n"
    "OUT is replaced if it exists. OUT '-' writes the page or the CSV to\n"
    "standard output instead of the table (one of them at a time), so that\n"
    "'ampshim report --csv - FILE' prints the CSV alone. Options take their\n"
    "value as --opt VALUE or --opt=VALUE, before or after FILE.\n"
    "\n"
    "exit status:\n"
    "  0; 1 when FILE cannot be read or is not a report, or OUT cannot be\n"
    "  written; 2 on a usage error.\n";

/* One site of the report, flattened. */
struct amp_row {
    const char *api, *function, *module, *candidate, *demoted_reason;
    char name[AMP_LABEL_LEN];    /* the site's label (amp_symbol_label) */
    char function_name[AMP_SYMBOL_LEN]; /* function as users know it (an
                                           older shim's may be mangled);
                                           "" when null */
    char modes[96];
    double offset, calls, converted, fp32_calls, fallback;
    double fp32_ms, actual_ms, saved_ms, speedup;
    double max_rel, tolerance, over_tolerance, shadow_calls;
    int demoted;
};

struct amp_doc {
    struct amp_json *root;
    struct amp_row *rows;
    size_t nrows;
};

static const char *
amp_or(const char *s, const char *otherwise)
{
    return s ? s : otherwise;
}

static double
amp_num(const struct amp_json *obj, const char *key)
{
    return amp_json_num(amp_json_get(obj, key), NAN);
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

static void
amp_row_read(struct amp_row *r, const struct amp_json *s)
{
    const struct amp_json *time = amp_json_get(s, "time");
    const struct amp_json *err = amp_json_get(s, "errors");
    const struct amp_json *demoted = amp_json_get(s, "demoted");

    memset(r, 0, sizeof *r);
    r->api = amp_json_str(amp_json_get(s, "api"));
    r->function = amp_json_str(amp_json_get(s, "function"));
    r->module = amp_json_str(amp_json_get(s, "module"));
    r->candidate = amp_json_str(amp_json_get(s, "shadow_candidate"));
    r->demoted_reason = amp_json_str(amp_json_get(s, "demoted_reason"));
    r->offset = amp_num(s, "offset");
    r->calls = amp_num(s, "calls");
    r->converted = amp_num(s, "converted");
    r->fp32_calls = amp_num(s, "fp32");
    r->fallback = amp_num(s, "fallback");
    r->fp32_ms = amp_num(time, "fp32_ms");
    r->actual_ms = amp_num(time, "actual_ms");
    r->saved_ms = amp_num(time, "saved_ms");
    r->speedup = amp_num(time, "speedup");
    r->max_rel = amp_num(err, "max_rel");
    r->tolerance = amp_num(err, "tolerance");
    r->over_tolerance = amp_num(err, "over_tolerance");
    r->shadow_calls = amp_num(err, "shadow_calls");
    r->demoted = demoted && demoted->type == AMP_JSON_BOOL && demoted->boolean;
    if (r->function)
        amp_function_name(r->function, r->function_name,
                          sizeof r->function_name);
    amp_symbol_label(r->name, sizeof r->name, r->function_name, r->module,
                     isnan(r->offset) ? 0 : (uintptr_t)r->offset);
    amp_row_modes(r, amp_json_get(s, "modes"));
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

/* Reads and checks the document; 0, or -1 after a message. */
static int
amp_doc_load(const char *path, struct amp_doc *doc)
{
    const struct amp_json *sites, *schema;
    char err[160];
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
    doc->rows = calloc(sites->count ? sites->count : 1, sizeof *doc->rows);
    if (!doc->rows)
        return -1;
    for (i = 0; i < sites->count; i++)
        amp_row_read(&doc->rows[doc->nrows++], &sites->items[i]);
    qsort(doc->rows, doc->nrows, sizeof *doc->rows, amp_by_saved);
    return 0;
}

/* v as "%.Nf" or "%.Ne" (fmt) says; "-" for NaN. */
static const char *
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
static const struct amp_cover_row {
    const char *section, *key, *label;
} amp_cover_rows[] = {
    {"", "converted", "FP32, converted"},
    {"fp32_kept", "policy", "FP32 kept: policy or mode"},
    {"fp32_kept", "invalid", "FP32 kept: invalid arguments"},
    {"fp32_kept", "empty", "FP32 kept: empty or alpha 0"},
    {"fp32_kept", "pedantic", "FP32 kept: pedantic math"},
    {"fp32_kept", "fallback", "FP32 kept: fallback"},
    {"fp32_kept", "unconverted", "FP32 kept: path not converted"},
    {"other", "fp64", "FP64"},
    {"other", "complex", "complex"},
    {"other", "fp16_bf16", "FP16/BF16"},
    {"other", "int8", "INT8"},
    {"other", "other", "other precisions"},
};

#define AMP_COVER_ROWS (sizeof amp_cover_rows / sizeof *amp_cover_rows)

/* Row i's object in the report's coverage; NULL when it has none. */
static const struct amp_json *
amp_cover_kind(const struct amp_json *cov, size_t i)
{
    const struct amp_cover_row *r = &amp_cover_rows[i];

    return amp_json_get(r->section[0] ? amp_json_get(cov, r->section) : cov,
                        r->key);
}

/* The one-line answer: how much of the work the shim could reach. */
static void
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
static int
amp_report_incomplete(const struct amp_doc *doc)
{
    const struct amp_json *c = amp_json_get(doc->root, "complete");

    return c && c->type == AMP_JSON_BOOL && !c->boolean;
}

static void
amp_print_header(const struct amp_doc *doc)
{
    const struct amp_json *prog = amp_json_get(doc->root, "program");
    const struct amp_json *dev = amp_json_get(doc->root, "device");
    const struct amp_json *pol = amp_json_get(doc->root, "policy");
    const char *reported = amp_json_str(amp_json_get(dev, "reported_name"));

    printf("program: %s (pid %.0f)\n",
           amp_or(amp_json_str(amp_json_get(prog, "path")), "?"),
           amp_num(prog, "pid"));
    printf("device:  %s, times %s\n", reported ? reported : "none",
           amp_or(amp_json_str(amp_json_get(dev, "timing")), "not taken"));
    printf("policy:  %s: %s\n",
           amp_or(amp_json_str(amp_json_get(pol, "source")), "?"),
           amp_or(amp_json_str(amp_json_get(pol, "why")), "?"));
    if (amp_report_incomplete(doc))
        printf("status:  incomplete: a snapshot taken during the run, at "
               "%s; the program did not reach exit\n",
               amp_or(amp_json_str(amp_json_get(doc->root, "generated")),
                      "?"));
}

static void
amp_print_table(const struct amp_doc *doc)
{
    const struct amp_json *tot = amp_json_get(doc->root, "totals");
    char b[6][32];
    size_t i;

    amp_print_header(doc);
    printf("\n%-32s %-26s %7s %7s %-18s %10s %10s %8s %10s %10s %9s\n",
           "site", "api", "calls", "conv", "mode", "fp32 ms", "actual ms",
           "speedup", "saved ms", "max rel", "tolerance");
    for (i = 0; i < doc->nrows; i++) {
        const struct amp_row *r = &doc->rows[i];
        /* A label wider than its column gets a line of its own, whole. */
        int own_line = strlen(r->name) > 32;

        if (own_line)
            printf("%s\n", r->name);
        printf("%-32.32s %-26.26s %7.0f %7.0f %-18.18s %10s %10s %8s %10s "
               "%10s %9s%s\n", own_line ? "" : r->name,
               r->api ? r->api : "?", r->calls,
               r->converted, r->modes,
               amp_fmt(b[0], 32, "%.3f", r->fp32_ms),
               amp_fmt(b[1], 32, "%.3f", r->actual_ms),
               amp_fmt(b[2], 32, "%.2f", r->speedup),
               amp_fmt(b[3], 32, "%.3f", r->saved_ms),
               amp_fmt(b[4], 32, "%.2e", r->max_rel),
               amp_fmt(b[5], 32, "%.1e", r->tolerance),
               r->demoted ? "  DEMOTED" : "");
    }
    printf("\ntotal: %.0f calls, %.0f converted; fp32 %s ms, actual %s ms, "
           "saved %s ms, speedup %s; %s%% of the FP32 FLOPs converted\n",
           amp_num(tot, "calls"), amp_num(tot, "converted"),
           amp_fmt(b[0], 32, "%.3f", amp_num(tot, "fp32_ms")),
           amp_fmt(b[1], 32, "%.3f", amp_num(tot, "actual_ms")),
           amp_fmt(b[2], 32, "%.3f", amp_num(tot, "saved_ms")),
           amp_fmt(b[3], 32, "%.2f", amp_num(tot, "speedup")),
           amp_fmt(b[4], 32, "%.1f",
                   100.0 * amp_num(tot, "converted_share")));
    amp_print_coverage(doc);
}

/* ---- CSV -------------------------------------------------------------------- */

static void
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

static void
amp_csv_number(FILE *f, double v, int last)
{
    char buf[40];

    amp_csv_field(f, isnan(v) ? "" : (snprintf(buf, sizeof buf, "%.9g", v),
                                      buf), last);
}

/* OUT: "-" is standard output. */
static FILE *
amp_out_open(const char *path)
{
    return strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
}

static int
amp_out_close(FILE *f)
{
    if (f == stdout)
        return fflush(f) == 0 && !ferror(f) ? 0 : -1;
    return fclose(f) == 0 ? 0 : -1;
}

static int
amp_write_csv(const struct amp_doc *doc, const char *path)
{
    FILE *f = amp_out_open(path);
    size_t i;

    if (!f)
        return -1;
    fputs("api,function,module,offset,calls,converted,fp32,fallback,modes,"
          "fp32_ms,actual_ms,saved_ms,speedup,max_rel_err,tolerance,"
          "over_tolerance,demoted\n", f);
    for (i = 0; i < doc->nrows; i++) {
        const struct amp_row *r = &doc->rows[i];

        amp_csv_field(f, r->api, 0);
        amp_csv_field(f, r->function ? r->function_name : NULL, 0);
        amp_csv_field(f, r->module, 0);
        amp_csv_number(f, r->offset, 0);
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
        amp_csv_field(f, r->demoted ? "yes" : "no", 1);
    }
    return amp_out_close(f);
}

/* ---- HTML ------------------------------------------------------------------------ */

static void
amp_html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

#define AMP_CHART_LABEL 260      /* px for the site names */
#define AMP_CHART_PLOT 420       /* px for the bars */
#define AMP_CHART_ROW 22

/* One series of a chart: a value per row, a colour and a legend. */
struct amp_series {
    double (*value)(const struct amp_row *r);
    const char *colour, *legend;
};

struct amp_chart {
    const char *title, *unit;
    struct amp_series series[2];
    int nseries;
    int log_scale;               /* log10 axis (errors) */
    double marker;               /* a vertical line at this value (NaN:
                                    none), e.g. speedup 1 */
    double (*marker_of)(const struct amp_row *r); /* per-row tick (the
                                                     tolerance), or NULL */
};

static double amp_saved(const struct amp_row *r) { return r->saved_ms; }
static double amp_speedup(const struct amp_row *r) { return r->speedup; }
static double amp_error(const struct amp_row *r) { return r->max_rel; }
static double amp_bound(const struct amp_row *r) { return r->tolerance; }
static double amp_fp32(const struct amp_row *r) { return r->fp32_ms; }
static double amp_actual(const struct amp_row *r) { return r->actual_ms; }

/* The chart's axis position of v, from 0 to AMP_CHART_PLOT. */
static double
amp_chart_x(const struct amp_chart *c, double v, double lo, double hi)
{
    if (c->log_scale)
        v = log10(v > 1e-12 ? v : 1e-12);
    if (hi <= lo)
        return 0.0;
    return (v - lo) / (hi - lo) * AMP_CHART_PLOT;
}

static void
amp_chart_range(const struct amp_chart *c, const struct amp_doc *doc,
                double *lo, double *hi)
{
    size_t i;
    int s;

    *lo = c->log_scale ? -8.0 : 0.0;
    *hi = c->log_scale ? 0.0 : 0.0;
    for (i = 0; i < doc->nrows; i++) {
        for (s = 0; s < c->nseries + (c->marker_of ? 1 : 0); s++) {
            double v = s < c->nseries ? c->series[s].value(&doc->rows[i])
                                      : c->marker_of(&doc->rows[i]);

            if (isnan(v))
                continue;
            if (c->log_scale)
                v = ceil(log10(v > 1e-12 ? v : 1e-12));
            if (v < *lo)
                *lo = v;
            if (v > *hi)
                *hi = v;
        }
    }
    if (!isnan(c->marker) && c->marker > *hi)
        *hi = c->marker * 1.1;
    if (*hi <= *lo)
        *hi = *lo + 1.0;
}

static void
amp_chart(FILE *f, const struct amp_chart *c, const struct amp_doc *doc)
{
    double lo, hi, zero;
    int rows = (int)doc->nrows, height, s;
    size_t i;

    amp_chart_range(c, doc, &lo, &hi);
    zero = c->log_scale ? 0.0 : amp_chart_x(c, 0.0, lo, hi);
    height = rows * AMP_CHART_ROW * c->nseries + 40;
    fprintf(f, "<h2>%s</h2>\n<svg class=\"chart\" width=\"%d\" height=\"%d\" "
            "role=\"img\" aria-label=\"%s\">\n", c->title,
            AMP_CHART_LABEL + AMP_CHART_PLOT + 120, height, c->title);
    for (i = 0; i < doc->nrows; i++) {
        const struct amp_row *r = &doc->rows[i];
        int y0 = (int)i * AMP_CHART_ROW * c->nseries + 4;

        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">",
                AMP_CHART_LABEL - 6, y0 + 15);
        amp_html_text(f, r->name);
        fputs("</text>\n", f);
        for (s = 0; s < c->nseries; s++) {
            double v = c->series[s].value(r), x;
            char label[32];

            if (isnan(v))
                continue;
            x = amp_chart_x(c, v, lo, hi);
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                    "fill=\"%s\"><title>%s: %g %s</title></rect>\n",
                    AMP_CHART_LABEL + (x < zero ? x : zero),
                    y0 + s * AMP_CHART_ROW, fabs(x - zero) + 0.5,
                    AMP_CHART_ROW - 4, c->series[s].colour,
                    c->series[s].legend, v, c->unit);
            snprintf(label, sizeof label, "%.3g", v);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s</text>\n",
                    AMP_CHART_LABEL + (x > zero ? x : zero) + 4,
                    y0 + s * AMP_CHART_ROW + 14, label);
        }
        if (c->marker_of && !isnan(c->marker_of(r)))
            fprintf(f, "<line class=\"bound\" x1=\"%.1f\" x2=\"%.1f\" "
                    "y1=\"%d\" y2=\"%d\"><title>bound %g</title></line>\n",
                    AMP_CHART_LABEL + amp_chart_x(c, c->marker_of(r), lo, hi),
                    AMP_CHART_LABEL + amp_chart_x(c, c->marker_of(r), lo, hi),
                    y0 - 2, y0 + AMP_CHART_ROW * c->nseries - 2,
                    c->marker_of(r));
    }
    if (!isnan(c->marker))
        fprintf(f, "<line class=\"ref\" x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" "
                "y2=\"%d\"/>\n", AMP_CHART_LABEL + amp_chart_x(c, c->marker,
                                                               lo, hi),
                AMP_CHART_LABEL + amp_chart_x(c, c->marker, lo, hi),
                height - 30);
    fprintf(f, "<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>"
            "\n<text x=\"%d\" y=\"%d\">%s%g</text><text x=\"%d\" y=\"%d\" "
            "text-anchor=\"end\">%s%g %s</text>\n", AMP_CHART_LABEL,
            AMP_CHART_LABEL + AMP_CHART_PLOT, height - 28, height - 28,
            AMP_CHART_LABEL, height - 12, c->log_scale ? "1e" : "", lo,
            AMP_CHART_LABEL + AMP_CHART_PLOT, height - 12,
            c->log_scale ? "1e" : "", hi, c->unit);
    for (s = 0; s < c->nseries && c->nseries > 1; s++)
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" "
                "fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
                AMP_CHART_LABEL + AMP_CHART_PLOT + 10, 4 + s * 16,
                c->series[s].colour, AMP_CHART_LABEL + AMP_CHART_PLOT + 24,
                13 + s * 16, c->series[s].legend);
    fputs("</svg>\n", f);
}

static void
amp_html_table(FILE *f, const struct amp_doc *doc)
{
    char b[6][32];
    size_t i;

    fputs("<table>\n<tr><th>site</th><th>api</th><th>calls</th><th>converted"
          "</th><th>mode</th><th>FP32 ms</th><th>actual ms</th><th>speedup"
          "</th><th>saved ms</th><th>max rel err</th><th>tolerance</th>"
          "<th>demoted</th></tr>\n", f);
    for (i = 0; i < doc->nrows; i++) {
        const struct amp_row *r = &doc->rows[i];

        fputs("<tr><td>", f);
        amp_html_text(f, r->name);
        fputs("</td><td>", f);
        amp_html_text(f, r->api);
        fprintf(f, "</td><td>%.0f</td><td>%.0f</td><td>", r->calls,
                r->converted);
        amp_html_text(f, r->modes);
        fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                "<td>%s</td><td>%s</td><td>",
                amp_fmt(b[0], 32, "%.3f", r->fp32_ms),
                amp_fmt(b[1], 32, "%.3f", r->actual_ms),
                amp_fmt(b[2], 32, "%.2f", r->speedup),
                amp_fmt(b[3], 32, "%.3f", r->saved_ms),
                amp_fmt(b[4], 32, "%.2e", r->max_rel),
                amp_fmt(b[5], 32, "%.1e", r->tolerance));
        amp_html_text(f, r->demoted ? (r->demoted_reason ? r->demoted_reason
                                                         : "yes")
                                    : "");
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* The coverage section of the page; nothing for a report without one. */
static void
amp_html_coverage(FILE *f, const struct amp_doc *doc)
{
    const struct amp_json *cov = amp_json_get(doc->root, "coverage");
    char line[256], b[32];
    size_t i;

    if (!cov || amp_num(cov, "calls") <= 0.0)
        return;
    amp_cover_summary(cov, line, sizeof line);
    fputs("<h2>Coverage</h2>\n<p>", f);
    amp_html_text(f, line);
    fputs(".</p>\n<table>\n<tr><th>work</th><th>calls</th><th>GFLOP</th>"
          "<th>share</th></tr>\n", f);
    for (i = 0; i < AMP_COVER_ROWS; i++) {
        const struct amp_json *k = amp_cover_kind(cov, i);

        if (!k || amp_num(k, "calls") <= 0.0)
            continue;
        fputs("<tr><td>", f);
        amp_html_text(f, amp_cover_rows[i].label);
        fprintf(f, "</td><td>%.0f</td><td>%.6g</td><td>%s%%</td></tr>\n",
                amp_num(k, "calls"), amp_num(k, "flops") / 1e9,
                amp_fmt(b, sizeof b, "%.1f", 100.0 * amp_num(k, "share")));
    }
    fputs("</table>\n", f);
}

static int
amp_write_html(const struct amp_doc *doc, const char *path)
{
    const struct amp_chart charts[] = {
        {"Time saved per site", "ms", {{amp_saved, "#2a7ab9", "saved"}}, 1,
         0, NAN, NULL},
        {"Speedup per site (FP32 time / actual time)", "x",
         {{amp_speedup, "#3b9a57", "speedup"}}, 1, 0, 1.0, NULL},
        {"Largest shadow error against the bound (relative, log scale)", "",
         {{amp_error, "#c8553d", "max rel err"}}, 1, 1, NAN, amp_bound},
        {"FP32 versus actual time", "ms",
         {{amp_fp32, "#888888", "FP32"}, {amp_actual, "#2a7ab9", "actual"}},
         2, 0, NAN, NULL},
    };
    const struct amp_json *prog = amp_json_get(doc->root, "program");
    const struct amp_json *dev = amp_json_get(doc->root, "device");
    const struct amp_json *tot = amp_json_get(doc->root, "totals");
    FILE *f = amp_out_open(path);
    char b[4][32];
    size_t i;

    if (!f)
        return -1;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "\n<title>ampshim report: ", f);
    amp_html_text(f, amp_json_str(amp_json_get(prog, "name")));
    fputs("</title>\n<style>\nbody{font-family:sans-serif;margin:2em;}\n"
          "table{border-collapse:collapse;}td,th{border:1px solid #ccc;"
          "padding:2px 6px;text-align:right;}\ntd:first-child,td:nth-child(2)"
          ",td:nth-child(5){text-align:left;}\nsvg text{font-size:12px;}\n"
          "line.axis,line.ref{stroke:#333;}line.ref{stroke-dasharray:4 3;}\n"
          "line.bound{stroke:#000;stroke-width:2;}\n</style></head><body>\n"
          "<h1>ampshim report: ", f);
    amp_html_text(f, amp_json_str(amp_json_get(prog, "path")));
    fputs("</h1>\n<p>Device: ", f);
    amp_html_text(f, amp_or(amp_json_str(amp_json_get(dev, "reported_name")), "none"));
    fputs(", times ", f);
    amp_html_text(f, amp_or(amp_json_str(amp_json_get(dev, "timing")), "not taken"));
    fprintf(f, ". Total: FP32 %s ms, actual %s ms, saved %s ms, speedup %s; "
            "%.1f%% of the FP32 FLOPs converted.</p>\n",
            amp_fmt(b[0], 32, "%.3f", amp_num(tot, "fp32_ms")),
            amp_fmt(b[1], 32, "%.3f", amp_num(tot, "actual_ms")),
            amp_fmt(b[2], 32, "%.3f", amp_num(tot, "saved_ms")),
            amp_fmt(b[3], 32, "%.2f", amp_num(tot, "speedup")),
            100.0 * (isnan(amp_num(tot, "converted_share"))
                         ? 0.0 : amp_num(tot, "converted_share")));
    amp_html_table(f, doc);
    amp_html_coverage(f, doc);
    for (i = 0; i < sizeof charts / sizeof *charts; i++)
        amp_chart(f, &charts[i], doc);
    fputs("</body></html>\n", f);
    return amp_out_close(f);
}

/* 0 with the arguments in *file, *html, *csv; 1 after --help; 2 after
 * a usage message. */
static int
amp_report_parse(int argc, char **argv, const char **file, const char **html,
                 const char **csv)
{
    static const struct option longopts[] = {
        {"html", required_argument, NULL, 'H'},
        {"csv", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct amp_opt opt = {"ampshim report", "-:h", longopts, argc, argv, 0};
    int c;

    *file = *html = *csv = NULL;
    while ((c = amp_opt_next(&opt)) != -1) {
        switch (c) {
        case 'H': *html = optarg; break;
        case 'C': *csv = optarg; break;
        case 'h':
            printf("%s", amp_tool_report_help);
            return 1;
        case 1:
            if (*file) {
                amp_opt_usage("ampshim report", "one report at a time: '%s' "
                              "after '%s'", optarg, *file);
                return AMP_TOOL_USAGE;
            }
            *file = optarg;
            break;
        default:
            return AMP_TOOL_USAGE;
        }
    }
    /* After "--", the rest is arguments. */
    for (; optind < argc; optind++) {
        if (*file) {
            amp_opt_usage("ampshim report", "one report at a time: '%s' "
                          "after '%s'", argv[optind], *file);
            return AMP_TOOL_USAGE;
        }
        *file = argv[optind];
    }
    if (*html && *csv && strcmp(*html, "-") == 0 && strcmp(*csv, "-") == 0) {
        amp_opt_usage("ampshim report", "--html - and --csv - both write to "
                      "standard output; choose one");
        return AMP_TOOL_USAGE;
    }
    return 0;
}

/* The newest ampshim-*.json regular file of dir into best (when newer
 * than *when). */
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
    const char *file, *html, *csv;
    char latest[PATH_MAX];
    struct amp_doc doc;
    int rc = amp_report_parse(argc, argv, &file, &html, &csv);

    if (rc != 0)
        return rc == 1 ? 0 : rc;
    if (!file) {
        if (amp_latest_report(latest, sizeof latest) != 0)
            return 1;
        file = latest;
    }
    if (amp_doc_load(file, &doc) != 0) {
        free(doc.rows);
        amp_json_free(doc.root);
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
    if (csv && amp_write_csv(&doc, csv) != 0) {
        fprintf(stderr, "ampshim report: %s: %s\n",
                strcmp(csv, "-") == 0 ? "standard output" : csv,
                strerror(errno));
        rc = 1;
    }
    free(doc.rows);
    amp_json_free(doc.root);
    return rc;
}
