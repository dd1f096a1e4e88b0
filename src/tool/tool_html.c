/* `ampshim report --html`: the report as one self-contained page (inline
 * CSS and SVG, no script, nothing fetched): what ran where under which
 * policy, charts per site with captions and labelled reference lines, a
 * table per shape, why calls stayed FP32, the coverage and what to do
 * next. Every string from the report is escaped: program names, paths and
 * function names come from the program that ran. */
#include "base/json.h"
#include "tool/tool_report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Text ---------------------------------------------------------------- */

void
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

/* At most max bytes of s, escaped, cut before a UTF-8 continuation byte
 * and marked with an ellipsis when cut (SVG text cannot wrap). */
static void
amp_html_text_cut(FILE *f, const char *s, size_t max)
{
    char buf[256];
    size_t len = s ? strlen(s) : 0;

    if (len <= max || max >= sizeof buf) {
        amp_html_text(f, s);
        return;
    }
    while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
        max--;
    memcpy(buf, s, max);
    buf[max] = '\0';
    amp_html_text(f, buf);
    fputs("\xe2\x80\xa6", f);
}

/* printf, then escaped: for sentences that hold strings of the report. */
static void __attribute__((format(printf, 2, 3)))
amp_html_printf(FILE *f, const char *fmt, ...)
{
    char small[512], *text = small;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof small && (text = malloc((size_t)n + 1)) != NULL) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    amp_html_text(f, text ? text : small);
    if (text != small)
        free(text);
}

static const char *
amp_str(const struct amp_json *obj, const char *key)
{
    return amp_json_str(amp_json_get(obj, key));
}

static int
amp_true(const struct amp_json *obj, const char *key)
{
    const struct amp_json *v = amp_json_get(obj, key);

    return v && v->type == AMP_JSON_BOOL && v->boolean;
}

/* A count for sentences: 0 when absent. */
static double
amp_count(const struct amp_json *obj, const char *key)
{
    double v = amp_num(obj, key);

    return isnan(v) ? 0.0 : v;
}

/* ---- Why calls stayed FP32 ----------------------------------------------- */

/* The reasons a call runs FP32, in the order the breakdown lists them:
 * the report's fp32_reasons keys (schema version 2) and, for a version-1
 * report, "policy" for the FP32 calls whose reason it does not give. */
static const struct amp_reason {
    const char *key, *meaning;
} amp_reasons[] = {
    {"mode", "the mode is fp32 (AMPSHIM_MODE or the policy's)"},
    {"rule", "an fp32 rule of the policy matched"},
    {"no-rule", "no rule matched, and the policy's default is fp32"},
    {"min-size", "smaller than the policy's min-size"},
    {"demoted", "the shape's shadow error at the site went over the "
                "tolerance"},
    {"shape-limit", "beyond the (site, shape)s the shim tells apart in a "
                    "process: not converted unmeasured"},
    {"measuring", "auto still measuring the shape, its measuring calls' "
                  "results not yet back from the device"},
    {"broken-policy", "the policy file has an error: nothing converts"},
    {"no-emulation", "bf16x9 asked for on a GPU without cuBLAS's BF16x9 "
                     "emulation (compute capability 10.0 and 10.3 have "
                     "it): FP32"},
    {"pedantic", "the program asked for pedantic FP32 math"},
    {"no-tensor-core-engine", "a cuDNN backend plan on an engine without "
                              "Tensor Cores: the program chose FP32 math"},
    {"fused-graph", "a cuDNN backend plan of a convolution fused with "
                    "pointwise operations (bias, activation): run as the "
                    "program built it"},
    {"unsupported", "types or options the converted path does not take"},
    {"atomic-sync", "a cuBLASLt call synchronised with other kernels "
                    "through counters (atomic synchronisation)"},
    {"capture", "a call on a stream being captured into a CUDA graph: a "
                "shadow call, or one whose (site, shape) ran FP32 in its "
                "first capture (later captures keep it so, so that a graph "
                "update takes them)"},
    {"invalid", "arguments the library refuses"},
    {"empty", "an empty problem (a size 0, a host alpha of 0)"},
    {"library", "a call one of NVIDIA's libraries made (cuSOLVER's, "
                "cuBLAS's own); a policy's set library-calls convert lets "
                "its rules convert them"},
    {"scratch-cap", "fallback: the scratch the call needed is over the cap"},
    {"cold-capture", "fallback: called during a CUDA graph capture before "
                     "the shim had set up for that context or thread"},
    {"vendor-error", "fallback: the converted cuBLAS or cuDNN call failed"},
    {"device-error", "fallback: an allocation, launch or event failed"},
    {"busy", "fallback: every result slot was taken"},
    {"no-device", "fallback: no driver, context, kernels or handle"},
    {"fp16-range", "fallback: a convolution whose reduction is too long "
                   "for FP16's range (over 2^19 terms): FP32"},
    {"no-algorithm", "fallback: cuDNN has no algorithm for the converted "
                     "types"},
    {"policy", "kept FP32 by the policy: a rule, its default or min-size "
               "(a version-1 report does not say which)"},
};

#define AMP_NREASONS (sizeof amp_reasons / sizeof *amp_reasons)
#define AMP_TALLY_MAX 32

/* Calls by reason (and the sites where the reason occurred). */
struct amp_tally {
    size_t n;
    struct {
        const char *key;
        double calls;
        int sites;
    } item[AMP_TALLY_MAX];
};

static void
amp_tally_add(struct amp_tally *t, const char *key, double calls)
{
    size_t i;

    if (!key || isnan(calls) || calls <= 0.0)
        return;
    for (i = 0; i < t->n && strcmp(t->item[i].key, key) != 0; i++)
        ;
    if (i == t->n) {
        if (t->n == AMP_TALLY_MAX)
            return;
        t->item[t->n].key = key;
        t->item[t->n].calls = 0.0;
        t->item[t->n++].sites = 0;
    }
    t->item[i].calls += calls;
}

static double
amp_tally_get(const struct amp_tally *t, const char *key)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        if (strcmp(t->item[i].key, key) == 0)
            return t->item[i].calls;
    return 0.0;
}

/* 1 when the report gives fp32_reasons (schema version 2 and later). */
static int
amp_has_reasons(const struct amp_json *obj)
{
    const struct amp_json *r = amp_json_get(obj, "fp32_reasons");

    return r && r->type == AMP_JSON_OBJECT;
}

/* Why obj's (a site's or a shape's) FP32 and fallback calls ran FP32,
 * into t: its fp32_reasons, or for a version-1 report its fallbacks and
 * a reason for its FP32 calls read from the policy and the demotion. */
static void
amp_reasons_of(const struct amp_json *obj, int demoted,
               const struct amp_json *policy, struct amp_tally *t)
{
    const struct amp_json *r = amp_json_get(obj, "fp32_reasons");
    const struct amp_json *fb = amp_json_get(obj, "fallbacks");
    const char *mode = amp_str(policy, "mode");
    const char *why;
    size_t i;

    memset(t, 0, sizeof *t);
    if (amp_has_reasons(obj)) {
        for (i = 0; i < r->count; i++)
            amp_tally_add(t, r->keys[i], amp_json_num(&r->items[i], NAN));
        return;
    }
    for (i = 0; fb && fb->type == AMP_JSON_OBJECT && i < fb->count; i++)
        amp_tally_add(t, fb->keys[i], amp_json_num(&fb->items[i], NAN));
    if (demoted)
        why = "demoted";
    else if (amp_true(policy, "broken"))
        why = "broken-policy";
    else if (mode && strncmp(mode, "fp32", 4) == 0)
        why = "mode";
    else
        why = "policy";
    amp_tally_add(t, why, amp_num(obj, "fp32"));
}

/* "min-size 4, rule 2" into buf; "" when no call stayed FP32. */
static void
amp_reasons_line(const struct amp_tally *t, char *buf, size_t cap)
{
    size_t i, len = 0;

    buf[0] = '\0';
    for (i = 0; i < t->n && len < cap; i++)
        if (t->item[i].calls > 0.0)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s %.0f",
                                    len ? ", " : "", t->item[i].key,
                                    t->item[i].calls);
}

/* What a site that ran no converted call says instead of a bar: "stayed
 * FP32: no-rule 4", or its demotion. */
static void
amp_row_why(const struct amp_doc *doc, const struct amp_row *r, char *buf,
            size_t cap)
{
    struct amp_tally t;
    char line[160];

    amp_reasons_of(r->site, r->demoted, amp_json_get(doc->root, "policy"),
                   &t);
    amp_reasons_line(&t, line, sizeof line);
    if (r->demoted && r->demoted_reason && !amp_has_reasons(r->site))
        snprintf(buf, cap, "stayed FP32: demoted (%s)", r->demoted_reason);
    else if (line[0])
        snprintf(buf, cap, "stayed FP32: %s", line);
    else
        snprintf(buf, cap, "no converted call");
}

/* ---- Site status --------------------------------------------------------- */

/* The text marker of a site that needs a look; NULL for the others. */
static const char *
amp_row_marker(const struct amp_row *r)
{
    if (r->demoted)
        return "DEMOTED";
    if (amp_row_over(r))
        return "OVER TOLERANCE";
    return NULL;
}

/* The tolerance the page draws: the policy's, else a site's. */
static double
amp_doc_tolerance(const struct amp_doc *doc)
{
    double tol = amp_num(amp_json_get(doc->root, "policy"), "tolerance");
    size_t i;

    for (i = 0; isnan(tol) && i < doc->nrows; i++)
        tol = doc->rows[i].tolerance;
    return tol;
}

/* ---- Charts -------------------------------------------------------------- */

#define AMP_CHART_WIDTH 800      /* the viewBox; the page scales it */
#define AMP_CHART_LABEL 250      /* site names */
#define AMP_CHART_PLOT 380       /* bars; the rest: values and markers */
#define AMP_CHART_ROW 22
#define AMP_CHART_TOP 22         /* reference lines' labels, legend */
#define AMP_CHART_NAME 38        /* bytes of a site's name shown */

/* One series of a chart: a value per row, a colour and a legend. */
struct amp_series {
    double (*value)(const struct amp_row *r);
    const char *colour, *legend;
};

struct amp_chart {
    const char *id, *title, *caption, *unit;
    struct amp_series series[2];
    int nseries;
    int log_scale;               /* log10 axis (errors) */
    int by_tolerance;            /* bars over the tolerance in red */
    double ref;                  /* a labelled line at this value; NaN:
                                    none */
    char ref_label[64];
    const char *missing;         /* a converted site without a value */
};

/* v, or NaN when no call of the site has an FP32 time: the report's
 * times leave those calls out, and its 0 would read as a time. */
static double
amp_timed(const struct amp_row *r, double v)
{
    return r->converted > 0.0 &&
                   amp_fp32_known(amp_json_get(r->site, "time"))
               ? v
               : NAN;
}

static double amp_saved(const struct amp_row *r)
{
    return amp_timed(r, r->saved_ms);
}

static double amp_speedup(const struct amp_row *r) { return r->speedup; }
static double amp_error(const struct amp_row *r) { return amp_row_error(r); }

static double amp_fp32(const struct amp_row *r)
{
    return amp_timed(r, r->fp32_ms);
}

static double amp_actual(const struct amp_row *r)
{
    return amp_timed(r, r->actual_ms);
}

/* v in axis units: itself, or its log10 on a log scale. */
static double
amp_axis(const struct amp_chart *c, double v)
{
    return c->log_scale ? log10(v > 1e-12 ? v : 1e-12) : v;
}

/* The axis range in axis units, every value and the reference line in
 * it; a linear axis holds 0, a log one whole decades. */
static void
amp_chart_range(const struct amp_chart *c, const struct amp_doc *doc,
                double *lo, double *hi)
{
    size_t i;
    int s;

    *lo = c->log_scale ? INFINITY : 0.0;
    *hi = c->log_scale ? -INFINITY : 0.0;
    for (i = 0; i < doc->nrows; i++) {
        for (s = 0; s < c->nseries; s++) {
            double v = c->series[s].value(&doc->rows[i]);

            if (isnan(v))
                continue;
            *lo = fmin(*lo, amp_axis(c, v));
            *hi = fmax(*hi, amp_axis(c, v));
        }
    }
    if (!isnan(c->ref)) {
        *lo = fmin(*lo, amp_axis(c, c->ref));
        *hi = fmax(*hi, amp_axis(c, c->ref));
    }
    if (c->log_scale) {
        if (isinf(*lo)) {
            *lo = -8.0;
            *hi = 0.0;
        }
        *lo = floor(*lo) - 1.0;
        *hi = ceil(*hi);
    }
    if (*hi <= *lo)
        *hi = *lo + 1.0;
}

/* The x of v (axis units) in the plot, from 0 to AMP_CHART_PLOT. */
static double
amp_chart_x(double v, double lo, double hi)
{
    return (v - lo) / (hi - lo) * AMP_CHART_PLOT;
}

static void
amp_chart_tick(FILE *f, const struct amp_chart *c, double v, double lo,
               double hi, int y, const char *anchor)
{
    fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">",
            AMP_CHART_LABEL + amp_chart_x(v, lo, hi), y, anchor);
    if (c->log_scale)
        fprintf(f, "1e%.0f", v);
    else
        fprintf(f, "%.3g", v);
    /* "1x", "3 ms" */
    fprintf(f, "%s%s</text>\n", strlen(c->unit) > 1 ? " " : "", c->unit);
}

/* One site's bars (or why it has none), its value labels and marker. */
static void
amp_chart_row(FILE *f, const struct amp_chart *c, const struct amp_doc *doc,
              const struct amp_row *r, int y0, double lo, double hi)
{
    const char *marker = amp_row_marker(r);
    double base = c->log_scale ? 0.0 : amp_chart_x(0.0, lo, hi);
    char why[224];
    int s, bars = 0;

    fprintf(f, "<g class=\"site%s\"><text class=\"name\" x=\"%d\" y=\"%d\" "
            "text-anchor=\"end\"><title>", marker ? " flagged" : "",
            AMP_CHART_LABEL - 6, y0 + 15);
    amp_html_text(f, r->name);
    fputs("</title>", f);
    amp_html_text_cut(f, r->name, AMP_CHART_NAME);
    fputs("</text>\n", f);
    for (s = 0; s < c->nseries; s++) {
        double v = c->series[s].value(r), x;
        const char *colour = c->series[s].colour;
        int y = y0 + s * AMP_CHART_ROW;

        if (isnan(v))
            continue;
        bars++;
        x = amp_chart_x(amp_axis(c, v), lo, hi);
        if (c->by_tolerance)
            colour = amp_row_over(r) ? "#c62828" : "#2e7d32";
        fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                "fill=\"%s\"><title>%s: %g %s</title></rect>\n",
                AMP_CHART_LABEL + fmin(x, base), y + 2, fabs(x - base) + 0.5,
                AMP_CHART_ROW - 6, colour, c->series[s].legend, v, c->unit);
        fprintf(f, "<text class=\"value\" x=\"%.1f\" y=\"%d\">%.3g",
                AMP_CHART_LABEL + fmax(x, base) + 4, y + 15, v);
        if (marker && s == 0)
            fprintf(f, "<tspan class=\"mark\"> %s</tspan>", marker);
        fputs("</text>\n", f);
    }
    if (!bars) {
        if (r->converted > 0.0)
            snprintf(why, sizeof why, "%s", c->missing);
        else
            amp_row_why(doc, r, why, sizeof why);
        fprintf(f, "<text class=\"why\" x=\"%.1f\" y=\"%d\"><title>",
                AMP_CHART_LABEL + base + 4, y0 + 15);
        amp_html_text(f, why);
        fputs("</title>", f);
        amp_html_text_cut(f, why, 64);
        if (marker)
            fprintf(f, "<tspan class=\"mark\"> %s</tspan>", marker);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
}

static void
amp_chart(FILE *f, const struct amp_chart *c, const struct amp_doc *doc)
{
    int plot_h = (int)doc->nrows * AMP_CHART_ROW * c->nseries;
    int height = AMP_CHART_TOP + plot_h + 34, s;
    double lo, hi;
    size_t i;

    amp_chart_range(c, doc, &lo, &hi);
    fprintf(f, "<figure id=\"%s\">\n<h3>%s</h3>\n<svg class=\"chart\" "
            "viewBox=\"0 0 %d %d\" "
            "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"%s\">\n",
            c->id, c->title, AMP_CHART_WIDTH, height, AMP_CHART_WIDTH, height,
            c->title);
    if (!isnan(c->ref)) {
        double x = AMP_CHART_LABEL + amp_chart_x(amp_axis(c, c->ref), lo, hi);

        fprintf(f, "<line class=\"ref\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" "
                "y2=\"%d\"/>\n<text class=\"ref-label\" x=\"%.1f\" y=\"14\" "
                "text-anchor=\"middle\">", x, x, AMP_CHART_TOP - 4,
                AMP_CHART_TOP + plot_h, x);
        amp_html_text(f, c->ref_label);
        fputs("</text>\n", f);
    }
    /* The rows over the reference line: their labels stay readable. */
    for (i = 0; i < doc->nrows; i++)
        amp_chart_row(f, c, doc, &doc->rows[i],
                      AMP_CHART_TOP + (int)i * AMP_CHART_ROW * c->nseries, lo,
                      hi);
    fprintf(f, "<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>"
            "\n", AMP_CHART_LABEL, AMP_CHART_LABEL + AMP_CHART_PLOT,
            AMP_CHART_TOP + plot_h + 2, AMP_CHART_TOP + plot_h + 2);
    /* The ends; 0 between them is the reference line's. */
    amp_chart_tick(f, c, lo, lo, hi, height - 12, "start");
    amp_chart_tick(f, c, hi, lo, hi, height - 12, "end");
    for (s = 0; s < c->nseries && c->nseries > 1; s++)
        fprintf(f, "<rect x=\"%d\" y=\"4\" width=\"10\" height=\"10\" "
                "fill=\"%s\"/><text x=\"%d\" y=\"13\">%s</text>\n",
                AMP_CHART_LABEL + AMP_CHART_PLOT + 10 + s * 70,
                c->series[s].colour, AMP_CHART_LABEL + AMP_CHART_PLOT + 24 +
                s * 70, c->series[s].legend);
    fprintf(f, "</svg>\n<figcaption>%s</figcaption>\n</figure>\n", c->caption);
}

static void
amp_html_charts(FILE *f, const struct amp_doc *doc)
{
    struct amp_chart charts[] = {
        {"chart-saved", "Time saved per site", "Each bar is a site's FP32 "
         "time minus its time under the shim, in milliseconds, for the calls "
         "whose FP32 time is known; bars left of 0 ms are time the shim "
         "cost. Sites are sorted by time saved.", "ms",
         {{amp_saved, "#2a7ab9", "saved"}}, 1, 0, 0, 0.0, "0 ms",
         "no FP32 time known"},
        {"chart-speedup", "Speedup per site", "FP32 time over the time "
         "under the shim (blended: shadow calls, which run both, count "
         "too). Bars past the dashed line at 1.0x ran faster than FP32; "
         "shorter ones ran slower. A site that ran no converted call says "
         "why it stayed FP32 instead of a bar.", "x",
         {{amp_speedup, "#3b9a57", "speedup"}}, 1, 0, 0, 1.0,
         "1.0x = FP32 speed", "no FP32 time known"},
        {"chart-error", "Largest shadow error against the tolerance",
         "The largest relative error (max norm) of a site's shadow calls "
         "against their FP32 results, on a log scale. The dashed line is "
         "the policy's tolerance: a red bar crossed it, and the site was "
         "demoted to FP32; green bars are within it. No bar: the site ran "
         "no shadow call.", "",
         {{amp_error, "#2e7d32", "max rel err"}}, 1, 1, 1, NAN, "",
         "no shadow call measured"},
        {"chart-time", "FP32 versus actual time", "Per site, grey: what the "
         "calls with a known FP32 time would have taken in FP32; blue: what "
         "they took under the shim, in milliseconds. Where blue is shorter, "
         "the shim saved time.", "ms",
         {{amp_fp32, "#888888", "FP32"}, {amp_actual, "#2a7ab9", "actual"}},
         2, 0, 0, NAN, "", "no FP32 time known"},
    };
    double tol = amp_doc_tolerance(doc);
    size_t i;

    charts[2].ref = tol;
    if (isnan(tol))
        charts[2].caption = "The largest relative error (max norm) of a "
            "site's shadow calls against their FP32 results, on a log "
            "scale. The policy sets no tolerance: errors are measured, "
            "never acted on. No bar: the site ran no shadow call.";
    else
        snprintf(charts[2].ref_label, sizeof charts[2].ref_label,
                 "tolerance %.1e", tol);
    fputs("<section id=\"charts\">\n<h2>Per site</h2>\n", f);
    if (doc->nrows == 0) {
        fputs("<p>No charts: no call site saw an eligible FP32 call.</p>\n"
              "</section>\n", f);
        return;
    }
    for (i = 0; i < sizeof charts / sizeof *charts; i++)
        amp_chart(f, &charts[i], doc);
    fputs("</section>\n", f);
}

/* ---- Metadata ------------------------------------------------------------ */

static void
amp_meta_open(FILE *f, const char *label)
{
    fprintf(f, "<dt>%s</dt><dd>", label);
}

/* A term and its value, escaped; "-" when the value is absent. */
static void
amp_meta(FILE *f, const char *label, const char *value)
{
    amp_meta_open(f, label);
    amp_html_text(f, amp_or(value, "-"));
    fputs("</dd>\n", f);
}

/* argv as a shell would take it back: words with characters the shell
 * reads quoted in '...'. */
static void
amp_meta_command_line(FILE *f, const struct amp_json *argv)
{
    size_t i;

    amp_meta_open(f, "Command line");
    if (!argv || argv->type != AMP_JSON_ARRAY || argv->count == 0) {
        fputs("-</dd>\n", f);
        return;
    }
    fputs("<code>", f);
    for (i = 0; i < argv->count; i++) {
        const char *word = amp_json_str(&argv->items[i]), *p;

        if (i)
            fputc(' ', f);
        if (!word)
            continue;
        if (word[0] && !word[strspn(word, "abcdefghijklmnopqrstuvwxyz"
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_./=:,+%@")]) {
            amp_html_text(f, word);
            continue;
        }
        fputc('\'', f);
        for (p = word; *p; p++) {
            char one[2] = {*p, '\0'};

            amp_html_text(f, *p == '\'' ? "'\\''" : one);
        }
        fputc('\'', f);
    }
    fputs("</code></dd>\n", f);
}

static void
amp_html_meta(FILE *f, const struct amp_doc *doc)
{
    const struct amp_json *root = doc->root;
    const struct amp_json *prog = amp_json_get(root, "program");
    const struct amp_json *dev = amp_json_get(root, "device");
    const struct amp_json *pol = amp_json_get(root, "policy");
    const struct amp_json *env = amp_json_get(root, "environment");
    const char *timing = amp_str(dev, "timing");
    const char *modelled = amp_str(dev, "modelled_gpu");
    double version = amp_num(root, "version");
    double tol = amp_num(pol, "tolerance");
    char b[32];
    size_t i;

    fputs("<section id=\"meta\">\n<h2>Run</h2>\n<dl class=\"meta\">\n", f);
    amp_meta(f, "Program", amp_str(prog, "path") ? amp_str(prog, "path")
                                                  : amp_str(prog, "name"));
    amp_meta_command_line(f, amp_json_get(prog, "command_line"));
    amp_meta(f, "Host", amp_str(prog, "host"));
    amp_meta_open(f, "Process");
    if (isnan(amp_num(prog, "pid")))
        fputs("-", f);
    else
        fprintf(f, "pid %.0f", amp_num(prog, "pid"));
    fputs(", build-id ", f);
    amp_html_text(f, amp_or(amp_str(prog, "build_id"), "-"));
    fputs("</dd>\n", f);

    amp_meta_open(f, "Policy");
    amp_html_text(f, amp_or(amp_str(pol, "source"), "-"));
    if (amp_str(pol, "path")) {
        fputs(": <code>", f);
        amp_html_text(f, amp_str(pol, "path"));
        fputs("</code>", f);
    }
    if (amp_str(pol, "mode")) {
        fputs(", mode ", f);
        amp_html_text(f, amp_str(pol, "mode"));
    }
    fprintf(f, ", tolerance %s", amp_fmt(b, sizeof b, "%.1e", tol));
    if (amp_true(pol, "broken"))
        fputs(" <span class=\"mark\">BROKEN: nothing was converted</span>",
              f);
    fputs("</dd>\n", f);
    amp_meta(f, "Why this policy", amp_str(pol, "why"));
    amp_meta(f, "Generated", amp_str(root, "generated"));

    amp_meta_open(f, "Device");
    amp_html_text(f, amp_or(amp_str(dev, "reported_name"),
                            dev && dev->type == AMP_JSON_OBJECT
                                ? "-" : "none: no CUDA context was current"));
    fputs("</dd>\n", f);
    amp_meta_open(f, "Times");
    if (timing && strcmp(timing, "measured") == 0)
        fputs("measured on the GPU (events on the caller's stream)", f);
    else if (timing && strcmp(timing, "modelled") == 0)
        amp_html_printf(f, "modelled by the CPU emulator%s%s%s, not measured "
                        "on a GPU", modelled ? " (" : "",
                        modelled ? modelled : "", modelled ? ")" : "");
    else
        amp_html_text(f, amp_or(timing, "-"));
    fputs("</dd>\n", f);

    amp_meta_open(f, "Environment");
    for (i = 0; env && env->type == AMP_JSON_OBJECT && i < env->count; i++) {
        fputs(i ? ", <code>" : "<code>", f);
        amp_html_printf(f, "%s=%s", env->keys[i],
                        amp_or(amp_json_str(&env->items[i]), ""));
        fputs("</code>", f);
    }
    if (!env || env->type != AMP_JSON_OBJECT || env->count == 0)
        fputs("none of the variables that change FP32 set", f);
    fputs("</dd>\n", f);
    amp_meta(f, "ampshim", amp_str(root, "ampshim_version"));
    amp_meta_open(f, "Report");
    if (amp_report_incomplete(doc))
        fputs("<span class=\"mark\">SNAPSHOT</span>: written during the run; "
              "the program did not reach exit", f);
    else
        fputs("complete: written at exit", f);
    if (!isnan(version))
        fprintf(f, " (schema version %.0f)", version);
    fputs("</dd>\n</dl>\n</section>\n", f);
}

/* ---- Summary and the site table ------------------------------------------ */

static void
amp_html_summary(FILE *f, const struct amp_doc *doc)
{
    const struct amp_json *tot = amp_json_get(doc->root, "totals");
    double share = amp_num(tot, "converted_share");
    char b[5][32];

    double shadow = amp_num(tot, "shadow"), conv = amp_num(tot, "delivered");
    /* Times summed over no call with an FP32 time are unknown, not 0. */
    double ms = amp_fp32_known(tot) ? 1.0 : NAN;

    if (isnan(shadow))
        shadow = 0.0;
    if (isnan(conv)) /* an older report counts shadow calls as converted */
        conv = amp_count(tot, "converted") - shadow;
    fprintf(f, "<p id=\"summary\">%.0f calls at %zu site%s, %.0f converted "
            "(their converted results reached the program), %.0f measured in "
            "shadow (the program got FP32's results); "
            "FP32 %s ms, actual %s ms, saved %s ms, speedup %s; %s%s of the "
            "FP32 FLOPs converted.</p>\n", amp_count(tot, "calls"),
            doc->nrows, doc->nrows == 1 ? "" : "s", conv, shadow,
            amp_fmt(b[0], 32, "%.3f", ms * amp_num(tot, "fp32_ms")),
            amp_fmt(b[1], 32, "%.3f", ms * amp_num(tot, "actual_ms")),
            amp_fmt(b[2], 32, "%.3f", ms * amp_num(tot, "saved_ms")),
            amp_fmt(b[3], 32, "%.2f", amp_num(tot, "speedup")),
            amp_fmt(b[4], 32, "%.1f", 100.0 * share),
            isnan(share) ? "" : "%");
}

/* The status cell of a site: its marker and why, or how it ran. */
static void
amp_html_status(FILE *f, const struct amp_doc *doc, const struct amp_row *r)
{
    const char *marker = amp_row_marker(r);
    char why[224];

    if (marker) {
        fprintf(f, "<span class=\"mark\">%s</span>", marker);
        if (r->demoted && r->demoted_reason) {
            fputs(": ", f);
            amp_html_text(f, r->demoted_reason);
        } else if (!r->demoted) {
            fprintf(f, ": %.0f shadow calls over", r->over_tolerance);
        }
    } else if (r->converted > 0.0 && r->converted >= r->calls) {
        fputs("converted", f);
    } else if (r->converted > 0.0) {
        fprintf(f, "converted: %.0f of %.0f calls", r->converted, r->calls);
    } else {
        if (r->shadow > 0.0 && amp_shadow_text(r, why, sizeof why)) {
            fputs("measured in shadow, the program got FP32's results: ", f);
            amp_html_text(f, why);
            fputs("; ", f);
        } else if (r->shadow > 0.0) {
            fprintf(f, "measured in shadow (%.0f calls; the program got "
                    "FP32's results); ", r->shadow);
        }
        amp_row_why(doc, r, why, sizeof why);
        amp_html_text(f, why);
    }
}

static void
amp_html_table(FILE *f, const struct amp_doc *doc)
{
    char b[7][32];
    size_t i;

    fputs("<section id=\"sites\">\n<h2>Sites</h2>\n<p class=\"caption\">One "
          "row per call site (the hooked function and the code that called "
          "it), sorted by time saved. Rows in red need a look: a demoted "
          "site or one over the tolerance.</p>\n<div class=\"scroll\">"
          "<table>\n<tr><th class=\"t\">site</th><th class=\"t\">api</th>"
          "<th>calls</th><th>converted</th><th>shadow</th>"
          "<th class=\"t\">mode</th><th>"
          "FP32 ms</th><th>actual ms</th><th>speedup</th><th>steady</th>"
          "<th>saved ms</th>"
          "<th>error delivered</th><th>tolerance</th><th class=\"t\">status"
          "</th></tr>\n", f);
    for (i = 0; i < doc->nrows; i++) {
        const struct amp_row *r = &doc->rows[i];

        fprintf(f, "<tr%s><td class=\"t\">",
                amp_row_marker(r) ? " class=\"flagged\"" : "");
        amp_html_text(f, r->name);
        fputs("</td><td class=\"t\">", f);
        amp_html_text(f, amp_or(r->api, "-"));
        fprintf(f, "</td><td>%.0f</td><td>%.0f</td><td>%.0f</td>"
                "<td class=\"t\">", r->calls, r->converted, r->shadow);
        amp_html_text(f, r->shown);
        fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                "<td>%s</td><td>%s</td><td>%s</td><td class=\"t status\">",
                amp_fmt(b[0], 32, "%.3f", r->fp32_ms),
                amp_fmt(b[1], 32, "%.3f", r->actual_ms),
                amp_fmt(b[2], 32, "%.2f", r->speedup),
                amp_fmt(b[6], 32, "%.2f", r->steady),
                amp_fmt(b[3], 32, "%.3f", r->saved_ms),
                amp_row_error_text(r, b[4], 32),
                amp_fmt(b[5], 32, "%.1e", r->tolerance));
        amp_html_status(f, doc, r);
        fputs("</td></tr>\n", f);
    }
    if (doc->nrows == 0)
        fputs("<tr><td class=\"t\" colspan=\"14\">no call site saw an "
              "eligible FP32 call</td></tr>\n", f);
    fputs("</table></div>\n</section>\n", f);
}

/* ---- Shapes -------------------------------------------------------------- */

/* A speedup cell: the number, or "-" and why the FP32 time is unknown. */
static void
amp_speedup_cell(FILE *f, const struct amp_json *time, const char *key)
{
    const char *unknown = amp_str(time, "fp32_unknown_reason");
    double v = amp_num(time, key);
    char b[32];

    fputs("<td>", f);
    if (isnan(v) && unknown) {
        fputs("- <span class=\"why\">(", f);
        amp_html_text(f, unknown);
        fputs(")</span>", f);
    } else {
        fprintf(f, "%s%s", amp_fmt(b, sizeof b, "%.2f", v),
                isnan(v) ? "" : "x");
    }
    fputs("</td>", f);
}

static void
amp_shape_row(FILE *f, const struct amp_doc *doc, const struct amp_row *r,
              const struct amp_json *sh)
{
    const struct amp_json *err = amp_json_get(sh, "errors");
    const struct amp_json *time = amp_json_get(sh, "time");
    /* The shape's errors as a row, for the one comparison. */
    struct amp_row shape = {
        .max_rel = amp_num(err, "max_rel"),
        .max_fro = amp_num(err, "max_fro"),
        .tolerance = amp_num(err, "tolerance"),
        .tolerance_norm = amp_json_str(amp_json_get(err, "tolerance_norm")),
        .over_tolerance = amp_num(err, "over_tolerance"),
        .shadow_calls = amp_num(err, "shadow_calls"),
        .compared = amp_num(err, "compared"),
    };
    int over = amp_row_over(&shape);
    struct amp_tally t;
    char b[2][32], why[160], text[1024];

    amp_row_delivered(&shape, sh);
    amp_reasons_of(sh, r->demoted, amp_json_get(doc->root, "policy"), &t);
    amp_reasons_line(&t, why, sizeof why);
    fprintf(f, "<tr%s><td class=\"t\">", over ? " class=\"flagged\"" : "");
    amp_html_text(f, r->name);
    fputs("</td><td class=\"t nowrap\">", f);
    amp_html_text(f, amp_or(amp_str(sh, "shape"), "-"));
    fprintf(f, "</td><td>%.0f</td><td>%.0f</td><td class=\"t\">%.0f",
            amp_count(sh, "calls"), shape.converted,
            amp_count(sh, "fp32") + amp_count(sh, "fallback"));
    if (t.n == 1) {
        fputs(" (", f);
        amp_html_text(f, t.item[0].key);
        fputs(")", f);
    } else if (why[0]) {
        fputs(" (", f);
        amp_html_text(f, why);
        fputs(")", f);
    }
    fputs("</td>", f);
    amp_speedup_cell(f, time, "speedup");
    amp_speedup_cell(f, time, amp_json_get(time, "steady_speedup")
                                  ? "steady_speedup" : "converted_speedup");
    fprintf(f, "<td>%s / %s%s</td></tr>\n",
            amp_row_error_text(&shape, b[0], 32),
            amp_fmt(b[1], 32, "%.1e", shape.tolerance),
            !over ? ""
            : shape.converted > 0.0 ? " <span class=\"mark\">OVER</span>"
                                    : " <span class=\"mark\">(its candidate "
                                      "was over)</span>");
    /* auto's choice and every candidate's figures, under the shape; or
     * the candidate its shadow calls measured. */
    shape.candidate = r->candidate;
    if (amp_auto_text(sh, text, sizeof text)) {
        fputs("<tr class=\"auto\"><td></td><td class=\"t\" colspan=\"7\">"
              "auto: ", f);
        amp_html_text(f, text);
        fputs("</td></tr>\n", f);
    } else if (amp_shadow_text(&shape, text, sizeof text)) {
        fputs("<tr class=\"auto\"><td></td><td class=\"t\" colspan=\"7\">"
              "shadow: ", f);
        amp_html_text(f, text);
        fputs("</td></tr>\n", f);
    }
}

static void
amp_html_shapes(FILE *f, const struct amp_doc *doc)
{
    size_t i, j, rows = 0;

    fputs("<section id=\"shapes\">\n<h2>Shapes</h2>\n<p class=\"caption\">One "
          "row per problem shape at each site (GEMM: m x n x k and the "
          "transposes; convolution: x and w dimensions). FP32: calls that "
          "ran FP32 (kept or fallen back) and why. Blended speedup counts "
          "every timed call, shadow calls included; steady-state: the "
          "shape's FP32 time over its time under the choice made, what it "
          "gets once measuring is done. Converted: calls whose converted "
          "result reached the program (shadow calls return FP32's). Error: "
          "of what the program got (exactly FP32 where nothing was "
          "converted) / the tolerance; the candidates' errors are with the "
          "candidates. Under a shape that auto decided: its choice, "
          "and each candidate's speedup beside FP32, error and why it was "
          "not chosen.</p>\n<div class=\"scroll\"><table>\n<tr><th "
          "class=\"t\">site</th><th class=\"t\">shape</th><th>calls</th>"
          "<th>converted</th><th class=\"t\">FP32 and why</th><th>blended "
          "speedup</th><th>steady-state speedup</th><th>error delivered / "
          "tolerance</th></tr>\n", f);
    for (i = 0; i < doc->nrows; i++) {
        const struct amp_json *shapes = amp_json_get(doc->rows[i].site,
                                                     "shapes");

        for (j = 0; shapes && shapes->type == AMP_JSON_ARRAY &&
                    j < shapes->count; j++, rows++)
            amp_shape_row(f, doc, &doc->rows[i], &shapes->items[j]);
    }
    if (rows == 0)
        fputs("<tr><td class=\"t\" colspan=\"8\">no shapes in the report"
              "</td></tr>\n", f);
    fputs("</table></div>\n</section>\n", f);
}

/* ---- Why FP32 ------------------------------------------------------------ */

static const char *
amp_reason_meaning(const char *key)
{
    size_t i;

    for (i = 0; i < AMP_NREASONS; i++)
        if (strcmp(amp_reasons[i].key, key) == 0)
            return amp_reasons[i].meaning;
    return "-";
}

/* Calls by reason over every site, in amp_reasons' order, then reasons
 * this page does not know. */
static void
amp_doc_reasons(const struct amp_doc *doc, struct amp_tally *all)
{
    const struct amp_json *pol = amp_json_get(doc->root, "policy");
    struct amp_tally site;
    size_t i, j;

    memset(all, 0, sizeof *all);
    for (i = 0; i < AMP_NREASONS; i++)
        amp_tally_add(all, amp_reasons[i].key, 1.0);
    for (i = 0; i < all->n; i++)
        all->item[i].calls = 0.0;
    for (i = 0; i < doc->nrows; i++) {
        amp_reasons_of(doc->rows[i].site, doc->rows[i].demoted, pol, &site);
        for (j = 0; j < site.n; j++) {
            size_t k;

            amp_tally_add(all, site.item[j].key, site.item[j].calls);
            for (k = 0; k < all->n; k++)
                if (strcmp(all->item[k].key, site.item[j].key) == 0)
                    all->item[k].sites++;
        }
    }
}

static void
amp_html_reasons(FILE *f, const struct amp_doc *doc,
                 const struct amp_tally *all)
{
    double total = 0.0;
    int v1 = 0;
    size_t i;

    for (i = 0; i < all->n; i++)
        total += all->item[i].calls;
    for (i = 0; i < doc->nrows; i++)
        v1 |= !amp_has_reasons(doc->rows[i].site);
    fputs("<section id=\"why-fp32\">\n<h2>Why calls stayed FP32</h2>\n"
          "<p class=\"caption\">The calls at the sites that ran FP32 (kept "
          "by the policy, or fallen back after a failed conversion), by "
          "reason, summed over the sites.", f);
    if (v1 && doc->nrows)
        fputs(" This report gives no reasons per call (it predates "
              "fp32_reasons): the reasons are read from its fallbacks, "
              "demotions and policy.", f);
    fputs("</p>\n", f);
    if (total <= 0.0) {
        fputs("<p>None: every call at the sites ran converted.</p>\n"
              "</section>\n", f);
        return;
    }
    fputs("<div class=\"scroll\"><table>\n<tr><th class=\"t\">reason</th>"
          "<th>calls</th><th>share</th><th>sites</th><th class=\"t\">"
          "meaning</th></tr>\n", f);
    for (i = 0; i < all->n; i++) {
        if (all->item[i].calls <= 0.0)
            continue;
        fputs("<tr><td class=\"t\">", f);
        amp_html_text(f, all->item[i].key);
        fprintf(f, "</td><td>%.0f</td><td>%.1f%%</td><td>%d</td>"
                "<td class=\"t\">", all->item[i].calls,
                100.0 * all->item[i].calls / total, all->item[i].sites);
        amp_html_text(f, amp_reason_meaning(all->item[i].key));
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n</section>\n", f);
}

/* ---- What to do next ----------------------------------------------------- */

static void
amp_next_demoted(FILE *f, const struct amp_row *r)
{
    const char *fn = amp_or(r->function, "?");
    int gemm = !amp_str(r->site, "family") ||
               strcmp(amp_str(r->site, "family"), "gemm") == 0;

    fputs("<li class=\"next-demoted\">", f);
    amp_html_printf(f, "%s %s", r->name, r->demoted ? "was demoted to FP32"
                                                    : "went over the "
                                                      "tolerance");
    if (r->demoted_reason) {
        fputs(": ", f);
        amp_html_text(f, r->demoted_reason);
    }
    fputs(". Keep it FP32 with <code>", f);
    amp_html_printf(f, "rule fp32 when caller \"%s\"", fn);
    fputs("</code>", f);
    /* tf32x3 keeps FP32's exponent range, where fp16x3 is bounded by
     * FP16's: a demotion by range leaves it a chance. */
    fputs(", or try the FP32-accurate split with <code>", f);
    amp_html_printf(f, "rule tf32x3 verify 2 when caller \"%s\"", fn);
    fputs(gemm ? "</code> (<code>fp16x3</code> on a GPU without TF32)"
               : "</code> (convolutions of one group)",
          f);
    fputs(", placed above the rule that converts it.</li>\n", f);
}

/* Why nothing was converted, from the policy, the calls and the
 * reasons. */
static void
amp_next_nothing(FILE *f, const struct amp_doc *doc,
                 const struct amp_tally *all)
{
    const struct amp_json *pol = amp_json_get(doc->root, "policy");
    const struct amp_json *cov = amp_json_get(doc->root, "coverage");
    const char *mode = amp_str(pol, "mode");
    char line[256];

    fputs("<li class=\"next-nothing\">Nothing was converted: ", f);
    if (amp_true(pol, "broken")) {
        fputs("the policy file has an error (", f);
        amp_html_text(f, amp_str(pol, "why"));
        fputs("). Fix it, <code>ampshim policy check FILE</code> says "
              "where, and run again.</li>\n", f);
        return;
    }
    if (doc->nrows == 0 || amp_count(amp_json_get(doc->root, "totals"),
                                     "calls") <= 0.0) {
        fputs("the program made no FP32 GEMM or convolution call the shim "
              "can convert", f);
        if (cov && amp_num(cov, "calls") > 0.0) {
            amp_cover_summary(cov, line, sizeof line);
            fputs(" (coverage: ", f);
            amp_html_text(f, line);
            fputs(")", f);
        }
        fputs(".</li>\n", f);
        return;
    }
    if ((mode && strncmp(mode, "fp32", 4) == 0) ||
        amp_tally_get(all, "mode") > 0.0) {
        fputs("the mode is fp32 (", f);
        amp_html_text(f, amp_or(amp_str(pol, "why"), "-"));
        fputs("). Run with a converting mode (<code>ampshim run --mode "
              "fp16 -- PROGRAM</code>) or a policy whose rules convert."
              "</li>\n", f);
        return;
    }
    amp_reasons_line(all, line, sizeof line);
    fputs("every call stayed FP32 (", f);
    amp_html_text(f, line);
    fputs("). See which rule decides each site in the Shapes table and "
          "the policy (<code>ampshim policy check FILE</code> lists rules "
          "that never match); <code>ampshim calibrate -- PROGRAM</code> "
          "writes a policy from measurements.</li>\n", f);
}

/* The sum of time.calls_fp32_unknown over the sites, and a reason the
 * report gives (schema version 2) into *reason. */
static double
amp_unknown_calls(const struct amp_doc *doc, const char **reason)
{
    double n = 0.0;
    size_t i;

    *reason = NULL;
    for (i = 0; i < doc->nrows; i++) {
        const struct amp_json *time = amp_json_get(doc->rows[i].site, "time");

        n += amp_count(time, "calls_fp32_unknown");
        if (!*reason)
            *reason = amp_str(time, "fp32_unknown_reason");
    }
    return n;
}

/* Calls whose converted result reached the program (an older report
 * counts shadow calls as converted). */
static double
amp_doc_delivered_calls(const struct amp_doc *doc)
{
    const struct amp_json *tot = amp_json_get(doc->root, "totals");
    double conv = amp_num(tot, "delivered"), shadow = amp_num(tot, "shadow");

    if (!isnan(conv))
        return conv;
    return amp_count(tot, "converted") - (isnan(shadow) ? 0.0 : shadow);
}

/* 1 when the converted calls made the work slower: in steady state when
 * it is known, else in this run. */
static int
amp_doc_slower(const struct amp_doc *doc)
{
    const struct amp_json *tot = amp_json_get(doc->root, "totals");
    double steady = amp_num(tot, "steady_speedup");

    return isnan(steady) ? amp_num(tot, "speedup") < 0.995 : steady < 0.995;
}

static void
amp_html_next(FILE *f, const struct amp_doc *doc, const struct amp_tally *all)
{
    const struct amp_json *tot = amp_json_get(doc->root, "totals");
    const char *unknown_reason;
    double unknown = amp_unknown_calls(doc, &unknown_reason);
    double min_size = amp_tally_get(all, "min-size"), fallbacks = 0.0;
    int items = 0;
    size_t i;

    fputs("<section id=\"next\">\n<h2>What to do next</h2>\n<ul>\n", f);
    if (amp_report_incomplete(doc)) {
        fputs("<li class=\"next-snapshot\">This is a snapshot taken during "
              "the run: the program did not reach exit, and the counts stop "
              "at ", f);
        amp_html_text(f, amp_or(amp_str(doc->root, "generated"), "-"));
        fputs(". Let it run to the end for the complete report.</li>\n", f);
        items++;
    }
    if (amp_doc_delivered_calls(doc) <= 0.0) {
        amp_next_nothing(f, doc, all);
        items++;
    } else if (amp_doc_slower(doc)) {
        char b[2][32];

        fprintf(f, "<li class=\"next-slower\">The converted calls made the "
                "intercepted work slower: speedup %s in this run, %s in "
                "steady state. Keep the slower sites FP32 (an "
                "<code>fp32</code> rule for them, or "
                "<code>AMPSHIM_MODE=fp32</code>), or let <code>auto</code> "
                "choose per shape.</li>\n",
                amp_fmt(b[0], 32, "%.2f", amp_num(tot, "speedup")),
                amp_fmt(b[1], 32, "%.2f", amp_num(tot, "steady_speedup")));
        items++;
    }
    for (i = 0; i < doc->nrows; i++) {
        if (doc->rows[i].demoted || amp_row_over(&doc->rows[i])) {
            amp_next_demoted(f, &doc->rows[i]);
            items++;
        }
    }
    if (min_size > 0.0) {
        fprintf(f, "<li class=\"next-min-size\">%.0f calls stayed FP32 under "
                "the policy's min-size: run <code>ampshim calibrate -- "
                "PROGRAM</code> to measure on this device which sizes gain "
                "from conversion, and use the policy it writes.</li>\n",
                min_size);
        items++;
    }
    for (i = 0; i < all->n; i++)
        if (strncmp(amp_reason_meaning(all->item[i].key), "fallback:",
                    9) == 0)
            fallbacks += all->item[i].calls;
    if (fallbacks > 0.0) {
        fprintf(f, "<li class=\"next-fallback\">%.0f calls fell back to FP32 "
                "after a failed conversion (see Why calls stayed FP32): "
                "scratch-cap: raise <code>set scratch-max</code> or "
                "AMPSHIM_SCRATCH_MAX; cold-capture: make one call on the "
                "stream before capturing it.</li>\n", fallbacks);
        items++;
    }
    if (unknown > 0.0) {
        fprintf(f, "<li class=\"next-time\">Converted calls without an "
                "FP32 time: %.0f", unknown);
        if (unknown_reason) {
            fputs(" (", f);
            amp_html_text(f, unknown_reason);
            fputs(")", f);
        }
        fputs(", so what they saved is unknown. A shape's FP32 baseline is "
              "measured beside its shadow calls: leave <code>AMPSHIM_BASELINE"
              "</code> at <code>first</code> (its first call at each site "
              "runs beside FP32; a call captured into a CUDA graph cannot), "
              "add <code>verify 2</code> to the rule that converts it or "
              "<code>set shadow-rate 0.01</code> to the policy.</li>\n", f);
        items++;
    }
    if (!items) {
        char b[32];

        fprintf(f, "<li class=\"next-fine\">Nothing to change: %.0f of %.0f "
                "calls converted, no site over the tolerance, speedup %s of "
                "the intercepted work.</li>\n", amp_doc_delivered_calls(doc),
                amp_count(tot, "calls"),
                amp_fmt(b, sizeof b, "%.2f", amp_num(tot, "speedup")));
    }
    fputs("</ul>\n</section>\n", f);
}

/* ---- Coverage ------------------------------------------------------------ */

/* The coverage section of the page; a line for a report without one. */
static void
amp_html_coverage(FILE *f, const struct amp_doc *doc)
{
    const struct amp_json *cov = amp_json_get(doc->root, "coverage");
    char line[256], b[32];
    size_t i;

    fputs("<section id=\"coverage\">\n<h2>Coverage</h2>\n", f);
    if (!cov || amp_num(cov, "calls") <= 0.0) {
        fputs("<p>-: the report has no coverage of the program's GEMMs and "
              "convolutions.</p>\n</section>\n", f);
        return;
    }
    amp_cover_summary(cov, line, sizeof line);
    fputs("<p>", f);
    amp_html_text(f, line);
    fputs(".</p>\n<p class=\"caption\">Every GEMM and convolution the "
          "program ran through cuBLAS and cuDNN, whatever its precision, by "
          "what became of it; share: of the FLOPs.</p>\n<div class=\"scroll\">"
          "<table>\n<tr><th class=\"t\">work</th><th>calls</th><th>GFLOP</th>"
          "<th>share</th></tr>\n", f);
    for (i = 0; i < amp_cover_nrows; i++) {
        const struct amp_json *k = amp_cover_kind(cov, i);

        if (!k || amp_num(k, "calls") <= 0.0)
            continue;
        fputs("<tr><td class=\"t\">", f);
        amp_html_text(f, amp_cover_rows[i].label);
        fprintf(f, "</td><td>%.0f</td><td>%.6g</td><td>%s%%</td></tr>\n",
                amp_num(k, "calls"), amp_num(k, "flops") / 1e9,
                amp_fmt(b, sizeof b, "%.1f", 100.0 * amp_num(k, "share")));
    }
    fputs("</table></div>\n</section>\n", f);
}

/* ---- The page ------------------------------------------------------------ */

const char amp_html_style[] =
    "body{font-family:sans-serif;color:#222;line-height:1.4;max-width:"
    "1400px;margin:0 auto;padding:1em 1.5em;}\n"
    "h1{font-size:1.5em;overflow-wrap:anywhere;}h2{margin-top:1.6em;}\n"
    "h3{font-size:1.05em;margin:0 0 .3em;}\n"
    "dl.meta{display:grid;grid-template-columns:max-content minmax(0,1fr);"
    "gap:.2em 1em;}\n"
    "dl.meta dt{font-weight:bold;}dl.meta dd{margin:0;overflow-wrap:"
    "anywhere;}\n"
    ".scroll{overflow-x:auto;max-width:100%;}\n"
    "table{border-collapse:collapse;font-size:.9em;}\n"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right;"
    "vertical-align:top;}th{background:#eee;}\n"
    "td{white-space:nowrap;}td.t,th.t{text-align:left;}\n"
    "td.t{white-space:normal;}td.nowrap{white-space:nowrap;}\n"
    "tr.flagged td{background:#fdecea;}\n"
    "tr.auto td{color:#444;border-top:none;}\n"
    ".mark{color:#b71c1c;font-weight:bold;}\n"
    ".caption,figcaption{color:#444;font-size:.9em;max-width:60em;}\n"
    "figure{margin:1.5em 0;}\n"
    "figure svg{display:block;width:100%;max-width:1000px;height:auto;}\n"
    "td.status{min-width:9em;}\n"
    /* The sites table fits 1200 pixels: its text cells break anywhere
     * (an API's or a mode's name is one long word) and it is set
     * tighter. */
    "#sites table{font-size:.85em;}#sites td,#sites th{padding:2px 4px;}\n"
    "#sites td.t{overflow-wrap:anywhere;min-width:6em;}\n"
    "#shapes td{white-space:normal;}#shapes td.nowrap{white-space:nowrap;}\n"
    "svg text{font-size:12px;fill:#222;}\n"
    "svg g.flagged text.name{fill:#b71c1c;font-weight:bold;}\n"
    "svg tspan.mark{fill:#b71c1c;font-weight:bold;}\n"
    "svg text.why{fill:#555;font-style:italic;}\n"
    "svg text.why,svg text.value{paint-order:stroke;stroke:#fff;"
    "stroke-width:3px;}\n"
    "svg text.ref-label{fill:#b71c1c;}\n"
    "line.axis{stroke:#333;}\n"
    "line.ref{stroke:#b71c1c;stroke-width:1.5;stroke-dasharray:5 3;}\n"
    "span.why{color:#555;}\n"
    "code{background:#f3f3f3;padding:0 .2em;overflow-wrap:anywhere;}\n"
    "li{margin:.3em 0;}\n";

int
amp_write_html(const struct amp_doc *doc, const char *path)
{
    const struct amp_json *prog = amp_json_get(doc->root, "program");
    FILE *f = amp_out_open(path);
    struct amp_tally reasons;

    if (!f)
        return -1;
    amp_doc_reasons(doc, &reasons);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "\n<meta name=\"viewport\" content=\"width=device-width, "
          "initial-scale=1\">\n<title>ampshim report: ", f);
    amp_html_text(f, amp_or(amp_str(prog, "name"), "-"));
    fprintf(f, "</title>\n<style>\n%s</style></head><body>\n"
            "<h1 id=\"heading\">ampshim report: ", amp_html_style);
    amp_html_text(f, amp_or(amp_str(prog, "name"), "-"));
    fputs("</h1>\n", f);
    if (amp_report_incomplete(doc))
        fputs("<p class=\"mark\" id=\"snapshot\">SNAPSHOT: this report was "
              "written during the run; the program did not reach exit.</p>\n",
              f);
    {
        char verdict[512];

        fputs("<p id=\"verdict\"><strong>", f);
        amp_html_text(f, amp_doc_verdict(doc, verdict, sizeof verdict));
        fputs("</strong></p>\n", f);
        if (amp_doc_time(doc, verdict, sizeof verdict)) {
            fputs("<p id=\"time\">", f);
            amp_html_text(f, verdict);
            fputs("</p>\n", f);
        }
    }
    amp_html_summary(f, doc);
    amp_html_meta(f, doc);
    amp_html_next(f, doc, &reasons);
    amp_html_table(f, doc);
    amp_html_charts(f, doc);
    amp_html_shapes(f, doc);
    amp_html_reasons(f, doc, &reasons);
    amp_html_coverage(f, doc);
    fputs("</body></html>\n", f);
    return amp_out_close(f);
}
