/* Element-wise math of the shim's kernels: compiled by nvcc for the device
 * and as plain C for the emulator's host kernels and the unit tests. */
#ifndef AMP_MATH_H
#define AMP_MATH_H

#ifdef __CUDACC__
#define AMP_HD static __host__ __device__ __forceinline__
#else
#include <string.h>
#define AMP_HD static inline
#endif

#include <stdint.h>

/* FP16 holds finite magnitudes up to 65504; a tensor is scaled so that its
 * largest finite magnitude lands in [2^AMP_F16_TARGET_EXP, 2^(+1)): high
 * enough that small values keep their bits, low enough that rounding can
 * never carry it to infinity. */
#define AMP_F16_TARGET_EXP 14

AMP_HD uint32_t
amp_f32_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

AMP_HD float
amp_bits_f32(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/* Shifts m right by `shift` bits (1..31), rounding to nearest even. */
AMP_HD uint32_t
amp_shift_round_even(uint32_t m, uint32_t shift)
{
    uint32_t kept = m >> shift;
    uint32_t rest = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);

    if (rest > half || (rest == half && (kept & 1u)))
        kept++;
    return kept;
}

/* FP32 to IEEE binary16 bits: round to nearest even, subnormals, overflow
 * to infinity, NaN stays a quiet NaN of the same sign. */
AMP_HD uint16_t
amp_f32_to_f16(float f)
{
    uint32_t x = amp_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mag = x & 0x7fffffffu;

    if (mag >= 0x7f800000u) /* Inf or NaN */
        return (uint16_t)(sign | 0x7c00u |
                          (mag > 0x7f800000u ? 0x200u | (mag >> 13) : 0u));
    if (mag >= 0x477ff000u) /* >= 65520 rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (mag >= 0x38800000u) /* normal half: rebias 127 -> 15 */
        return (uint16_t)(sign | amp_shift_round_even(mag - 0x38000000u, 13));
    if (mag < 0x33000000u) /* at most 2^-25: rounds to zero */
        return (uint16_t)sign;
    /* Subnormal half: count units of 2^-24. */
    return (uint16_t)(sign |
                      amp_shift_round_even((mag & 0x7fffffu) | 0x800000u,
                                           126u - (mag >> 23)));
}

/* IEEE binary16 bits to FP32 (exact). */
AMP_HD float
amp_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;

    if (exp == 0x1fu)
        return amp_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp != 0)
        return amp_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
    if (man == 0)
        return amp_bits_f32(sign);
    exp = 113u; /* normalise the subnormal */
    while (!(man & 0x400u)) {
        man <<= 1;
        exp--;
    }
    return amp_bits_f32(sign | (exp << 23) | ((man & 0x3ffu) << 13));
}

/* FP32 to bfloat16 bits: round to nearest even, NaN stays NaN. */
AMP_HD uint16_t
amp_f32_to_bf16(float f)
{
    uint32_t x = amp_f32_bits(f);

    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* 2^e as a float, for e in [-126, 127]. */
AMP_HD float
amp_pow2f(int e)
{
    return amp_bits_f32((uint32_t)(e + 127) << 23);
}

AMP_HD int
amp_is_finite(float f)
{
    return (amp_f32_bits(f) & 0x7f800000u) != 0x7f800000u;
}

/* The power-of-two exponent e that brings a tensor whose largest finite
 * magnitude is `absmax` into FP16's window: absmax * 2^e lies in
 * [2^14, 2^15). 0 when absmax is 0 or not finite; clamped so that 2^e is a
 * normal float. */
AMP_HD int
amp_f16_scale_exp(float absmax)
{
    uint32_t bits = amp_f32_bits(absmax) & 0x7fffffffu;
    int log2_floor;
    int e;

    if (bits == 0 || bits >= 0x7f800000u)
        return 0;
    if (bits >= 0x800000u) {
        log2_floor = (int)(bits >> 23) - 127;
    } else { /* subnormal: bits * 2^-149 */
        log2_floor = -126;
        while (!(bits & 0x800000u)) {
            bits <<= 1;
            log2_floor--;
        }
    }
    e = AMP_F16_TARGET_EXP - log2_floor;
    if (e > 127)
        e = 127;
    if (e < -126)
        e = -126;
    return e;
}

/* Scalars of one converted GEMM, in the scratch buffer on the device. The
 * absolute maxima are FP32 bit patterns of non-negative numbers, so their
 * unsigned order is their numeric order and atomicMax can reduce them. */
struct amp_gemm_scalars {
    uint32_t absmax_a;
    uint32_t absmax_b;
    float scale_a;   /* 2^e_A */
    float scale_b;   /* 2^e_B */
    float alpha;     /* alpha * 2^-(e_A + e_B): what the FP16 GEMM gets */
    float beta;
    int32_t exp_a;
    int32_t exp_b;
};

AMP_HD int
amp_is_normal(float f)
{
    uint32_t exp = amp_f32_bits(f) & 0x7f800000u;

    return exp != 0 && exp != 0x7f800000u;
}

/* Picks the scales from the reduced maxima and compensates alpha exactly.
 * Multiplying by a power of two is exact while every intermediate stays a
 * normal float; where it would not, scaling is dropped (both exponents 0),
 * so the compensation is always exact. Zero, Inf and NaN alphas pass. */
AMP_HD void
amp_gemm_scalars_finish(struct amp_gemm_scalars *s, float alpha, float beta)
{
    int ea = amp_f16_scale_exp(amp_bits_f32(s->absmax_a));
    int eb = amp_f16_scale_exp(amp_bits_f32(s->absmax_b));
    float half_way = alpha * amp_pow2f(-ea);
    float compensated = half_way * amp_pow2f(-eb);

    if (alpha != 0.0f && amp_is_finite(alpha) &&
        !(amp_is_normal(alpha) && amp_is_normal(half_way) &&
          amp_is_normal(compensated))) {
        ea = 0;
        eb = 0;
        compensated = alpha;
    }
    s->exp_a = ea;
    s->exp_b = eb;
    s->scale_a = amp_pow2f(ea);
    s->scale_b = amp_pow2f(eb);
    s->alpha = compensated;
    s->beta = beta;
}

/* Element i of a rows x cols column-major matrix with leading dimension ld. */
AMP_HD int64_t
amp_cm_offset(int64_t i, int64_t rows, int64_t ld)
{
    return (i / rows) * ld + i % rows;
}

/* One thread's share of the absolute maximum of the finite elements of a
 * rows x cols column-major matrix: elements tid, tid + nthreads, ...
 * Returned as FP32 bits (see struct amp_gemm_scalars). */
AMP_HD uint32_t
amp_absmax_thread(const float *src, int64_t ld, int64_t rows, int64_t cols,
                  int64_t tid, int64_t nthreads)
{
    uint32_t best = 0;
    int64_t n = rows * cols;
    int64_t i;

    for (i = tid; i < n; i += nthreads) {
        uint32_t mag = amp_f32_bits(src[amp_cm_offset(i, rows, ld)]) &
                       0x7fffffffu;
        if (mag < 0x7f800000u && mag > best)
            best = mag;
    }
    return best;
}

/* One thread's share of casting a rows x cols column-major FP32 matrix
 * (leading dimension ld_src) times `scale` into FP16 (leading dimension
 * ld_dst). scale is a power of two, so the product is exact unless it
 * leaves FP32's normal range; NaN and Inf keep their class. */
AMP_HD void
amp_cast_f16_thread(const float *src, int64_t ld_src, uint16_t *dst,
                    int64_t ld_dst, int64_t rows, int64_t cols, float scale,
                    int64_t tid, int64_t nthreads)
{
    int64_t n = rows * cols;
    int64_t i;

    for (i = tid; i < n; i += nthreads)
        dst[amp_cm_offset(i, rows, ld_dst)] =
            amp_f32_to_f16(src[amp_cm_offset(i, rows, ld_src)] * scale);
}

#endif
