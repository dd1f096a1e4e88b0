/* The generic job of the emulated BLAS routines (cublas_job.h): checks
 * shared by every entry point, extents, scalars and results as the pointer
 * mode says, and the op that opens the operands of each problem in device
 * memory and runs the routine's kernel on the CPU BLAS. */
#include <cublas_v2.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_job.h"

size_t
blas_elem_size(enum blas_elem e)
{
    static const size_t sizes[] = { 4, 8, 8, 16 };

    return sizes[e];
}

size_t
blas_real_size(enum blas_elem e)
{
    return e == BLAS_S || e == BLAS_C ? 4 : 8;
}

int
blas_complex(enum blas_elem e)
{
    return e == BLAS_C || e == BLAS_Z;
}

int
blas_trans(cublasOperation_t op)
{
    switch (op) {
    case CUBLAS_OP_N:
        return CblasNoTrans;
    case CUBLAS_OP_T:
        return CblasTrans;
    case CUBLAS_OP_C:
        return CblasConjTrans;
    default:
        return -1;
    }
}

int
blas_uplo(cublasFillMode_t uplo)
{
    switch (uplo) {
    case CUBLAS_FILL_MODE_LOWER:
        return CblasLower;
    case CUBLAS_FILL_MODE_UPPER:
        return CblasUpper;
    default:
        return -1;          /* FULL is not a triangle */
    }
}

int
blas_side(cublasSideMode_t side)
{
    switch (side) {
    case CUBLAS_SIDE_LEFT:
        return CblasLeft;
    case CUBLAS_SIDE_RIGHT:
        return CblasRight;
    default:
        return -1;
    }
}

int
blas_diag(cublasDiagType_t diag)
{
    switch (diag) {
    case CUBLAS_DIAG_NON_UNIT:
        return CblasNonUnit;
    case CUBLAS_DIAG_UNIT:
        return CblasUnit;
    default:
        return -1;
    }
}

cublasStatus_t
blas_begin(cublasHandle_t handle, const char *name, int args_ok,
           struct emu_blas_config *cfg)
{
    cublasStatus_t st = emu_blas_config(handle, cfg);

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (!args_ok)
        return CUBLAS_STATUS_INVALID_VALUE;
    return (cublasStatus_t)emu_fault(name, CUBLAS_STATUS_EXECUTION_FAILED);
}

struct blas_job *
blas_job_new(const struct emu_blas_config *cfg, const char *name,
             enum blas_elem elem, blas_kernel kernel)
{
    struct blas_job *j = calloc(1, sizeof(*j));

    if (j == NULL)
        return NULL;
    j->name = name;
    j->kernel = kernel;
    j->elem = elem;
    j->cfg = *cfg;
    j->count = 1;
    return j;
}

void
blas_scalar(struct blas_job *j, int idx, const void *p, size_t size)
{
    struct blas_scalar *s = &j->scalar[idx];

    s->size = size;
    s->on_device = j->cfg.pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    s->known = !s->on_device;
    if (s->on_device)
        s->at = (CUdeviceptr)(uintptr_t)p;
    else
        memcpy(s->value, p, size);
}

/* Each real part of a scalar's value compared with `want`. */
static int
scalar_parts_are(const struct blas_scalar *s, size_t part, double re,
                 double im)
{
    for (size_t off = 0; off < s->size; off += part) {
        double v;

        if (part == 4) {
            float f;
            memcpy(&f, s->value + off, 4);
            v = f;
        } else {
            memcpy(&v, s->value + off, 8);
        }
        if (v != (off == 0 ? re : im))
            return 0;
    }
    return 1;
}

int
blas_scalar_zero(const struct blas_job *j, int idx)
{
    const struct blas_scalar *s = &j->scalar[idx];

    return s->known &&
           scalar_parts_are(s, blas_real_size(j->elem), 0.0, 0.0);
}

int
blas_scalar_one(const struct blas_job *j, int idx)
{
    const struct blas_scalar *s = &j->scalar[idx];

    return s->known &&
           scalar_parts_are(s, blas_real_size(j->elem), 1.0, 0.0);
}

void
blas_operand(struct blas_job *j, int idx, const void *p, size_t bytes,
             int written)
{
    j->op[idx].at = (CUdeviceptr)(uintptr_t)p;
    j->op[idx].bytes = bytes;
    j->op[idx].written = written;
}

size_t
blas_vector_bytes(int64_t n, int64_t inc, size_t elem)
{
    uint64_t step = inc < 0 ? (uint64_t)(-inc) : (uint64_t)inc;

    if (n <= 0)
        return 0;
    return (size_t)(((uint64_t)(n - 1) * step + 1) * elem);
}

size_t
blas_matrix_bytes(int64_t rows, int64_t cols, int64_t ld, size_t elem)
{
    if (rows <= 0 || cols <= 0)
        return 0;
    return (size_t)(((uint64_t)(cols - 1) * (uint64_t)ld + (uint64_t)rows) *
                    elem);
}

size_t
blas_packed_bytes(int64_t n, size_t elem)
{
    if (n <= 0)
        return 0;
    return (size_t)((uint64_t)n * (uint64_t)(n + 1) / 2 * elem);
}

void
blas_result(struct blas_job *j, void *p, size_t size)
{
    j->result.size = size;
    j->result.on_device = j->cfg.pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    if (j->result.on_device)
        j->result.at = (CUdeviceptr)(uintptr_t)p;
    else
        j->result.host = p;
}

/* ---- The op --------------------------------------------------------------- */

/* Inside the op: device scalars read into their values (again at each run:
 * a captured op runs once per graph launch). Fails when one is not in
 * device memory. */
static CUresult
read_scalars(struct blas_job *j)
{
    for (int i = 0; i < BLAS_MAX_SCALARS; i++) {
        struct blas_scalar *s = &j->scalar[i];
        const void *v;

        if (s->size == 0 || !s->on_device)
            continue;
        v = emu_dev_at(s->at, s->size);
        if (v == NULL)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        memcpy(s->value, v, s->size);
        s->known = 1;
    }
    return CUDA_SUCCESS;
}

/* Opens operand `o` of problem `idx`. */
static CUresult
open_operand(const struct blas_job *j, struct blas_operand *o, int64_t idx)
{
    CUdeviceptr at = o->at;

    o->host = NULL;
    if (o->bytes == 0 ||
        (o->unread_if != 0 && blas_scalar_zero(j, o->unread_if - 1)))
        return CUDA_SUCCESS;
    if (o->by_array) {
        const void *slot = emu_dev_at(at + (CUdeviceptr)idx *
                                               sizeof(CUdeviceptr),
                                      sizeof(CUdeviceptr));

        if (slot == NULL)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        memcpy(&at, slot, sizeof(at));
    } else {
        at += (CUdeviceptr)(idx * o->stride);
    }
    o->host = emu_dev_at(at, o->bytes);
    return o->host != NULL ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
}

static CUresult
call_kernel(void *arg)
{
    struct blas_job *j = arg;

    return j->kernel(j);
}

static CUresult
job_run(void *arg)
{
    struct blas_job *j = arg;
    CUresult rc = read_scalars(j);

    for (int64_t b = 0; rc == CUDA_SUCCESS && b < j->count; b++) {
        for (int i = 0; rc == CUDA_SUCCESS && i < BLAS_MAX_OPERANDS; i++)
            rc = open_operand(j, &j->op[i], b);
        if (rc == CUDA_SUCCESS)
            rc = emu_cpu_blas(call_kernel, j);
    }
    if (rc != CUDA_SUCCESS || j->result.size == 0)
        return rc;
    if (j->result.on_device) {
        void *out = emu_dev_at(j->result.at, j->result.size);

        if (out == NULL)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        emu_dev_wrote(j->result.at, j->result.size);
        memcpy(out, j->result.value, j->result.size);
    } else {
        memcpy(j->result.host, j->result.value, j->result.size);
    }
    return CUDA_SUCCESS;
}

static int
fits_int(int64_t v)
{
    return v >= INT_MIN && v <= INT_MAX;
}

/* Every size and increment a kernel hands the CPU BLAS fits its int. */
static int
args_fit(const struct blas_args *a)
{
    return fits_int(a->m) && fits_int(a->n) && fits_int(a->k) &&
           fits_int(a->kl) && fits_int(a->ku) && fits_int(a->lda) &&
           fits_int(a->ldb) && fits_int(a->ldc) && fits_int(a->incx) &&
           fits_int(a->incy);
}

cublasStatus_t
blas_submit(struct blas_job *j, double flops)
{
    int complex_type = blas_complex(j->elem);
    int wide = j->elem == BLAS_D || j->elem == BLAS_Z;
    int host_result = j->result.size != 0 && !j->result.on_device;
    double bytes = 0.0;
    cublasStatus_t st;
    struct emu_op op = { 0 }; /* a kernel node when captured */
    CUstream stream = j->cfg.stream;

    /* Debian's OpenBLAS has 32-bit ints: a _64 call beyond them is
     * refused whole rather than cut. */
    if (!args_fit(&j->a)) {
        free(j);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    for (int i = 0; i < BLAS_MAX_OPERANDS; i++)
        bytes += (double)j->op[i].bytes * (j->op[i].written ? 2.0 : 1.0);
    bytes *= (double)j->count;
    flops *= complex_type ? 4.0 : 1.0;
    op.name = j->name;
    op.run = job_run;
    op.release = free;
    op.arg = j;
    op.model_ns = emu_model_ns(flops, wide ? EMU_PREC_FP64 : EMU_PREC_FP32,
                               bytes);
    st = emu_blas_enqueue(&j->cfg, &op);
    if (st != CUBLAS_STATUS_SUCCESS || !host_result)
        return st;
    /* A result in host memory is there when the call returns. */
    if (cuStreamSynchronize(stream) != CUDA_SUCCESS)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}
