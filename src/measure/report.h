/* What the shim writes at exit: the JSON report (docs/report-schema.md),
 * the summary table on stderr, and the Chrome/Perfetto trace. */
#ifndef AMP_REPORT_H
#define AMP_REPORT_H

#include "base/config.h"
#include "base/status.h"

#include <stdio.h>

/* The report's schema version (docs/report-schema.md). */
#define AMP_REPORT_VERSION 2

/* Opens path for a file the shim writes: created, never an existing file
 * and never through a symbolic link (O_CREAT | O_EXCL | O_NOFOLLOW).
 * NULL with errno set on failure. */
FILE *amp_report_create(const char *path);

/* At exit, after the final harvest: writes the report (unless
 * AMPSHIM_REPORT=off), the trace (AMPSHIM_TRACE) and, with the summary on,
 * the table. The paths' escapes (%p, %i, %h, %%: base/path.h) are
 * expanded. A file that cannot be written gets one warning. */
void amp_report_exit(const struct amp_config *cfg);

/* At exit, with the summary on and when some call's converted result
 * reached the program: one line saying how far the converted results may
 * differ from FP32 (the largest shadow error, in the tolerance's norm,
 * over the sites not demoted), the tolerance and where it came from
 * (amp_policy_tolerance_source), and how to tighten it; or that no shadow
 * call measured them. */
void amp_report_tolerance_line(void);

/* During the run, at most every cfg->snapshot_s seconds (AMPSHIM_SNAPSHOT;
 * the first call starts the clock): the report as it stands, marked
 * incomplete, moved atomically over the previous snapshot, so that a run
 * stopped by a signal leaves one. Never replaces a file it did not write;
 * the exit's report replaces the last snapshot. Cheap when not due. */
void amp_report_snapshot(const struct amp_config *cfg);

/* A forked child's start: no snapshot of its own yet (the parent's file
 * is the parent's). */
void amp_report_forget(void);

/* The report as JSON into f; AMP_ERR_IO when writing fails. */
enum amp_status amp_report_write(FILE *f, const struct amp_config *cfg);

/* What the verdict line is made of: the report's totals (counts as
 * doubles, so that a reader of a report file fills it the same way; NaN
 * for a figure not known). */
struct amp_verdict {
    double calls;              /* FP32 calls decided at the sites */
    double delivered;          /* of those, whose result the program got
                                  from a converted path */
    double shadow;             /* measured in shadow: FP32's result */
    double speedup;            /* this run, fp32_ms / actual_ms */
    double steady;             /* steady state: each timed shape's FP32
                                  time over its time under the choice
                                  made, weighted by its calls */
    double saved_ms;           /* this run */
    double measuring;          /* auto shapes still measuring */
    double shapes;             /* shapes seen */
    const char *why_fp32;      /* the commonest reason calls ran FP32
                                  (an fp32_reasons key), or NULL */
    int broken;                /* the policy file has an error */
};

/* "faster: ...", "slower: ...", "still measuring: ..." or "nothing to
 * gain here: ..." (and why, in words), into buf; returns buf. */
const char *amp_verdict_line(const struct amp_verdict *v, char *buf,
                             size_t cap);

/* "the intercepted GEMMs and convolutions took X ms of device time of the
 * run's Y ms (wall clock); the shim saved Z ms of it", and the calls left
 * out untimed, into buf; returns buf. wall_ms or saved_ms NAN: unknown,
 * left out. */
const char *amp_time_line(double device_ms, double untimed, double wall_ms,
                          double saved_ms, char *buf, size_t cap);

/* The trace as JSON into f. */
enum amp_status amp_report_trace(FILE *f);

#endif
