/* The coverage meter's counters: a call count and a FLOP sum per kind. */
#include "measure/coverage.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const char *const amp_cover_names[AMP_COVER_COUNT] = {
    [AMP_COVER_CONVERTED] = "converted",
    [AMP_COVER_SHADOW] = "shadow",
    [AMP_COVER_POLICY] = "policy",
    [AMP_COVER_INVALID] = "invalid",
    [AMP_COVER_EMPTY] = "empty",
    [AMP_COVER_PEDANTIC] = "pedantic",
    [AMP_COVER_FALLBACK] = "fallback",
    [AMP_COVER_UNCONVERTED] = "unconverted",
    [AMP_COVER_LIBRARY] = "library",
    [AMP_COVER_FP64] = "fp64",
    [AMP_COVER_COMPLEX] = "complex",
    [AMP_COVER_HALF] = "fp16_bf16",
    [AMP_COVER_INT8] = "int8",
    [AMP_COVER_OTHER] = "other",
};

static atomic_ullong amp_cover_calls[AMP_COVER_COUNT];
/* FLOP sums as the bits of a double (C11 has no atomic double add): a
 * compare-and-swap loop, uncontended in practice. Integer FLOP counts
 * stay exact up to 2^53. */
static atomic_ullong amp_cover_flops[AMP_COVER_COUNT];

const char *
amp_cover_name(enum amp_cover c)
{
    if ((unsigned)c >= AMP_COVER_COUNT)
        return "?";
    return amp_cover_names[c];
}

static double
amp_bits_double(unsigned long long bits)
{
    double v;

    memcpy(&v, &bits, sizeof v);
    return v;
}

static unsigned long long
amp_double_bits(double v)
{
    unsigned long long bits;

    memcpy(&bits, &v, sizeof bits);
    return bits;
}

void
amp_cover_add(enum amp_cover c, double flops)
{
    unsigned long long old, sum;

    if ((unsigned)c >= AMP_COVER_COUNT)
        return;
    atomic_fetch_add_explicit(&amp_cover_calls[c], 1, memory_order_relaxed);
    if (!(flops > 0.0))
        return;
    old = atomic_load_explicit(&amp_cover_flops[c], memory_order_relaxed);
    do
        sum = amp_double_bits(amp_bits_double(old) + flops);
    while (!atomic_compare_exchange_weak_explicit(
        &amp_cover_flops[c], &old, sum, memory_order_relaxed,
        memory_order_relaxed));
}

double
amp_cover_gemm_flops(int64_t m, int64_t n, int64_t k, int64_t batch,
                     int complex_data)
{
    if (m < 0 || n < 0 || k < 0 || batch < 0)
        return 0.0;
    return (complex_data ? 8.0 : 2.0) * (double)m * (double)n * (double)k *
           (double)batch;
}

void
amp_cover_totals(struct amp_cover_totals *t)
{
    int c;

    memset(t, 0, sizeof *t);
    for (c = 0; c < AMP_COVER_COUNT; c++) {
        t->calls[c] = atomic_load(&amp_cover_calls[c]);
        t->flops[c] = amp_bits_double(atomic_load(&amp_cover_flops[c]));
        t->calls_total += t->calls[c];
        t->total += t->flops[c];
        if (c < AMP_COVER_FIRST_OTHER)
            t->fp32 += t->flops[c];
        else
            t->other += t->flops[c];
    }
    t->fp32_kept = t->fp32 - t->flops[AMP_COVER_CONVERTED];
}

static double
amp_percent(double part, double whole)
{
    return whole > 0.0 ? 100.0 * part / whole : 0.0;
}

void
amp_cover_line(const struct amp_cover_totals *t, char *buf, size_t cap)
{
    snprintf(buf, cap, "coverage: %.3g GFLOP of GEMM and convolution work "
             "in %llu calls, %.1f %% FP32 within the shim's reach "
             "(converted %.1f %%, kept FP32 %.1f %%), %.1f %% in other "
             "precisions", t->total / 1e9, t->calls_total,
             amp_percent(t->fp32, t->total),
             amp_percent(t->flops[AMP_COVER_CONVERTED], t->total),
             amp_percent(t->fp32_kept, t->total),
             amp_percent(t->other, t->total));
}

void
amp_cover_reset(void)
{
    int c;

    for (c = 0; c < AMP_COVER_COUNT; c++) {
        atomic_store(&amp_cover_calls[c], 0);
        atomic_store(&amp_cover_flops[c], 0);
    }
}
