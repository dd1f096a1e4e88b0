/* Host versions of the shim's kernels: every thread of the grid runs the
 * same per-thread function from kernels/amp_math.h that the device runs. */
#include "emu_kernels.h"

#include "amp_kernels.h"
#include "amp_math.h"
#include "emu.h"

#include <stdint.h>
#include <string.h>

/* Parameter i of the launch, read as type T. */
#define EMU_PARAM(launch, i, T) (*(const T *)(launch)->params[i])

static int64_t
emu_threads(const struct emu_launch *l)
{
    return (int64_t)l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] *
           l->block[1] * l->block[2];
}

/* Bytes spanned by a rows x cols column-major matrix with leading
 * dimension ld. */
static size_t
emu_matrix_span(int64_t rows, int64_t cols, int64_t ld, size_t elem)
{
    if (rows <= 0 || cols <= 0)
        return 0;
    return (size_t)((cols - 1) * ld + rows) * elem;
}

/* amp_k_absmax_f32(src, ld, rows, cols, absmax) */
static CUresult
emu_run_absmax(const struct emu_launch *l)
{
    int64_t ld = EMU_PARAM(l, 1, int64_t);
    int64_t rows = EMU_PARAM(l, 2, int64_t);
    int64_t cols = EMU_PARAM(l, 3, int64_t);
    const float *src = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                                  emu_matrix_span(rows, cols, ld, 4));
    uint32_t *absmax = emu_dev_at(EMU_PARAM(l, 4, CUdeviceptr), 4);
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!src || !absmax)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (tid = 0; tid < nthreads; tid++) {
        uint32_t local = amp_absmax_thread(src, ld, rows, cols, tid,
                                           nthreads);
        if (local > *absmax) /* atomicMax */
            *absmax = local;
    }
    return CUDA_SUCCESS;
}

static double
emu_bytes_absmax(const struct emu_launch *l)
{
    return (double)EMU_PARAM(l, 2, int64_t) * EMU_PARAM(l, 3, int64_t) * 4.0;
}

/* amp_k_gemm_scalars(s, alpha_dev, beta_dev, alpha, beta) */
static CUresult
emu_run_gemm_scalars(const struct emu_launch *l)
{
    struct amp_gemm_scalars *s =
        emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr), sizeof *s);
    CUdeviceptr alpha_dev = EMU_PARAM(l, 1, CUdeviceptr);
    CUdeviceptr beta_dev = EMU_PARAM(l, 2, CUdeviceptr);
    float alpha = EMU_PARAM(l, 3, float);
    float beta = EMU_PARAM(l, 4, float);
    const float *p;

    if (!s)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (alpha_dev) {
        if (!(p = emu_dev_at(alpha_dev, sizeof *p)))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        alpha = *p;
    }
    if (beta_dev) {
        if (!(p = emu_dev_at(beta_dev, sizeof *p)))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        beta = *p;
    }
    amp_gemm_scalars_finish(s, alpha, beta);
    return CUDA_SUCCESS;
}

static double
emu_bytes_gemm_scalars(const struct emu_launch *l)
{
    (void)l;
    return (double)sizeof(struct amp_gemm_scalars);
}

/* amp_k_cast_f32_f16(src, ld_src, dst, ld_dst, rows, cols, scale) */
static CUresult
emu_run_cast_f16(const struct emu_launch *l)
{
    int64_t ld_src = EMU_PARAM(l, 1, int64_t);
    int64_t ld_dst = EMU_PARAM(l, 3, int64_t);
    int64_t rows = EMU_PARAM(l, 4, int64_t);
    int64_t cols = EMU_PARAM(l, 5, int64_t);
    const float *src = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                                  emu_matrix_span(rows, cols, ld_src, 4));
    uint16_t *dst = emu_dev_at(EMU_PARAM(l, 2, CUdeviceptr),
                               emu_matrix_span(rows, cols, ld_dst, 2));
    const float *scale = emu_dev_at(EMU_PARAM(l, 6, CUdeviceptr), 4);
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!src || !dst || !scale)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (tid = 0; tid < nthreads; tid++)
        amp_cast_f16_thread(src, ld_src, dst, ld_dst, rows, cols, *scale, tid,
                            nthreads);
    return CUDA_SUCCESS;
}

static double
emu_bytes_cast_f16(const struct emu_launch *l)
{
    return (double)EMU_PARAM(l, 4, int64_t) * EMU_PARAM(l, 5, int64_t) * 6.0;
}

const struct emu_kernel emu_kernels[] = {
    {AMP_K_ABSMAX_F32, 5, {8, 8, 8, 8, 8}, emu_run_absmax, emu_bytes_absmax},
    {AMP_K_GEMM_SCALARS, 5, {8, 8, 8, 4, 4}, emu_run_gemm_scalars,
     emu_bytes_gemm_scalars},
    {AMP_K_CAST_F32_F16, 7, {8, 8, 8, 8, 8, 8, 8}, emu_run_cast_f16,
     emu_bytes_cast_f16},
    {NULL, 0, {0}, NULL, NULL},
};

const struct emu_kernel *
emu_kernel_find(const char *name)
{
    const struct emu_kernel *k;

    for (k = emu_kernels; k->name; k++)
        if (strcmp(k->name, name) == 0)
            return k;
    return NULL;
}
