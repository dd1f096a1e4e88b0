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

/* Before a loop of a small constant trip count over a walk's digits or
 * offsets: unrolled where GCC builds the kernels for the host. nvcc
 * unrolls such loops by itself (its code is left as it was). GCC
 * instruments the emulator's kernels for its device window
 * (tests/emu/meson.build) before its loop passes run, and unrolls an
 * outermost loop early only when asked: unrolled first, the walk's
 * arrays are indexed by constants, become registers, and no access of
 * theirs is instrumented. */
#if !defined(__CUDACC__) && defined(__GNUC__) && !defined(__clang__)
#define AMP_UNROLL _Pragma("GCC unroll 8")
#else
#define AMP_UNROLL
#endif

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

/* Shifts m right by `shift` bits (1..31), rounding to nearest even; m
 * below 2^31. Adding half an ulp less one, plus the kept part's lowest
 * bit, carries into the kept part exactly when the rest is above half or
 * half with the kept part odd: no branch on the rest's bits, which are as
 * good as random (a branch there mispredicts about every other element on
 * a CPU). */
AMP_HD uint32_t
amp_shift_round_even(uint32_t m, uint32_t shift)
{
    uint32_t half = 1u << (shift - 1u);

    return (m + (half - 1u) + ((m >> shift) & 1u)) >> shift;
}

/* FP32 to IEEE binary16 bits: round to nearest even, subnormals, overflow
 * to infinity, NaN stays a quiet NaN of the same sign. */
AMP_HD uint16_t
amp_f32_to_f16(float f)
{
    uint32_t x = amp_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mag = x & 0x7fffffffu;

#ifdef __CUDA_ARCH__
    /* The device's conversion (cvt.rn without .ftz) rounds every number,
     * Inf included, as the code below does: IEEE round to nearest even,
     * subnormal results kept, overflow to infinity. A NaN comes out of it
     * as the canonical NaN, so NaN keeps the code below, which keeps its
     * sign and leading payload bits as the host does. */
    if (mag <= 0x7f800000u) {
        unsigned short h;

        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
        return (uint16_t)h;
    }
#endif
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

#ifdef __CUDA_ARCH__
    /* Exact on the device too, subnormals without the loop below; NaN
     * keeps the code below (the device's would be the canonical NaN). */
    if ((h & 0x7fffu) <= 0x7c00u) {
        float f;

        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)h));
        return f;
    }
#endif
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

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    /* sm_80 and later convert in one instruction that rounds numbers as
     * the line below does (to nearest even on the bits, subnormals kept,
     * overflow to infinity); NaN keeps the code here, which keeps the sign
     * and payload (the device's would be the canonical NaN). Earlier
     * architectures have no such instruction. */
    if ((x & 0x7fffffffu) <= 0x7f800000u) {
        unsigned short h;

        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
        return (uint16_t)h;
    }
#endif
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

/* floor(log2 |f|) of a finite non-zero f, subnormals included. */
AMP_HD int
amp_log2_floor(float f)
{
    uint32_t bits = amp_f32_bits(f) & 0x7fffffffu;
    int log2_floor = -126;

    if (bits >= 0x800000u)
        return (int)(bits >> 23) - 127;
    while (!(bits & 0x800000u)) { /* subnormal: bits * 2^-149 */
        bits <<= 1;
        log2_floor--;
    }
    return log2_floor;
}

/* 2^e is a normal float for e in [-126, 127]. */
AMP_HD int
amp_clamp_exp(int e)
{
    return e > 127 ? 127 : e < -126 ? -126 : e;
}

/* The power-of-two exponent e that brings a tensor whose largest finite
 * magnitude is `absmax` into FP16's window: absmax * 2^e lies in
 * [2^14, 2^15). 0 when absmax is 0 or not finite; clamped so that 2^e is a
 * normal float. */
AMP_HD int
amp_f16_scale_exp(float absmax)
{
    uint32_t bits = amp_f32_bits(absmax) & 0x7fffffffu;

    if (bits == 0 || bits >= 0x7f800000u)
        return 0;
    return amp_clamp_exp(AMP_F16_TARGET_EXP - amp_log2_floor(absmax));
}

/* Scalars of one converted GEMM, in the scratch buffer on the device. The
 * absolute maxima are FP32 bit patterns of non-negative numbers, so their
 * unsigned order is their numeric order and atomicMax can reduce them. */
struct amp_gemm_scalars {
    uint32_t absmax_a;
    uint32_t absmax_b;
    uint32_t blocks_done; /* blocks of the maxima kernel that finished */
    float scale_a;   /* 2^e_A */
    float scale_b;   /* 2^e_B */
    float alpha;     /* alpha * 2^-(e_A + e_B): what the FP16 GEMM gets */
    float beta;
    float one;       /* 1: a device beta for a step that adds its C */
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
    s->one = 1.0f;
}

/* ---- Delayed scaling: the previous call's scales ------------------------- */

/* A converted FP16 GEMM that repeats (the same site, shape and stream)
 * casts each operand in one pass with the scale its previous call's
 * maximum gave, finding this call's maximum on the way; the exact scale
 * needs a pass for the maximum before the cast. The delayed exponent d of
 * an operand is kept when, with M its largest finite magnitude and e the
 * exact exponent (amp_f16_scale_exp(M)):
 *
 *   - fp16(M 2^d) is finite: no value overflows to infinity, and
 *   - d >= e - AMP_DELAYED_SLACK: M 2^d >= 2^(AMP_F16_TARGET_EXP -
 *     AMP_DELAYED_SLACK).
 *
 * Scaling by a power of two is exact, so a value whose scaled magnitude
 * is an FP16 normal (at least 2^-14) gets the same bits after unscaling
 * under either exponent; only values below that differ. Under the exact
 * scale every |x| >= 2^-28 M is normal and a smaller one is off by at
 * most 2^-25 2^-e <= 2^-39 M; under a kept delayed scale every
 * |x| >= 2^(AMP_DELAYED_SLACK - 28) M is normal and a smaller one is off
 * by at most 2^(AMP_DELAYED_SLACK - 39) M: the bound is 2^AMP_DELAYED_SLACK
 * times the exact scale's floor, and no infinity. When d >= e (the data
 * did not shrink) the delayed copy is at least as precise as the exact
 * one, element by element. Otherwise, or when alpha's compensation would
 * not be exact, the operand is cast again at the exact scale, as the
 * two-pass path does, bit for bit. */
#define AMP_DELAYED_SLACK 4

/* What a repeating call keeps for the next one (a record of the device
 * layer, amp_dev_record): the one-pass cast's counters, at 0 between
 * kernels, and the last call's maxima. A record belongs to one stream, so
 * one kernel at a time uses it; calls queued on the stream by several
 * threads may interleave their kernels, so each call's own scalars stay
 * in its scratch (struct amp_gemm_delayed). */
struct amp_gemm_record {
    uint32_t absmax_a;  /* the one-pass cast's maxima and block count */
    uint32_t absmax_b;
    uint32_t blocks_done;
    uint32_t next_a;    /* the last call's maxima (FP32 bits): the next */
    uint32_t next_b;    /* call's delayed exponents */
    uint32_t valid;     /* 1 once next_a and next_b are set (a record's
                           memory starts as it was: only 1 counts) */
};

/* A one-pass call's scalars, in its scratch: what the steps read, and
 * which operands the second kernel casts again. */
struct amp_gemm_delayed {
    struct amp_gemm_scalars s;
    uint32_t redo_a;    /* 1: operand A is cast again at s.scale_a */
    uint32_t redo_b;
};

/* The exponent the one-pass cast uses: the last call's, 0 when none. */
AMP_HD int
amp_gemm_delayed_exp(const struct amp_gemm_record *r, int part)
{
    if (r->valid != 1)
        return 0;
    return amp_f16_scale_exp(amp_bits_f32(part ? r->next_b : r->next_a));
}

/* Whether delayed exponent d may stand for an operand of maximum M (FP32
 * bits) whose exact exponent is e (see AMP_DELAYED_SLACK). */
AMP_HD int
amp_gemm_delayed_fits(uint32_t absmax, int d, int e)
{
    uint16_t h = amp_f32_to_f16(amp_bits_f32(absmax) * amp_pow2f(d));

    return d >= e - AMP_DELAYED_SLACK && (h & 0x7c00u) != 0x7c00u;
}

/* The record after a pass that found these maxima: kept for the next
 * call, the counters back at 0. */
AMP_HD void
amp_gemm_record_set(struct amp_gemm_record *r, uint32_t absmax_a,
                    uint32_t absmax_b)
{
    r->next_a = absmax_a;
    r->next_b = absmax_b;
    r->valid = 1;
    r->absmax_a = 0;
    r->absmax_b = 0;
    r->blocks_done = 0;
}

/* After the one-pass cast, given this call's maxima (FP32 bits): the
 * call's exponents, scales and compensated alpha in c->s, the redo flags
 * of the operands whose copy does not stand, and the record set for the
 * next call. An operand keeps its delayed exponent when it fits; the
 * others take the exact one; if alpha's compensation by the result is not
 * exact, both take what amp_gemm_scalars_finish() gives (the two-pass
 * path's scalars). */
AMP_HD void
amp_gemm_delayed_finish(struct amp_gemm_delayed *c, struct amp_gemm_record *r,
                        uint32_t absmax_a, uint32_t absmax_b, float alpha,
                        float beta)
{
    int da = amp_gemm_delayed_exp(r, 0), db = amp_gemm_delayed_exp(r, 1);
    int ea = amp_f16_scale_exp(amp_bits_f32(absmax_a));
    int eb = amp_f16_scale_exp(amp_bits_f32(absmax_b));
    int keep_a = r->valid == 1 && amp_gemm_delayed_fits(absmax_a, da, ea);
    int keep_b = r->valid == 1 && amp_gemm_delayed_fits(absmax_b, db, eb);
    int fa = keep_a ? da : ea, fb = keep_b ? db : eb;
    float half_way = alpha * amp_pow2f(-fa);
    float compensated = half_way * amp_pow2f(-fb);

    c->s.absmax_a = absmax_a;
    c->s.absmax_b = absmax_b;
    if ((keep_a || keep_b) &&
        (alpha == 0.0f || !amp_is_finite(alpha) ||
         (amp_is_normal(alpha) && amp_is_normal(half_way) &&
          amp_is_normal(compensated)))) {
        c->s.exp_a = fa;
        c->s.exp_b = fb;
        c->s.scale_a = amp_pow2f(fa);
        c->s.scale_b = amp_pow2f(fb);
        c->s.alpha = compensated;
        c->s.beta = beta;
        c->s.one = 1.0f;
    } else {
        amp_gemm_scalars_finish(&c->s, alpha, beta);
    }
    c->redo_a = c->s.exp_a != da;
    c->redo_b = c->s.exp_b != db;
    amp_gemm_record_set(r, absmax_a, absmax_b);
}

/* ---- Walking an index space without division ---------------------------- */

/* The element loops give thread tid of nthreads the elements tid,
 * tid + nthreads, ... of an index space whose coordinates are digits of
 * mixed radix: digit 0 (a row, a channel) counts 0 .. radix[0] - 1 and
 * carries into digit 1, and so on; the last digit is not bounded. The
 * thread splits its first index and the thread count into digits once,
 * the only divisions; each step adds the count's digits with carries, and
 * moves the offsets it tracks (an element's place in memory, one per
 * operand) by their strides: no division or remainder per element, as a
 * GPU's integer division is a long subroutine. Loops over the digits have
 * constant bounds so that the compiler unrolls them and keeps the walk in
 * registers. */
#define AMP_WALK_DIGITS 7
#define AMP_WALK_OFFSETS 3

struct amp_walk {
    int64_t radix[AMP_WALK_DIGITS];
    /* stride[k][i]: how far offset k moves per unit of digit i */
    int64_t stride[AMP_WALK_OFFSETS][AMP_WALK_DIGITS];
    int64_t at[AMP_WALK_DIGITS];    /* the current index's digits */
    int64_t step[AMP_WALK_DIGITS];  /* the thread count's digits */
    int64_t off[AMP_WALK_OFFSETS];  /* the current element's offsets */
    int64_t delta[AMP_WALK_OFFSETS]; /* what a step adds to them ... */
    /* ... and what a carry out of digit i adds besides */
    int64_t wrap[AMP_WALK_OFFSETS][AMP_WALK_DIGITS];
};

/* Starts the walk of `digits` digits and `offsets` offsets (radix and
 * stride set; every radix but the last's positive) at index g, stepping
 * by nthreads. */
AMP_HD void
amp_walk_start(struct amp_walk *w, int digits, int offsets, int64_t g,
               int64_t nthreads)
{
    int i, k;

    AMP_UNROLL
    for (i = 0; i < digits - 1; i++) {
        w->at[i] = g % w->radix[i];
        g /= w->radix[i];
        w->step[i] = nthreads % w->radix[i];
        nthreads /= w->radix[i];
    }
    w->at[digits - 1] = g;
    w->step[digits - 1] = nthreads;
    AMP_UNROLL
    for (k = 0; k < offsets; k++) {
        w->off[k] = 0;
        w->delta[k] = 0;
        AMP_UNROLL
        for (i = 0; i < digits; i++) {
            w->off[k] += w->at[i] * w->stride[k][i];
            w->delta[k] += w->step[i] * w->stride[k][i];
            if (i < digits - 1)
                w->wrap[k][i] = w->stride[k][i + 1] -
                                w->radix[i] * w->stride[k][i];
        }
    }
}

/* The next index: the thread count's digits added, each offset moved
 * accordingly. A digit never exceeds 2 * radix - 1 before its carry. */
AMP_HD void
amp_walk_next(struct amp_walk *w, int digits, int offsets)
{
    int64_t carry = 0;
    int i, k;

    AMP_UNROLL
    for (k = 0; k < offsets; k++)
        w->off[k] += w->delta[k];
    AMP_UNROLL
    for (i = 0; i < digits - 1; i++) {
        w->at[i] += w->step[i] + carry;
        carry = w->at[i] >= w->radix[i];
        if (carry) {
            w->at[i] -= w->radix[i];
            AMP_UNROLL
            for (k = 0; k < offsets; k++)
                w->off[k] += w->wrap[k][i];
        }
    }
    w->at[digits - 1] += w->step[digits - 1] + carry;
}

/* ---- Batches of matrices ------------------------------------------------ */

/* A batch of `batch` column-major matrices is given either as a base
 * pointer with a stride in elements between matrices (array == NULL) or as
 * an array of one pointer per matrix. Every per-thread function below
 * covers the whole batch as one index space of batch * rows * cols
 * elements, row fastest, then column, then matrix: elements tid,
 * tid + nthreads, ... (consecutive threads, consecutive rows), as a walk
 * (above) of three digits: row, column, matrix. With a pointer array, a
 * walk's offset is within the matrix array[matrix]. */
#define AMP_BATCH_DIGITS 3

/* A batch's walk; its offsets are set with amp_batch_walk_offset. */
AMP_HD void
amp_batch_walk_init(struct amp_walk *w, int64_t rows, int64_t cols)
{
    w->radix[0] = rows;
    w->radix[1] = cols;
    w->radix[2] = 0; /* unbounded */
}

/* Offset k of the walk: element (row, col) of matrix b at
 * b * stride + col * ld + row. */
AMP_HD void
amp_batch_walk_offset(struct amp_walk *w, int k, int64_t ld, int64_t stride)
{
    w->stride[k][0] = 1;
    w->stride[k][1] = ld;
    w->stride[k][2] = stride;
}

/* The walk of a copy of a batch, from element tid: offset 0 in the
 * source's matrix (base + b * stride, or with `array` array[b] at digit
 * 2, w->at[2]; leading dimension ld_src), offset 1 in the copy (ld_dst,
 * stride_dst). */
AMP_HD void
amp_batch_copy_walk(struct amp_walk *w, int array, int64_t stride,
                    int64_t ld_src, int64_t rows, int64_t cols,
                    int64_t ld_dst, int64_t stride_dst, int64_t tid,
                    int64_t nthreads)
{
    amp_batch_walk_init(w, rows, cols);
    amp_batch_walk_offset(w, 0, ld_src, array ? 0 : stride);
    amp_batch_walk_offset(w, 1, ld_dst, stride_dst);
    amp_walk_start(w, AMP_BATCH_DIGITS, 2, tid, nthreads);
}

/* One thread's share of the absolute maximum of the finite elements of a
 * batch, as FP32 bits (see struct amp_gemm_scalars). */
AMP_HD uint32_t
amp_absmax_batch_thread(const float *base, const float *const *array,
                        int64_t stride, int64_t batch, int64_t ld,
                        int64_t rows, int64_t cols, int64_t tid,
                        int64_t nthreads)
{
    struct amp_walk w;
    uint32_t best = 0;
    int64_t n = batch * rows * cols;
    int64_t g;

    if (tid >= n)
        return best;
    amp_batch_walk_init(&w, rows, cols);
    amp_batch_walk_offset(&w, 0, ld, array ? 0 : stride);
    amp_walk_start(&w, AMP_BATCH_DIGITS, 1, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        const float *m = array ? array[w.at[2]] : base;
        uint32_t mag = amp_f32_bits(m[w.off[0]]) & 0x7fffffffu;

        if (mag < 0x7f800000u && mag > best)
            best = mag;
        amp_walk_next(&w, AMP_BATCH_DIGITS, 1);
    }
    return best;
}

/* The same over one matrix. */
AMP_HD uint32_t
amp_absmax_thread(const float *src, int64_t ld, int64_t rows, int64_t cols,
                  int64_t tid, int64_t nthreads)
{
    return amp_absmax_batch_thread(src, (const float *const *)0, 0, 1, ld,
                                   rows, cols, tid, nthreads);
}

/* Half-precision formats of the casts. */
#define AMP_FORMAT_F16 0
#define AMP_FORMAT_BF16 1

/* One thread's share of casting a batch times `scale` (a power of two, so
 * the product is exact unless it leaves FP32's normal range; NaN and Inf
 * keep their class) into FP16 or BF16: matrix b of dst at
 * dst + b * stride_dst, leading dimension ld_dst. */
AMP_HD void
amp_cast_batch_thread(const float *base, const float *const *array,
                      int64_t stride, int64_t batch, int64_t ld_src,
                      int64_t rows, int64_t cols, uint16_t *dst,
                      int64_t ld_dst, int64_t stride_dst, float scale,
                      int32_t format, int64_t tid, int64_t nthreads)
{
    struct amp_walk w;
    int64_t n = batch * rows * cols;
    int64_t g;

    if (tid >= n)
        return;
    amp_batch_copy_walk(&w, array != 0, stride, ld_src, rows, cols, ld_dst,
                        stride_dst, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        const float *m = array ? array[w.at[2]] : base;
        float x = m[w.off[0]] * scale;

        dst[w.off[1]] = format == AMP_FORMAT_BF16 ? amp_f32_to_bf16(x)
                                                  : amp_f32_to_f16(x);
        amp_walk_next(&w, AMP_BATCH_DIGITS, 2);
    }
}

/* One thread's share of the one-pass FP16 cast: as amp_cast_batch_thread
 * times `scale`, returning the largest finite |element| of its share
 * (FP32 bits) as amp_absmax_batch_thread does. */
AMP_HD uint32_t
amp_cast_absmax_batch_thread(const float *base, const float *const *array,
                             int64_t stride, int64_t batch, int64_t ld_src,
                             int64_t rows, int64_t cols, uint16_t *dst,
                             int64_t ld_dst, int64_t stride_dst, float scale,
                             int64_t tid, int64_t nthreads)
{
    struct amp_walk w;
    int64_t n = batch * rows * cols;
    uint32_t best = 0;
    int64_t g;

    if (tid >= n)
        return best;
    amp_batch_copy_walk(&w, array != 0, stride, ld_src, rows, cols, ld_dst,
                        stride_dst, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        const float *m = array ? array[w.at[2]] : base;
        float x = m[w.off[0]];
        uint32_t mag = amp_f32_bits(x) & 0x7fffffffu;

        if (mag < 0x7f800000u && mag > best)
            best = mag;
        dst[w.off[1]] = amp_f32_to_f16(x * scale);
        amp_walk_next(&w, AMP_BATCH_DIGITS, 2);
    }
    return best;
}

/* The same over one matrix, into FP16. */
AMP_HD void
amp_cast_f16_thread(const float *src, int64_t ld_src, uint16_t *dst,
                    int64_t ld_dst, int64_t rows, int64_t cols, float scale,
                    int64_t tid, int64_t nthreads)
{
    amp_cast_batch_thread(src, (const float *const *)0, 0, 1, ld_src, rows,
                          cols, dst, ld_dst, 0, scale, AMP_FORMAT_F16, tid,
                          nthreads);
}

/* ---- fp16x3: x = (hi + lo * 2^-AMP_F16X3_LO_EXP) / scale ------------------ */

#define AMP_F16X3_LO_EXP 11

/* Splits an already scaled value: hi = fp16(x), lo = fp16((x - hi) * 2^11)
 * (Ootomo & Yokota 2022). x - hi is exact in FP32. A non-finite x (or one
 * whose hi overflows) keeps its class in hi and has lo 0, so NaN and Inf
 * reach the product through the hi * hi term. */
AMP_HD void
amp_split_f16x3(float x, uint16_t *hi, uint16_t *lo)
{
    uint16_t h = amp_f32_to_f16(x);
    float rest;

    *hi = h;
    if ((h & 0x7c00u) == 0x7c00u) {
        *lo = 0;
        return;
    }
    rest = (x - amp_f16_to_f32(h)) * amp_pow2f(AMP_F16X3_LO_EXP);
    *lo = amp_f32_to_f16(rest);
}

/* One thread's share of splitting a batch times `scale` into hi and lo
 * FP16 batches with the same layout (leading dimension ld_dst, stride
 * stride_dst). */
AMP_HD void
amp_split_batch_thread(const float *base, const float *const *array,
                       int64_t stride, int64_t batch, int64_t ld_src,
                       int64_t rows, int64_t cols, uint16_t *hi,
                       uint16_t *lo, int64_t ld_dst, int64_t stride_dst,
                       float scale, int64_t tid, int64_t nthreads)
{
    struct amp_walk w;
    int64_t n = batch * rows * cols;
    int64_t g;

    if (tid >= n)
        return;
    amp_batch_copy_walk(&w, array != 0, stride, ld_src, rows, cols, ld_dst,
                        stride_dst, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        const float *m = array ? array[w.at[2]] : base;

        amp_split_f16x3(m[w.off[0]] * scale, &hi[w.off[1]], &lo[w.off[1]]);
        amp_walk_next(&w, AMP_BATCH_DIGITS, 2);
    }
}

/* ---- tf32x3: x = hi + lo, both TF32 values in FP32 words ---------------- */

/* x rounded to TF32 (10 explicit mantissa bits, FP32's exponent), nearest
 * even, in an FP32 word; toward zero where nearest would overflow to Inf,
 * so that a finite x keeps a finite hi. NaN and Inf pass. */
AMP_HD float
amp_round_tf32(float x)
{
    uint32_t u = amp_f32_bits(x), r;

    if ((u & 0x7f800000u) == 0x7f800000u)
        return x;
    r = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
    if ((r & 0x7f800000u) == 0x7f800000u)
        r = u & ~0x1fffu;
    return amp_bits_f32(r);
}

/* Splits x into hi = tf32(x) and lo = tf32(x - hi) (x - hi is exact in
 * FP32: hi is x with its last 13 bits rounded off), the TF32 analogue of
 * the fp16x3 split without a scale: TF32 keeps FP32's exponent, so every
 * finite x splits, near FLT_MAX or among the subnormals. hi + lo carries
 * 22 of x's 24 bits: |x - hi - lo| <= 2^-22 |x| down to |x| = 2^-115
 * (2.4e-35), and <= 2^-137 below, where lo meets TF32's subnormal
 * quantum 2^-136. Both parts are TF32
 * values, so a GEMM with CUBLAS_COMPUTE_32F_FAST_TF32 (cuBLAS: "Tensor
 * Cores with TF32 compute" for FP32 matrices, its rounding of the inputs
 * unspecified) reads them unchanged, however it rounds. A non-finite x
 * keeps its class in hi and has lo 0 (amp_tf32x3_parts keeps it out of
 * the small terms). Next to FLT_MAX lo rounds toward zero where nearest
 * would carry hi + lo to Inf. */
AMP_HD void
amp_split_tf32x3(float x, float *hi, float *lo)
{
    float h = amp_round_tf32(x), l;

    *hi = h;
    if (!amp_is_finite(h)) {
        *lo = 0.0f;
        return;
    }
    l = amp_round_tf32(x - h);
    if (!amp_is_finite(h + l))
        l = amp_bits_f32(amp_f32_bits(x - h) & ~0x1fffu);
    *lo = l;
}

/* tf32x3's parts of x for one product of three times the reduction that
 * sums all three terms: hi and lo (amp_split_tf32x3), and hi', which is
 * hi where finite, else 0. The first operand's copy holds (hi', lo, hi)
 * along the reduction, the other's (lo, hi', hi), so that the sum runs
 * hi' lo + lo hi' + hi hi: the two small terms first while the running
 * sum is small, then the products FP32 sums. A non-finite x enters only
 * through hi hi, as in FP32's product (hi times the other's lo, which
 * may be 0, would make NaN of an Inf). */
AMP_HD void
amp_tf32x3_parts(float x, float *hi, float *lo, float *cross)
{
    amp_split_tf32x3(x, hi, lo);
    *cross = amp_is_finite(*hi) ? *hi : 0.0f;
}

/* One thread's share of an operand's tf32x3 copy: each element's parts
 * (amp_tf32x3_parts) at its offset in cross (hi'), lo and, as far beyond
 * the later of the two as they are apart, hi; the three share one layout
 * (leading dimension ld_dst, stride stride_dst). */
AMP_HD void
amp_split_tf32x3_batch_thread(const float *base, const float *const *array,
                              int64_t stride, int64_t batch, int64_t ld_src,
                              int64_t rows, int64_t cols, float *cross,
                              float *lo, int64_t ld_dst, int64_t stride_dst,
                              int64_t tid, int64_t nthreads)
{
    struct amp_walk w;
    int64_t n = batch * rows * cols;
    int64_t g;

    if (tid >= n)
        return;
    amp_batch_copy_walk(&w, array != 0, stride, ld_src, rows, cols, ld_dst,
                        stride_dst, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        const float *m = array ? array[w.at[2]] : base;
        float *c = cross + w.off[1], *l = lo + w.off[1];
        float *h = c > l ? c + (c - l) : l + (l - c);

        amp_tf32x3_parts(m[w.off[0]], h, l, c);
        amp_walk_next(&w, AMP_BATCH_DIGITS, 2);
    }
}

/* ---- Pointer arrays and FP32 results -------------------------------------- */

/* One thread's share of ptrs[b] = base + b * stride_bytes. */
AMP_HD void
amp_fill_ptrs_thread(uint64_t *ptrs, uint64_t base, int64_t stride_bytes,
                     int64_t batch, int64_t tid, int64_t nthreads)
{
    int64_t b;

    for (b = tid; b < batch; b += nthreads)
        ptrs[b] = base + (uint64_t)(b * stride_bytes);
}

/* ---- Two operands in one launch ------------------------------------------- */

/* The fused kernels cover both operands of a call with one grid: blocks
 * [0, blocks_a) the first operand, the rest the second, each part as a
 * grid-stride loop of its own. Thread tid of a grid of nthreads threads in
 * blocks of `block`: returns its part (0 or 1) and sets its index and the
 * part's thread count. */
AMP_HD int
amp_grid_part(int64_t tid, int64_t nthreads, int64_t block, int64_t blocks_a,
              int64_t *part_tid, int64_t *part_threads)
{
    int64_t first = blocks_a * block;

    if (tid < first) {
        *part_tid = tid;
        *part_threads = first;
        return 0;
    }
    *part_tid = tid - first;
    *part_threads = nthreads - first;
    return 1;
}

/* One GEMM operand as the fused kernels take it (by value): the caller's
 * FP32 batch (matrix i at base + i * stride elements, or at array[i] when
 * array is not 0), its half-precision copy in scratch (matrix i at dst +
 * i * stride_dst; with dst_lo, the fp16x3 lo parts laid out alike), the
 * pointer array to fill with the copy's matrices (ptrs, or 0), and the
 * blocks of the grid that cover it. Addresses are device addresses. */
struct amp_gemm_operand {
    uint64_t base, array;
    int64_t stride, batch, ld, rows, cols;
    uint64_t dst, dst_lo, ptrs;
    int64_t ld_dst, stride_dst;
    int64_t blocks;
};

/* One thread's share of copying a batch of FP32 matrices into dst
 * (leading dimension ld_dst, stride stride_dst). */
AMP_HD void
amp_gather_batch_thread(const float *base, const float *const *array,
                        int64_t stride, int64_t batch, int64_t ld_src,
                        int64_t rows, int64_t cols, float *dst,
                        int64_t ld_dst, int64_t stride_dst, int64_t tid,
                        int64_t nthreads)
{
    struct amp_walk w;
    int64_t n = batch * rows * cols;
    int64_t g;

    if (tid >= n)
        return;
    amp_batch_copy_walk(&w, array != 0, stride, ld_src, rows, cols, ld_dst,
                        stride_dst, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        const float *m = array ? array[w.at[2]] : base;

        dst[w.off[1]] = m[w.off[0]];
        amp_walk_next(&w, AMP_BATCH_DIGITS, 2);
    }
}

/* alpha * r + beta * c, where c is not read when beta is 0 (BLAS: NaN in
 * C must not leak). */
AMP_HD float
amp_axpby(float alpha, float r, float beta, float c)
{
    return beta == 0.0f ? alpha * r : alpha * r + beta * c;
}

/* The fp16x3 product from its hi * hi part and the sum of its two lo
 * parts. Where hi * hi is not finite it is the answer: an Inf operand
 * element meets the other operand's lo parts with the wrong sign or a 0
 * (NaN), while hi * hi carries Inf and NaN where FP32 puts them. */
AMP_HD float
amp_f16x3_sum(float hi, float lo)
{
    return amp_is_finite(hi) ? hi + lo : hi;
}

/* Per-row scalars of a cuBLASLt call: alpha (and beta) as device vectors
 * of the result's rows, alpha's members `alpha_stride` apart (0: one for
 * the batch); a NULL vector means the scalar. row_major: the result is
 * stored row-major (its rows are the stored columns). */
struct amp_row_scalars {
    const float *alpha_vec, *beta_vec;
    int64_t alpha_stride;
    int32_t row_major;
};

/* One thread's share of the fp16x3 fold of a cuBLASLt call, whose last
 * step adds hi_A hi_B to the rest: S = alpha * S + beta * C over a batch,
 * S compact (ld_s, stride_s), C the caller's (not read when beta is 0),
 * alpha and beta per row when v has vectors. An element of S that is not
 * finite is dropped (0): it comes from an Inf operand element, whose
 * hi * hi term carries Inf or NaN where FP32 puts them (see
 * amp_f16x3_sum). */
AMP_HD void
amp_f16x3_fold_thread(float *s, int64_t ld_s, int64_t stride_s,
                      const float *c, int64_t ldc, int64_t stride_c,
                      int64_t batch, int64_t rows, int64_t cols, float alpha,
                      float beta, struct amp_row_scalars v, int64_t tid,
                      int64_t nthreads)
{
    struct amp_walk w;
    int64_t n = batch * rows * cols;
    int64_t g;

    if (tid >= n)
        return;
    amp_batch_walk_init(&w, rows, cols);
    amp_batch_walk_offset(&w, 0, ld_s, stride_s);
    amp_batch_walk_offset(&w, 1, ldc, stride_c);
    amp_walk_start(&w, AMP_BATCH_DIGITS, 2, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        int64_t b = w.at[2], row = v.row_major ? w.at[1] : w.at[0];
        int64_t off_s = w.off[0];
        float lo, a = alpha, bt = beta;

        if (v.alpha_vec)
            a = v.alpha_vec[b * v.alpha_stride + row];
        if (v.beta_vec)
            bt = v.beta_vec[row];
        lo = amp_is_finite(s[off_s]) ? s[off_s] : 0.0f;
        s[off_s] = amp_axpby(a, lo, bt, bt == 0.0f ? 0.0f : c[w.off[1]]);
        amp_walk_next(&w, AMP_BATCH_DIGITS, 2);
    }
}

/* Whether a * c, c a normal power of two, is exact as compensation: a is
 * 0, Inf or NaN (kept as such), or a and the product are normal. */
AMP_HD int
amp_scale_exact(float a, float c)
{
    return a == 0.0f || !amp_is_finite(a) ||
           (amp_is_normal(a) && amp_is_normal(a * c));
}

/* A walk over `members` alpha vectors of m, vector b at alpha +
 * b * stride: digits element and vector, offset 0 in alpha. */
AMP_HD void
amp_alpha_walk_start(struct amp_walk *w, int64_t stride, int64_t m,
                     int64_t tid, int64_t nthreads)
{
    w->radix[0] = m;
    w->radix[1] = 0; /* unbounded */
    w->stride[0][0] = 1;
    w->stride[0][1] = stride;
    amp_walk_start(w, 2, 1, tid, nthreads);
}

/* One thread's share of checking the compensation c of `members` alpha
 * vectors of m: 1 when one of its products is not exact
 * (amp_scale_exact). */
AMP_HD uint32_t
amp_alpha_inexact_thread(const float *alpha, int64_t stride, int64_t members,
                         int64_t m, float c, int64_t tid, int64_t nthreads)
{
    struct amp_walk w;
    int64_t g, n = members * m;
    uint32_t flag = 0;

    if (tid >= n)
        return flag;
    amp_alpha_walk_start(&w, stride, m, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        flag |= !amp_scale_exact(alpha[w.off[0]], c);
        amp_walk_next(&w, 2, 1);
    }
    return flag;
}

/* One thread's share of out[b * m + i] = alpha[b * stride + i] * c. */
AMP_HD void
amp_alpha_scale_thread(const float *alpha, int64_t stride, int64_t members,
                       int64_t m, float c, float *out, int64_t tid,
                       int64_t nthreads)
{
    struct amp_walk w;
    int64_t g, n = members * m;

    if (tid >= n)
        return;
    amp_alpha_walk_start(&w, stride, m, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        out[g] = alpha[w.off[0]] * c;
        amp_walk_next(&w, 2, 1);
    }
}

/* One thread's share of C = alpha * R + beta * C over a batch: R compact
 * (ld_r, stride_r) and, for fp16x3, R = amp_f16x3_sum(r, r_lo) with r_lo
 * laid out as r (NULL otherwise); C the caller's (base c with stride_c, or
 * array). */
AMP_HD void
amp_axpby_batch_thread(const float *r, const float *r_lo, int64_t ld_r,
                       int64_t stride_r, float *c, float *const *c_array,
                       int64_t ldc, int64_t stride_c, int64_t batch,
                       int64_t rows, int64_t cols, float alpha, float beta,
                       int64_t tid, int64_t nthreads)
{
    struct amp_walk w;
    int64_t n = batch * rows * cols;
    int64_t g;

    if (tid >= n)
        return;
    amp_batch_walk_init(&w, rows, cols);
    amp_batch_walk_offset(&w, 0, ld_r, stride_r);
    amp_batch_walk_offset(&w, 1, ldc, c_array ? 0 : stride_c);
    amp_walk_start(&w, AMP_BATCH_DIGITS, 2, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        float *cm = c_array ? c_array[w.at[2]] : c;
        int64_t off_r = w.off[0], off_c = w.off[1];

        cm[off_c] = amp_axpby(alpha,
                              r_lo ? amp_f16x3_sum(r[off_r], r_lo[off_r])
                                   : r[off_r],
                              beta, beta == 0.0f ? 0.0f : cm[off_c]);
        amp_walk_next(&w, AMP_BATCH_DIGITS, 2);
    }
}

/* ---- Shadow errors ---------------------------------------------------------- */

/* Errors of a candidate against the FP32 result; the maxima are FP32 bits
 * of non-negative numbers, so atomicMax reduces them. The relative error
 * in the max norm is max_abs / max_ref: element-wise ratios are
 * meaningless where the FP32 result cancels to near zero. The relative
 * error in the Frobenius norm is sqrt(sq_diff / sq_ref), the measure a
 * program that checks ||C - C_ref||_F / ||C_ref||_F sees; the sums are
 * doubles, so squares of large FP32 values neither overflow nor swamp
 * the small ones (atomicAdd on double reduces them). */
struct amp_shadow_error {
    uint32_t max_abs;          /* max |candidate - fp32| */
    uint32_t max_ref;          /* max |fp32| over its finite elements */
    unsigned long long nonfinite;
    double sq_diff;            /* sum of (candidate - fp32)^2 where both
                                  are finite */
    double sq_ref;             /* sum of fp32^2 over its finite elements */
    unsigned long long compared; /* elements finite in FP32: the ones
                                    measured (0: nothing was measurable) */
};

/* The reduction state in device scratch (zeroed before the kernel), and
 * the per-call slot in page-locked host memory that the last block of the
 * error kernel writes. */
struct amp_shadow_accum {
    struct amp_shadow_error error;
    uint32_t blocks_done;
    uint32_t pad;
};

AMP_HD void
amp_shadow_merge(struct amp_shadow_error *into,
                 const struct amp_shadow_error *e)
{
    if (e->max_abs > into->max_abs)
        into->max_abs = e->max_abs;
    if (e->max_ref > into->max_ref)
        into->max_ref = e->max_ref;
    into->nonfinite += e->nonfinite;
    into->sq_diff += e->sq_diff;
    into->sq_ref += e->sq_ref;
    into->compared += e->compared;
}

/* The relative error of a measurement, max_abs / max_ref: 0 when nothing
 * differs, infinite when only a zero result differs. */
AMP_HD double
amp_shadow_relative(float max_abs, float max_ref)
{
    if (max_abs == 0.0f)
        return 0.0;
    return (double)max_abs / (double)max_ref;
}

/* The squared relative error in the Frobenius norm, sq_diff / sq_ref, on
 * the same terms (0 when nothing differs, infinite when only a zero result
 * differs); the host takes its square root. */
AMP_HD double
amp_shadow_relative_sq(double sq_diff, double sq_ref)
{
    if (sq_diff == 0.0)
        return 0.0;
    return sq_diff / sq_ref;
}

/* Adds one element: ref is the FP32 result, cand the candidate's. Only
 * elements finite in FP32 count; a candidate that is not finite there is
 * counted, not measured. */
AMP_HD void
amp_shadow_element(struct amp_shadow_error *e, float cand, float ref)
{
    float diff;
    uint32_t mag;

    if (!amp_is_finite(ref))
        return;
    e->compared++;
    /* |ref| by its bits: -0.0 must not compare above every positive. */
    mag = amp_f32_bits(ref) & 0x7fffffffu;
    if (mag > e->max_ref)
        e->max_ref = mag;
    e->sq_ref += (double)ref * (double)ref;
    if (!amp_is_finite(cand)) {
        e->nonfinite++;
        return;
    }
    diff = cand > ref ? cand - ref : ref - cand;
    if (amp_f32_bits(diff) > e->max_abs)
        e->max_abs = amp_f32_bits(diff);
    /* In double, where the square of an FP32 difference neither
     * overflows nor underflows. */
    e->sq_diff += ((double)cand - (double)ref) * ((double)cand - (double)ref);
}

/* One thread's share of the errors of a compact candidate batch (ld_r,
 * stride_r) against the caller's C (base with stride_c, or array). */
AMP_HD struct amp_shadow_error
amp_shadow_error_thread(const float *cand, int64_t ld_r, int64_t stride_r,
                        const float *c, const float *const *c_array,
                        int64_t ldc, int64_t stride_c, int64_t batch,
                        int64_t rows, int64_t cols, int64_t tid,
                        int64_t nthreads)
{
    struct amp_shadow_error e = {0, 0, 0, 0.0, 0.0, 0};
    struct amp_walk w;
    int64_t n = batch * rows * cols;
    int64_t g;

    if (tid >= n)
        return e;
    amp_batch_walk_init(&w, rows, cols);
    amp_batch_walk_offset(&w, 0, ld_r, stride_r);
    amp_batch_walk_offset(&w, 1, ldc, c_array ? 0 : stride_c);
    amp_walk_start(&w, AMP_BATCH_DIGITS, 2, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        const float *cm = c_array ? c_array[w.at[2]] : c;

        amp_shadow_element(&e, cand[w.off[0]], cm[w.off[1]]);
        amp_walk_next(&w, AMP_BATCH_DIGITS, 2);
    }
    return e;
}

/* ---- Convolutions: N-d tensors, packed copies with padded channels -------- */

#define AMP_CONV_MAX_DIMS 5

/* A tensor as the caller stores it: sizes in logical order (N, C, spatial
 * for activations; K, C per group, spatial for filters) with element
 * strides. Its packed copy in scratch is channels last (dim 1 innermost,
 * then the spatial dims, dim 0 outermost, no gaps) with dims 0 and 1
 * padded per group: index i of dim d < 2 is at i / per[d] * per_pad[d] +
 * i % per[d], and the padding holds zeros. */
struct amp_conv_layout {
    int64_t nb_dims;
    int64_t dim[AMP_CONV_MAX_DIMS];
    int64_t stride[AMP_CONV_MAX_DIMS];
    int64_t per[2];
    int64_t per_pad[2];
};

/* Size of dim d in the packed copy. */
AMP_HD int64_t
amp_conv_packed_dim(const struct amp_conv_layout *l, int d)
{
    return d < 2 ? l->dim[d] / l->per[d] * l->per_pad[d] : l->dim[d];
}

/* Elements of the tensor, or with `packed` of its packed copy. */
AMP_HD int64_t
amp_conv_count(const struct amp_conv_layout *l, int packed)
{
    int64_t n = packed ? amp_conv_packed_dim(l, 0) * amp_conv_packed_dim(l, 1)
                       : l->dim[0] * l->dim[1];
    int d;

    /* A constant trip count, unrolled: constant indices into a kernel's
     * by-value layout (amp_conv_pick). */
    AMP_UNROLL
    for (d = 2; d < AMP_CONV_MAX_DIMS; d++)
        if (d < l->nb_dims)
            n *= l->dim[d];
    return n;
}

/* Offset of a (real) element in the caller's tensor. */
AMP_HD int64_t
amp_conv_offset(const struct amp_conv_layout *l, const int64_t *at)
{
    int64_t off = 0;
    int d;

    for (d = 0; d < l->nb_dims; d++)
        off += at[d] * l->stride[d];
    return off;
}

/* A walk over a tensor channels last (dim 1 fastest, then the spatial
 * dims from the last, dim 0 slowest), with dims 0 and 1 each as two
 * digits, the index within a group and the group, so that the padding of
 * a packed copy and its offsets need no division:
 *   0: channel in group   1: channel group   2-4: spatial dims, last first
 *   5: dim 0 in group     6: dim 0 group (unbounded)
 * A tensor with fewer spatial dims has digits of radix 1 in their place.
 * With `packed`, the walk counts the packed copy's elements (groups of
 * per_pad), else the tensor's (groups of per), in the order of the packed
 * copy: element g of the packed copy is step g of the packed walk. */
#define AMP_CONV_DIGITS 7

/* The walk of a convolution's tensors: struct amp_walk's, with the
 * digits, the thread count's digits and the carries' moves in 32 bits so
 * that a thread's walk of up to three offsets stays in registers next to
 * its work (64 per thread, kernels/conv.cu). The host checks that every
 * tensor a walk covers fits (amp_conv_walks_fit); its sizes and offsets
 * stay 64-bit. */
struct amp_conv_walk {
    int64_t radix[AMP_CONV_DIGITS];
    /* stride[k][i]: how far offset k moves per unit of digit i */
    int64_t stride[AMP_WALK_OFFSETS][AMP_CONV_DIGITS];
    uint32_t bound[AMP_CONV_DIGITS]; /* radix, but the last's */
    uint32_t at[AMP_CONV_DIGITS];    /* the current index's digits */
    uint32_t step[AMP_CONV_DIGITS];  /* the thread count's digits */
    int64_t off[AMP_WALK_OFFSETS];   /* the current element's offsets */
    int64_t delta[AMP_WALK_OFFSETS]; /* what a step adds to them ... */
    /* ... and what a carry out of digit i adds besides */
    int32_t wrap[AMP_WALK_OFFSETS][AMP_CONV_DIGITS];
};

/* Starts the walk as amp_walk_start (radix and stride set) at index g
 * stepping by nthreads, both below 2^32. Returns 1 when every carry's
 * move fits in 32 bits, else 0 (the walk is then wrong). */
AMP_HD int
amp_conv_walk_start(struct amp_conv_walk *w, int offsets, int64_t g,
                    int64_t nthreads)
{
    uint32_t g32 = (uint32_t)g, n32 = (uint32_t)nthreads;
    int fits = 1, i, k;

    AMP_UNROLL
    for (i = 0; i < AMP_CONV_DIGITS - 1; i++) {
        w->bound[i] = (uint32_t)w->radix[i];
        w->at[i] = g32 % w->bound[i];
        g32 /= w->bound[i];
        w->step[i] = n32 % w->bound[i];
        n32 /= w->bound[i];
    }
    w->at[AMP_CONV_DIGITS - 1] = g32;
    w->step[AMP_CONV_DIGITS - 1] = n32;
    AMP_UNROLL
    for (k = 0; k < offsets; k++) {
        w->off[k] = 0;
        w->delta[k] = 0;
        AMP_UNROLL
        for (i = 0; i < AMP_CONV_DIGITS; i++) {
            w->off[k] += (int64_t)w->at[i] * w->stride[k][i];
            w->delta[k] += (int64_t)w->step[i] * w->stride[k][i];
            if (i < AMP_CONV_DIGITS - 1) {
                int64_t wrap = w->stride[k][i + 1] -
                               w->radix[i] * w->stride[k][i];

                w->wrap[k][i] = (int32_t)wrap;
                fits &= wrap >= INT32_MIN && wrap <= INT32_MAX;
            }
        }
    }
    return fits;
}

/* The next index, as amp_walk_next; the last digit is not kept (the
 * loops end by the element count). */
AMP_HD void
amp_conv_walk_next(struct amp_conv_walk *w, int offsets)
{
    uint32_t carry = 0;
    int i, k;

    AMP_UNROLL
    for (k = 0; k < offsets; k++)
        w->off[k] += w->delta[k];
    AMP_UNROLL
    for (i = 0; i < AMP_CONV_DIGITS - 1; i++) {
        /* at + step + carry < 2 * radix <= 2^32 */
        w->at[i] += w->step[i] + carry;
        carry = w->at[i] >= w->bound[i];
        if (carry) {
            w->at[i] -= w->bound[i];
            AMP_UNROLL
            for (k = 0; k < offsets; k++)
                w->off[k] += w->wrap[k][i];
        }
    }
}

/* The spatial dim of digit 2 + i (i < 3), or 0 when the tensor has no
 * such dim. The walk's arrays are indexed by digit, in loops the compiler
 * unrolls, so that they stay in registers. */
AMP_HD int
amp_conv_spatial_dim(const struct amp_conv_layout *l, int i)
{
    int d = (int)l->nb_dims - 1 - i;

    return d >= 2 ? d : 0;
}

/* v[d] for d in {0, 2, 3, 4}, by constant indices: a runtime index into
 * a kernel's by-value layout would copy it to local memory. */
AMP_HD int64_t
amp_conv_pick(const int64_t *v, int d)
{
    return d == 4 ? v[4] : d == 3 ? v[3] : d == 2 ? v[2] : v[0];
}

/* The walk over l's elements, or with `packed` over its packed copy's. */
AMP_HD void
amp_conv_walk_init(struct amp_conv_walk *w, const struct amp_conv_layout *l,
                   int packed)
{
    int i;

    w->radix[0] = packed ? l->per_pad[1] : l->per[1];
    w->radix[1] = l->dim[1] / l->per[1];
    AMP_UNROLL
    for (i = 0; i < 3; i++) {
        int d = amp_conv_spatial_dim(l, i);

        w->radix[2 + i] = d ? amp_conv_pick(l->dim, d) : 1;
    }
    w->radix[5] = packed ? l->per_pad[0] : l->per[0];
    w->radix[6] = 0; /* unbounded */
}

/* Offset k of the walk: the real element's offset by l's strides. A
 * packed walk's padding has an offset too, of no element. */
AMP_HD void
amp_conv_walk_offset(struct amp_conv_walk *w, int k,
                     const struct amp_conv_layout *l)
{
    int i;

    w->stride[k][0] = l->stride[1];
    w->stride[k][1] = l->per[1] * l->stride[1];
    AMP_UNROLL
    for (i = 0; i < 3; i++) {
        int d = amp_conv_spatial_dim(l, i);

        w->stride[k][2 + i] = d ? amp_conv_pick(l->stride, d) : 0;
    }
    w->stride[k][5] = l->stride[0];
    w->stride[k][6] = l->per[0] * l->stride[0];
}

/* Offset k of the walk: the element's offset in l's packed copy. */
AMP_HD void
amp_conv_walk_packed_offset(struct amp_conv_walk *w, int k,
                            const struct amp_conv_layout *l)
{
    int64_t inner = amp_conv_packed_dim(l, 1);
    int i;

    w->stride[k][0] = 1;
    w->stride[k][1] = l->per_pad[1];
    AMP_UNROLL
    for (i = 0; i < 3; i++) {
        int d = amp_conv_spatial_dim(l, i);

        w->stride[k][2 + i] = d ? inner : 0;
        inner *= d ? amp_conv_pick(l->dim, d) : 1;
    }
    w->stride[k][5] = inner;
    w->stride[k][6] = l->per_pad[0] * inner;
}

/* Makes the spatial digits the walk's innermost (0 to 2; the channels'
 * digit becomes 3, the groups' 4): consecutive threads then take
 * consecutive positions of one channel, which in a tensor whose channels
 * are not innermost (NCHW) lie side by side, so that a warp's accesses
 * to it coalesce; channel first, they were the channel stride apart (an
 * H200 ran the output pass at 12 % of its throughput:
 * docs/gpu-results.md). Any order visits every element once: the results
 * are the same. Before amp_conv_walk_start, on the walk's first
 * `offsets` offsets; constant indices keep the arrays in registers. */
AMP_HD void
amp_conv_walk_spatial_first(struct amp_conv_walk *w, int offsets)
{
    int64_t c = w->radix[0], g = w->radix[1];
    int k;

    w->radix[0] = w->radix[2];
    w->radix[1] = w->radix[3];
    w->radix[2] = w->radix[4];
    w->radix[3] = c;
    w->radix[4] = g;
    AMP_UNROLL
    for (k = 0; k < AMP_WALK_OFFSETS; k++) {
        int64_t sc = w->stride[k][0], sg = w->stride[k][1];

        if (k >= offsets)
            break;
        w->stride[k][0] = w->stride[k][2];
        w->stride[k][1] = w->stride[k][3];
        w->stride[k][2] = w->stride[k][4];
        w->stride[k][3] = sc;
        w->stride[k][4] = sg;
    }
}

/* The larger of best and |v| (FP32 bits) when v is finite; else best,
 * and *nonfinite becomes 1. */
AMP_HD uint32_t
amp_absmax_step(uint32_t best, float v, uint32_t *nonfinite)
{
    uint32_t mag = amp_f32_bits(v) & 0x7fffffffu;

    if (mag >= 0x7f800000u)
        *nonfinite = 1;
    else if (mag > best)
        best = mag;
    return best;
}

/* One thread's share of the absolute maximum of the finite elements (FP32
 * bits); *nonfinite becomes 1 when an element is Inf or NaN. */
AMP_HD uint32_t
amp_conv_absmax_thread(const float *src, const struct amp_conv_layout *l,
                       uint32_t *nonfinite, int64_t tid, int64_t nthreads)
{
    struct amp_conv_walk w;
    int64_t n = amp_conv_count(l, 0), g;
    uint32_t best = 0;

    if (tid >= n)
        return best;
    amp_conv_walk_init(&w, l, 0);
    amp_conv_walk_offset(&w, 0, l);
    if (l->stride[1] != 1)
        amp_conv_walk_spatial_first(&w, 1);
    amp_conv_walk_start(&w, 1, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        best = amp_absmax_step(best, src[w.off[0]], nonfinite);
        amp_conv_walk_next(&w, 1);
    }
    return best;
}

/* Packed elements a thread of the casts takes at a time: four channels of
 * one position. Four a thread quarters the threads and their walks' set-up
 * and steps, and gives each thread four independent loads in flight. The
 * packed copy's channel groups come in fours (the plan pads them for
 * Tensor Cores, to a multiple of AMP_CONV_CHANNEL_MULTIPLE). */
#define AMP_CONV_CAST_WIDTH 4

/* The casts' units of work over l's packed copy (a grid's size). */
AMP_HD int64_t
amp_conv_cast_units(const struct amp_conv_layout *l)
{
    return amp_conv_count(l, 1) / AMP_CONV_CAST_WIDTH;
}

/* The real channels of the unit a walk over packed units of `width`
 * channels is at, at most the width: none past the group's real batch
 * (digit 5), the rest of the group's past the unit's first channel (digit
 * 0, or 3 in a walk made spatial_first); the others are padding. per0
 * and per1 are the real counts. */
AMP_HD uint32_t
amp_conv_unit_real(const struct amp_conv_walk *w, uint32_t width,
                   uint32_t per0, uint32_t per1, int spatial_first)
{
    uint32_t c0 = (spatial_first ? w->at[3] : w->at[0]) * width;
    uint32_t real = w->at[5] < per0 && c0 < per1 ? per1 - c0 : 0;

    return real < width ? real : width;
}

/* One thread's share of the packed copy: dst[g] = half(src * scale), zero
 * in the padding; half is FP16 or BF16 (AMP_FORMAT_*). Unit u is the
 * AMP_CONV_CAST_WIDTH channels from packed element u times the width (the
 * packed channel groups, l->per_pad[1], a multiple of it).
 * Returns the largest finite |src| it read (FP32 bits); *nonfinite
 * becomes 1 when it read Inf or NaN. */
AMP_HD uint32_t
amp_conv_cast_scan_thread(const float *src, const struct amp_conv_layout *l,
                          uint16_t *dst, float scale, int32_t format,
                          uint32_t *nonfinite, int64_t tid, int64_t nthreads)
{
    struct amp_conv_walk w;
    int64_t n = amp_conv_cast_units(l), u;
    /* Channel counts and the channel stride fit 32 bits (the walk's moves
     * do, amp_conv_walks_fit): 32-bit locals keep the loop in 64
     * registers. */
    uint32_t per0 = (uint32_t)l->per[0], per1 = (uint32_t)l->per[1];
    int32_t cstride = (int32_t)l->stride[1];
    const uint32_t width = AMP_CONV_CAST_WIDTH;
    uint32_t j;
    uint32_t best = 0;

    if (tid >= n)
        return best;
    /* The walk over units: digit 0 counts channel groups of the width,
     * each a move of that many channels in the source. */
    amp_conv_walk_init(&w, l, 1);
    amp_conv_walk_offset(&w, 0, l);
    w.radix[0] /= width;
    w.stride[0][0] *= width;
    amp_conv_walk_start(&w, 1, tid, nthreads);
    for (u = tid; u < n; u += nthreads) {
        const float *from = src + w.off[0];
        uint16_t *to = dst + u * width;
        uint32_t real = amp_conv_unit_real(&w, width, per0, per1, 0);

        AMP_UNROLL
        for (j = 0; j < width; j++) {
            float x = 0.0f;

            if (j < real) {
                x = from[(int32_t)j * cstride];
                best = amp_absmax_step(best, x, nonfinite);
                x *= scale;
            }
            to[j] = format == AMP_FORMAT_BF16 ? amp_f32_to_bf16(x)
                                              : amp_f32_to_f16(x);
        }
        amp_conv_walk_next(&w, 1);
    }
    return best;
}

/* The packed copy alone (amp_conv_cast_scan_thread, what it read not
 * kept). */
AMP_HD void
amp_conv_cast_thread(const float *src, const struct amp_conv_layout *l,
                     uint16_t *dst, float scale, int32_t format, int64_t tid,
                     int64_t nthreads)
{
    uint32_t nonfinite = 0;

    (void)amp_conv_cast_scan_thread(src, l, dst, scale, format, &nonfinite,
                                    tid, nthreads);
}

/* One thread's share of a convolution input's tf32x3 copy: l's packed
 * copy (FP32, channels last) with its reduction axis three times as long,
 * each element's three parts (amp_tf32x3_parts) at its packed offset
 * and `part` and twice `part` further: hi', lo, hi for the first input
 * (`first`), lo, hi', hi for the other, so that the reduction sums
 * hi' lo + lo hi' + hi hi. */
AMP_HD void
amp_conv_split_tf32x3_thread(const float *src, const struct amp_conv_layout *l,
                             float *dst, int64_t part, int first,
                             int64_t tid, int64_t nthreads)
{
    struct amp_conv_walk w;
    int64_t n = amp_conv_count(l, 0), g;

    if (tid >= n)
        return;
    amp_conv_walk_init(&w, l, 0);
    amp_conv_walk_offset(&w, 0, l);
    amp_conv_walk_packed_offset(&w, 1, l);
    amp_conv_walk_start(&w, 2, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        float *d = dst + w.off[1];

        /* (hi', lo, hi) for the first input, (lo, hi', hi) the other. */
        amp_tf32x3_parts(src[w.off[0]], &d[2 * part],
                         &d[first ? part : 0], &d[first ? 0 : part]);
        amp_conv_walk_next(&w, 2);
    }
}

/* The packed result element at `off` as FP32: FP16, BF16 or FP32
 * (AMP_FORMAT_F32). */
#define AMP_FORMAT_F32 2

AMP_HD float
amp_conv_result(const void *r, int64_t off, int32_t format)
{
    if (format == AMP_FORMAT_F32)
        return ((const float *)r)[off];
    if (format == AMP_FORMAT_BF16)
        return amp_bits_f32((uint32_t)((const uint16_t *)r)[off] << 16);
    return amp_f16_to_f32(((const uint16_t *)r)[off]);
}

/* Scalars of one converted convolution, in scratch on the device: the
 * inputs' maxima (FP32 bits, so that atomicMax reduces them), whether an
 * input holds Inf or NaN, and the scales. */
struct amp_conv_scalars {
    uint32_t absmax_a;
    uint32_t absmax_b;
    uint32_t nonfinite_in;
    uint32_t blocks_done; /* blocks of the maxima kernel that finished */
    int32_t exp_a;
    int32_t exp_b;
    float scale_a;    /* 2^exp_a */
    float scale_b;
    float unscale_a;  /* 2^-exp_a */
    float unscale_b;
    uint32_t redo_a;  /* the one-pass cast's copy of a does not stand: */
    uint32_t redo_b;  /* cast again at scale_a (amp_conv_delayed_finish) */
};

/* FP16 output bound: both scaled inputs' maxima below 2^(p+1) and 2^(q+1)
 * with p + q + 2 + ceil(log2(reduction length)) <= AMP_CONV_F16_OUT_EXP
 * keep every output below 2^15, half of FP16's largest finite 65504. */
#define AMP_CONV_F16_OUT_EXP 15

/* The longest reduction, as ceil(log2(length)), a convolution runs in FP16
 * for. Up to 2^19 terms the output bound leaves both scaled maxima at 2^-3
 * or above (amp_conv_scalars_finish: a budget of 13 - 19 = -6 gives each
 * input -3), so every element within FP16's 11 significant bits of its
 * input's maximum (down to max 2^-11) is still a normal number (2^-14 and
 * above) and keeps all its bits. A longer one (a backward-filter
 * reduction over N P Q of 2^20 puts the maxima at 2^-4 and such elements
 * into the subnormals) runs in FP32 with the fallback reason fp16-range
 * (src/run/conv.c, amp_conv_f16_fits). */
#define AMP_CONV_F16_MAX_LOG2_LEN 19

/* The scales and unscales of s's exponents. */
AMP_HD void
amp_conv_scales_set(struct amp_conv_scalars *s)
{
    s->scale_a = amp_pow2f(s->exp_a);
    s->scale_b = amp_pow2f(s->exp_b);
    s->unscale_a = amp_pow2f(amp_clamp_exp(-s->exp_a));
    s->unscale_b = amp_pow2f(amp_clamp_exp(-s->exp_b));
}

/* The scales of a convolution's two inputs for `format`: for FP16, powers
 * of two chosen from the maxima so that |output| <= scaled max_a * scaled
 * max_b * 2^log2_len < 2^15 cannot overflow (`log2_len` is
 * ceil(log2(reduction length))); BF16 and FP32 keep FP32's range and are
 * not scaled. */
AMP_HD void
amp_conv_scalars_finish(struct amp_conv_scalars *s, int32_t log2_len,
                        int32_t format)
{
    float a = amp_bits_f32(s->absmax_a), b = amp_bits_f32(s->absmax_b);
    int budget = AMP_CONV_F16_OUT_EXP - 2 - log2_len;
    int p = budget >= 0 ? budget / 2 : -((1 - budget) / 2);
    int q = budget - p;

    s->exp_a = 0;
    s->exp_b = 0;
    if (format == AMP_FORMAT_F16 && s->absmax_a != 0 && s->absmax_b != 0) {
        int ea = (p > 14 ? 14 : p) - amp_log2_floor(a), eb;

        /* A scale clamped to FP32's exponent range leaves its input larger
         * (near FLT_MAX) or smaller than planned: the other input's
         * budget takes the difference, and back if that one is clamped
         * too (both clamped large: the FP32 output overflows as well). */
        s->exp_a = amp_clamp_exp(ea);
        q -= s->exp_a - ea;
        eb = (q > 14 ? 14 : q) - amp_log2_floor(b);
        s->exp_b = amp_clamp_exp(eb);
        if (s->exp_b > eb)
            s->exp_a = amp_clamp_exp(s->exp_a - (s->exp_b - eb));
    }
    amp_conv_scales_set(s);
}

/* Delayed scaling of a repeating FP16 convolution, as for GEMMs
 * (AMP_DELAYED_SLACK): a record of the device layer, one per (site,
 * shape, stream), keeps the exact exponents of the last call; the next
 * call casts both inputs in one pass at those exponents while it reduces
 * its own maxima, and its last block keeps an input's copy where the
 * delayed exponent d stands for the exact one e of this call's maxima
 * (amp_conv_delayed_fits), otherwise flags it to be cast again at e. */
struct amp_conv_record {
    int32_t exp_a;  /* the last call's exact exponents */
    int32_t exp_b;
    uint32_t valid; /* 1 once they are set (a record's memory starts as it
                       was: only 1 counts) */
};

/* The least exponent of a scaled input's maximum that the FP16 path keeps
 * for every reduction it runs (2^-3 at AMP_CONV_F16_MAX_LOG2_LEN): every
 * element within FP16's 11 significant bits of its maximum is a normal
 * number. */
#define AMP_CONV_F16_LEAST_MAX_EXP \
    ((AMP_CONV_F16_OUT_EXP - 2 - AMP_CONV_F16_MAX_LOG2_LEN) / 2)

/* The exponent the one-pass cast of input `part` (0: a) uses: the
 * record's, 0 without one. */
AMP_HD int
amp_conv_delayed_exp(const struct amp_conv_record *r, int part)
{
    if (r == NULL || r->valid != 1)
        return 0;
    return part ? r->exp_b : r->exp_a;
}

/* Whether delayed exponent d may stand for an input of maximum M (FP32
 * bits) whose exact exponent is e. d <= e: the scaled input is no larger
 * than under e, so the output bound of amp_conv_scalars_finish holds
 * whatever the other input's exponent; d >= e - AMP_DELAYED_SLACK and the
 * scaled maximum at 2^AMP_CONV_F16_LEAST_MAX_EXP or above: precision as
 * the two-pass path's for elements near the maximum, and within
 * AMP_DELAYED_SLACK bits of it below. d == e always stands (the copy is
 * the two-pass path's, bit for bit). */
AMP_HD int
amp_conv_delayed_fits(uint32_t absmax, int d, int e)
{
    if (d == e)
        return 1;
    return d < e && d >= e - AMP_DELAYED_SLACK &&
           (absmax == 0 || amp_log2_floor(amp_bits_f32(absmax)) + d >=
                               AMP_CONV_F16_LEAST_MAX_EXP);
}

/* The record after a call whose exact exponents were ea and eb. */
AMP_HD void
amp_conv_record_set(struct amp_conv_record *r, int ea, int eb)
{
    r->exp_a = ea;
    r->exp_b = eb;
    r->valid = 1;
}

/* After the one-pass cast reduced this call's maxima into s: the exact
 * scales (amp_conv_scalars_finish); with a record, each input whose
 * delayed exponent stands keeps it, the others are flagged in redo_a and
 * redo_b to be cast again at the exact one, and the record takes the
 * exact exponents for the next call. Without one (BF16, unscaled) the
 * copies stand as cast. */
AMP_HD void
amp_conv_delayed_finish(struct amp_conv_scalars *s, struct amp_conv_record *r,
                        int32_t log2_len, int32_t format)
{
    int ea, eb, da = amp_conv_delayed_exp(r, 0),
                db = amp_conv_delayed_exp(r, 1);

    amp_conv_scalars_finish(s, log2_len, format);
    if (r == NULL)
        return;
    ea = s->exp_a;
    eb = s->exp_b;
    s->redo_a = !amp_conv_delayed_fits(s->absmax_a, da, ea);
    s->redo_b = !amp_conv_delayed_fits(s->absmax_b, db, eb);
    if (!s->redo_a)
        s->exp_a = da;
    if (!s->redo_b)
        s->exp_b = db;
    amp_conv_scales_set(s);
    amp_conv_record_set(r, ea, eb);
}

/* Packed results a thread of the output pass takes at a time: the four
 * channels of one position where the packed result's channel groups come
 * in fours (the padded half results; AMP_CONV_CAST_WIDTH), else one (an
 * FP32 result packed by its real sizes may have any count). */
AMP_HD uint32_t
amp_conv_output_width(const struct amp_conv_layout *lr)
{
    return lr->per_pad[1] % AMP_CONV_CAST_WIDTH == 0 ? AMP_CONV_CAST_WIDTH
                                                     : 1;
}

/* The output pass's units of work over the packed result (a grid's
 * size). */
AMP_HD int64_t
amp_conv_output_units(const struct amp_conv_layout *lr)
{
    return amp_conv_count(lr, 1) / amp_conv_output_width(lr);
}

/* One thread's share of the output: dst = alpha * r / (scale_a scale_b) +
 * beta * old for every real element, where r is the packed result (laid
 * out by `lr`'s sizes and padding), dst and old are laid out by their
 * strides, and old is not read when beta is 0. Unit u is the
 * amp_conv_output_width channels from packed element u times the width;
 * the padding's are skipped. */
AMP_HD void
amp_conv_output_thread(const void *r, int32_t format,
                       const struct amp_conv_layout *lr, float *dst,
                       const struct amp_conv_layout *ld, const float *old,
                       const struct amp_conv_layout *lo,
                       const struct amp_conv_scalars *s, float alpha,
                       float beta, int64_t tid, int64_t nthreads)
{
    struct amp_conv_walk w;
    int64_t n = amp_conv_output_units(lr), u;
    float unscale_a = s->unscale_a, unscale_b = s->unscale_b;
    /* 32-bit channel counts and strides, as in the casts. */
    uint32_t per0 = (uint32_t)lr->per[0], per1 = (uint32_t)lr->per[1];
    int32_t dstride = (int32_t)ld->stride[1], ostride = (int32_t)lo->stride[1];
    uint32_t width = amp_conv_output_width(lr), j;
    int spatial_first = ld->stride[1] != 1, k;

    if (tid >= n)
        return;
    /* The walk over the packed result's units; each moves the three
     * offsets by `width` channels. */
    amp_conv_walk_init(&w, lr, 1);
    amp_conv_walk_packed_offset(&w, 0, lr);
    amp_conv_walk_offset(&w, 1, ld);
    amp_conv_walk_offset(&w, 2, lo);
    w.radix[0] /= width;
    AMP_UNROLL
    for (k = 0; k < 3; k++)
        w.stride[k][0] *= width;
    /* Into an output whose channels are not innermost, a position at a
     * time: the stores coalesce (the loads of the packed result, each
     * `width` channels, are apart by its channels). */
    if (spatial_first)
        amp_conv_walk_spatial_first(&w, 3);
    amp_conv_walk_start(&w, 3, tid, nthreads);
    for (u = tid; u < n; u += nthreads) {
        uint32_t real =
            amp_conv_unit_real(&w, width, per0, per1, spatial_first);
        /* old is not read, and may be NULL, when beta is 0. */
        const float *from = beta == 0.0f ? old : old + w.off[2];
        float *to = dst + w.off[1];

        for (j = 0; j < real; j++) {
            float v = amp_conv_result(r, w.off[0] + j, format) * unscale_a *
                      unscale_b;
            float c = beta == 0.0f ? 0.0f : from[(int32_t)j * ostride];

            to[(int32_t)j * dstride] = amp_axpby(alpha, v, beta, c);
        }
        amp_conv_walk_next(&w, 3);
    }
}

/* One thread's count of non-finite elements among the n packed results
 * (padded channels too: their results are zero), read in order: no walk.
 * The output kernel runs it before its own pass over the same results, in
 * a loop of its own. */
AMP_HD uint32_t
amp_conv_nonfinite_thread(const void *r, int64_t n, int32_t format,
                          int64_t tid, int64_t nthreads)
{
    uint32_t count = 0;
    int64_t g;

    for (g = tid; g < n; g += nthreads)
        count += !amp_is_finite(amp_conv_result(r, g, format));
    return count;
}

/* One thread's share of a shadow candidate's errors: ref is laid out by
 * lref's strides, cand is the same tensor packed channels last by its
 * real sizes (no padding): element g of lref's walk is cand[g]. */
AMP_HD struct amp_shadow_error
amp_conv_error_thread(const float *cand, const float *ref,
                      const struct amp_conv_layout *lref, int64_t tid,
                      int64_t nthreads)
{
    struct amp_shadow_error e = {0, 0, 0, 0.0, 0.0, 0};
    struct amp_conv_walk w;
    int64_t n = amp_conv_count(lref, 0), g;

    if (tid >= n)
        return e;
    amp_conv_walk_init(&w, lref, 0);
    amp_conv_walk_offset(&w, 0, lref);
    amp_conv_walk_start(&w, 1, tid, nthreads);
    for (g = tid; g < n; g += nthreads) {
        amp_shadow_element(&e, cand[g], ref[w.off[0]]);
        amp_conv_walk_next(&w, 1);
    }
    return e;
}

/* Whether the kernels' walks cover l (a plan's tensor, padded or not):
 * its packed copy has fewer than 2^31 elements, and every carry's move,
 * in l's strides, in its packed copy's and in its copy packed by its real
 * sizes, channels first or positions first (amp_conv_walk_spatial_first),
 * fits in 32 bits (struct amp_conv_walk). */
AMP_HD int
amp_conv_walks_fit(const struct amp_conv_layout *l)
{
    struct amp_conv_layout real = *l;
    struct amp_conv_walk w;
    int packed, first, fits = 1;

    if (amp_conv_count(l, 0) == 0)
        return 1; /* nothing to walk */
    if (amp_conv_count(l, 1) > INT32_MAX)
        return 0;
    real.per_pad[0] = l->per[0];
    real.per_pad[1] = l->per[1];
    /* In the walks' two orders: channels or positions first. */
    for (packed = 0; packed < 2; packed++) {
        for (first = 0; first < 2; first++) {
            amp_conv_walk_init(&w, l, packed);
            amp_conv_walk_offset(&w, 0, l);
            amp_conv_walk_packed_offset(&w, 1, l);
            amp_conv_walk_packed_offset(&w, 2, &real);
            if (first)
                amp_conv_walk_spatial_first(&w, 3);
            fits &= amp_conv_walk_start(&w, 3, 0, 1);
        }
    }
    return fits;
}

#endif
