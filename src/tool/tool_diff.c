/* `ampshim report --diff A B`: two reports side by side, per site and
 * shape (calls, mode, time, speedup, the error the program got), as
 * before and after a change of policy or code. A site of A is the site of
 * B with the same API, calling function and module file name; where one
 * function holds several such sites, the k-th by offset in A is the k-th
 * in B (a code change moves offsets, rarely their order). A shape matches
 * the shape with the same text at the matched site. What has no match is
 * shown as only in A or only in B. */
#include "base/json.h"
#include "tool/tool.h"
#include "tool/tool_report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A site of one report, with its key. */
struct amp_dsite {
    const struct amp_row *row;
    const char *module;          /* the module's file name */
    size_t nth;                  /* among the sites with its API, caller
                                    and module, by offset, from 0 */
    const struct amp_dsite *match; /* in the other report; NULL: none */
};

struct amp_dside {
    const char *path;
    struct amp_doc doc;
    struct amp_dsite *sites;     /* in the order of doc.rows */
};

static const char *
amp_dbase(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;

    return slash ? slash + 1 : amp_or(path, "");
}

static int
amp_dsame(const struct amp_dsite *x, const struct amp_dsite *y)
{
    return strcmp(amp_or(x->row->api, ""), amp_or(y->row->api, "")) == 0 &&
           strcmp(x->row->function_name, y->row->function_name) == 0 &&
           strcmp(x->module, y->module) == 0;
}

/* Each site's nth; 0, or -1 out of memory. */
static int
amp_dside_index(struct amp_dside *d)
{
    size_t i, j, n = d->doc.nrows;

    d->sites = calloc(n ? n : 1, sizeof *d->sites);
    if (!d->sites)
        return -1;
    for (i = 0; i < n; i++) {
        d->sites[i].row = &d->doc.rows[i];
        d->sites[i].module = amp_dbase(d->doc.rows[i].module);
    }
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            const struct amp_row *x = d->sites[i].row, *y = d->sites[j].row;

            /* Before it by offset; sites at one offset (called from
             * different functions) by their order in the report. */
            if (j != i && amp_dsame(&d->sites[i], &d->sites[j]) &&
                (y->offset < x->offset ||
                 (y->offset == x->offset && y->site < x->site)))
                d->sites[i].nth++;
        }
    return 0;
}

static void
amp_dmatch(struct amp_dside *a, struct amp_dside *b)
{
    size_t i, j;

    for (i = 0; i < a->doc.nrows; i++)
        for (j = 0; j < b->doc.nrows; j++)
            if (!b->sites[j].match && amp_dsame(&a->sites[i], &b->sites[j]) &&
                a->sites[i].nth == b->sites[j].nth) {
                a->sites[i].match = &b->sites[j];
                b->sites[j].match = &a->sites[i];
                break;
            }
}

/* The shape of site r with the text `shape`, into out; 0 when it has
 * none. */
static int
amp_dshape(const struct amp_row *r, const char *shape, struct amp_row *out)
{
    const struct amp_json *sh = r ? amp_json_get(r->site, "shapes") : NULL;
    size_t i;

    for (i = 0; sh && sh->type == AMP_JSON_ARRAY && i < sh->count; i++) {
        const char *t = amp_json_str(amp_json_get(&sh->items[i], "shape"));

        if (t && strcmp(t, shape) == 0) {
            amp_row_shape(out, r, &sh->items[i]);
            return 1;
        }
    }
    return 0;
}

/* ---- The table ----------------------------------------------------------- */

/* One side's cells: calls, mode, actual ms, speedup, error; "-" for a
 * row it lacks. */
struct amp_dcells {
    char calls[16], mode[96], ms[32], speedup[32], error[32];
};

static void
amp_dcells_of(const struct amp_row *r, struct amp_dcells *c)
{
    if (!r) {
        snprintf(c->calls, sizeof c->calls, "-");
        snprintf(c->mode, sizeof c->mode, "-");
        snprintf(c->ms, sizeof c->ms, "-");
        snprintf(c->speedup, sizeof c->speedup, "-");
        snprintf(c->error, sizeof c->error, "-");
        return;
    }
    snprintf(c->calls, sizeof c->calls, "%.0f", r->calls);
    snprintf(c->mode, sizeof c->mode, "%s", r->shown);
    amp_fmt(c->ms, sizeof c->ms, "%.3f", r->actual_ms);
    amp_fmt(c->speedup, sizeof c->speedup, "%.2f", r->speedup);
    amp_row_error_text(r, c->error, sizeof c->error);
}

static void
amp_dprint_row(const char *name, const struct amp_row *a,
               const struct amp_row *b)
{
    struct amp_dcells x, y;
    char ratio[32];

    amp_dcells_of(a, &x);
    amp_dcells_of(b, &y);
    amp_fmt(ratio, sizeof ratio, "%.2f",
            a && b && a->actual_ms > 0.0 ? b->actual_ms / a->actual_ms
                                         : NAN);
    /* A label wider than its column gets a line of its own, whole. */
    if (strlen(name) > 32) {
        printf("%s\n", name);
        name = "";
    }
    printf("%-32s %7s %7s %-16.16s %-16.16s %10s %10s %6s %7s %7s %12s "
           "%12s%s\n", name, x.calls, y.calls, x.mode, y.mode, x.ms, y.ms,
           ratio, x.speedup, y.speedup, x.error, y.error,
           !b ? "  only in A" : !a ? "  only in B" : "");
}

/* A site of a (or of b alone) and its shapes: the matched ones side by
 * side, then those of a alone, then those of b alone. */
static void
amp_dprint_site(const struct amp_row *a, const struct amp_row *b,
                size_t *only_a, size_t *only_b)
{
    const struct amp_row *site = a ? a : b;
    const struct amp_row *other = a ? b : NULL;
    const struct amp_json *sh = amp_json_get(site->site, "shapes");
    const struct amp_json *osh = other ? amp_json_get(other->site, "shapes")
                                       : NULL;
    struct amp_row x, y;
    char name[200];
    size_t i;

    amp_dprint_row(site->name, a, b);
    *only_a += a && !b;
    *only_b += b && !a;
    for (i = 0; sh && sh->type == AMP_JSON_ARRAY && i < sh->count; i++) {
        int both;

        amp_row_shape(&x, site, &sh->items[i]);
        both = other && amp_dshape(other, x.shape, &y);
        snprintf(name, sizeof name, "  %s", x.shape);
        amp_dprint_row(name, a ? &x : NULL, a ? (both ? &y : NULL) : &x);
        *only_a += a && !both;
        *only_b += !a;
    }
    for (i = 0; osh && osh->type == AMP_JSON_ARRAY && i < osh->count; i++) {
        amp_row_shape(&y, other, &osh->items[i]);
        if (amp_dshape(site, y.shape, &x))
            continue;
        snprintf(name, sizeof name, "  %s", y.shape);
        amp_dprint_row(name, NULL, &y);
        (*only_b)++;
    }
}

static void
amp_dprint_header(const char *tag, const struct amp_dside *d)
{
    const struct amp_json *root = d->doc.root;
    const struct amp_json *pol = amp_json_get(root, "policy");
    char verdict[512];

    printf("%s: %s: %s (pid %.0f)%s\n", tag,
           strcmp(d->path, "-") == 0 ? "standard input" : d->path,
           amp_or(amp_json_str(amp_json_get(amp_json_get(root, "program"),
                                            "name")), "?"),
           amp_num(amp_json_get(root, "program"), "pid"),
           amp_report_incomplete(&d->doc) ? ", incomplete (a snapshot)"
                                          : "");
    printf("   policy: %s%s%s\n",
           amp_or(amp_json_str(amp_json_get(pol, "source")), "?"),
           amp_json_str(amp_json_get(pol, "mode")) ? " " : "",
           amp_or(amp_json_str(amp_json_get(pol, "mode")), ""));
    printf("   verdict: %s\n", amp_doc_verdict(&d->doc, verdict,
                                                sizeof verdict));
}

static void
amp_dprint(const struct amp_dside *a, const struct amp_dside *b)
{
    const struct amp_json *ta = amp_json_get(a->doc.root, "totals");
    const struct amp_json *tb = amp_json_get(b->doc.root, "totals");
    double ms_a = amp_fp32_known(ta) ? amp_num(ta, "actual_ms") : NAN;
    double ms_b = amp_fp32_known(tb) ? amp_num(tb, "actual_ms") : NAN;
    size_t i, only_a = 0, only_b = 0;
    char c[6][32];

    amp_dprint_header("A", a);
    amp_dprint_header("B", b);
    printf("\n%-32s %7s %7s %-16s %-16s %10s %10s %6s %7s %7s %12s %12s\n",
           "site / shape", "calls A", "calls B", "mode A", "mode B",
           "ms A", "ms B", "B/A", "speedup", "speedup", "error A",
           "error B");
    for (i = 0; i < a->doc.nrows; i++)
        amp_dprint_site(a->sites[i].row,
                        a->sites[i].match ? a->sites[i].match->row : NULL,
                        &only_a, &only_b);
    for (i = 0; i < b->doc.nrows; i++)
        if (!b->sites[i].match)
            amp_dprint_site(NULL, b->sites[i].row, &only_a, &only_b);
    printf("\nms: time under the shim (actual); B/A: B's time over A's; "
           "speedup: FP32 time over actual; error: of what the program "
           "got\n");
    printf("total: A %.0f calls, %s ms, speedup %s; B %.0f calls, %s ms, "
           "speedup %s; B/A %s\n", amp_num(ta, "calls"),
           amp_fmt(c[0], 32, "%.3f", ms_a),
           amp_fmt(c[1], 32, "%.2f", amp_num(ta, "speedup")),
           amp_num(tb, "calls"), amp_fmt(c[2], 32, "%.3f", ms_b),
           amp_fmt(c[3], 32, "%.2f", amp_num(tb, "speedup")),
           amp_fmt(c[4], 32, "%.2f", ms_a > 0.0 ? ms_b / ms_a : NAN));
    printf("rows (sites and shapes) only in A: %zu; only in B: %zu\n",
           only_a, only_b);
}

/* ---- CSV ----------------------------------------------------------------- */

static void
amp_dcsv_side(FILE *f, const struct amp_row *r, int last)
{
    amp_csv_number(f, r ? r->offset : NAN, 0);
    amp_csv_number(f, r ? r->calls : NAN, 0);
    amp_csv_number(f, r ? r->converted : NAN, 0);
    amp_csv_number(f, r ? r->shadow : NAN, 0);
    amp_csv_field(f, r ? r->modes : NULL, 0);
    amp_csv_number(f, r ? r->fp32_ms : NAN, 0);
    amp_csv_number(f, r ? r->actual_ms : NAN, 0);
    amp_csv_number(f, r ? r->speedup : NAN, 0);
    amp_csv_number(f, r ? r->steady : NAN, 0);
    amp_csv_number(f, r ? r->delivered_rel : NAN, 0);
    amp_csv_number(f, r ? r->delivered_fro : NAN, last);
}

static void
amp_dcsv_row(FILE *f, const struct amp_row *a, const struct amp_row *b)
{
    const struct amp_row *r = a ? a : b;

    amp_csv_field(f, r->api, 0);
    amp_csv_field(f, r->function ? r->function_name : NULL, 0);
    amp_csv_field(f, r->module, 0);
    amp_csv_field(f, r->shape, 0);
    amp_csv_field(f, a && b ? "both" : a ? "a" : "b", 0);
    amp_dcsv_side(f, a, 0);
    amp_dcsv_side(f, b, 1);
}

/* The shapes of a site (of a, or of b alone), as the table has them. */
static void
amp_dcsv_site(FILE *f, const struct amp_row *a, const struct amp_row *b)
{
    const struct amp_row *site = a ? a : b, *other = a ? b : NULL;
    const struct amp_json *sh = amp_json_get(site->site, "shapes");
    const struct amp_json *osh = other ? amp_json_get(other->site, "shapes")
                                       : NULL;
    struct amp_row x, y;
    size_t i;

    for (i = 0; sh && sh->type == AMP_JSON_ARRAY && i < sh->count; i++) {
        int both;

        amp_row_shape(&x, site, &sh->items[i]);
        both = other && amp_dshape(other, x.shape, &y);
        amp_dcsv_row(f, a ? &x : NULL, a ? (both ? &y : NULL) : &x);
    }
    for (i = 0; osh && osh->type == AMP_JSON_ARRAY && i < osh->count; i++) {
        amp_row_shape(&y, other, &osh->items[i]);
        if (!amp_dshape(site, y.shape, &x))
            amp_dcsv_row(f, NULL, &y);
    }
}

static int
amp_dcsv(const struct amp_dside *a, const struct amp_dside *b,
         const char *path)
{
    static const char side[] =
        "offset,calls,converted,shadow,modes,fp32_ms,actual_ms,speedup,"
        "steady_speedup,delivered_rel_err,delivered_fro_err";
    FILE *f = amp_out_open(path);
    const char *at;
    size_t i;
    int k;

    if (!f)
        return -1;
    fputs("api,function,module,shape,present", f);
    for (k = 0; k < 2; k++)
        for (at = side; *at;) {
            size_t len = strcspn(at, ",");

            fprintf(f, ",%s_%.*s", k ? "b" : "a", (int)len, at);
            at += len + (at[len] == ',');
        }
    fputc('\n', f);
    for (i = 0; i < a->doc.nrows; i++)
        amp_dcsv_site(f, a->sites[i].row,
                      a->sites[i].match ? a->sites[i].match->row : NULL);
    for (i = 0; i < b->doc.nrows; i++)
        if (!b->sites[i].match)
            amp_dcsv_site(f, NULL, b->sites[i].row);
    return amp_out_close(f);
}

int
amp_tool_report_diff(const char *a_path, const char *b_path,
                     const char *csv)
{
    struct amp_dside a, b;
    int rc = 1;

    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.path = a_path;
    b.path = b_path;
    if (strcmp(a_path, "-") == 0 && strcmp(b_path, "-") == 0) {
        amp_opt_usage("ampshim report", "--diff: standard input holds one "
                      "report, not both");
        return AMP_TOOL_USAGE;
    }
    /* Both read and checked before a line is printed. */
    if (amp_doc_load(a_path, &a.doc) != 0 ||
        amp_doc_load(b_path, &b.doc) != 0)
        goto out;
    if (amp_dside_index(&a) != 0 || amp_dside_index(&b) != 0) {
        fprintf(stderr, "ampshim report: %s\n", strerror(ENOMEM));
        goto out;
    }
    amp_dmatch(&a, &b);
    rc = 0;
    if (!(csv && strcmp(csv, "-") == 0))
        amp_dprint(&a, &b);
    if (csv && amp_dcsv(&a, &b, csv) != 0) {
        fprintf(stderr, "ampshim report: %s: %s\n",
                strcmp(csv, "-") == 0 ? "standard output" : csv,
                strerror(errno));
        rc = 1;
    }
out:
    free(a.sites);
    free(b.sites);
    amp_doc_free(&a.doc);
    amp_doc_free(&b.doc);
    return rc;
}
