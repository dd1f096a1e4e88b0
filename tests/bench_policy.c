/* bench_policy: the policy's cost per call, in nanoseconds of host time:
 * a call matched against the rules (what a first decision for a site and
 * shape costs), a first decision through the decision cache (the match and
 * the insert), and a repeated site and shape (a cache hit). Prints numbers,
 * asserts nothing about speed; scripts/bench_gemm.sh runs it.
 *
 * usage: bench_policy POLICY... */
#include "decide/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define FIRST_KEYS 4000          /* distinct sites: below the cache's size */
#define REPEATS 2000000

static double
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A GEMM that the example policies' rules look at closely: a caller and
 * module, a shape that passes the size and divisibility tests. */
static void
gemm_call(struct amp_policy_call *c, const void *site)
{
    *c = (struct amp_policy_call){
        .family = AMP_FAMILY_GEMM,
        .symbol = "cublasSgemm_v2",
        .caller = "train_step",
        .module = "/opt/app/legacy_trainer",
        .site = site,
    };
    amp_policy_call_set(c, AMP_FIELD_M, 1024);
    amp_policy_call_set(c, AMP_FIELD_N, 1024);
    amp_policy_call_set(c, AMP_FIELD_K, 4096);
    amp_policy_call_set(c, AMP_FIELD_BATCH, 1);
    amp_policy_call_set(c, AMP_FIELD_TRANSA, 0);
    amp_policy_call_set(c, AMP_FIELD_TRANSB, 1);
    amp_policy_call_set(c, AMP_FIELD_CALL, 1);
}

static int
bench(const char *path)
{
    static struct amp_policy p;
    static char sites[FIRST_KEYS];
    struct amp_policy_error err;
    struct amp_policy_cache cache;
    struct amp_policy_call call;
    void *storage;
    double t0, uncached, first, hit;
    long i;
    volatile int sink = 0;
    int rule;

    if (amp_policy_load(path, &p, &err) != AMP_OK) {
        fprintf(stderr, "bench_policy: %s\n", err.text);
        return 1;
    }
    storage = calloc(1, amp_policy_cache_bytes());
    if (!storage)
        return 1;
    amp_policy_cache_init(&cache, &p, storage);
    gemm_call(&call, &sites[0]);
    t0 = now_ns();
    for (i = 0; i < REPEATS; i++)
        sink += amp_policy_match(&p, &call);
    uncached = (now_ns() - t0) / REPEATS;
    /* First decisions: a new site each time, matched and inserted. */
    t0 = now_ns();
    for (i = 0; i < FIRST_KEYS; i++) {
        call.site = &sites[i];
        sink += amp_policy_cached_match(&cache, &call);
    }
    first = (now_ns() - t0) / FIRST_KEYS;
    call.site = &sites[0];
    t0 = now_ns();
    for (i = 0; i < REPEATS; i++)
        sink += amp_policy_cached_match(&cache, &call);
    hit = (now_ns() - t0) / REPEATS;
    (void)sink;
    rule = amp_policy_match(&p, &call);
    printf("%-40s %5d %12.1f %12.1f %12.1f   %s %d\n", path, p.nrules,
           uncached, first, hit, rule < p.nrules ? "rule" : "default",
           rule < p.nrules ? rule + 1 : p.default_line);
    free(storage);
    return 0;
}

int
main(int argc, char **argv)
{
    int i, failed = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: bench_policy POLICY...\n");
        return 2;
    }
    printf("Policy cost per call (ns, host): a 1024x1024x4096 NT "
           "cublasSgemm_v2 from\ntrain_step; 'first' is a new site through "
           "the decision cache (match and\ninsert), 'cached' the same site "
           "and shape again.\n");
    printf("%-40s %5s %12s %12s %12s\n", "policy", "rules", "match ns",
           "first ns", "cached ns");
    for (i = 1; i < argc; i++)
        failed |= bench(argv[i]);
    return failed;
}
