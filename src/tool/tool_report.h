/* `ampshim report`: the report as read back (struct amp_doc, one
 * struct amp_row per site) and the helpers its table (tool_report.c) and
 * its HTML page (tool_html.c) share. */
#ifndef AMP_TOOL_REPORT_H
#define AMP_TOOL_REPORT_H

#include "base/json.h"
#include "decide/symbolize.h"

#include <stddef.h>
#include <stdio.h>

/* One site of the report, flattened. */
struct amp_row {
    const struct amp_json *site; /* the site's (or a shape's) object in the
                                    document */
    const char *api, *function, *module, *candidate, *demoted_reason;
    char name[AMP_LABEL_LEN];    /* the site's label (amp_symbol_label) */
    char function_name[AMP_SYMBOL_LEN]; /* function as users know it (an
                                           older shim's may be mangled);
                                           "" when null */
    char modes[96];              /* the modes its calls ran */
    char shown[96];              /* the table's mode cell: under auto
                                    its choices (amp_row_shown) */
    double offset, calls, fp32_calls, fallback;
    double converted;            /* calls whose result the program got
                                    from a converted path */
    double shadow;               /* calls measured in shadow: the program
                                    got FP32's result */
    double fp32_ms, actual_ms, saved_ms, speedup;
    double max_rel, tolerance, over_tolerance, shadow_calls;
    double compared;             /* elements its shadow calls compared;
                                    NaN: an older report's, not counted */
    double max_fro;              /* relative error, Frobenius norm */
    const char *tolerance_norm;  /* "max" or "fro"; NULL: an older
                                    report's, max */
    double steady;               /* the steady state: steady_speedup (an
                                    older report's converted_speedup) */
    double delivered_rel, delivered_fro; /* the error of what the program
                                    got: 0 when no converted result
                                    reached it; NaN: not measured */
    int demoted;
    int time_known;              /* some calls have an FP32 time */
    const char *unknown_reason;  /* why some have none; NULL: every one */
    char reasons[160];           /* "min-size 12, no-rule 3": why calls
                                    ran FP32; "" when none did */
    const char *shape;           /* a shape's text ("512x256x128 NN");
                                    NULL for a site */
};

/* r from s, a site's object in the report. */
void amp_row_read(struct amp_row *r, const struct amp_json *s);

/* shape from s, one of site's shapes: its figures, and what the report
 * gives per site (API, caller, module, offset, shadow candidate,
 * tolerance) from site. */
void amp_row_shape(struct amp_row *shape, const struct amp_row *site,
                   const struct amp_json *s);

/* The calls of a totals object whose converted result reached the
 * program: "delivered", or an older report's converted less its shadow
 * calls. */
double amp_doc_delivered(const struct amp_json *tot);

/* r's counts of converted and shadow calls, steady state and delivered
 * errors from s (a site or a shape), an older report's read as this
 * one's. */
void amp_row_delivered(struct amp_row *r, const struct amp_json *s);

/* The error of what the program got at the row, in its tolerance's norm
 * (Frobenius for a Frobenius tolerance, else max): 0 when no converted
 * result reached it; NaN when not measured. */
double amp_row_error(const struct amp_row *r);

/* The row's error as a cell: "exactly FP32" when no converted result
 * reached the program, else amp_row_error as "%.2e", "-" when not
 * measured, or "not measurable" when its shadow calls compared no element
 * (no FP32 result had a finite one). Returns buf. */
const char *amp_row_error_text(const struct amp_row *r, char *buf,
                               size_t cap);

/* 1 when the row is over its tolerance: shadow calls counted over it, or
 * its largest error over it in the tolerance's norm (amp_error_over,
 * decide/site.h); an unmeasured error or no tolerance is not. */
int amp_row_over(const struct amp_row *r);

/* The parsed report; rows sorted by time saved, largest first. */
struct amp_doc {
    struct amp_json *root;
    struct amp_row *rows;
    size_t nrows;
};

/* Reads and checks the report at path ("-": standard input) into doc,
 * rows sorted by time saved; 0, or -1 after a message that names the
 * file. amp_doc_free frees it, loaded or not. */
int amp_doc_load(const char *path, struct amp_doc *doc);
void amp_doc_free(struct amp_doc *doc);

/* s, or otherwise when s is NULL. */
const char *amp_or(const char *s, const char *otherwise);

/* obj's member key as a number; NaN when it is absent or not a number. */
double amp_num(const struct amp_json *obj, const char *key);

/* 1 when some call of a time object (a site's, a shape's or the totals')
 * has an FP32 time: its times are then figures, else unknown (the report
 * writes 0 there). A report without the counts (the totals of version 1)
 * has them known. */
int amp_fp32_known(const struct amp_json *time);

/* v as "%.Nf" or "%.Ne" (fmt) says, into buf; "-" for NaN. */
const char *amp_fmt(char *buf, size_t cap, const char *fmt, double v);

/* A shape's auto choice and its candidates' speedups and errors (in the
 * tolerance's norm), "tf32 (fp16 1.81x 1.7e-04; bf16 3.23x 2.5e-03: error
 * ... over the tolerance ...; tf32 5.12x 1.7e-04)", into buf; NULL when
 * no auto rule decided the shape. */
const char *amp_auto_text(const struct amp_json *shape, char *buf,
                          size_t cap);

/* The report's verdict line (amp_verdict_line), from its totals; an
 * older report's without steady_speedup from its speedups. */
const char *amp_doc_verdict(const struct amp_doc *doc, char *buf,
                            size_t cap);

/* The report's time line (amp_time_line), from its totals; NULL for a
 * report without device_ms. */
const char *amp_doc_time(const struct amp_doc *doc, char *buf, size_t cap);

/* A shape measured in shadow without an auto rule: its candidate's
 * error, which the program did not get ("fp16 candidate, max rel err
 * 1.84e-04 in 4 calls measured beside FP32 ..."), into buf; NULL when
 * the row has no shadow call measured. */
const char *amp_shadow_text(const struct amp_row *r, char *buf, size_t cap);

/* 1 for a snapshot written during the run ("complete": false). */
int amp_report_incomplete(const struct amp_doc *doc);

/* OUT of --html and --csv: "-" is standard output. NULL (errno) when the
 * file cannot be opened; closing gives 0, or -1 when a write failed. */
FILE *amp_out_open(const char *path);
int amp_out_close(FILE *f);

/* ---- Coverage ------------------------------------------------------------ */

/* A kind of the report's coverage object: where it sits ("" for the top
 * level), its key and how the tables name it. */
struct amp_cover_row {
    const char *section, *key, *label;
};

/* The kinds in the report's order, amp_cover_nrows of them. */
extern const struct amp_cover_row amp_cover_rows[];
extern const size_t amp_cover_nrows;

/* Kind i's object in the report's coverage; NULL when it has none. */
const struct amp_json *amp_cover_kind(const struct amp_json *cov, size_t i);

/* The one-line answer: how much of the work the shim could reach. */
void amp_cover_summary(const struct amp_json *cov, char *buf, size_t cap);

/* ---- The HTML page (tool_html.c) ----------------------------------------- */

/* Writes the page to path ("-": standard output); 0, or -1 (errno). */
int amp_write_html(const struct amp_doc *doc, const char *path);

/* s as one CSV field (quoted when it holds a comma, quote or line end),
 * then ',' or, when last, a line end; NULL is an empty field. */
void amp_csv_field(FILE *f, const char *s, int last);

/* v as a CSV field ("%.9g"; empty for NaN). */
void amp_csv_number(FILE *f, double v, int last);

/* ---- Two reports compared (tool_diff.c) --------------------------------- */

/* `ampshim report --diff A B`: prints the comparison, and with csv
 * (NULL: none) writes it as CSV; 0, or 1 after a message. */
int amp_tool_report_diff(const char *a, const char *b, const char *csv);

/* s, HTML-escaped, into f; nothing for NULL. */
void amp_html_text(FILE *f, const char *s);

/* The pages' style sheet (one <style> element's content). */
extern const char amp_html_style[];

#endif
