/* `ampshim report --html`: the report as a self-contained HTML page with
 * inline SVG charts. */
#include "base/json.h"
#include "tool/tool_report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
    for (i = 0; i < amp_cover_nrows; i++) {
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

int
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
