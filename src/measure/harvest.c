/* The pending slots and their harvest. */
#include "measure/harvest.h"

#include "amp_math.h"
#include "base/shim.h"
#include "decide/auto.h"
#include "decide/policy.h"
#include "measure/prof.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

struct amp_pending {
    struct amp_dev *dev;
    int slot;
    amp_devptr slot_at;
    int shadow;
    struct amp_api_stats *stats;
    struct amp_site *site;
    int shape;                  /* 1 + the (site, shape) slot; 0: none */
    int auto_shape;             /* auto: 1 + the (site, shape) slot */
    enum amp_mode candidate;
    struct amp_prof_call *call; /* the profiler's record, or NULL */
};

static pthread_mutex_t amp_pending_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_pending amp_pending[AMP_HARVEST_MAX_PENDING];
static int amp_npending;

enum amp_status
amp_harvest_pend(struct amp_dev *dev, int slot, amp_devptr slot_at,
                 int shadow, struct amp_api_stats *stats,
                 struct amp_site *site, int shape, int auto_shape,
                 enum amp_mode candidate)
{
    enum amp_status st = AMP_ERR_UNAVAILABLE;

    pthread_mutex_lock(&amp_pending_lock);
    if (amp_npending < AMP_HARVEST_MAX_PENDING) {
        amp_pending[amp_npending] = (struct amp_pending){
            .dev = dev, .slot = slot, .slot_at = slot_at, .shadow = shadow,
            .stats = stats, .site = site, .shape = shape,
            .auto_shape = auto_shape,
            .candidate = candidate, .call = amp_prof_current(),
        };
        amp_prof_expect_error(amp_pending[amp_npending].call);
        amp_npending++;
        st = AMP_OK;
    }
    pthread_mutex_unlock(&amp_pending_lock);
    return st;
}

/* Hands one finished slot's content to its consumers. */
static void
amp_harvest_one(const struct amp_pending *p)
{
    struct amp_shadow_error bits;
    struct amp_gemm_error e;

    memcpy(&bits, (const void *)(uintptr_t)p->slot_at, sizeof bits);
    e.max_abs = amp_bits_f32(bits.max_abs);
    e.max_rel = amp_shadow_relative(amp_bits_f32(bits.max_abs),
                                    amp_bits_f32(bits.max_ref));
    e.fro_rel = sqrt(amp_shadow_relative_sq(bits.sq_diff, bits.sq_ref));
    e.nonfinite = bits.nonfinite;
    e.compared = bits.compared;
    amp_prof_error(p->call, &e);
    if (p->shadow && p->stats)
        amp_stats_shadow(p->stats, &e);
    /* An auto candidate's errors are its own: over the tolerance, it is
     * ruled out at its (site, shape), and the site is not demoted. */
    if (p->shadow && p->auto_shape) {
        amp_site_shadow_auto(p->site);
        amp_auto_error(p->site, p->auto_shape - 1, p->candidate, &e, NULL);
    } else if (p->shadow && p->site) {
        amp_site_shadow(p->site, p->shape - 1, &e,
                        amp_policy_tolerance_demotes(),
                        amp_policy_tolerance_norm(),
                        amp_shim_config()->tolerance >= 0
                            ? "AMPSHIM_TOLERANCE's"
                            : "the policy's");
    }
    if (e.nonfinite && p->site && !p->shadow)
        amp_site_demote(p->site, p->shape - 1,
                        "a converted call made a non-finite "
                        "result from finite inputs");
}

uint64_t
amp_harvest(int wait)
{
    uint64_t harvested = 0;
    int i = 0;

    pthread_mutex_lock(&amp_pending_lock);
    while (i < amp_npending) {
        struct amp_pending *p = &amp_pending[i];
        int done = amp_dev_slot_done(p->dev, p->slot, wait);

        if (done == 0) {
            i++;
            continue;
        }
        if (done > 0) {
            amp_harvest_one(p);
            harvested++;
        } else {
            amp_prof_error(p->call, NULL);
            if (p->shadow && p->auto_shape)
                amp_auto_error(p->site, p->auto_shape - 1, p->candidate,
                               NULL, NULL);
        }
        amp_dev_slot_release(p->dev, p->slot);
        *p = amp_pending[--amp_npending];
    }
    pthread_mutex_unlock(&amp_pending_lock);
    /* The profiler's records after the slots: their errors are in. */
    return harvested + amp_prof_harvest(wait);
}

void
amp_harvest_forget(void)
{
    pthread_mutex_init(&amp_pending_lock, NULL);
    amp_npending = 0;
}
