/* `ampshim report` over several reports (files, or the reports of a
 * directory): one summary of the job they came from. The processes (ranks
 * and devices), the totals, per call site the spread across processes
 * (calls, speedup, error: minimum, median, maximum), the sites whose
 * decisions differ between processes, and the slowest process. A site is
 * the same site in every process when its API, function, module file name
 * and offset agree: the ranks of a job run one program. */
#include "base/json.h"
#include "decide/symbolize.h"
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

/* Most reports one summary reads. */
#define AMP_JOB_MAX_REPORTS 4096

/* One process's report. */
struct amp_proc {
    const char *path;
    struct amp_json *root;
    long rank;                 /* the job's rank; else the report's order */
    int ranked;                /* rank is the launcher's */
};

/* One site across the processes: its figures in each (NaN where a process
 * has not the site). */
struct amp_jsite {
    const char *api, *function, *module;
    double offset;
    double *calls, *speedup, *max_rel;
    char **modes;              /* "fp16+shadow:fp16", per process */
    int *demoted;
    size_t present;            /* processes that have it */
};

struct amp_job_sum {
    struct amp_proc *procs;
    size_t nprocs;
    struct amp_jsite *sites;
    size_t nsites;
};

static const char *
amp_jstr(const struct amp_json *obj, const char *key)
{
    return amp_json_str(amp_json_get(obj, key));
}

static const char *
amp_base(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;

    return slash ? slash + 1 : path;
}

static int
amp_dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Minimum, median and maximum of the numbers of v (NaN ones left out);
 * 0 when there is none. */
static int
amp_spread(const double *v, size_t n, double out[3])
{
    double *s = malloc((n ? n : 1) * sizeof *s);
    size_t k = 0, i;

    if (!s)
        return 0;
    for (i = 0; i < n; i++)
        if (!isnan(v[i]))
            s[k++] = v[i];
    if (k) {
        qsort(s, k, sizeof *s, amp_dcmp);
        out[0] = s[0];
        out[1] = k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2.0;
        out[2] = s[k - 1];
    }
    free(s);
    return k > 0;
}

/* "1.21/1.40/1.52" (each as fmt: amp_fmt's), or "-". */
static const char *
amp_spread_text(const double *v, size_t n, const char *fmt, char *buf,
                size_t cap)
{
    double s[3];
    char a[3][24];
    int i;

    if (!amp_spread(v, n, s)) {
        snprintf(buf, cap, "-");
        return buf;
    }
    for (i = 0; i < 3; i++)
        amp_fmt(a[i], sizeof a[i], fmt, s[i]);
    snprintf(buf, cap, "%s/%s/%s", a[0], a[1], a[2]);
    return buf;
}

/* ---- Reading ------------------------------------------------------------- */

/* Loads one report; -1 after a message when it is none. */
static int
amp_proc_load(struct amp_proc *p, const char *path, size_t order)
{
    const struct amp_json *job;
    char err[160];
    size_t len;
    char *text = amp_tool_read_file(path, &len);

    memset(p, 0, sizeof *p);
    p->path = path;
    if (!text) {
        fprintf(stderr, "ampshim report: %s: %s\n", path, strerror(errno));
        return -1;
    }
    p->root = amp_json_parse(text, len, err, sizeof err);
    free(text);
    if (!p->root) {
        fprintf(stderr, "ampshim report: %s: not JSON: %s\n", path, err);
        return -1;
    }
    if (!amp_jstr(p->root, "schema") ||
        strcmp(amp_jstr(p->root, "schema"), "ampshim-report") != 0 ||
        !amp_json_get(p->root, "sites")) {
        fprintf(stderr, "ampshim report: %s: not an ampshim report\n", path);
        amp_json_free(p->root);
        p->root = NULL;
        return -1;
    }
    job = amp_json_get(p->root, "job");
    p->ranked = job && job->type == AMP_JSON_OBJECT &&
                !isnan(amp_num(job, "rank"));
    p->rank = p->ranked ? (long)amp_num(job, "rank") : (long)order;
    return 0;
}

static int
amp_by_rank(const void *a, const void *b)
{
    const struct amp_proc *x = a, *y = b;

    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int
amp_by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.json files of dir, in name order, appended to paths. */
static int
amp_dir_reports(const char *dir, char **paths, size_t *n, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t first = *n;

    if (!d) {
        fprintf(stderr, "ampshim report: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        char *path;

        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        if (*n == cap) {
            fprintf(stderr, "ampshim report: %s: more than %zu reports\n",
                    dir, cap);
            closedir(d);
            return -1;
        }
        path = malloc(strlen(dir) + len + 2);
        if (!path) {
            closedir(d);
            return -1;
        }
        sprintf(path, "%s/%s", dir, e->d_name);
        paths[(*n)++] = path;
    }
    closedir(d);
    qsort(paths + first, *n - first, sizeof *paths, amp_by_name);
    return 0;
}

/* The site of s in the summary, made on first sight. */
static struct amp_jsite *
amp_jsite_of(struct amp_job_sum *j, const struct amp_json *s)
{
    const char *api = amp_jstr(s, "api"), *fn = amp_jstr(s, "function");
    const char *mod = amp_base(amp_jstr(s, "module"));
    double off = amp_num(s, "offset");
    struct amp_jsite *x;
    size_t i, n = j->nprocs;

    for (i = 0; i < j->nsites; i++) {
        x = &j->sites[i];
        if (strcmp(x->api ? x->api : "", api ? api : "") == 0 &&
            strcmp(x->function ? x->function : "", fn ? fn : "") == 0 &&
            strcmp(x->module ? x->module : "", mod ? mod : "") == 0 &&
            (x->offset == off || (isnan(x->offset) && isnan(off))))
            return x;
    }
    x = &j->sites[j->nsites++];
    x->api = api;
    x->function = fn;
    x->module = mod;
    x->offset = off;
    x->calls = malloc(n * sizeof *x->calls);
    x->speedup = malloc(n * sizeof *x->speedup);
    x->max_rel = malloc(n * sizeof *x->max_rel);
    x->modes = calloc(n, sizeof *x->modes);
    x->demoted = calloc(n, sizeof *x->demoted);
    if (!x->calls || !x->speedup || !x->max_rel || !x->modes || !x->demoted)
        return NULL;
    for (i = 0; i < n; i++)
        x->calls[i] = x->speedup[i] = x->max_rel[i] = NAN;
    return x;
}

/* "fp16+shadow:fp16" from a site's modes, or "fp32". */
static char *
amp_modes_of(const struct amp_json *s)
{
    const struct amp_json *m = amp_json_get(s, "modes");
    char buf[128] = "";
    size_t len = 0, i;

    for (i = 0; m && m->type == AMP_JSON_OBJECT && i < m->count &&
                len < sizeof buf;
         i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s",
                                len ? "+" : "", m->keys[i]);
    return strdup(buf[0] ? buf : "fp32");
}

static int
amp_job_gather(struct amp_job_sum *j)
{
    size_t p, i, total = 0;

    for (p = 0; p < j->nprocs; p++)
        total += amp_json_get(j->procs[p].root, "sites")->count;
    j->sites = calloc(total ? total : 1, sizeof *j->sites);
    if (!j->sites)
        return -1;
    for (p = 0; p < j->nprocs; p++) {
        const struct amp_json *sites = amp_json_get(j->procs[p].root,
                                                    "sites");

        for (i = 0; i < sites->count; i++) {
            const struct amp_json *s = &sites->items[i];
            const struct amp_json *d = amp_json_get(s, "demoted");
            struct amp_jsite *x = amp_jsite_of(j, s);

            if (!x)
                return -1;
            x->calls[p] = amp_num(s, "calls");
            x->speedup[p] = amp_num(amp_json_get(s, "time"), "speedup");
            x->max_rel[p] = amp_num(amp_json_get(s, "errors"), "max_rel");
            x->modes[p] = amp_modes_of(s);
            x->demoted[p] = d && d->type == AMP_JSON_BOOL && d->boolean;
            x->present++;
        }
    }
    return 0;
}

/* Why a site's decisions differ between the processes ("" when they do
 * not): demoted on some, other modes, missing from some. */
static void
amp_jsite_differs(const struct amp_job_sum *j, const struct amp_jsite *x,
                  char *buf, size_t cap)
{
    size_t p, len = 0, first = j->nprocs, demoted = 0;
    int modes_differ = 0;

    buf[0] = '\0';
    for (p = 0; p < j->nprocs; p++) {
        if (!x->modes[p])
            continue;
        if (first == j->nprocs)
            first = p;
        else if (strcmp(x->modes[p], x->modes[first]) != 0)
            modes_differ = 1;
        demoted += (size_t)x->demoted[p];
    }
    if (demoted && demoted < x->present) {
        len += (size_t)snprintf(buf + len, cap - len, "demoted on rank");
        for (p = 0; p < j->nprocs && len < cap; p++)
            if (x->demoted[p])
                len += (size_t)snprintf(buf + len, cap - len, " %ld",
                                        j->procs[p].rank);
    }
    if (modes_differ && len < cap) {
        len += (size_t)snprintf(buf + len, cap - len, "%smodes:",
                                len ? "; " : "");
        for (p = 0; p < j->nprocs && len < cap; p++)
            if (x->modes[p])
                len += (size_t)snprintf(buf + len, cap - len, " %ld=%s",
                                        j->procs[p].rank, x->modes[p]);
    }
    if (x->present < j->nprocs && len < cap)
        snprintf(buf + len, cap - len, "%sin %zu of %zu processes",
                 len ? "; " : "", x->present, j->nprocs);
}

/* ---- Writing ------------------------------------------------------------- */

/* The site's label, as every view writes it: "main (report_prog+0x13f5)". */
static void
amp_jsite_label(const struct amp_jsite *x, char *buf, size_t cap)
{
    char function[AMP_SYMBOL_LEN] = "";

    if (x->function)
        amp_function_name(x->function, function, sizeof function);
    amp_symbol_label(buf, cap, function, x->module,
                     isnan(x->offset) ? 0 : (uintptr_t)x->offset);
}

/* The process with the most time under the shim; -1 when none has one. */
static long
amp_slowest(const struct amp_job_sum *j, double *worst, double *best)
{
    long slow = -1;
    size_t p;

    *worst = NAN;
    *best = NAN;
    for (p = 0; p < j->nprocs; p++) {
        double t = amp_num(amp_json_get(j->procs[p].root, "totals"),
                            "actual_ms");

        if (isnan(t))
            continue;
        if (isnan(*worst) || t > *worst) {
            *worst = t;
            slow = (long)p;
        }
        if (isnan(*best) || t < *best)
            *best = t;
    }
    return slow;
}

static void
amp_job_print(const struct amp_job_sum *j)
{
    double calls = 0, conv = 0, fp32 = 0, actual = 0, worst, best;
    const struct amp_json *job0 = amp_json_get(j->procs[0].root, "job");
    char b[6][80], label[1200], differs[512];
    long slow;
    size_t p, i;

    printf("job: %zu processes", j->nprocs);
    if (job0 && job0->type == AMP_JSON_OBJECT)
        printf(" (%s, job %s, size %s)", amp_jstr(job0, "launcher"),
               amp_jstr(job0, "id") ? amp_jstr(job0, "id") : "-",
               amp_fmt(b[0], 80, "%.0f", amp_num(job0, "size")));
    printf("\n\n%-6s %-16s %-30s %7s %7s %10s %10s %8s  %s\n", "rank", "host",
           "device", "calls", "conv", "fp32 ms", "actual ms", "speedup",
           "report");
    for (p = 0; p < j->nprocs; p++) {
        const struct amp_json *r = j->procs[p].root;
        const struct amp_json *t = amp_json_get(r, "totals");
        const struct amp_json *dev = amp_json_get(r, "device");
        const struct amp_json *prog = amp_json_get(r, "program");
        double ms = amp_fp32_known(t) ? 1.0 : NAN;

        printf("%-6s %-16.16s %-30.30s %7.0f %7.0f %10s %10s %8s  %s\n",
               j->procs[p].ranked
                   ? (snprintf(b[5], 80, "%ld", j->procs[p].rank), b[5])
                   : "-",
               amp_jstr(prog, "host") ? amp_jstr(prog, "host") : "-",
               amp_jstr(dev, "reported_name") ? amp_jstr(dev, "reported_name")
                                              : "none",
               amp_num(t, "calls"), amp_doc_delivered(t),
               amp_fmt(b[0], 80, "%.3f", ms * amp_num(t, "fp32_ms")),
               amp_fmt(b[1], 80, "%.3f", ms * amp_num(t, "actual_ms")),
               amp_fmt(b[2], 80, "%.2f", amp_num(t, "speedup")),
               j->procs[p].path);
        calls += amp_num(t, "calls");
        conv += amp_doc_delivered(t);
        if (!isnan(ms)) {
            fp32 += amp_num(t, "fp32_ms");
            actual += amp_num(t, "actual_ms");
        }
    }
    printf("\ntotal: %.0f calls, %.0f converted; fp32 %s ms, actual %s ms, "
           "speedup %s\n", calls, conv,
           amp_fmt(b[0], 80, "%.3f", actual > 0 ? fp32 : NAN),
           amp_fmt(b[1], 80, "%.3f", actual > 0 ? actual : NAN),
           amp_fmt(b[2], 80, "%.2f", actual > 0 ? fp32 / actual : NAN));
    slow = amp_slowest(j, &worst, &best);
    if (slow >= 0 && j->nprocs > 1)
        printf("slowest: rank %ld, %.3f ms of converted and shadow calls, "
               "%.1f%% over the fastest\n", j->procs[slow].rank, worst,
               best > 0 ? 100.0 * (worst / best - 1.0) : 0.0);
    printf("\n%-40s %-24s %5s %17s %17s %26s\n", "site", "api", "procs",
           "calls min/med/max", "speedup", "max rel err");
    for (i = 0; i < j->nsites; i++) {
        const struct amp_jsite *x = &j->sites[i];

        amp_jsite_label(x, label, sizeof label);
        printf("%-40s %-24s %5zu %17s %17s %26s\n", label,
               x->api ? x->api : "-", x->present,
               amp_spread_text(x->calls, j->nprocs, "%.0f", b[0], 80),
               amp_spread_text(x->speedup, j->nprocs, "%.2f", b[1], 80),
               amp_spread_text(x->max_rel, j->nprocs, "%.1e", b[2], 80));
    }
    for (i = 0; i < j->nsites; i++) {
        amp_jsite_differs(j, &j->sites[i], differs, sizeof differs);
        if (!differs[0])
            continue;
        amp_jsite_label(&j->sites[i], label, sizeof label);
        printf("decisions differ at %s %s: %s\n", label,
               j->sites[i].api ? j->sites[i].api : "-", differs);
    }
}

/* The spread of v as three CSV fields. */
static void
amp_jcsv_spread(FILE *f, const double *v, size_t n, int last)
{
    double s[3] = {NAN, NAN, NAN};
    int i;

    amp_spread(v, n, s);
    for (i = 0; i < 3; i++) {
        if (!isnan(s[i]))
            fprintf(f, "%.9g", s[i]);
        fputc(last && i == 2 ? '\n' : ',', f);
    }
}

static int
amp_job_csv(const struct amp_job_sum *j, const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    char differs[512], off[32];
    size_t i;

    if (!f)
        return -1;
    fputs("api,function,module,offset,processes,calls_min,calls_median,"
          "calls_max,speedup_min,speedup_median,speedup_max,max_rel_err_min,"
          "max_rel_err_median,max_rel_err_max,decisions_differ\n", f);
    for (i = 0; i < j->nsites; i++) {
        const struct amp_jsite *x = &j->sites[i];

        amp_jsite_differs(j, x, differs, sizeof differs);
        amp_csv_field(f, x->api, 0);
        amp_csv_field(f, x->function, 0);
        amp_csv_field(f, x->module, 0);
        snprintf(off, sizeof off, "%.0f", x->offset);
        amp_csv_field(f, isnan(x->offset) ? "" : off, 0);
        fprintf(f, "%zu,", x->present);
        amp_jcsv_spread(f, x->calls, j->nprocs, 0);
        amp_jcsv_spread(f, x->speedup, j->nprocs, 0);
        amp_jcsv_spread(f, x->max_rel, j->nprocs, 0);
        amp_csv_field(f, differs, 1);
    }
    if (f == stdout)
        return fflush(f) == 0 && !ferror(f) ? 0 : -1;
    return fclose(f) == 0 ? 0 : -1;
}

/* <td>TEXT</td>, escaped. */
static void
amp_jtd(FILE *f, const char *text)
{
    fputs("<td>", f);
    amp_html_text(f, text);
    fputs("</td>", f);
}

/* The summary as a self-contained page: the ranks, the totals, the
 * slowest, the spread per site, the decisions that differ. */
static int
amp_job_html(const struct amp_job_sum *j, const char *path)
{
    const struct amp_json *job0 = amp_json_get(j->procs[0].root, "job");
    const struct amp_json *prog0 = amp_json_get(j->procs[0].root,
                                                "program");
    FILE *f = amp_out_open(path);
    char b[6][80], label[1200], differs[512];
    double worst, best;
    long slow;
    size_t p, i, ndiffer = 0;

    if (!f)
        return -1;
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset="
            "\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-"
            "width\">\n<title>ampshim job: ");
    amp_html_text(f, amp_or(amp_jstr(prog0, "name"), "-"));
    fprintf(f, "</title>\n<style>\n%s</style></head><body>\n"
            "<h1 id=\"heading\">ampshim job: ", amp_html_style);
    amp_html_text(f, amp_or(amp_jstr(prog0, "name"), "-"));
    fprintf(f, "</h1>\n<p id=\"job\">%zu processes", j->nprocs);
    if (job0 && job0->type == AMP_JSON_OBJECT) {
        fputs(" (", f);
        amp_html_text(f, amp_jstr(job0, "launcher"));
        fputs(", job ", f);
        amp_html_text(f, amp_or(amp_jstr(job0, "id"), "-"));
        fprintf(f, ", size %s)", amp_fmt(b[0], 80, "%.0f",
                                         amp_num(job0, "size")));
    }
    fputs(".</p>\n<h2>Ranks</h2>\n<div class=\"scroll\"><table "
          "id=\"ranks\"><tr><th>rank</th><th>host</th><th>device</th>"
          "<th>calls</th><th>converted</th><th>FP32 ms</th><th>actual ms"
          "</th><th>speedup</th><th>report</th></tr>\n", f);
    for (p = 0; p < j->nprocs; p++) {
        const struct amp_json *r = j->procs[p].root;
        const struct amp_json *t = amp_json_get(r, "totals");
        double ms = amp_fp32_known(t) ? 1.0 : NAN;

        fputs("<tr>", f);
        snprintf(b[5], 80, "%ld", j->procs[p].rank);
        amp_jtd(f, j->procs[p].ranked ? b[5] : "-");
        amp_jtd(f, amp_or(amp_jstr(amp_json_get(r, "program"), "host"),
                              "-"));
        amp_jtd(f, amp_or(amp_jstr(amp_json_get(r, "device"),
                                       "reported_name"), "none"));
        amp_jtd(f, amp_fmt(b[0], 80, "%.0f", amp_num(t, "calls")));
        amp_jtd(f, amp_fmt(b[1], 80, "%.0f", amp_doc_delivered(t)));
        amp_jtd(f, amp_fmt(b[2], 80, "%.3f", ms * amp_num(t, "fp32_ms")));
        amp_jtd(f, amp_fmt(b[3], 80, "%.3f", ms * amp_num(t, "actual_ms")));
        amp_jtd(f, amp_fmt(b[4], 80, "%.2f", amp_num(t, "speedup")));
        amp_jtd(f, j->procs[p].path);
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
    slow = amp_slowest(j, &worst, &best);
    if (slow >= 0 && j->nprocs > 1)
        fprintf(f, "<p id=\"slowest\">Slowest: rank %ld, %.3f ms of "
                "converted and shadow calls, %.1f%% over the fastest.</p>\n",
                j->procs[slow].rank, worst,
                best > 0 ? 100.0 * (worst / best - 1.0) : 0.0);
    fputs("<h2>Sites across the ranks</h2>\n<p class=\"caption\">Per call "
          "site, the minimum, median and maximum over the ranks that have "
          "it.</p>\n<div class=\"scroll\"><table id=\"sites\"><tr><th>"
          "site</th><th>api</th><th>ranks</th><th>calls</th><th>speedup"
          "</th><th>max rel err</th></tr>\n", f);
    for (i = 0; i < j->nsites; i++) {
        const struct amp_jsite *x = &j->sites[i];

        amp_jsite_label(x, label, sizeof label);
        fputs("<tr>", f);
        amp_jtd(f, label);
        amp_jtd(f, x->api);
        snprintf(b[5], 80, "%zu", x->present);
        amp_jtd(f, b[5]);
        amp_jtd(f, amp_spread_text(x->calls, j->nprocs, "%.0f", b[0], 80));
        amp_jtd(f, amp_spread_text(x->speedup, j->nprocs, "%.2f", b[1], 80));
        amp_jtd(f, amp_spread_text(x->max_rel, j->nprocs, "%.1e", b[2], 80));
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n<h2>Decisions that differ</h2>\n<ul "
          "id=\"differ\">\n", f);
    for (i = 0; i < j->nsites; i++) {
        amp_jsite_differs(j, &j->sites[i], differs, sizeof differs);
        if (!differs[0])
            continue;
        amp_jsite_label(&j->sites[i], label, sizeof label);
        fputs("<li class=\"mark\">", f);
        amp_html_text(f, label);
        fputc(' ', f);
        amp_html_text(f, j->sites[i].api);
        fputs(": ", f);
        amp_html_text(f, differs);
        fputs("</li>\n", f);
        ndiffer++;
    }
    if (!ndiffer)
        fputs("<li>None: every rank decided alike at every site.</li>\n", f);
    fputs("</ul>\n</body></html>\n", f);
    return amp_out_close(f);
}

static void
amp_job_free(struct amp_job_sum *j)
{
    size_t i, p;

    for (i = 0; i < j->nsites; i++) {
        for (p = 0; p < j->nprocs; p++)
            free(j->sites[i].modes ? j->sites[i].modes[p] : NULL);
        free(j->sites[i].calls);
        free(j->sites[i].speedup);
        free(j->sites[i].max_rel);
        free(j->sites[i].modes);
        free(j->sites[i].demoted);
    }
    free(j->sites);
    for (p = 0; p < j->nprocs; p++)
        amp_json_free(j->procs[p].root);
    free(j->procs);
}

int
amp_tool_report_job(char **args, size_t nargs, const char *html,
                    const char *csv)
{
    char **paths = calloc(AMP_JOB_MAX_REPORTS, sizeof *paths);
    unsigned char *owned = calloc(AMP_JOB_MAX_REPORTS, 1);
    struct amp_job_sum j = {0};
    size_t n = 0, i;
    int rc = 1;

    if (!paths || !owned)
        goto out;
    for (i = 0; i < nargs; i++) {
        struct stat st;
        size_t before = n;

        if (stat(args[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (amp_dir_reports(args[i], paths, &n, AMP_JOB_MAX_REPORTS) != 0)
                goto out;
            memset(owned + before, 1, n - before);
            if (n == before)
                fprintf(stderr, "ampshim report: %s: no *.json report\n",
                        args[i]);
        } else if (n < AMP_JOB_MAX_REPORTS) {
            paths[n++] = args[i];
        }
    }
    j.procs = calloc(n ? n : 1, sizeof *j.procs);
    if (!j.procs || n == 0)
        goto out;
    for (i = 0; i < n; i++) {
        /* A file that is not a report is named and left out. */
        if (amp_proc_load(&j.procs[j.nprocs], paths[i], j.nprocs) == 0)
            j.nprocs++;
    }
    if (j.nprocs == 0)
        goto out;
    qsort(j.procs, j.nprocs, sizeof *j.procs, amp_by_rank);
    if (amp_job_gather(&j) != 0)
        goto out;
    rc = 0;
    if (!(csv && strcmp(csv, "-") == 0) && !(html && strcmp(html, "-") == 0))
        amp_job_print(&j);
    if (html && amp_job_html(&j, html) != 0) {
        fprintf(stderr, "ampshim report: %s: %s\n",
                strcmp(html, "-") == 0 ? "standard output" : html,
                strerror(errno));
        rc = 1;
    }
    if (csv && amp_job_csv(&j, csv) != 0) {
        fprintf(stderr, "ampshim report: %s: %s\n",
                strcmp(csv, "-") == 0 ? "standard output" : csv,
                strerror(errno));
        rc = 1;
    }
out:
    amp_job_free(&j);
    for (i = 0; paths && owned && i < n; i++)
        if (owned[i])
            free(paths[i]);
    free(paths);
    free(owned);
    return rc;
}
