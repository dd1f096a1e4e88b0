/* What the cuBLASLt hook (cublaslt.c) and its steps (cublaslt_steps.c)
 * share: the program's call as the hook read it, and the shim's own
 * handle and the steps' issuer that the hook's vendor names. */
#ifndef AMP_CUBLASLT_STEPS_H
#define AMP_CUBLASLT_STEPS_H

#include "cublaslt_symbols.h"

#include "device/device.h"
#include "measure/stats.h"
#include "run/gemm.h"

#include <stdint.h>

/* A matrix layout's attributes. */
struct amp_lt_matrix {
    uint32_t type;             /* cudaDataType */
    int32_t order;             /* cublasLtOrder_t */
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch;
    int64_t stride;            /* STRIDED_BATCH_OFFSET, elements */
    int64_t plane;
    uint32_t batch_mode;       /* cublasLtBatchMode_t */
};

/* The matmul descriptor's attributes the shim reads, and what else of
 * the call cuBLASLt checks before it runs: the handle, the algorithm and
 * the workspace. Zeroed before it is filled: it compares as bytes. */
struct amp_lt_call {
    cublasLtHandle_t handle;
    int has_algo;
    cublasLtMatmulAlgo_t algo;
    uint64_t workspace_size;
    int workspace_null, workspace_misaligned;
    int32_t compute, scale, pointer_mode, transa, transb, transc, fill;
    int64_t alpha_stride;      /* ALPHA_VECTOR_BATCH_STRIDE */
    uint32_t epilogue;
    const void *bias;
    int64_t bias_stride;
    int32_t bias_type;
    void *aux;
    int64_t aux_ld, aux_stride;
    int32_t aux_type;
    int32_t sm_count_target;   /* the program's SM carve-out, 0: none */
    int narrow;                /* FP8 scaling or an emulation descriptor */
    int atomic_sync;           /* atomic synchronisation (cuBLAS 12.x) */
    struct amp_lt_matrix a, b, c, d;
};

/* The program's descriptors, for cuBLASLt's own checks. */
struct amp_lt_descs {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c, d;
};

/* What the hook hands the converted path: the call, its descriptors and
 * the program's workspace (NULL: none). */
struct amp_lt_verdict;
struct amp_lt_hooked {
    const struct amp_lt_call *call;
    struct amp_lt_descs descs;
    void *workspace;
    struct amp_lt_verdict *verdict; /* the hook's memo (cublaslt.c), or NULL */
};

/* The hook's counters (cublaslt.c): the steps count their heuristic
 * queries there. */
extern struct amp_api_stats amp_lt_stats;

/* The largest power of two up to 256 that divides the address: what the
 * heuristics may assume of a pointer. */
uint32_t amp_lt_align(amp_devptr p);

/* The calling thread's own cuBLASLt handle for dev's context, with its
 * heuristic answers (struct amp_gemm_vendor's own); NULL when there is
 * none. */
void *amp_lt_own_get(struct amp_dev *dev, int make);

/* Issues run's steps for the hooked call (a struct amp_lt_hooked) on own
 * (struct amp_gemm_vendor's issue). */
enum amp_status amp_lt_issue(void *own, const void *call,
                             struct amp_gemm_run *run);

#endif
