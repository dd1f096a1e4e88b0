/* Bit-exact FP16, BF16 and TF32 conversions for the emulator: FP16 and
 * TF32 on the bits (emu.h, inline for the products' inner loops), BF16 by
 * rounding the scaled significand in double precision. */
#include "emu.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static uint32_t
num_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static float
num_float(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

/*
 * Rounds |x| (finite, as a double) to a format with `digits` significant
 * bits and smallest normal exponent `emin` (value 2^emin), nearest even.
 * Below 2^emin the spacing is fixed at 2^(emin - digits + 1), which gives
 * gradual underflow. The quotient |x| / ulp is below 2^(digits + 1), so
 * it and the product back are exact in double; rint rounds to even in the
 * default rounding mode.
 */
static double
num_round(double ax, int digits, int emin)
{
    int e;
    double ulp;

    if (ax == 0.0)
        return 0.0;
    (void)frexp(ax, &e);            /* ax = m * 2^e, m in [0.5, 1) */
    e -= 1;                         /* ax = m' * 2^e, m' in [1, 2) */
    if (e < emin)
        e = emin;
    ulp = ldexp(1.0, e - digits + 1);
    return rint(ax / ulp) * ulp;
}

uint16_t
emu_f32_to_f16(float f)
{
    return emu_f32_to_f16_inline(f);
}

float
emu_f16_to_f32(uint16_t h)
{
    return emu_f16_to_f32_inline(h);
}

uint16_t
emu_f32_to_bf16(float f)
{
    uint32_t u = num_bits(f);
    double r;

    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x0040u);
    if (isinf(f))
        return (uint16_t)(u >> 16);
    r = num_round(fabs((double)f), 8, -126);
    if (r >= ldexp(1.0, 128))
        return (uint16_t)(((u >> 16) & 0x8000u) | 0x7f80u);
    /* r has at most 8 significant bits inside float's range: exact. */
    return (uint16_t)(((u >> 16) & 0x8000u) | (num_bits((float)r) >> 16));
}

float
emu_bf16_to_f32(uint16_t h)
{
    return num_float((uint32_t)h << 16);
}

float
emu_round_tf32(float f)
{
    return emu_round_tf32_inline(f);
}

static pthread_once_t tf32_once = PTHREAD_ONCE_INIT;
static int tf32_override_off;

static void
read_tf32_override(void)
{
    const char *v = getenv("NVIDIA_TF32_OVERRIDE");

    tf32_override_off = v != NULL && strcmp(v, "0") == 0;
}

int
emu_tf32_available(void)
{
    pthread_once(&tf32_once, read_tf32_override);
    return !tf32_override_off && emu_gpu()->cc_major >= 8;
}

int
emu_bf16x9_available(void)
{
    const struct emu_gpu *gpu = emu_gpu();

    return gpu->cc_major == 10 && (gpu->cc_minor == 0 || gpu->cc_minor == 3);
}

static pthread_once_t strategy_once = PTHREAD_ONCE_INIT;
static int strategy_eager;

/* CUBLAS_EMULATION_STRATEGY: `eager` makes the default strategy EAGER;
 * anything else (`performant`, unset) leaves it PERFORMANT. */
static void
read_emulation_strategy(void)
{
    const char *v = getenv("CUBLAS_EMULATION_STRATEGY");

    strategy_eager = v != NULL && strcasecmp(v, "eager") == 0;
}

int
emu_bf16x9_runs(int strategy, double fp32_ns, double bf16x9_ns)
{
    /* cublasEmulationStrategy_t: DEFAULT 0, PERFORMANT 1, EAGER 2. */
    if (!emu_bf16x9_available())
        return 0;
    if (strategy == 0) {
        pthread_once(&strategy_once, read_emulation_strategy);
        strategy = strategy_eager ? 2 : 1;
    }
    return strategy == 2 || bf16x9_ns < fp32_ns;
}

enum emu_prec
emu_half_prec(int bf16)
{
    return bf16 && emu_gpu()->cc_major < 8 ? EMU_PREC_FP32 : EMU_PREC_FP16;
}

float
emu_elem_load(const void *base, size_t idx, enum emu_elem elem)
{
    uint16_t h;
    float f;

    switch (elem) {
    case EMU_ELEM_F16:
        memcpy(&h, (const char *)base + idx * 2, 2);
        return emu_f16_to_f32(h);
    case EMU_ELEM_BF16:
        memcpy(&h, (const char *)base + idx * 2, 2);
        return emu_bf16_to_f32(h);
    default:
        memcpy(&f, (const char *)base + idx * 4, 4);
        return f;
    }
}

void
emu_elem_store(void *base, size_t idx, enum emu_elem elem, float v)
{
    uint16_t h;

    switch (elem) {
    case EMU_ELEM_F16:
        h = emu_f32_to_f16(v);
        memcpy((char *)base + idx * 2, &h, 2);
        break;
    case EMU_ELEM_BF16:
        h = emu_f32_to_bf16(v);
        memcpy((char *)base + idx * 2, &h, 2);
        break;
    default:
        memcpy((char *)base + idx * 4, &v, 4);
        break;
    }
}
