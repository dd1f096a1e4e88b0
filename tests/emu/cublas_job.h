/* The generic job behind the emulated BLAS routines of every type (S, D, C,
 * Z): operands opened in device memory with the extents the call computed,
 * scalars read as the pointer mode says, a kernel that calls the CPU BLAS
 * on them, an optional scalar result. One checked call is one queued op. */
#ifndef EMU_CUBLAS_JOB_H
#define EMU_CUBLAS_JOB_H

#include <cblas.h>
#include <cublas_api.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cublas_handle.h"
#include "emu.h"

/* The element type of a routine: cuBLAS's S, D, C and Z. */
enum blas_elem { BLAS_S, BLAS_D, BLAS_C, BLAS_Z };

/* Bytes of an element. */
size_t blas_elem_size(enum blas_elem e);

/* Bytes of an element's real part (a real element's own size). */
size_t blas_real_size(enum blas_elem e);

/* 1 for the complex types C and Z. */
int blas_complex(enum blas_elem e);

#define BLAS_MAX_OPERANDS 4
#define BLAS_MAX_SCALARS 2
#define BLAS_SCALAR_BYTES 40 /* rotm's five doubles */

/* alpha, beta, rot's c and s, rotm's param: the value given on the host
 * (copied at call time) or the device address read when the job runs. */
struct blas_scalar {
    size_t size;                /* 0: unused */
    int on_device;
    int known;                  /* value holds it: given on the host, or
                                 * read from the device by the running op */
    CUdeviceptr at;
    _Alignas(16) unsigned char value[BLAS_SCALAR_BYTES];
};

/* A matrix or vector in device memory. For problem i of a batch it lies at
 * `at` + i * `stride` bytes, or at the i-th device pointer of the device
 * array `at` (`by_array`). */
struct blas_operand {
    CUdeviceptr at;
    size_t bytes;               /* extent of one problem's operand; 0: none */
    int64_t stride;
    int by_array;
    int written;                /* for the modelled bytes: read and written */
    int unread_if;              /* 1 + i: not opened when scalar i (alpha,
                                 * beta) is 0; 0: always opened */
    void *host;                 /* in the kernel: the host alias, or NULL */
};

/* The call's sizes and modes, as CBLAS takes them. */
struct blas_args {
    int64_t m, n, k, kl, ku;
    int64_t lda, ldb, ldc, incx, incy;
    CBLAS_SIDE side;
    CBLAS_UPLO uplo;
    CBLAS_TRANSPOSE trans, transb;
    CBLAS_DIAG diag;
};

struct blas_job;

/* Computes one problem on the host aliases; CUDA_SUCCESS, or
 * CUDA_ERROR_OUT_OF_MEMORY when a temporary cannot be had. Called through
 * emu_cpu_blas. */
typedef CUresult (*blas_kernel)(struct blas_job *j);

struct blas_job {
    const char *name;
    blas_kernel kernel;
    enum blas_elem elem;
    int form;                   /* which form of a family the kernel runs
                                 * (amin or amax, dotc or dotu, ...) */
    struct emu_blas_config cfg;
    struct blas_args a;
    int64_t count;              /* problems (batches); 1 unless batched */
    struct blas_operand op[BLAS_MAX_OPERANDS];
    struct blas_scalar scalar[BLAS_MAX_SCALARS];
    /* A scalar result (dot, nrm2, asum, amax, amin, rotmg's param): the
     * kernel writes `value`; it is stored at `at` in device memory or at
     * `host`. */
    struct {
        size_t size;            /* 0: none */
        int on_device;
        CUdeviceptr at;
        void *host;
        _Alignas(16) unsigned char value[BLAS_SCALAR_BYTES];
    } result;
};

/* The start every entry point shares, in the library's order: the handle
 * (NOT_INITIALIZED), then `args_ok` (INVALID_VALUE), then an injected
 * fault for `name`. Fills *cfg. */
cublasStatus_t blas_begin(cublasHandle_t handle, const char *name,
                          int args_ok, struct emu_blas_config *cfg);

/* A new job for a checked call: one problem, no operands. NULL without
 * memory. */
struct blas_job *blas_job_new(const struct emu_blas_config *cfg,
                              const char *name, enum blas_elem elem,
                              blas_kernel kernel);

/* Takes scalar `idx` of `size` bytes from `p` as the pointer mode says. */
void blas_scalar(struct blas_job *j, int idx, const void *p, size_t size);

/* 1 when scalar `idx` is known (given on the host, or inside the op) and
 * is zero (every part). */
int blas_scalar_zero(const struct blas_job *j, int idx);

/* 1 when scalar `idx` is known and is one (1 + 0i). */
int blas_scalar_one(const struct blas_job *j, int idx);

/* Sets operand `idx` at `p` spanning `bytes`. */
void blas_operand(struct blas_job *j, int idx, const void *p, size_t bytes,
                  int written);

/* Bytes spanned by a vector of n elements with increment inc (either
 * sign), by a column-major rows x cols matrix with leading dimension ld,
 * and by a packed triangle of order n; 0 when empty. */
size_t blas_vector_bytes(int64_t n, int64_t inc, size_t elem);
size_t blas_matrix_bytes(int64_t rows, int64_t cols, int64_t ld,
                         size_t elem);
size_t blas_packed_bytes(int64_t n, size_t elem);

/* The job's scalar result: `size` bytes to `p`, on the device or the host
 * as the pointer mode says. */
void blas_result(struct blas_job *j, void *p, size_t size);

/* Queues the job on the handle's stream with a modelled time of `flops`
 * real floating-point operations (a complex multiply-add counts as four
 * real ones: the caller gives the real count for a real routine, and the
 * job scales it) and the bytes its operands move; then, for a result the
 * host reads, waits for the stream, as the library does. Frees the job.
 * NOT_SUPPORTED when a size does not fit the CPU BLAS's int (a _64 entry
 * point with a size over 2^31 - 1). */
cublasStatus_t blas_submit(struct blas_job *j, double flops);

/* CBLAS's enums from cuBLAS's; -1 for a value cuBLAS does not have. */
int blas_trans(cublasOperation_t op);
int blas_uplo(cublasFillMode_t uplo);
int blas_side(cublasSideMode_t side);
int blas_diag(cublasDiagType_t diag);

/* Scalar `idx`'s value as a float, a double, or where it lies (complex
 * values and arrays, as CBLAS takes them). */
static inline float
blas_f(const struct blas_job *j, int idx)
{
    float v;

    memcpy(&v, j->scalar[idx].value, sizeof(v));
    return v;
}

static inline double
blas_d(const struct blas_job *j, int idx)
{
    double v;

    memcpy(&v, j->scalar[idx].value, sizeof(v));
    return v;
}

static inline const void *
blas_p(const struct blas_job *j, int idx)
{
    return j->scalar[idx].value;
}

/* max(1, v), for leading dimension checks. */
static inline int64_t
blas_max1(int64_t v)
{
    return v > 1 ? v : 1;
}

/* Element (i, j) of a column-major matrix and element i of a vector, as
 * kernels that loop address them (increments of either sign: element 0 of
 * a negative increment is the last in memory, as in the reference BLAS). */
static inline size_t
blas_at(int64_t i, int64_t j, int64_t ld)
{
    return (size_t)i + (size_t)j * (size_t)ld;
}

static inline size_t
blas_vat(int64_t i, int64_t n, int64_t inc)
{
    return inc >= 0 ? (size_t)(i * inc) : (size_t)((n - 1 - i) * -inc);
}

/* One cuBLAS entry point with int sizes and its _64 twin with int64_t
 * sizes, from one definition macro DEF(name, T, R, I, E): T the element
 * type, R its real type, I the size type, E the blas_elem. */
#define BLAS_BOTH(DEF, name, T, R, E)                                        \
    DEF(name, T, R, int, E)                                                  \
    DEF(name##_64, T, R, int64_t, E)

#endif
