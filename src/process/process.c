/* Start-up, exit and fork for every stage of the shim. */
#include "process/process.h"

#include "base/log.h"
#include "base/once.h"
#include "base/shim.h"
#include "decide/auto.h"
#include "decide/policy.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/coverage.h"
#include "measure/harvest.h"
#include "measure/prof.h"
#include "measure/replay.h"
#include "measure/report.h"
#include "measure/stats.h"

#include <pthread.h>
#include <stdlib.h>

static struct amp_once amp_process_once = AMP_ONCE_INIT;
static struct amp_once amp_process_exit_once = AMP_ONCE_INIT;

/* How much of the GEMM and convolution work the shim reached, in one
 * line; none when the process ran none. */
static void
amp_process_coverage_line(void)
{
    struct amp_cover_totals t;
    char line[256];

    amp_cover_totals(&t);
    if (t.calls_total == 0)
        return;
    amp_cover_line(&t, line, sizeof line);
    amp_log_line("%s", line);
}

static void
amp_process_at_exit(void)
{
    const struct amp_config *cfg = amp_shim_config();

    /* Other threads' calls from now on are theirs alone: the figures
     * below are taken once and agree. */
    amp_shim_close();
    /* Calls still in flight: their errors and times belong in the
     * summary and the report. */
    amp_harvest(1);
    if (cfg->summary) {
        amp_stats_summary();
        amp_site_summary();
        amp_process_coverage_line();
    }
    amp_report_exit(cfg);
}

static void
amp_process_register_exit(void)
{
    if (atexit(amp_process_at_exit) != 0)
        amp_log(AMP_LOG_WARN, "cannot register the exit summary");
}

static void
amp_process_fork_child(void)
{
    amp_stats_reset();
    amp_cover_reset();
    amp_harvest_forget();
    amp_prof_forget();
    amp_site_forget();
    amp_auto_forget();
    amp_replay_forget();
    amp_dev_forget();
    amp_report_forget();
    amp_shim_new_generation();
}

static void
amp_process_begin(void)
{
    const struct amp_config *cfg = amp_shim_config();

    if (cfg->disabled)
        return;
    pthread_atfork(NULL, NULL, amp_process_fork_child);
    amp_policy_start(cfg);
    amp_log(AMP_LOG_DEBUG, "started: mode %s, scratch cap %llu bytes",
            cfg->mode_set ? amp_mode_name(cfg->mode) : "(the policy's)",
            (unsigned long long)cfg->scratch_max);
}

const struct amp_config *
amp_process_start(void)
{
    amp_once(&amp_process_once, amp_process_begin);
    return amp_shim_config();
}

int
amp_process_enter(void)
{
    const struct amp_config *cfg = amp_process_start();

    if (!amp_shim_enter())
        return 0;
    amp_once(&amp_process_exit_once, amp_process_register_exit);
    /* A run stopped by a signal keeps the last snapshot of its report. */
    amp_report_snapshot(cfg);
    return 1;
}
