/* The emulated cuDNN descriptors: tensors, filters, convolutions,
 * activations, pooling, tensor operations, LRN and the batch
 * normalisation parameters' derived tensor; their setters, getters and the
 * convolution and pooling output sizes. Everything here is host-only, as
 * in the real library. */
#include <cudnn.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"

#define BAD(...) emu_dnn_error(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)

/* The real library limits a tensor to 2^31 elements. */
#define MAX_ELEMENTS ((int64_t)INT_MAX)

size_t
emu_dnn_type_size(cudnnDataType_t type)
{
    switch (type) {
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
    case CUDNN_DATA_UINT32:
        return 4;
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
    case CUDNN_DATA_COMPLEX_FP32:
        return 8;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
        return 2;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
    case CUDNN_DATA_FP8_E8M0:
        return 1;
    case CUDNN_DATA_COMPLEX_FP64:
        return 16;
    default:
        return 0;
    }
}

static int
type_valid(cudnnDataType_t type)
{
    return emu_dnn_type_size(type) != 0;
}

/* Creation and destruction share one shape for every descriptor kind. */
cudnnStatus_t
emu_dnn_create_desc(void **out, size_t size, uint32_t magic)
{
    uint32_t *d;

    if (out == NULL)
        return BAD("descriptor pointer is NULL");
    d = calloc(1, size);
    if (d == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "out of host memory");
    *d = magic;
    *out = d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
emu_dnn_destroy_desc(void *d, uint32_t magic)
{
    /* Destroying NULL is allowed, as free(NULL) is. */
    if (d == NULL)
        return CUDNN_STATUS_SUCCESS;
    if (*(uint32_t *)d != magic)
        return BAD("not a live descriptor of this kind");
    *(uint32_t *)d = 0;
    free(d);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Tensors ------------------------------------------------------------- */

int
emu_dnn_tensor_ok(cudnnTensorDescriptor_t t)
{
    return t != NULL && t->magic == EMU_DNN_MAGIC_TENSOR && t->is_set;
}

static int
tensor_live(cudnnTensorDescriptor_t t)
{
    return t != NULL && t->magic == EMU_DNN_MAGIC_TENSOR;
}

cudnnStatus_t
cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc)
{
    return emu_dnn_create_desc((void **)tensorDesc, sizeof(**tensorDesc),
                               EMU_DNN_MAGIC_TENSOR);
}

cudnnStatus_t
cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc)
{
    return emu_dnn_destroy_desc(tensorDesc, EMU_DNN_MAGIC_TENSOR);
}

/* Packed strides for sizes dim[] in the given format: NCHW is row-major;
 * NHWC puts C innermost and the spatial dimensions above it. */
static void
packed_strides(int nb, const int dim[], cudnnTensorFormat_t format,
               int64_t stride[])
{
    int64_t s = 1;

    if (format == CUDNN_TENSOR_NHWC) {
        stride[1] = 1;
        s = dim[1];
        for (int i = nb - 1; i >= 2; i--) {
            stride[i] = s;
            s *= dim[i];
        }
        stride[0] = s;
        return;
    }
    for (int i = nb - 1; i >= 0; i--) {
        stride[i] = s;
        s *= dim[i];
    }
}

/* Checks sizes and strides and stores them. The real library takes 3 to
 * CUDNN_DIM_MAX dimensions; sizes and strides must be positive. */
static cudnnStatus_t
tensor_store(cudnnTensorDescriptor_t t, cudnnDataType_t type, int nb,
             const int dim[], const int64_t stride[])
{
    int64_t count = 1, span = 1;

    if (!tensor_live(t))
        return BAD("invalid tensor descriptor");
    if (!type_valid(type))
        return BAD("invalid data type %d", (int)type);
    if (nb < 3 || nb > CUDNN_DIM_MAX)
        return emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED,
                             "%d dimensions (3 to %d supported)", nb,
                             CUDNN_DIM_MAX);
    for (int i = 0; i < nb; i++) {
        if (dim[i] <= 0 || stride[i] <= 0)
            return BAD("dimension %d: size %d, stride %lld", i, dim[i],
                       (long long)stride[i]);
        count *= dim[i];
        span += (int64_t)(dim[i] - 1) * stride[i];
        if (count > MAX_ELEMENTS || span > MAX_ELEMENTS || stride[i] > INT_MAX)
            return emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED,
                                 "tensor exceeds 2^31 elements");
    }
    t->type = type;
    t->nb_dims = nb;
    for (int i = 0; i < CUDNN_DIM_MAX; i++) {
        t->dim[i] = i < nb ? dim[i] : 0;
        t->stride[i] = i < nb ? (int)stride[i] : 0;
    }
    t->is_set = 1;
    return CUDNN_STATUS_SUCCESS;
}

static int
format_valid(cudnnTensorFormat_t f)
{
    return f == CUDNN_TENSOR_NCHW || f == CUDNN_TENSOR_NHWC;
}

static cudnnStatus_t
tensor_packed(cudnnTensorDescriptor_t t, cudnnTensorFormat_t format,
              cudnnDataType_t type, int nb, const int dim[])
{
    int64_t stride[CUDNN_DIM_MAX];

    /* NCHW_VECT_C needs the vector data types, which are not emulated. */
    if (!format_valid(format))
        return BAD("tensor format %d not supported", (int)format);
    if (nb < 3 || nb > CUDNN_DIM_MAX)
        return tensor_store(t, type, nb, dim, NULL);
    for (int i = 0; i < nb; i++) {
        if (dim[i] <= 0)
            return BAD("dimension %d has size %d", i, dim[i]);
    }
    packed_strides(nb, dim, format, stride);
    return tensor_store(t, type, nb, dim, stride);
}

cudnnStatus_t
cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc,
                           cudnnTensorFormat_t format,
                           cudnnDataType_t dataType, int n, int c, int h,
                           int w)
{
    int dim[4] = { n, c, h, w };

    return tensor_packed(tensorDesc, format, dataType, 4, dim);
}

cudnnStatus_t
cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc,
                             cudnnDataType_t dataType, int n, int c, int h,
                             int w, int nStride, int cStride, int hStride,
                             int wStride)
{
    int dim[4] = { n, c, h, w };
    int64_t stride[4] = { nStride, cStride, hStride, wStride };

    return tensor_store(tensorDesc, dataType, 4, dim, stride);
}

cudnnStatus_t
cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc,
                           cudnnDataType_t dataType, int nbDims,
                           const int dimA[], const int strideA[])
{
    int64_t stride[CUDNN_DIM_MAX];

    if (dimA == NULL || strideA == NULL)
        return BAD("dimA or strideA is NULL");
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return tensor_store(tensorDesc, dataType, nbDims, dimA, NULL);
    for (int i = 0; i < nbDims; i++)
        stride[i] = strideA[i];
    return tensor_store(tensorDesc, dataType, nbDims, dimA, stride);
}

cudnnStatus_t
cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t tensorDesc,
                             cudnnTensorFormat_t format,
                             cudnnDataType_t dataType, int nbDims,
                             const int dimA[])
{
    if (dimA == NULL)
        return BAD("dimA is NULL");
    return tensor_packed(tensorDesc, format, dataType, nbDims, dimA);
}

cudnnStatus_t
cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                           cudnnDataType_t *dataType, int *n, int *c, int *h,
                           int *w, int *nStride, int *cStride, int *hStride,
                           int *wStride)
{
    const cudnnTensorDescriptor_t t = tensorDesc;
    int *out[8] = { n, c, h, w, nStride, cStride, hStride, wStride };

    if (!emu_dnn_tensor_ok(t) || dataType == NULL)
        return BAD("invalid tensor descriptor or NULL output");
    for (int i = 0; i < 8; i++) {
        if (out[i] == NULL)
            return BAD("NULL output");
    }
    if (t->nb_dims != 4)
        return BAD("tensor has %d dimensions, not 4", t->nb_dims);
    *dataType = t->type;
    for (int i = 0; i < 4; i++) {
        *out[i] = t->dim[i];
        *out[4 + i] = t->stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                           int nbDimsRequested, cudnnDataType_t *dataType,
                           int *nbDims, int dimA[], int strideA[])
{
    const cudnnTensorDescriptor_t t = tensorDesc;
    int n;

    if (!emu_dnn_tensor_ok(t) || nbDimsRequested < 0 || dataType == NULL ||
        nbDims == NULL)
        return BAD("invalid tensor descriptor or argument");
    n = nbDimsRequested < t->nb_dims ? nbDimsRequested : t->nb_dims;
    if (n > 0 && (dimA == NULL || strideA == NULL))
        return BAD("dimA or strideA is NULL");
    *dataType = t->type;
    *nbDims = t->nb_dims;
    for (int i = 0; i < n; i++) {
        dimA[i] = t->dim[i];
        strideA[i] = t->stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t tensorDesc,
                          size_t *size)
{
    int64_t span = 1;

    if (!emu_dnn_tensor_ok(tensorDesc) || size == NULL)
        return BAD("invalid tensor descriptor or size is NULL");
    for (int i = 0; i < tensorDesc->nb_dims; i++)
        span += (int64_t)(tensorDesc->dim[i] - 1) * tensorDesc->stride[i];
    *size = (size_t)span * emu_dnn_type_size(tensorDesc->type);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Filters ------------------------------------------------------------- */

int
emu_dnn_filter_ok(cudnnFilterDescriptor_t f)
{
    return f != NULL && f->magic == EMU_DNN_MAGIC_FILTER && f->is_set;
}

cudnnStatus_t
cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc)
{
    return emu_dnn_create_desc((void **)filterDesc, sizeof(**filterDesc),
                               EMU_DNN_MAGIC_FILTER);
}

cudnnStatus_t
cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc)
{
    return emu_dnn_destroy_desc(filterDesc, EMU_DNN_MAGIC_FILTER);
}

cudnnStatus_t
cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc,
                           cudnnDataType_t dataType,
                           cudnnTensorFormat_t format, int nbDims,
                           const int filterDimA[])
{
    cudnnFilterDescriptor_t f = filterDesc;
    int64_t count = 1;

    if (f == NULL || f->magic != EMU_DNN_MAGIC_FILTER || filterDimA == NULL)
        return BAD("invalid filter descriptor or filterDimA is NULL");
    if (!type_valid(dataType) || !format_valid(format))
        return BAD("invalid data type %d or format %d", (int)dataType,
                   (int)format);
    /* Filters have at least three dimensions, for historical reasons. */
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED,
                             "%d filter dimensions", nbDims);
    for (int i = 0; i < nbDims; i++) {
        if (filterDimA[i] <= 0)
            return BAD("filter dimension %d is %d", i, filterDimA[i]);
        count *= filterDimA[i];
        if (count > MAX_ELEMENTS)
            return emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED,
                                 "filter exceeds 2^31 elements");
    }
    f->type = dataType;
    f->format = format;
    f->nb_dims = nbDims;
    memset(f->dim, 0, sizeof(f->dim));
    memcpy(f->dim, filterDimA, (size_t)nbDims * sizeof(int));
    f->is_set = 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc,
                           cudnnDataType_t dataType,
                           cudnnTensorFormat_t format, int k, int c, int h,
                           int w)
{
    int dim[4] = { k, c, h, w };

    return cudnnSetFilterNdDescriptor(filterDesc, dataType, format, 4, dim);
}

cudnnStatus_t
cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t filterDesc,
                           int nbDimsRequested, cudnnDataType_t *dataType,
                           cudnnTensorFormat_t *format, int *nbDims,
                           int filterDimA[])
{
    const cudnnFilterDescriptor_t f = filterDesc;
    int n;

    if (!emu_dnn_filter_ok(f) || nbDimsRequested < 0 || dataType == NULL ||
        format == NULL || nbDims == NULL)
        return BAD("invalid filter descriptor or argument");
    n = nbDimsRequested < f->nb_dims ? nbDimsRequested : f->nb_dims;
    if (n > 0 && filterDimA == NULL)
        return BAD("filterDimA is NULL");
    *dataType = f->type;
    *format = f->format;
    *nbDims = f->nb_dims;
    for (int i = 0; i < n; i++)
        filterDimA[i] = f->dim[i];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t filterDesc,
                           cudnnDataType_t *dataType,
                           cudnnTensorFormat_t *format, int *k, int *c,
                           int *h, int *w)
{
    int dim[4], nb;
    cudnnStatus_t st;

    if (k == NULL || c == NULL || h == NULL || w == NULL)
        return BAD("NULL output");
    st = cudnnGetFilterNdDescriptor(filterDesc, 4, dataType, format, &nb,
                                    dim);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (nb != 4)
        return BAD("filter has %d dimensions, not 4", nb);
    *k = dim[0], *c = dim[1], *h = dim[2], *w = dim[3];
    return CUDNN_STATUS_SUCCESS;
}

void
emu_dnn_filter_strides(cudnnFilterDescriptor_t f,
                       int64_t stride[CUDNN_DIM_MAX])
{
    packed_strides(f->nb_dims, f->dim, f->format, stride);
}

cudnnStatus_t
cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t filterDesc,
                          size_t *size)
{
    size_t count = 1;

    if (!emu_dnn_filter_ok(filterDesc) || size == NULL)
        return BAD("invalid filter descriptor or size is NULL");
    for (int i = 0; i < filterDesc->nb_dims; i++)
        count *= (size_t)filterDesc->dim[i];
    *size = count * emu_dnn_type_size(filterDesc->type);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Convolutions -------------------------------------------------------- */

int
emu_dnn_conv_ok(cudnnConvolutionDescriptor_t c)
{
    return c != NULL && c->magic == EMU_DNN_MAGIC_CONV;
}

cudnnStatus_t
cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc)
{
    cudnnStatus_t st = emu_dnn_create_desc((void **)convDesc,
                                           sizeof(**convDesc),
                                           EMU_DNN_MAGIC_CONV);
    cudnnConvolutionDescriptor_t c;

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    /* A fresh descriptor is a 2-d unit-stride convolution with one group
     * and default math, so that the group and math setters may come
     * first. */
    c = *convDesc;
    c->nb_spatial = 2;
    for (int i = 0; i < EMU_DNN_MAX_SPATIAL; i++)
        c->stride[i] = c->dilation[i] = 1;
    c->mode = CUDNN_CONVOLUTION;
    c->compute = CUDNN_DATA_FLOAT;
    c->groups = 1;
    c->math = CUDNN_DEFAULT_MATH;
    c->reorder = CUDNN_DEFAULT_REORDER;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc)
{
    return emu_dnn_destroy_desc(convDesc, EMU_DNN_MAGIC_CONV);
}

cudnnStatus_t
cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc,
                                int arrayLength, const int padA[],
                                const int filterStrideA[],
                                const int dilationA[],
                                cudnnConvolutionMode_t mode,
                                cudnnDataType_t computeType)
{
    cudnnConvolutionDescriptor_t c = convDesc;

    if (!emu_dnn_conv_ok(c) || padA == NULL || filterStrideA == NULL ||
        dilationA == NULL)
        return BAD("invalid convolution descriptor or NULL array");
    if (arrayLength <= 0)
        return BAD("arrayLength %d", arrayLength);
    if (arrayLength > EMU_DNN_MAX_SPATIAL)
        return emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED, "arrayLength %d",
                             arrayLength);
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
        return BAD("invalid mode %d", (int)mode);
    if (!type_valid(computeType))
        return BAD("invalid compute type %d", (int)computeType);
    for (int i = 0; i < arrayLength; i++) {
        if (padA[i] < 0 || filterStrideA[i] <= 0 || dilationA[i] <= 0)
            return BAD("dimension %d: pad %d, stride %d, dilation %d", i,
                       padA[i], filterStrideA[i], dilationA[i]);
    }
    c->nb_spatial = arrayLength;
    for (int i = 0; i < EMU_DNN_MAX_SPATIAL; i++) {
        c->pad[i] = i < arrayLength ? padA[i] : 0;
        c->stride[i] = i < arrayLength ? filterStrideA[i] : 1;
        c->dilation[i] = i < arrayLength ? dilationA[i] : 1;
    }
    c->mode = mode;
    c->compute = computeType;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc,
                                int pad_h, int pad_w, int u, int v,
                                int dilation_h, int dilation_w,
                                cudnnConvolutionMode_t mode,
                                cudnnDataType_t computeType)
{
    int pad[2] = { pad_h, pad_w }, stride[2] = { u, v };
    int dilation[2] = { dilation_h, dilation_w };

    return cudnnSetConvolutionNdDescriptor(convDesc, 2, pad, stride,
                                           dilation, mode, computeType);
}

cudnnStatus_t
cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t convDesc,
                                int arrayLengthRequested, int *arrayLength,
                                int padA[], int strideA[], int dilationA[],
                                cudnnConvolutionMode_t *mode,
                                cudnnDataType_t *computeType)
{
    const cudnnConvolutionDescriptor_t c = convDesc;
    int n;

    if (!emu_dnn_conv_ok(c) || arrayLengthRequested < 0 ||
        arrayLength == NULL || mode == NULL || computeType == NULL)
        return BAD("invalid convolution descriptor or argument");
    if (arrayLengthRequested > EMU_DNN_MAX_SPATIAL)
        return emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED,
                             "arrayLengthRequested %d", arrayLengthRequested);
    n = arrayLengthRequested < c->nb_spatial ? arrayLengthRequested
                                              : c->nb_spatial;
    if (n > 0 && (padA == NULL || strideA == NULL || dilationA == NULL))
        return BAD("NULL array");
    *arrayLength = c->nb_spatial;
    for (int i = 0; i < n; i++) {
        padA[i] = c->pad[i];
        strideA[i] = c->stride[i];
        dilationA[i] = c->dilation[i];
    }
    *mode = c->mode;
    *computeType = c->compute;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t convDesc,
                                int *pad_h, int *pad_w, int *u, int *v,
                                int *dilation_h, int *dilation_w,
                                cudnnConvolutionMode_t *mode,
                                cudnnDataType_t *computeType)
{
    int pad[2], stride[2], dilation[2], n;
    cudnnStatus_t st;

    if (pad_h == NULL || pad_w == NULL || u == NULL || v == NULL ||
        dilation_h == NULL || dilation_w == NULL)
        return BAD("NULL output");
    st = cudnnGetConvolutionNdDescriptor(convDesc, 2, &n, pad, stride,
                                         dilation, mode, computeType);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (n != 2)
        return BAD("convolution has %d spatial dimensions, not 2", n);
    *pad_h = pad[0], *pad_w = pad[1], *u = stride[0], *v = stride[1];
    *dilation_h = dilation[0], *dilation_w = dilation[1];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc,
                              int groupCount)
{
    if (!emu_dnn_conv_ok(convDesc) || groupCount < 1)
        return BAD("invalid convolution descriptor or group count %d",
                   groupCount);
    convDesc->groups = groupCount;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc,
                              int *groupCount)
{
    if (!emu_dnn_conv_ok(convDesc) || groupCount == NULL)
        return BAD("invalid convolution descriptor or NULL output");
    *groupCount = convDesc->groups;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                            cudnnMathType_t mathType)
{
    if (!emu_dnn_conv_ok(convDesc))
        return BAD("invalid convolution descriptor");
    if (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
        mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
        mathType != CUDNN_FMA_MATH)
        return BAD("invalid math type %d", (int)mathType);
    convDesc->math = mathType;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                            cudnnMathType_t *mathType)
{
    if (!emu_dnn_conv_ok(convDesc) || mathType == NULL)
        return BAD("invalid convolution descriptor or NULL output");
    *mathType = convDesc->math;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolutionReorderType(cudnnConvolutionDescriptor_t convDesc,
                               cudnnReorderType_t reorderType)
{
    if (!emu_dnn_conv_ok(convDesc) ||
        (reorderType != CUDNN_DEFAULT_REORDER &&
         reorderType != CUDNN_NO_REORDER))
        return BAD("invalid convolution descriptor or reorder type");
    convDesc->reorder = reorderType;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionReorderType(cudnnConvolutionDescriptor_t convDesc,
                               cudnnReorderType_t *reorderType)
{
    if (!emu_dnn_conv_ok(convDesc) || reorderType == NULL)
        return BAD("invalid convolution descriptor or NULL output");
    *reorderType = convDesc->reorder;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
emu_dnn_conv_output_dims(cudnnConvolutionDescriptor_t conv,
                         cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                         int out[CUDNN_DIM_MAX])
{
    int nb;

    if (!emu_dnn_conv_ok(conv) || !emu_dnn_tensor_ok(x) ||
        !emu_dnn_filter_ok(w))
        return BAD("invalid or unset descriptor");
    nb = x->nb_dims;
    if (w->nb_dims != nb || conv->nb_spatial + 2 != nb)
        return BAD("input has %d dimensions, filter %d, convolution %d + 2",
                   nb, w->nb_dims, conv->nb_spatial);
    if (x->dim[1] != w->dim[1] * conv->groups)
        return BAD("input has %d channels, filter %d x %d groups", x->dim[1],
                   w->dim[1], conv->groups);
    if (w->dim[0] % conv->groups != 0)
        return BAD("%d output channels do not split into %d groups",
                   w->dim[0], conv->groups);
    out[0] = x->dim[0];
    out[1] = w->dim[0];
    for (int i = 0; i < conv->nb_spatial; i++) {
        int span = (w->dim[2 + i] - 1) * conv->dilation[i] + 1;
        int padded = x->dim[2 + i] + 2 * conv->pad[i];

        if (span > padded)
            return BAD("dimension %d: dilated filter %d exceeds padded "
                       "input %d", i, span, padded);
        out[2 + i] = 1 + (padded - span) / conv->stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionNdForwardOutputDim(
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t inputTensorDesc,
    const cudnnFilterDescriptor_t filterDesc, int nbDims,
    int tensorOuputDimA[])
{
    int out[CUDNN_DIM_MAX];
    cudnnStatus_t st;

    if (tensorOuputDimA == NULL)
        return BAD("tensorOuputDimA is NULL");
    st = emu_dnn_conv_output_dims(convDesc, inputTensorDesc, filterDesc,
                                  out);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (nbDims != inputTensorDesc->nb_dims)
        return BAD("nbDims %d, input has %d", nbDims,
                   inputTensorDesc->nb_dims);
    memcpy(tensorOuputDimA, out, (size_t)nbDims * sizeof(int));
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolution2dForwardOutputDim(
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t inputTensorDesc,
    const cudnnFilterDescriptor_t filterDesc, int *n, int *c, int *h, int *w)
{
    int out[4];
    cudnnStatus_t st;

    if (n == NULL || c == NULL || h == NULL || w == NULL)
        return BAD("NULL output");
    st = cudnnGetConvolutionNdForwardOutputDim(convDesc, inputTensorDesc,
                                               filterDesc, 4, out);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    *n = out[0], *c = out[1], *h = out[2], *w = out[3];
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Activations --------------------------------------------------------- */

cudnnStatus_t
cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *activationDesc)
{
    cudnnStatus_t st = emu_dnn_create_desc((void **)activationDesc,
                                           sizeof(**activationDesc),
                                           EMU_DNN_MAGIC_ACT);

    if (st == CUDNN_STATUS_SUCCESS) {
        (*activationDesc)->mode = CUDNN_ACTIVATION_RELU;
        (*activationDesc)->nan_opt = CUDNN_NOT_PROPAGATE_NAN;
        (*activationDesc)->swish_beta = 1.0;
    }
    return st;
}

cudnnStatus_t
cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc)
{
    return emu_dnn_destroy_desc(activationDesc, EMU_DNN_MAGIC_ACT);
}

static int
act_live(cudnnActivationDescriptor_t a)
{
    return a != NULL && a->magic == EMU_DNN_MAGIC_ACT;
}

int
emu_dnn_nan_opt_valid(cudnnNanPropagation_t v)
{
    return v == CUDNN_NOT_PROPAGATE_NAN || v == CUDNN_PROPAGATE_NAN;
}

cudnnStatus_t
cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                             cudnnActivationMode_t mode,
                             cudnnNanPropagation_t reluNanOpt, double coef)
{
    if (!act_live(activationDesc) || !emu_dnn_nan_opt_valid(reluNanOpt) ||
        (int)mode < CUDNN_ACTIVATION_SIGMOID ||
        (int)mode > CUDNN_ACTIVATION_SWISH)
        return BAD("invalid activation descriptor, mode or NaN option");
    activationDesc->mode = mode;
    activationDesc->nan_opt = reluNanOpt;
    activationDesc->coef = coef;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t activationDesc,
                             cudnnActivationMode_t *mode,
                             cudnnNanPropagation_t *reluNanOpt, double *coef)
{
    if (!act_live(activationDesc) || mode == NULL || reluNanOpt == NULL ||
        coef == NULL)
        return BAD("invalid activation descriptor or NULL output");
    *mode = activationDesc->mode;
    *reluNanOpt = activationDesc->nan_opt;
    *coef = activationDesc->coef;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetActivationDescriptorSwishBeta(
    cudnnActivationDescriptor_t activationDesc, double swish_beta)
{
    if (!act_live(activationDesc))
        return BAD("invalid activation descriptor");
    activationDesc->swish_beta = swish_beta;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetActivationDescriptorSwishBeta(
    cudnnActivationDescriptor_t activationDesc, double *swish_beta)
{
    if (!act_live(activationDesc) || swish_beta == NULL)
        return BAD("invalid activation descriptor or NULL output");
    *swish_beta = activationDesc->swish_beta;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Pooling ------------------------------------------------------------- */

cudnnStatus_t
cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t *poolingDesc)
{
    return emu_dnn_create_desc((void **)poolingDesc, sizeof(**poolingDesc),
                               EMU_DNN_MAGIC_POOL);
}

cudnnStatus_t
cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t poolingDesc)
{
    return emu_dnn_destroy_desc(poolingDesc, EMU_DNN_MAGIC_POOL);
}

cudnnStatus_t
cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t poolingDesc,
                            const cudnnPoolingMode_t mode,
                            const cudnnNanPropagation_t maxpoolingNanOpt,
                            int nbDims, const int windowDimA[],
                            const int paddingA[], const int strideA[])
{
    cudnnPoolingDescriptor_t p = poolingDesc;

    if (p == NULL || p->magic != EMU_DNN_MAGIC_POOL || windowDimA == NULL ||
        paddingA == NULL || strideA == NULL)
        return BAD("invalid pooling descriptor or NULL array");
    if ((int)mode < CUDNN_POOLING_MAX ||
        (int)mode > CUDNN_POOLING_MAX_DETERMINISTIC ||
        !emu_dnn_nan_opt_valid(maxpoolingNanOpt))
        return BAD("invalid pooling mode %d or NaN option", (int)mode);
    if (nbDims < 1 || nbDims > EMU_DNN_MAX_SPATIAL)
        return BAD("%d pooling dimensions", nbDims);
    for (int i = 0; i < nbDims; i++) {
        if (windowDimA[i] <= 0 || paddingA[i] < 0 || strideA[i] <= 0)
            return BAD("dimension %d: window %d, padding %d, stride %d", i,
                       windowDimA[i], paddingA[i], strideA[i]);
    }
    p->mode = mode;
    p->nan_opt = maxpoolingNanOpt;
    p->nb_spatial = nbDims;
    for (int i = 0; i < nbDims; i++) {
        p->window[i] = windowDimA[i];
        p->pad[i] = paddingA[i];
        p->stride[i] = strideA[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t poolingDesc,
                            cudnnPoolingMode_t mode,
                            cudnnNanPropagation_t maxpoolingNanOpt,
                            int windowHeight, int windowWidth,
                            int verticalPadding, int horizontalPadding,
                            int verticalStride, int horizontalStride)
{
    int window[2] = { windowHeight, windowWidth };
    int pad[2] = { verticalPadding, horizontalPadding };
    int stride[2] = { verticalStride, horizontalStride };

    return cudnnSetPoolingNdDescriptor(poolingDesc, mode, maxpoolingNanOpt,
                                       2, window, pad, stride);
}

cudnnStatus_t
cudnnGetPoolingNdDescriptor(const cudnnPoolingDescriptor_t poolingDesc,
                            int nbDimsRequested, cudnnPoolingMode_t *mode,
                            cudnnNanPropagation_t *maxpoolingNanOpt,
                            int *nbDims, int windowDimA[], int paddingA[],
                            int strideA[])
{
    const cudnnPoolingDescriptor_t p = poolingDesc;
    int n;

    if (p == NULL || p->magic != EMU_DNN_MAGIC_POOL || p->nb_spatial == 0 ||
        nbDimsRequested < 0 || mode == NULL || maxpoolingNanOpt == NULL ||
        nbDims == NULL)
        return BAD("invalid pooling descriptor or argument");
    n = nbDimsRequested < p->nb_spatial ? nbDimsRequested : p->nb_spatial;
    if (n > 0 && (windowDimA == NULL || paddingA == NULL || strideA == NULL))
        return BAD("NULL array");
    *mode = p->mode;
    *maxpoolingNanOpt = p->nan_opt;
    *nbDims = p->nb_spatial;
    for (int i = 0; i < n; i++) {
        windowDimA[i] = p->window[i];
        paddingA[i] = p->pad[i];
        strideA[i] = p->stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t poolingDesc,
                            cudnnPoolingMode_t *mode,
                            cudnnNanPropagation_t *maxpoolingNanOpt,
                            int *windowHeight, int *windowWidth,
                            int *verticalPadding, int *horizontalPadding,
                            int *verticalStride, int *horizontalStride)
{
    int window[2], pad[2], stride[2], n;
    cudnnStatus_t st;

    if (windowHeight == NULL || windowWidth == NULL ||
        verticalPadding == NULL || horizontalPadding == NULL ||
        verticalStride == NULL || horizontalStride == NULL)
        return BAD("NULL output");
    st = cudnnGetPoolingNdDescriptor(poolingDesc, 2, mode, maxpoolingNanOpt,
                                     &n, window, pad, stride);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (n != 2)
        return BAD("pooling has %d dimensions, not 2", n);
    *windowHeight = window[0], *windowWidth = window[1];
    *verticalPadding = pad[0], *horizontalPadding = pad[1];
    *verticalStride = stride[0], *horizontalStride = stride[1];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetPoolingNdForwardOutputDim(const cudnnPoolingDescriptor_t poolingDesc,
                                  const cudnnTensorDescriptor_t inputTensorDesc,
                                  int nbDims, int outputTensorDimA[])
{
    const cudnnPoolingDescriptor_t p = poolingDesc;
    const cudnnTensorDescriptor_t x = inputTensorDesc;

    if (p == NULL || p->magic != EMU_DNN_MAGIC_POOL || p->nb_spatial == 0 ||
        !emu_dnn_tensor_ok(x) || outputTensorDimA == NULL)
        return BAD("invalid descriptor or NULL output");
    if (nbDims != x->nb_dims || nbDims != p->nb_spatial + 2)
        return BAD("nbDims %d, input %d, pooling %d + 2", nbDims, x->nb_dims,
                   p->nb_spatial);
    outputTensorDimA[0] = x->dim[0];
    outputTensorDimA[1] = x->dim[1];
    for (int i = 0; i < p->nb_spatial; i++) {
        int padded = x->dim[2 + i] + 2 * p->pad[i];

        if (p->window[i] > padded)
            return BAD("dimension %d: window %d exceeds padded input %d", i,
                       p->window[i], padded);
        outputTensorDimA[2 + i] = 1 + (padded - p->window[i]) / p->stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t poolingDesc,
                                  const cudnnTensorDescriptor_t inputTensorDesc,
                                  int *n, int *c, int *h, int *w)
{
    int out[4];
    cudnnStatus_t st;

    if (n == NULL || c == NULL || h == NULL || w == NULL)
        return BAD("NULL output");
    st = cudnnGetPoolingNdForwardOutputDim(poolingDesc, inputTensorDesc, 4,
                                           out);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    *n = out[0], *c = out[1], *h = out[2], *w = out[3];
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Tensor operations --------------------------------------------------- */

cudnnStatus_t
cudnnCreateOpTensorDescriptor(cudnnOpTensorDescriptor_t *opTensorDesc)
{
    return emu_dnn_create_desc((void **)opTensorDesc, sizeof(**opTensorDesc),
                               EMU_DNN_MAGIC_OPTENSOR);
}

cudnnStatus_t
cudnnDestroyOpTensorDescriptor(cudnnOpTensorDescriptor_t opTensorDesc)
{
    return emu_dnn_destroy_desc(opTensorDesc, EMU_DNN_MAGIC_OPTENSOR);
}

cudnnStatus_t
cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t opTensorDesc,
                           cudnnOpTensorOp_t opTensorOp,
                           cudnnDataType_t opTensorCompType,
                           cudnnNanPropagation_t opTensorNanOpt)
{
    cudnnOpTensorDescriptor_t d = opTensorDesc;

    if (d == NULL || d->magic != EMU_DNN_MAGIC_OPTENSOR)
        return BAD("invalid tensor operation descriptor");
    if ((int)opTensorOp < CUDNN_OP_TENSOR_ADD ||
        (int)opTensorOp > CUDNN_OP_TENSOR_NOT ||
        !type_valid(opTensorCompType) ||
        !emu_dnn_nan_opt_valid(opTensorNanOpt))
        return BAD("operation %d, compute type %d or NaN option %d",
                   (int)opTensorOp, (int)opTensorCompType,
                   (int)opTensorNanOpt);
    d->op = opTensorOp;
    d->compute = opTensorCompType;
    d->nan_opt = opTensorNanOpt;
    d->is_set = 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetOpTensorDescriptor(const cudnnOpTensorDescriptor_t opTensorDesc,
                           cudnnOpTensorOp_t *opTensorOp,
                           cudnnDataType_t *opTensorCompType,
                           cudnnNanPropagation_t *opTensorNanOpt)
{
    const cudnnOpTensorDescriptor_t d = opTensorDesc;

    if (d == NULL || d->magic != EMU_DNN_MAGIC_OPTENSOR || !d->is_set ||
        opTensorOp == NULL || opTensorCompType == NULL ||
        opTensorNanOpt == NULL)
        return BAD("invalid tensor operation descriptor or NULL output");
    *opTensorOp = d->op;
    *opTensorCompType = d->compute;
    *opTensorNanOpt = d->nan_opt;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Local response normalisation ---------------------------------------- */

cudnnStatus_t
cudnnCreateLRNDescriptor(cudnnLRNDescriptor_t *normDesc)
{
    cudnnStatus_t st = emu_dnn_create_desc((void **)normDesc,
                                           sizeof(**normDesc),
                                           EMU_DNN_MAGIC_LRN);

    /* Krizhevsky et al.'s ImageNet values, as the header says. */
    if (st == CUDNN_STATUS_SUCCESS) {
        (*normDesc)->n = 5;
        (*normDesc)->alpha = 1e-4;
        (*normDesc)->beta = 0.75;
        (*normDesc)->k = 2.0;
    }
    return st;
}

cudnnStatus_t
cudnnDestroyLRNDescriptor(cudnnLRNDescriptor_t lrnDesc)
{
    return emu_dnn_destroy_desc(lrnDesc, EMU_DNN_MAGIC_LRN);
}

cudnnStatus_t
cudnnSetLRNDescriptor(cudnnLRNDescriptor_t normDesc, unsigned lrnN,
                      double lrnAlpha, double lrnBeta, double lrnK)
{
    if (normDesc == NULL || normDesc->magic != EMU_DNN_MAGIC_LRN)
        return BAD("invalid LRN descriptor");
    /* The header's limits; NaN fails every comparison and is refused. */
    if (lrnN < CUDNN_LRN_MIN_N || lrnN > CUDNN_LRN_MAX_N ||
        !(lrnK >= CUDNN_LRN_MIN_K) || !(lrnBeta >= CUDNN_LRN_MIN_BETA) ||
        isnan(lrnAlpha))
        return BAD("LRN n %u, alpha %g, beta %g, k %g out of range", lrnN,
                   lrnAlpha, lrnBeta, lrnK);
    normDesc->n = lrnN;
    normDesc->alpha = lrnAlpha;
    normDesc->beta = lrnBeta;
    normDesc->k = lrnK;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetLRNDescriptor(cudnnLRNDescriptor_t normDesc, unsigned *lrnN,
                      double *lrnAlpha, double *lrnBeta, double *lrnK)
{
    if (normDesc == NULL || normDesc->magic != EMU_DNN_MAGIC_LRN)
        return BAD("invalid LRN descriptor");
    /* Each output may be NULL: that value is not returned. */
    if (lrnN != NULL)
        *lrnN = normDesc->n;
    if (lrnAlpha != NULL)
        *lrnAlpha = normDesc->alpha;
    if (lrnBeta != NULL)
        *lrnBeta = normDesc->beta;
    if (lrnK != NULL)
        *lrnK = normDesc->k;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Batch normalisation ------------------------------------------------- */

/* The descriptor of scale, bias, means and variances: 1 x C x 1 x 1 (x 1)
 * spatially, 1 x C x H x W (x D) per activation, packed NCHW, FLOAT for
 * every data type but DOUBLE. */
cudnnStatus_t
cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derivedBnDesc,
                              const cudnnTensorDescriptor_t xDesc,
                              cudnnBatchNormMode_t mode)
{
    int dim[CUDNN_DIM_MAX];
    cudnnDataType_t type;

    if (!tensor_live(derivedBnDesc) || !emu_dnn_tensor_ok(xDesc))
        return BAD("invalid tensor descriptor");
    if (mode != CUDNN_BATCHNORM_PER_ACTIVATION &&
        mode != CUDNN_BATCHNORM_SPATIAL &&
        mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
        return BAD("invalid batch normalization mode %d", (int)mode);
    if (xDesc->nb_dims != 4 && xDesc->nb_dims != 5)
        return BAD("x has %d dimensions (4 or 5 supported)", xDesc->nb_dims);
    dim[0] = 1;
    dim[1] = xDesc->dim[1];
    for (int i = 2; i < xDesc->nb_dims; i++)
        dim[i] = mode == CUDNN_BATCHNORM_PER_ACTIVATION ? xDesc->dim[i] : 1;
    type = xDesc->type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE
                                            : CUDNN_DATA_FLOAT;
    return tensor_packed(derivedBnDesc, CUDNN_TENSOR_NCHW, type,
                         xDesc->nb_dims, dim);
}
