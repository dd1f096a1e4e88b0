/* The emulated cuDNN tensor transforms: the tensor-transform descriptors,
 * cudnnInitTransformDest, cudnnTransformTensorEx and cudnnTransformFilter
 * (cudnn_ops.h, cudnn_cnn.h of cuDNN 9, where they are deprecated but
 * exported).
 *
 * NVIDIA's header gives the calls and their parameters; its API reference
 * of the legacy calls describes padding before and after each dimension
 * and folding, and is not in the stored documentation this emulator was
 * checked against. What a transform does was taken from a public test of
 * cuDNN's classic API that passes on a GPU (an RTX 3060 with cuDNN 9):
 *
 *   - padBeforeA and padAfterA have one entry per dimension, in the
 *     tensor's logical order (N, C, spatial...); foldA one per spatial
 *     dimension. NULL arrays mean none.
 *   - Folding pads first, then cuts each padded spatial extent S into
 *     ceil(S / f) blocks of f: destination channel
 *     padBefore[C] + (offset in the block, row-major over the spatial
 *     dimensions) * C + c, the channels (C + padBefore[C] + padAfter[C]) *
 *     (product of the folds). What no source element lands on is zero.
 *   - Folding with beta != 0 is NOT_SUPPORTED; unfolding (the inverse: the
 *     channels split back into the blocks) takes alpha and beta, and a
 *     transform without padding or folding is a layout change (to the
 *     destination descriptor's strides) with alpha and beta.
 *   - cudnnInitTransformDest gives the padded, folded sizes, packed in the
 *     descriptor's format, of the source's type; cudnnTransformFilter
 *     folds filters the same way (K padded like the batch).
 *
 * The emulator's own choices, where that test is silent: padding without
 * folding takes beta (the padding as zeros blended with beta * y);
 * unfolding with padding is NOT_SUPPORTED; data types convert as in
 * cudnnTransformTensor. cudnnGetFoldedConvBackwardDataDescriptors stays a
 * stub: what its folded convolution descriptors hold is documented
 * nowhere the emulator could check. */
#include <cudnn.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"
#include "emu.h"

#define BAD(...) emu_dnn_error(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)
#define UNSUPPORTED(...) emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED, __VA_ARGS__)

/* ---- Descriptors ---------------------------------------------------------- */

static int
transform_live(cudnnTensorTransformDescriptor_t d)
{
    return d != NULL && d->magic == EMU_DNN_MAGIC_TRANSFORM;
}

cudnnStatus_t
cudnnCreateTensorTransformDescriptor(cudnnTensorTransformDescriptor_t *transformDesc)
{
    return emu_dnn_create_desc((void **)transformDesc, sizeof(**transformDesc),
                               EMU_DNN_MAGIC_TRANSFORM);
}

cudnnStatus_t
cudnnDestroyTensorTransformDescriptor(cudnnTensorTransformDescriptor_t transformDesc)
{
    return emu_dnn_destroy_desc(transformDesc, EMU_DNN_MAGIC_TRANSFORM);
}

/* BAD_PARAM for a descriptor that is not one, a rank outside 3 to
 * CUDNN_DIM_MAX (the tensors the legacy API takes), a format or direction
 * outside its enumeration, a negative padding or a fold of 0. */
cudnnStatus_t
cudnnSetTensorTransformDescriptor(cudnnTensorTransformDescriptor_t transformDesc,
                                  const uint32_t nbDims,
                                  const cudnnTensorFormat_t destFormat,
                                  const int32_t padBeforeA[],
                                  const int32_t padAfterA[],
                                  const uint32_t foldA[],
                                  const cudnnFoldingDirection_t direction)
{
    const char *api = "cudnnSetTensorTransformDescriptor";
    cudnnTensorTransformDescriptor_t d = transformDesc;

    if (!transform_live(d))
        return BAD("%s: invalid descriptor", api);
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return BAD("%s: %u dimensions (3 to %d)", api, nbDims, CUDNN_DIM_MAX);
    if (destFormat != CUDNN_TENSOR_NCHW && destFormat != CUDNN_TENSOR_NHWC &&
        destFormat != CUDNN_TENSOR_NCHW_VECT_C)
        return BAD("%s: format %d", api, (int)destFormat);
    if (direction != CUDNN_TRANSFORM_FOLD &&
        direction != CUDNN_TRANSFORM_UNFOLD)
        return BAD("%s: direction %d", api, (int)direction);
    for (uint32_t i = 0; i < nbDims; i++) {
        if ((padBeforeA != NULL && padBeforeA[i] < 0) ||
            (padAfterA != NULL && padAfterA[i] < 0))
            return BAD("%s: negative padding of dimension %u", api, i);
        if (foldA != NULL && i < nbDims - 2 && foldA[i] == 0)
            return BAD("%s: fold 0 of spatial dimension %u", api, i);
    }
    memset(d->pad_before, 0, sizeof(d->pad_before));
    memset(d->pad_after, 0, sizeof(d->pad_after));
    for (uint32_t i = 0; i < nbDims; i++) {
        d->pad_before[i] = padBeforeA != NULL ? padBeforeA[i] : 0;
        d->pad_after[i] = padAfterA != NULL ? padAfterA[i] : 0;
        d->fold[i] = foldA != NULL && i < nbDims - 2 ? foldA[i] : 1;
    }
    d->nb_dims = (int)nbDims;
    d->format = destFormat;
    d->direction = direction;
    d->is_set = 1;
    return CUDNN_STATUS_SUCCESS;
}

/* BAD_PARAM unless nbDimsRequested is the descriptor's rank; each output
 * given is written (foldA: one per spatial dimension). */
cudnnStatus_t
cudnnGetTensorTransformDescriptor(cudnnTensorTransformDescriptor_t transformDesc,
                                  uint32_t nbDimsRequested,
                                  cudnnTensorFormat_t *destFormat,
                                  int32_t padBeforeA[], int32_t padAfterA[],
                                  uint32_t foldA[],
                                  cudnnFoldingDirection_t *direction)
{
    cudnnTensorTransformDescriptor_t d = transformDesc;

    if (!transform_live(d) || !d->is_set)
        return BAD("cudnnGetTensorTransformDescriptor: invalid descriptor");
    if ((int)nbDimsRequested != d->nb_dims)
        return BAD("cudnnGetTensorTransformDescriptor: %u dimensions "
                   "requested, the descriptor has %d", nbDimsRequested,
                   d->nb_dims);
    for (int i = 0; i < d->nb_dims; i++) {
        if (padBeforeA != NULL)
            padBeforeA[i] = d->pad_before[i];
        if (padAfterA != NULL)
            padAfterA[i] = d->pad_after[i];
        if (foldA != NULL && i < d->nb_dims - 2)
            foldA[i] = (uint32_t)d->fold[i];
    }
    if (destFormat != NULL)
        *destFormat = d->format;
    if (direction != NULL)
        *direction = d->direction;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Shapes --------------------------------------------------------------- */

static int
folds(cudnnTensorTransformDescriptor_t d)
{
    for (int i = 0; i < d->nb_dims - 2; i++) {
        if (d->fold[i] > 1)
            return 1;
    }
    return 0;
}

static int
pads(cudnnTensorTransformDescriptor_t d)
{
    for (int i = 0; i < d->nb_dims; i++) {
        if (d->pad_before[i] != 0 || d->pad_after[i] != 0)
            return 1;
    }
    return 0;
}

/* The destination's sizes for a source of sizes `src`: folding pads and
 * cuts the spatial extents into blocks; unfolding (no padding) splits the
 * channels back. BAD_PARAM when the source does not fit. */
static cudnnStatus_t
dest_dims(cudnnTensorTransformDescriptor_t d, const char *api, int nb,
          const int src[], int out[CUDNN_DIM_MAX])
{
    int64_t block = 1, v;

    if (nb != d->nb_dims)
        return BAD("%s: the tensor has %d dimensions, the transform %d", api,
                   nb, d->nb_dims);
    for (int i = 0; i < nb - 2; i++)
        block *= d->fold[i];
    if (d->direction == CUDNN_TRANSFORM_UNFOLD && folds(d)) {
        if (pads(d))
            return UNSUPPORTED("%s: unfolding with padding", api);
        if (src[1] % block != 0)
            return BAD("%s: %d channels do not unfold by %lld", api, src[1],
                       (long long)block);
        out[0] = src[0];
        out[1] = (int)(src[1] / block);
        for (int i = 2; i < nb; i++) {
            v = (int64_t)src[i] * d->fold[i - 2];
            if (v > INT32_MAX)
                return BAD("%s: dimension %d too large", api, i);
            out[i] = (int)v;
        }
        return CUDNN_STATUS_SUCCESS;
    }
    for (int i = 0; i < nb; i++) {
        v = (int64_t)src[i] + d->pad_before[i] + d->pad_after[i];
        if (i == 1)
            v *= block;
        else if (i >= 2)
            v = (v + d->fold[i - 2] - 1) / d->fold[i - 2];
        if (v > INT32_MAX)
            return BAD("%s: dimension %d too large", api, i);
        out[i] = (int)v;
    }
    return CUDNN_STATUS_SUCCESS;
}

/* The destination descriptor of a transform of `srcDesc`: the padded,
 * folded sizes, packed in the transform's format, of the source's type. */
cudnnStatus_t
cudnnInitTransformDest(const cudnnTensorTransformDescriptor_t transformDesc,
                       const cudnnTensorDescriptor_t srcDesc,
                       cudnnTensorDescriptor_t destDesc,
                       size_t *destSizeInBytes)
{
    const char *api = "cudnnInitTransformDest";
    cudnnTensorTransformDescriptor_t d = transformDesc;
    int dim[CUDNN_DIM_MAX];
    cudnnStatus_t st;

    /* The destination is created, and need not have been set. */
    if (!transform_live(d) || !d->is_set || !emu_dnn_tensor_ok(srcDesc) ||
        destDesc == NULL || destDesc->magic != EMU_DNN_MAGIC_TENSOR)
        return BAD("%s: invalid descriptor", api);
    if (destSizeInBytes == NULL)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                             "%s: destSizeInBytes is NULL", api);
    if (d->format == CUDNN_TENSOR_NCHW_VECT_C)
        return UNSUPPORTED("%s: NCHW_VECT_C needs the vector types, which "
                           "are not emulated", api);
    st = dest_dims(d, api, srcDesc->nb_dims, srcDesc->dim, dim);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnSetTensorNdDescriptorEx(destDesc, d->format, srcDesc->type,
                                          srcDesc->nb_dims, dim);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnGetTensorSizeInBytes(destDesc, destSizeInBytes);
    return st;
}

/* ---- The transform -------------------------------------------------------- */

struct transform_job {
    const char *api;
    struct emu_dnn_view src, dst;
    double alpha, beta;
    struct cudnnTensorTransformStruct t;
    int unfold;                      /* t unfolds (folds > 1) */
};

/* Source offset of destination element `coord`, or -1 where nothing lands
 * (padding, the channels past the folded ones). */
static int64_t
source_of(const struct transform_job *j, const int coord[])
{
    const struct emu_dnn_view *s = &j->src;
    int nsp = s->nb_dims - 2, at[CUDNN_DIM_MAX];
    int64_t off = 0;

    if (j->unfold) {
        /* dst (n, c, x...) from src (n, block offset * C + c, x / f...). */
        int64_t inblock = 0;

        at[0] = coord[0];
        for (int i = 0; i < nsp; i++) {
            inblock = inblock * j->t.fold[i] + coord[2 + i] % j->t.fold[i];
            at[2 + i] = coord[2 + i] / j->t.fold[i];
        }
        at[1] = (int)(inblock * j->dst.dim[1] + coord[1]);
    } else {
        /* dst (n', c', x'...) from src (n' - pad, c, x' * f + r - pad...),
         * c' = pad[C] + (r, row-major) * C + c. */
        int c = coord[1] - j->t.pad_before[1];
        int64_t inblock;

        if (c < 0)
            return -1;
        inblock = c / s->dim[1];
        at[1] = c % s->dim[1];
        at[0] = coord[0] - j->t.pad_before[0];
        for (int i = nsp - 1; i >= 0; i--) {
            at[2 + i] = coord[2 + i] * j->t.fold[i] +
                        (int)(inblock % j->t.fold[i]) - j->t.pad_before[2 + i];
            inblock /= j->t.fold[i];
        }
        if (inblock != 0)
            return -1;
    }
    for (int i = 0; i < s->nb_dims; i++) {
        if (at[i] < 0 || at[i] >= s->dim[i])
            return -1;
        off += (int64_t)at[i] * s->stride[i];
    }
    return off;
}

static CUresult
transform_run(void *arg)
{
    const struct transform_job *j = arg;
    const struct emu_dnn_view *d = &j->dst;
    void *src = emu_dnn_view_at(&j->src), *dst = emu_dnn_view_at(d);
    int coord[CUDNN_DIM_MAX] = { 0 };
    size_t n = emu_dnn_view_count(d);
    int64_t di = 0, si;

    if (src == NULL || dst == NULL)
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS, j->api,
                           "a tensor is not in device memory");
    for (size_t lin = 0; lin < n; lin++) {
        si = source_of(j, coord);
        emu_dnn_blendd(dst, di, d->type, j->alpha, j->beta,
                       si < 0 ? 0.0 : emu_dnn_loadd(src, si, j->src.type));
        for (int k = d->nb_dims - 1; k >= 0; k--) {
            di += d->stride[k];
            if (++coord[k] < d->dim[k])
                break;
            di -= (int64_t)d->dim[k] * d->stride[k];
            coord[k] = 0;
        }
    }
    emu_dnn_view_wrote(d);
    return CUDA_SUCCESS;
}

/* The checks and the queued run shared by tensors and filters: `src` and
 * `dst` are views with their descriptors' sizes (a filter's K, C,
 * spatial). */
static cudnnStatus_t
transform(cudnnHandle_t handle, const char *api,
          cudnnTensorTransformDescriptor_t d, const void *alpha,
          const struct emu_dnn_view *src, const void *beta,
          const struct emu_dnn_view *dst)
{
    struct emu_dnn_config cfg;
    struct transform_job *job;
    int want[CUDNN_DIM_MAX];
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (!transform_live(d) || !d->is_set)
        return BAD("%s: invalid transform descriptor", api);
    if (alpha == NULL || beta == NULL || src->ptr == 0 || dst->ptr == 0)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                             "%s: NULL scalar or data", api);
    if (!emu_dnn_float_type(src->type) || !emu_dnn_float_type(dst->type))
        return UNSUPPORTED("%s: data types %d to %d", api, (int)src->type,
                           (int)dst->type);
    st = dest_dims(d, api, src->nb_dims, src->dim, want);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (dst->nb_dims != src->nb_dims)
        return BAD("%s: the destination has %d dimensions, the source %d",
                   api, dst->nb_dims, src->nb_dims);
    for (int i = 0; i < dst->nb_dims; i++) {
        if (dst->dim[i] != want[i])
            return BAD("%s: destination dimension %d is %d, the transform "
                       "gives %d", api, i, dst->dim[i], want[i]);
    }
    if (src->ptr == dst->ptr && (pads(d) || folds(d)))
        return BAD("%s: in place with padding or folding", api);
    if (d->direction == CUDNN_TRANSFORM_FOLD && folds(d) &&
        emu_dnn_scalar(beta, dst->type) != 0.0)
        return UNSUPPORTED("%s: folding with beta != 0", api);
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "out of host memory");
    job->api = api;
    job->src = *src;
    job->dst = *dst;
    job->alpha = emu_dnn_scalar(alpha, dst->type);
    job->beta = emu_dnn_scalar(beta, dst->type);
    job->t = *d;
    job->unfold = d->direction == CUDNN_TRANSFORM_UNFOLD && folds(d);
    return emu_dnn_submit(&cfg, api, transform_run, free, job,
                          (double)emu_dnn_view_count(dst),
                          emu_dnn_view_bytes(src) + emu_dnn_view_bytes(dst));
}

cudnnStatus_t
cudnnTransformTensorEx(cudnnHandle_t handle,
                       const cudnnTensorTransformDescriptor_t transDesc,
                       const void *alpha, const cudnnTensorDescriptor_t srcDesc,
                       const void *srcData, const void *beta,
                       const cudnnTensorDescriptor_t destDesc, void *destData)
{
    struct emu_dnn_view src, dst;

    if (!emu_dnn_tensor_ok(srcDesc) || !emu_dnn_tensor_ok(destDesc))
        return BAD("cudnnTransformTensorEx: invalid tensor descriptor");
    emu_dnn_view_tensor(&src, srcDesc, srcData);
    emu_dnn_view_tensor(&dst, destDesc, destData);
    return transform(handle, "cudnnTransformTensorEx", transDesc, alpha, &src,
                     beta, &dst);
}

cudnnStatus_t
cudnnTransformFilter(cudnnHandle_t handle,
                     const cudnnTensorTransformDescriptor_t transDesc,
                     const void *alpha, const cudnnFilterDescriptor_t srcDesc,
                     const void *srcData, const void *beta,
                     const cudnnFilterDescriptor_t destDesc, void *destData)
{
    struct emu_dnn_view src, dst;

    if (!emu_dnn_filter_ok(srcDesc) || !emu_dnn_filter_ok(destDesc))
        return BAD("cudnnTransformFilter: invalid filter descriptor");
    emu_dnn_view_filter(&src, srcDesc, srcData);
    emu_dnn_view_filter(&dst, destDesc, destData);
    return transform(handle, "cudnnTransformFilter", transDesc, alpha, &src,
                     beta, &dst);
}
