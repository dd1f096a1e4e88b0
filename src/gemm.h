/* The GEMM path: a call as a plain descriptor, the decision, and the FP16
 * preparation (scales and casts into stream-ordered scratch). */
#ifndef AMP_GEMM_H
#define AMP_GEMM_H

#include "config.h"
#include "device.h"
#include "status.h"

#include <stddef.h>
#include <stdint.h>

enum amp_op {
    AMP_OP_N = 0,
    AMP_OP_T = 1, /* CUBLAS_OP_T, and CUBLAS_OP_C on real data */
};

/* One FP32 GEMM as the application asked for it:
 * C = alpha * op(A) * op(B) + beta * C, column-major. */
struct amp_gemm_desc {
    enum amp_op transa, transb;
    int ops_valid;             /* both ops were N, T or C */
    int64_t m, n, k;
    int64_t lda, ldb, ldc;
    amp_devptr a, b, c;
    const float *alpha, *beta; /* host or device pointers, per... */
    int scalars_on_device;     /* ...CUBLAS_POINTER_MODE_DEVICE */
    int pedantic;              /* the handle asked for strict FP32 */
    amp_stream stream;         /* the application handle's stream */
};

/* Why a call stays FP32 by decision. */
enum amp_gemm_skip {
    AMP_GEMM_CONVERT = 0,
    AMP_GEMM_SKIP_MODE,      /* the mode is fp32 */
    AMP_GEMM_SKIP_INVALID,   /* arguments cuBLAS refuses: it says so itself */
    AMP_GEMM_SKIP_EMPTY,     /* m, n or k is 0, or alpha is 0 */
    AMP_GEMM_SKIP_PEDANTIC,  /* CUBLAS_PEDANTIC_MATH on the handle */
};

const char *amp_gemm_skip_reason(enum amp_gemm_skip skip);

/* 1 when cuBLAS accepts the arguments (ops, sizes, leading dimensions). */
int amp_gemm_args_valid(const struct amp_gemm_desc *d);

/* Whether to convert this call in `mode`; reads a host alpha, never a
 * device one. */
enum amp_gemm_skip amp_gemm_decide(const struct amp_gemm_desc *d,
                                   enum amp_mode mode);

/* Where each part lives in the one scratch allocation of a converted call:
 * the scalars, then A and B in FP16 with leading dimensions padded to
 * multiples of 8 elements, every part 256-byte aligned. */
struct amp_gemm_plan {
    int64_t rows_a, cols_a, ld_a16;
    int64_t rows_b, cols_b, ld_b16;
    size_t off_a, off_b;
    size_t bytes;
};

void amp_gemm_plan(const struct amp_gemm_desc *d, struct amp_gemm_plan *p);

/* What the FP16 GEMM gets: C = alpha' * op(A16) * op(B16) + beta' * C with
 * alpha' and beta' in device memory (device pointer mode). */
struct amp_gemm_f16 {
    amp_devptr scratch;
    amp_stream stream;
    amp_devptr a16, b16;
    int64_t lda16, ldb16;
    amp_devptr alpha, beta;
};

/* Queues on d->stream: scratch allocation, absolute maxima, scales and
 * compensated alpha, and the two casts. Nothing of the caller's is written.
 * Fails with AMP_ERR_TOO_BIG beyond scratch_max, or AMP_ERR_DRIVER; on
 * failure nothing stays allocated. */
enum amp_status amp_gemm_prepare_f16(struct amp_dev *dev,
                                     const struct amp_gemm_desc *d,
                                     uint64_t scratch_max,
                                     struct amp_gemm_f16 *out);

/* Queues the scratch free after the work that uses it. */
void amp_gemm_release_f16(struct amp_gemm_f16 *f16);

#endif
