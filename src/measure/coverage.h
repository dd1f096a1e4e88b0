/* The coverage meter: every GEMM and convolution the process ran through
 * the hooked libraries, FP32 or not, as calls and FLOPs by what became of
 * it (converted, kept FP32 and why, or another precision). Counting is an
 * atomic add or two: no lock, no allocation. */
#ifndef AMP_COVERAGE_H
#define AMP_COVERAGE_H

#include <stddef.h>
#include <stdint.h>

/* What became of one call; the FP32 kinds first, then the others. */
enum amp_cover {
    AMP_COVER_CONVERTED = 0,   /* FP32, ran converted */
    AMP_COVER_SHADOW,          /* FP32 kept: a shadow run (the program gets
                                  the FP32 result; a candidate ran beside
                                  it to be measured) */
    AMP_COVER_POLICY,          /* FP32 kept: the policy or AMPSHIM_MODE
                                  chose FP32 (a demoted site, or a mode that
                                  cannot run the call, included) */
    AMP_COVER_INVALID,         /* FP32 kept: arguments the vendor refuses */
    AMP_COVER_EMPTY,           /* FP32 kept: a size is 0 or alpha is 0 */
    AMP_COVER_PEDANTIC,        /* FP32 kept: the program asked for strict
                                  FP32 (pedantic or FMA math) */
    AMP_COVER_FALLBACK,        /* FP32 kept: conversion tried and failed */
    AMP_COVER_UNCONVERTED,     /* FP32 data on a path the shim does not
                                  convert (a convolution with Tensor Core
                                  math already, a backend plan on an
                                  engine without Tensor Cores, an unusual
                                  compute type) */
    AMP_COVER_LIBRARY,         /* FP32 kept: one of NVIDIA's libraries
                                  called (cuSOLVER's blocked updates) */
    AMP_COVER_FP64,            /* other precisions from here on */
    AMP_COVER_COMPLEX,
    AMP_COVER_HALF,            /* FP16 or BF16 */
    AMP_COVER_INT8,
    AMP_COVER_OTHER,
    AMP_COVER_COUNT,
};

#define AMP_COVER_FIRST_OTHER AMP_COVER_FP64

/* The report's key of a kind: "converted", "policy", ..., "fp16_bf16". */
const char *amp_cover_name(enum amp_cover c);

/* Counts one call of kind c; flops is its work when the vendor accepted it
 * (0 for a call it refused). */
void amp_cover_add(enum amp_cover c, double flops);

/* FLOPs of `batch` real GEMMs of m x n x k (2 m n k each; 8 for complex
 * ones); 0 when a size is negative. */
double amp_cover_gemm_flops(int64_t m, int64_t n, int64_t k, int64_t batch,
                            int complex_data);

struct amp_cover_totals {
    unsigned long long calls[AMP_COVER_COUNT];
    double flops[AMP_COVER_COUNT];
    unsigned long long calls_total;
    double total;              /* every kind */
    double fp32;               /* converted and kept FP32 */
    double fp32_kept;
    double other;              /* the other precisions */
};

/* The counts so far. */
void amp_cover_totals(struct amp_cover_totals *t);

/* The exit line (without the log prefix): "coverage: 12.3 GFLOP of GEMM
 * and convolution work, 97.1 % FP32 within the shim's reach (converted
 * 80.2 %, kept FP32 16.9 %), 2.9 % in other precisions". */
void amp_cover_line(const struct amp_cover_totals *t, char *buf, size_t cap);

/* Zeroes every count; only in a forked child, which starts clean. */
void amp_cover_reset(void);

#endif
