/* What the report's writers share (report_sites.c, report_json.c,
 * report.c): the profiler's entries grouped per (site, API), what the
 * program got from them, and the JSON writer's parts the snapshots use.
 * Private to measure/. */
#ifndef AMP_REPORT_IMPL_H
#define AMP_REPORT_IMPL_H

#include "measure/report.h"

#include "base/config.h"
#include "measure/prof.h"

#include <stddef.h>
#include <stdio.h>

#define AMP_EMULATED_SUFFIX " (emulated)"

struct amp_group {
    const char *api;
    struct amp_site *site;
    enum amp_family family;
    struct amp_prof_entry sum;   /* counters summed over the shapes */
    struct amp_prof_totals t;    /* totals summed over the shapes */
    double conv_known_ms;        /* converted time of the calls with an
                                    estimated FP32 time */
};

/* Everything the writers use, gathered once. */
struct amp_report {
    struct amp_prof_entry *entries;
    size_t nentries;
    int *group_of;               /* entry -> group */
    struct amp_group *groups;
    size_t ngroups;
    struct amp_group all;        /* every group summed */
    const struct amp_config *cfg;
};

/* The steady state of (site, shape)s: what their calls cost in FP32 and
 * under the choice made, each shape's mean times weighted by its calls. */
struct amp_steady {
    double fp32_ms, chosen_ms;
    unsigned long long timed;      /* shapes with both times */
    unsigned long long measuring;  /* auto shapes still measuring */
};

enum amp_status amp_report_gather(struct amp_report *r,
                                  const struct amp_config *cfg);
void amp_report_free(struct amp_report *r);
double amp_ratio(double a, double b);
void amp_sum_entry(struct amp_prof_entry *s, const struct amp_prof_entry *e);
unsigned long long amp_entry_shadow(const struct amp_prof_entry *e);
unsigned long long amp_entry_delivered(const struct amp_prof_entry *e);
void amp_steady_add(struct amp_steady *s, const struct amp_prof_entry *e);
void amp_delivered_error(const struct amp_prof_entry *e, double *rel,
                         double *fro);
void amp_group_delivered_error(const struct amp_report *r,
                               const struct amp_group *g, double *rel,
                               double *fro);
void amp_group_steady(const struct amp_report *r, const struct amp_group *g,
                      struct amp_steady *s);
double amp_process_wall_ms(void);
const char *amp_report_verdict(const struct amp_report *r, char *buf,
                               size_t cap);

/* report_json.c */
int amp_report_device(char *name, size_t cap);
enum amp_status amp_report_write_snapshot(FILE *f,
                                          const struct amp_config *cfg);

#endif
