/* The report's outputs at exit and during the run: the trace, the table
 * on stderr, the files written at exit and the snapshots (the groups in
 * report_sites.c, the JSON in report_json.c). */
#include "measure/report_impl.h"

#include "base/job.h"
#include "base/json.h"
#include "base/log.h"
#include "base/path.h"
#include "decide/auto.h"
#include "decide/policy.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/coverage.h"
#include "measure/prof.h"
#include "measure/replay.h"
#include "measure/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- The trace ----------------------------------------------------------------- */

static void
amp_trace_meta(struct amp_json_out *j, const char *what, int tid,
               const char *name)
{
    amp_json_object(j);
    amp_json_kstring(j, "name", what);
    amp_json_kstring(j, "ph", "M");
    amp_json_kint(j, "pid", (long long)getpid());
    amp_json_kint(j, "tid", tid);
    amp_json_key(j, "args");
    amp_json_object(j);
    amp_json_kstring(j, "name", name);
    amp_json_end_object(j);
    amp_json_end_object(j);
}

static void
amp_trace_event(struct amp_json_out *j, const struct amp_trace_event *t,
                double origin)
{
    char name[96], shape[160], label[AMP_LABEL_LEN];
    const char *mode = amp_mode_name(t->mode);
    /* What the program got, by its category: "converted" (a converted
     * result), "shadow" (a shadow call's FP32 original, whose result it
     * got), "candidate" (a shadow call's candidate, measured and
     * discarded), "baseline" (the FP32 original timed beside a converted
     * call, discarded). */
    const char *cat = t->fp32 ? (t->delivered ? "shadow" : "baseline")
                              : (t->delivered ? "converted" : "candidate");

    amp_shape_format(&t->shape, shape, sizeof shape);
    snprintf(name, sizeof name, "%s %s%s", t->api, t->fp32 ? "fp32" : mode,
             t->fp32 ? (t->delivered ? " (shadow)" : " (baseline)")
                     : t->delivered ? "" : " (shadow candidate)");
    amp_json_object(j);
    amp_json_kstring(j, "name", name);
    amp_json_kstring(j, "cat", cat);
    amp_json_kstring(j, "ph", "X");
    amp_json_knumber(j, "ts", t->ts_us - origin);
    amp_json_knumber(j, "dur", t->dur_us);
    amp_json_kint(j, "pid", (long long)getpid());
    amp_json_kint(j, "tid", t->track + 1);
    amp_json_key(j, "args");
    amp_json_object(j);
    amp_json_kstring(j, "api", t->api);
    amp_json_kstring(j, "site", amp_site_label(t->site, label, sizeof label));
    amp_json_kstring(j, "shape", shape);
    amp_json_kstring(j, "mode", t->fp32 ? "fp32" : mode);
    amp_json_kbool(j, "delivered", t->delivered);
    amp_json_knumber(j, "converted_ms", t->converted_ms >= 0.0
                                            ? t->converted_ms : NAN);
    amp_json_knumber(j, "fp32_ms", t->fp32_ms >= 0.0 ? t->fp32_ms : NAN);
    amp_json_kstring(j, "fp32_time", t->fp32_ms < 0.0 ? "unknown"
                                     : t->fp32_measured ? "measured"
                                                        : "estimated");
    amp_json_end_object(j);
    amp_json_end_object(j);
}

/* The calls the events stand for, as the report counts them: kept-FP32
 * calls run untimed and have no event of their own. */
static void
amp_trace_counts(struct amp_json_out *j)
{
    struct amp_prof_entry sum, *e;
    size_t n = 0, i;

    memset(&sum, 0, sizeof sum);
    e = amp_prof_snapshot(&n);
    for (i = 0; i < n; i++)
        amp_sum_entry(&sum, &e[i]);
    free(e);
    amp_json_kint(j, "calls", (long long)sum.calls);
    amp_json_kint(j, "delivered", (long long)amp_entry_delivered(&sum));
    amp_json_kint(j, "shadow", (long long)amp_entry_shadow(&sum));
    amp_json_kint(j, "fp32", (long long)(sum.outcomes[AMP_OUTCOME_FP32] +
                                         sum.outcomes[AMP_OUTCOME_FALLBACK]));
}

enum amp_status
amp_report_trace(FILE *f)
{
    const struct amp_trace_track *tracks;
    const struct amp_trace_event *ev;
    unsigned long long dropped;
    struct amp_json_out j;
    struct amp_program prog;
    size_t n, ntracks, i;
    double origin = 0.0;
    char name[300];

    ev = amp_prof_trace(&n, &dropped);
    tracks = amp_prof_tracks(&ntracks);
    for (i = 0; i < n; i++)
        if (i == 0 || ev[i].ts_us < origin)
            origin = ev[i].ts_us;
    amp_program_self(&prog);
    amp_json_init(&j, f, 0);
    amp_json_object(&j);
    amp_json_key(&j, "traceEvents");
    amp_json_array(&j);
    snprintf(name, sizeof name, "ampshim: %.200s", prog.name);
    amp_trace_meta(&j, "process_name", 0, name);
    for (i = 0; i < ntracks; i++) {
        snprintf(name, sizeof name, "stream %p (%.100s)", tracks[i].stream,
                 amp_dev_name(tracks[i].dev));
        amp_trace_meta(&j, "thread_name", (int)i + 1, name);
    }
    for (i = 0; i < n; i++) {
        fputc('\n', f);
        amp_trace_event(&j, &ev[i], origin);
    }
    amp_json_end_array(&j);
    amp_json_kstring(&j, "displayTimeUnit", "ns");
    amp_json_key(&j, "otherData");
    amp_json_object(&j);
    amp_json_kint(&j, "dropped_events", (long long)dropped);
    amp_trace_counts(&j);
    amp_json_end_object(&j);
    amp_json_end_object(&j);
    fputc('\n', f);
    return fflush(f) != 0 || ferror(f) ? AMP_ERR_IO : AMP_OK;
}

/* ---- The table on stderr ---------------------------------------------------------- */

/* The modes a group ran, e.g. "fp16", "fp16+shadow:fp16", or "fp32". */
static void
amp_modes_text(const struct amp_prof_entry *e, char *buf, size_t cap)
{
    size_t len = 0;
    int m;

    buf[0] = '\0';
    for (m = 0; m < AMP_MODE_COUNT && len < cap; m++) {
        if (!e->modes[m])
            continue;
        len += (size_t)snprintf(buf + len, cap - len, "%s%s%s%s",
                                len ? "+" : "",
                                amp_mode_name((enum amp_mode)m),
                                m == AMP_MODE_SHADOW ? ":" : "",
                                m == AMP_MODE_SHADOW
                                    ? amp_mode_name(e->candidate) : "");
    }
    if (!buf[0])
        snprintf(buf, cap, "fp32");
}

static int
amp_by_saved(const void *a, const void *b)
{
    const struct amp_group *x = a, *y = b;

    return (x->t.saved_ms < y->t.saved_ms) - (x->t.saved_ms > y->t.saved_ms);
}

/* "-" for NaN, else the number with `digits` decimals. */
static const char *
amp_cell(char *buf, size_t cap, double v, int digits)
{
    if (isnan(v))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.*f", digits, v);
    return buf;
}

/* The exit table's site column: a longer label goes on its own line. */
#define AMP_TABLE_SITE_WIDTH 28

/* The table's mode cell of group g (NULL: every group): under auto the
 * choices of its shapes ("auto:tf32", "auto:tf32,fp32", "auto:measuring"
 * while one is measured), then "+" and the modes of the shapes without
 * auto that converted; else the modes its calls ran (amp_modes_text). */
static void
amp_group_modes(const struct amp_report *r, const struct amp_group *g,
                char *buf, size_t cap)
{
    static const char *const states[] = {"measuring", NULL, "fp32"};
    struct amp_prof_entry other;
    struct amp_auto_view v;
    size_t i, len;
    int others = 0;

    buf[0] = '\0';
    memset(&other, 0, sizeof other);
    for (i = 0; i < r->nentries; i++) {
        const struct amp_prof_entry *e = &r->entries[i];

        if (g && (e->site != g->site || e->api != g->api))
            continue;
        if (e->auto_shape &&
            amp_auto_get(e->site, e->auto_shape - 1, &v) == 0) {
            amp_mode_list_add(buf, cap, "auto:",
                         v.state == AMP_AUTO_CHOSEN
                             ? amp_mode_name(v.c[v.choice].mode)
                             : states[v.state]);
            continue;
        }
        amp_sum_entry(&other, e);
        others |= e->outcomes[AMP_OUTCOME_CONVERTED] > 0;
    }
    len = strlen(buf);
    if (!len) {
        amp_modes_text(&other, buf, cap);
    } else if (others && len + 2 < cap) {
        buf[len] = '+';
        amp_modes_text(&other, buf + len + 1, cap - len - 1);
    }
}

/* A row of the exit table: group g (r->all for the total). The "conv"
 * column counts the calls whose converted result the program got,
 * "shadow" those measured beside FP32 (the program got FP32's result);
 * the error is of what the program got, "exactly FP32" when no converted
 * result reached it. */
static void
amp_table_row(const struct amp_report *r, const char *site, const char *api,
              const struct amp_group *g, const char *modes)
{
    char fp32[32], actual[32], speed[32], steady[32], saved[32], err[32];
    const struct amp_prof_entry *e = &g->sum;
    int known = g->t.measured + g->t.estimated > 0;
    struct amp_steady st;
    double rel, fro, v;

    amp_group_steady(r, g == &r->all ? NULL : g, &st);
    amp_group_delivered_error(r, g == &r->all ? NULL : g, &rel, &fro);
    /* In the tolerance's norm, as the header says. */
    v = amp_policy_tolerance_norm() == AMP_NORM_FRO ? fro : rel;
    if (amp_entry_delivered(e) == 0)
        snprintf(err, sizeof err, "exactly FP32");
    else if (!isnan(v))
        snprintf(err, sizeof err, "%.2e", v);
    else if (e->error_calls) /* no FP32 result had a finite element */
        snprintf(err, sizeof err, "not measurable");
    else
        snprintf(err, sizeof err, "-");
    amp_log_line("| %-*s %-28.28s %7llu %7llu %7llu %-18.18s %10s %10s %8s "
                 "%8s %10s %12s", AMP_TABLE_SITE_WIDTH, site, api, e->calls,
                 amp_entry_delivered(e), amp_entry_shadow(e), modes,
                 amp_cell(fp32, sizeof fp32, known ? g->t.fp32_ms : NAN, 3),
                 amp_cell(actual, sizeof actual,
                          known ? g->t.actual_ms : NAN, 3),
                 amp_cell(speed, sizeof speed,
                          amp_ratio(g->t.fp32_ms, g->t.actual_ms), 2),
                 amp_cell(steady, sizeof steady,
                          amp_ratio(st.fp32_ms, st.chosen_ms), 2),
                 amp_cell(saved, sizeof saved,
                          known ? g->t.saved_ms : NAN, 3),
                 err);
}

/* Under a site with shadow calls: the error their candidates showed,
 * which the program did not get. */
static void
amp_table_candidates(const struct amp_prof_entry *e)
{
    int fro = amp_policy_tolerance_norm() == AMP_NORM_FRO;

    if (!amp_entry_shadow(e) || !e->error_calls)
        return;
    if (e->measured_calls)
        amp_log_line("|   candidates measured in shadow (%llu calls): %s "
                     "rel err up to %.2e, a result the program did not get",
                     amp_entry_shadow(e), fro ? "fro" : "max",
                     fro ? e->max_fro : e->max_rel);
    else
        amp_log_line("|   candidates measured in shadow (%llu calls): error "
                     "not measurable (no FP32 result had a finite element)",
                     amp_entry_shadow(e));
}

/* "| FP32 calls by reason: min-size 12, no-rule 3" (fallbacks
 * included); nothing when every call converted. */
static void
amp_reasons_line(const struct amp_prof_entry *e)
{
    char line[512];
    size_t len = 0;
    int i;

    line[0] = '\0';
    for (i = 0; i < AMP_KEPT_COUNT + AMP_FALLBACK_COUNT && len < sizeof line;
         i++) {
        int kept = i < AMP_KEPT_COUNT, f = i - AMP_KEPT_COUNT;
        unsigned long long n = kept ? e->kept[i] : f > 0 ? e->fallbacks[f] : 0;

        if (n)
            len += (size_t)snprintf(
                line + len, sizeof line - len, "%s%s %llu", len ? ", " : "",
                kept ? amp_kept_name((enum amp_kept)i)
                     : amp_fallback_name((enum amp_fallback)f),
                n);
    }
    if (line[0])
        amp_log_line("| FP32 calls by reason: %s", line);
}

static void
amp_report_table(struct amp_report *r, const char *device, const char *path)
{
    char modes[96], verdict[512];
    size_t i;

    amp_log_line("verdict: %s", amp_report_verdict(r, verdict,
                                                   sizeof verdict));
    amp_log_line("time: %s",
                 amp_time_line(r->all.t.device_ms,
                               (double)r->all.t.device_untimed,
                               amp_process_wall_ms(), r->all.t.saved_ms,
                               verdict, sizeof verdict));
    qsort(r->groups, r->ngroups, sizeof *r->groups, amp_by_saved);
    amp_log_line("| %-*s %-28s %7s %7s %7s %-18s %10s %10s %8s %8s %10s "
                 "%12s", AMP_TABLE_SITE_WIDTH, "site", "api", "calls", "conv",
                 "shadow", "mode", "fp32 ms", "actual ms", "speedup", "steady",
                 "saved ms", amp_policy_tolerance_norm() == AMP_NORM_FRO
                                 ? "fro rel err"
                                 : "max rel err");
    for (i = 0; i < r->ngroups; i++) {
        char label[AMP_LABEL_LEN];

        amp_group_modes(r, &r->groups[i], modes, sizeof modes);
        amp_site_label(r->groups[i].site, label, sizeof label);
        /* A label wider than its column gets a line of its own, whole. */
        if (strlen(label) > AMP_TABLE_SITE_WIDTH) {
            amp_log_line("| %s", label);
            label[0] = '\0';
        }
        amp_table_row(r, label, r->groups[i].api, &r->groups[i], modes);
        amp_table_candidates(&r->groups[i].sum);
    }
    amp_group_modes(r, NULL, modes, sizeof modes);
    amp_table_row(r, "total", "", &r->all, modes);
    amp_reasons_line(&r->all.sum);
    amp_log_line("| conv: calls whose converted result the program got; "
                 "shadow: measured beside FP32 (the program got FP32's "
                 "result); steady: once measuring is over");
    amp_log_line("| times %s on %s; %.1f%% of the FP32 work (FLOPs) "
                 "converted; report: %s", strcmp(device, "-") == 0 ? "-" :
                 strstr(device, AMP_EMULATED_SUFFIX) ? "modelled" : "measured",
                 device,
                 100.0 * (r->all.t.flops_total > 0.0
                              ? r->all.t.flops_converted / r->all.t.flops_total
                              : 0.0),
                 path);
}

/* ---- At exit ------------------------------------------------------------------------ */

FILE *
amp_report_create(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0644);
    FILE *f;

    if (fd < 0)
        return NULL;
    f = fdopen(fd, "w");
    if (!f) {
        int saved = errno;

        close(fd);
        unlink(path);
        errno = saved;
    }
    return f;
}

/* Why amp_report_create refused an existing path (errno EEXIST): what
 * is there. */
static const char *
amp_report_existing(const char *path)
{
    struct stat st;

    if (lstat(path, &st) != 0)
        return "an existing file is never replaced";
    if (S_ISLNK(st.st_mode))
        return "a symbolic link is never followed";
    if (S_ISDIR(st.st_mode))
        return "it is a directory";
    return "an existing file is never replaced";
}

/* Writes one file with `write`; one warning when it cannot. */
static int
amp_report_file(const char *path, const char *what,
                enum amp_status (*write)(FILE *, const struct amp_config *),
                const struct amp_config *cfg)
{
    FILE *f = amp_report_create(path);
    enum amp_status st;

    if (!f) {
        int err = errno;

        amp_log(AMP_LOG_WARN, "cannot write the %s to %s: %s%s%s%s", what,
                path, strerror(err), err == EEXIST ? " (" : "",
                err == EEXIST ? amp_report_existing(path) : "",
                err == EEXIST ? ")" : "");
        return -1;
    }
    st = write(f, cfg);
    if (fclose(f) != 0 || st != AMP_OK) {
        amp_log(AMP_LOG_WARN, "writing the %s to %s failed", what, path);
        return -1;
    }
    return 0;
}

static enum amp_status
amp_trace_writer(FILE *f, const struct amp_config *cfg)
{
    (void)cfg;
    return amp_report_trace(f);
}

/* The trace, at AMPSHIM_TRACE with its escapes expanded; one warning
 * when it cannot be written. */
static void
amp_report_trace_file(const struct amp_config *cfg)
{
    char path[AMP_CONFIG_PATH_LEN + 256];

    if (amp_path_expand(cfg->trace, (long)getpid(), path, sizeof path) !=
        AMP_OK) {
        amp_log(AMP_LOG_WARN, "AMPSHIM_TRACE is too long once expanded; no "
                "trace is written");
        return;
    }
    amp_report_file(path, "trace", amp_trace_writer, cfg);
}

/* The report's path: AMPSHIM_REPORT with its escapes expanded, else
 * ampshim-PROGRAM-PID.json in the user's state directory (made when
 * missing), never the working directory (a source tree, a read-only job
 * directory); "off" when none is written. 0, or -1 after a warning when
 * there is no path: the expansion is too long, there is no state
 * directory, or it cannot be made. */
static int
amp_report_path(const struct amp_config *cfg, char *path, size_t cap)
{
    struct amp_program prog;
    static atomic_int warned;

    if (cfg->report_off) {
        snprintf(path, cap, "off");
    } else if (cfg->report[0]) {
        if (amp_path_expand(cfg->report, (long)getpid(), path, cap) !=
            AMP_OK) {
            amp_log(AMP_LOG_WARN, "AMPSHIM_REPORT is too long once "
                    "expanded; no report is written");
            return -1;
        }
    } else if (!cfg->state_dir[0]) {
        if (!atomic_exchange(&warned, 1))
            amp_log(AMP_LOG_WARN, "no report is written: neither "
                    "XDG_STATE_HOME nor HOME names a directory; name a file "
                    "with AMPSHIM_REPORT");
        return -1;
    } else if (amp_make_dirs(cfg->state_dir, 0700) != 0) {
        if (!atomic_exchange(&warned, 1))
            amp_log(AMP_LOG_WARN, "no report is written: cannot make %s: "
                    "%s; name a file with AMPSHIM_REPORT", cfg->state_dir,
                    strerror(errno));
        return -1;
    } else {
        int n;

        amp_program_self(&prog);
        n = snprintf(path, cap, "%s/ampshim-%.200s-%d.json", cfg->state_dir,
                     prog.name[0] ? prog.name : "program", (int)getpid());
        if (n < 0 || (size_t)n >= cap) {
            amp_log(AMP_LOG_WARN, "no report is written: the path in %s is "
                    "too long", cfg->state_dir);
            return -1;
        }
    }
    return 0;
}

/* ---- Snapshots during the run ---------------------------------------------- */

/* 0: no snapshot written yet; 1: the report's path holds this process's
 * snapshot, which later ones and the final report replace; -1: no more
 * snapshots (the path was taken, or writing failed). Under the lock. */
static int amp_snapshot_state;
static pthread_mutex_t amp_snapshot_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_llong amp_snapshot_due_ns;

static long long
amp_now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Writes the report into a new file beside path and moves it there: the
 * first time only if path does not exist (link fails on an existing
 * name, even a dangling symbolic link), later over this process's own
 * snapshot. 0 on success. Lock held. */
static int
amp_report_replace(const char *path, const struct amp_config *cfg,
                   enum amp_status (*write)(FILE *, const struct amp_config *))
{
    char tmp[AMP_CONFIG_PATH_LEN + 96];
    FILE *f;
    int rc;

    snprintf(tmp, sizeof tmp, "%s.partial-%d", path, (int)getpid());
    f = amp_report_create(tmp);
    if (!f)
        return -1;
    rc = write(f, cfg) == AMP_OK ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
    if (rc == 0)
        rc = amp_snapshot_state == 1 ? rename(tmp, path) : link(tmp, path);
    unlink(tmp);
    return rc;
}

/* Writes a snapshot, unless the final report came first. Takes the lock:
 * the final report waits for a snapshot being written. */
static void
amp_report_snapshot_write(const struct amp_config *cfg)
{
    char path[AMP_CONFIG_PATH_LEN + 256];
    long long t0 = amp_now_ns();

    pthread_mutex_lock(&amp_snapshot_lock);
    if (amp_snapshot_state >= 0 &&
        amp_report_path(cfg, path, sizeof path) != 0) {
        amp_snapshot_state = -1;
    } else if (amp_snapshot_state >= 0) {
        if (amp_report_replace(path, cfg, amp_report_write_snapshot) == 0) {
            amp_snapshot_state = 1;
            amp_log(AMP_LOG_DEBUG, "report snapshot written to %s in %.3f ms",
                    path, (double)(amp_now_ns() - t0) / 1e6);
        } else {
            amp_log(AMP_LOG_WARN, "cannot write a snapshot of the report "
                    "to %s: %s; it is written at exit only", path,
                    errno == EEXIST ? "the path exists" : strerror(errno));
            amp_snapshot_state = -1;
        }
    }
    pthread_mutex_unlock(&amp_snapshot_lock);
}

/* Snapshots are written by a thread of the shim's, not in the hooked call
 * that finds one due: naming the sites reads their libraries' symbols,
 * which for a framework's (libtorch_cuda.so, a gigabyte) took 76 ms on
 * the calling thread and made a PyTorch ResNet-50's timed steps 10 to 34 %
 * longer on an H200 (docs/gpu-results.md). A hooked call only wakes the
 * writer. */
static pthread_mutex_t amp_writer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t amp_writer_wake = PTHREAD_COND_INITIALIZER;
static int amp_writer_wanted;       /* under amp_writer_lock */
static atomic_int amp_writer_state; /* 0 none, 2 starting, 1 runs, -1 not */

static void *
amp_report_writer(void *arg)
{
    const struct amp_config *cfg = arg;

    for (;;) {
        pthread_mutex_lock(&amp_writer_lock);
        while (!amp_writer_wanted)
            pthread_cond_wait(&amp_writer_wake, &amp_writer_lock);
        amp_writer_wanted = 0;
        pthread_mutex_unlock(&amp_writer_lock);
        amp_report_snapshot_write(cfg);
    }
    return NULL;
}

/* Starts the writer once, every signal blocked in it (the program's
 * threads take them, as without the shim): 1 when it runs (or is being
 * started by another call, which then wakes it), 0 when it cannot. */
static int
amp_report_writer_start(const struct amp_config *cfg)
{
    sigset_t all, old;
    pthread_attr_t attr;
    pthread_t t;
    int expected = 0, rc;

    if (!atomic_compare_exchange_strong(&amp_writer_state, &expected, 2))
        return expected != -1;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_attr_init(&attr);
    if (rc == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&t, &attr, amp_report_writer, (void *)cfg);
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    atomic_store(&amp_writer_state, rc == 0 ? 1 : -1);
    if (rc != 0)
        amp_log(AMP_LOG_INFO, "no thread for the report's snapshots (%s): "
                "the calls that find one due write it", strerror(rc));
    return rc == 0;
}

/* amp_report_snapshot past its check of the clock: the first call's due
 * time, or, once one is due, the next due time and the writer woken (by
 * one of the calls that find it due). */
static __attribute__((noinline)) void
amp_report_snapshot_due(const struct amp_config *cfg, long long now,
                        long long due)
{
    if (due == 0) {
        /* The first call starts the clock; the first snapshot comes
         * within seconds, the later ones at the interval. */
        atomic_compare_exchange_strong(
            &amp_snapshot_due_ns, &due,
            now + (long long)(cfg->snapshot_s < AMP_SNAPSHOT_FIRST_S
                                  ? cfg->snapshot_s
                                  : AMP_SNAPSHOT_FIRST_S) *
                      1000000000LL);
        return;
    }
    if (!atomic_compare_exchange_strong(
            &amp_snapshot_due_ns, &due,
            now + (long long)cfg->snapshot_s * 1000000000LL))
        return;
    if (!amp_report_writer_start(cfg)) {
        amp_report_snapshot_write(cfg);
        return;
    }
    pthread_mutex_lock(&amp_writer_lock);
    amp_writer_wanted = 1;
    pthread_cond_signal(&amp_writer_wake);
    pthread_mutex_unlock(&amp_writer_lock);
}

void
amp_report_snapshot(const struct amp_config *cfg)
{
    long long now, due;

    if (cfg->report_off || cfg->snapshot_s == 0)
        return;
    now = amp_now_ns();
    due = atomic_load_explicit(&amp_snapshot_due_ns, memory_order_relaxed);
    if (due == 0 || now >= due)
        amp_report_snapshot_due(cfg, now, due);
}

void
amp_report_forget(void)
{
    pthread_mutex_init(&amp_snapshot_lock, NULL);
    amp_snapshot_state = 0;
    atomic_store(&amp_snapshot_due_ns, 0);
    /* A forked child has no writer: it starts its own. */
    pthread_mutex_init(&amp_writer_lock, NULL);
    pthread_cond_init(&amp_writer_wake, NULL);
    amp_writer_wanted = 0;
    atomic_store(&amp_writer_state, 0);
}

/* The final report: over this process's snapshot if it wrote one, else
 * as a new file. 0 on success (else one warning). */
static int
amp_report_final(const char *path, const struct amp_config *cfg)
{
    int rc;

    pthread_mutex_lock(&amp_snapshot_lock);
    if (amp_snapshot_state == 1) {
        rc = amp_report_replace(path, cfg, amp_report_write);
        if (rc != 0)
            amp_log(AMP_LOG_WARN, "cannot write the report to %s: %s (the "
                    "last snapshot stays)", path, strerror(errno));
    } else {
        rc = amp_report_file(path, "report", amp_report_write, cfg);
    }
    amp_snapshot_state = -1; /* no snapshot after the final report */
    pthread_mutex_unlock(&amp_snapshot_lock);
    return rc;
}

/* The norm as the exit line names it. */
static const char *
amp_norm_words(enum amp_norm norm)
{
    return norm == AMP_NORM_FRO ? "Frobenius norm" : "max norm";
}

/* Calls whose converted result the program received (shadow calls
 * return FP32; delivering ones count as their candidate's), over every
 * (site, shape). */
static unsigned long long
amp_report_converted_results(void)
{
    unsigned long long n = 0;
    struct amp_prof_entry *e;
    size_t i, count = 0;

    e = amp_prof_snapshot(&count);
    for (i = 0; i < count; i++)
        n += e[i].outcomes[AMP_OUTCOME_CONVERTED] - e[i].modes[AMP_MODE_SHADOW];
    free(e);
    return n;
}

void
amp_report_tolerance_line(void)
{
    enum amp_norm norm = amp_policy_tolerance_norm();
    double tol = amp_policy_tolerance();
    struct amp_site_worst w, fro;
    char source[AMP_CONFIG_PATH_LEN + 32], bound[AMP_CONFIG_PATH_LEN + 256];
    char also[64] = "";
    static const char how[] = "AMPSHIM_TOLERANCE=X[:fro] or ampshim run "
                              "--tolerance X[:fro] (1e-6:fro is FP32 "
                              "accuracy)";

    if (amp_report_converted_results() == 0)
        return;
    amp_site_worst(norm, &w);
    amp_policy_tolerance_source(source, sizeof source);
    if (tol == HUGE_VAL)
        snprintf(bound, sizeof bound, "no tolerance bounds them (%s); "
                 "bound them with %s", source, how);
    else
        snprintf(bound, sizeof bound, "the tolerance %g (%s, %s)%s; "
                 "tighten it with %s", tol, amp_norm_words(norm), source,
                 w.demoted == 0 ? ""
                 : w.demoted == 1 ? " demoted calls at 1 site to FP32"
                                  : " demoted calls at sites to FP32", how);
    if (w.shadow_calls == 0) {
        amp_log_line("converted results were not compared with FP32 (no "
                     "shadow call at a site still converting); %s%s",
                     tol == HUGE_VAL ? "" : "held to ", bound);
        return;
    }
    if (w.compared == 0) {
        amp_log_line("converted results differ from FP32 by an amount not "
                     "measurable: FP32's result had no finite element in "
                     "%s %llu shadow call%s; %s%s",
                     w.shadow_calls == 1 ? "its" : "any of the",
                     w.shadow_calls, w.shadow_calls == 1 ? "" : "s",
                     tol == HUGE_VAL ? "" : "held to ", bound);
        return;
    }
    /* A program that checks its result in the L2 norm wants that one too. */
    if (norm == AMP_NORM_MAX) {
        amp_site_worst(AMP_NORM_FRO, &fro);
        snprintf(also, sizeof also, "; %.2e in the Frobenius norm",
                 fro.error);
    }
    amp_log_line("converted results differ from FP32 by up to %.2e "
                 "(relative, %s%s; %s %llu shadow call%s), %s%s",
                 w.error, amp_norm_words(norm), also,
                 w.shadow_calls == 1 ? "measured in" : "the largest of",
                 w.shadow_calls, w.shadow_calls == 1 ? "" : "s",
                 tol == HUGE_VAL ? "" : "within ", bound);
}

void
amp_report_exit(const struct amp_config *cfg)
{
    char path[AMP_CONFIG_PATH_LEN + 256], device[128] = "-";
    struct amp_report r;

    if (amp_report_path(cfg, path, sizeof path) != 0 ||
        (!cfg->report_off && amp_report_final(path, cfg) != 0))
        snprintf(path, sizeof path, "not written");
    if (cfg->trace[0])
        amp_report_trace_file(cfg);
    if (!cfg->summary)
        return;
    amp_report_device(device, sizeof device);
    if (amp_report_gather(&r, cfg) == AMP_OK && r.ngroups > 0)
        amp_report_table(&r, device, path);
    amp_report_free(&r);
    amp_report_tolerance_line();
}
