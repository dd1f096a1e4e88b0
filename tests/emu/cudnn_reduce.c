/* The emulated cuDNN tensor reductions: the reduce-tensor descriptors and
 * cudnnReduceTensor, as cuDNN 9's cudnn_ops library documents them
 * (https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-ops-library.html,
 * cudnnReduceTensor, cudnnSetReduceTensorDescriptor,
 * cudnnGetReductionIndicesSize, cudnnGetReductionWorkspaceSize):
 * C = alpha * reduce(A) + beta * C, where each dimension of C is A's or 1
 * and the dimensions of size 1 are those reduced. FLOAT tensors with a
 * FLOAT compute type and DOUBLE ones with DOUBLE, computed in double (see
 * cudnn_emu.h). */
#include <cudnn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"
#include "emu.h"

#define BAD(...) emu_dnn_error(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)
#define UNSUPPORTED(...) emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED, __VA_ARGS__)

/* ---- Descriptors ---------------------------------------------------------- */

static int
reduce_live(cudnnReduceTensorDescriptor_t d)
{
    return d != NULL && d->magic == EMU_DNN_MAGIC_REDUCE;
}

cudnnStatus_t
cudnnCreateReduceTensorDescriptor(cudnnReduceTensorDescriptor_t *reduceTensorDesc)
{
    return emu_dnn_create_desc((void **)reduceTensorDesc,
                               sizeof(**reduceTensorDesc),
                               EMU_DNN_MAGIC_REDUCE);
}

cudnnStatus_t
cudnnDestroyReduceTensorDescriptor(cudnnReduceTensorDescriptor_t reduceTensorDesc)
{
    return emu_dnn_destroy_desc(reduceTensorDesc, EMU_DNN_MAGIC_REDUCE);
}

/* BAD_PARAM for a descriptor that is not one, or a value outside its
 * enumeration (documented). */
cudnnStatus_t
cudnnSetReduceTensorDescriptor(cudnnReduceTensorDescriptor_t reduceTensorDesc,
                               cudnnReduceTensorOp_t reduceTensorOp,
                               cudnnDataType_t reduceTensorCompType,
                               cudnnNanPropagation_t reduceTensorNanOpt,
                               cudnnReduceTensorIndices_t reduceTensorIndices,
                               cudnnIndicesType_t reduceTensorIndicesType)
{
    cudnnReduceTensorDescriptor_t d = reduceTensorDesc;

    if (!reduce_live(d))
        return BAD("cudnnSetReduceTensorDescriptor: invalid descriptor");
    if ((int)reduceTensorOp < CUDNN_REDUCE_TENSOR_ADD ||
        (int)reduceTensorOp > CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS ||
        emu_dnn_type_size(reduceTensorCompType) == 0 ||
        !emu_dnn_nan_opt_valid(reduceTensorNanOpt) ||
        (reduceTensorIndices != CUDNN_REDUCE_TENSOR_NO_INDICES &&
         reduceTensorIndices != CUDNN_REDUCE_TENSOR_FLATTENED_INDICES) ||
        (int)reduceTensorIndicesType < CUDNN_32BIT_INDICES ||
        (int)reduceTensorIndicesType > CUDNN_8BIT_INDICES)
        return BAD("cudnnSetReduceTensorDescriptor: operation %d, compute "
                   "type %d, NaN option %d, indices %d of type %d",
                   (int)reduceTensorOp, (int)reduceTensorCompType,
                   (int)reduceTensorNanOpt, (int)reduceTensorIndices,
                   (int)reduceTensorIndicesType);
    d->op = reduceTensorOp;
    d->compute = reduceTensorCompType;
    d->nan_opt = reduceTensorNanOpt;
    d->indices = reduceTensorIndices;
    d->indices_type = reduceTensorIndicesType;
    d->is_set = 1;
    return CUDNN_STATUS_SUCCESS;
}

/* The documentation is silent on NULL outputs: each one given is
 * written, as cudnnGetOpTensorDescriptor does here. */
cudnnStatus_t
cudnnGetReduceTensorDescriptor(const cudnnReduceTensorDescriptor_t reduceTensorDesc,
                               cudnnReduceTensorOp_t *reduceTensorOp,
                               cudnnDataType_t *reduceTensorCompType,
                               cudnnNanPropagation_t *reduceTensorNanOpt,
                               cudnnReduceTensorIndices_t *reduceTensorIndices,
                               cudnnIndicesType_t *reduceTensorIndicesType)
{
    cudnnReduceTensorDescriptor_t d = reduceTensorDesc;

    if (!reduce_live(d) || !d->is_set)
        return BAD("cudnnGetReduceTensorDescriptor: invalid descriptor");
    if (reduceTensorOp != NULL)
        *reduceTensorOp = d->op;
    if (reduceTensorCompType != NULL)
        *reduceTensorCompType = d->compute;
    if (reduceTensorNanOpt != NULL)
        *reduceTensorNanOpt = d->nan_opt;
    if (reduceTensorIndices != NULL)
        *reduceTensorIndices = d->indices;
    if (reduceTensorIndicesType != NULL)
        *reduceTensorIndicesType = d->indices_type;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Checks and sizes ----------------------------------------------------- */

static int
wants_indices(cudnnReduceTensorDescriptor_t d)
{
    return d->indices == CUDNN_REDUCE_TENSOR_FLATTENED_INDICES;
}

static int
op_has_indices(cudnnReduceTensorOp_t op)
{
    return op == CUDNN_REDUCE_TENSOR_MIN || op == CUDNN_REDUCE_TENSOR_MAX ||
           op == CUDNN_REDUCE_TENSOR_AMAX;
}

/*
 * The documented conditions: same rank, each of C's sizes A's or 1 and at
 * least one dimension reduced (all sizes matching is BAD_PARAM); indices
 * for the MIN, MAX and AMAX operations only (BAD_PARAM), of the 32-bit
 * type only (the one supported: NOT_SUPPORTED); DOUBLE tensors with a
 * DOUBLE compute type, FLOAT tensors with FLOAT (BAD_PARAM otherwise). The
 * HALF and INT8 tensors the documentation lets mix with FLOAT are not
 * emulated (NOT_SUPPORTED).
 */
static cudnnStatus_t
reduce_check(const char *api, cudnnReduceTensorDescriptor_t d,
             cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t c)
{
    int reduced = 0;

    if (!reduce_live(d) || !d->is_set)
        return BAD("%s: invalid reduce-tensor descriptor", api);
    if (!emu_dnn_tensor_ok(a) || !emu_dnn_tensor_ok(c))
        return BAD("%s: invalid tensor descriptor", api);
    if (a->nb_dims != c->nb_dims)
        return BAD("%s: A has %d dimensions, C %d", api, a->nb_dims,
                   c->nb_dims);
    for (int i = 0; i < a->nb_dims; i++) {
        if (c->dim[i] != a->dim[i] && c->dim[i] != 1)
            return BAD("%s: C dimension %d is %d, A has %d", api, i,
                       c->dim[i], a->dim[i]);
        reduced += c->dim[i] != a->dim[i];
    }
    if (reduced == 0)
        return BAD("%s: no dimension is reduced", api);
    if (wants_indices(d) && !op_has_indices(d->op))
        return BAD("%s: indices of operation %d", api, (int)d->op);
    if (wants_indices(d) && d->indices_type != CUDNN_32BIT_INDICES)
        return UNSUPPORTED("%s: indices of type %d (32-bit only)", api,
                           (int)d->indices_type);
    if (a->type != c->type &&
        (a->type == CUDNN_DATA_DOUBLE || c->type == CUDNN_DATA_DOUBLE))
        return BAD("%s: A and C differ in type", api);
    if (a->type == CUDNN_DATA_DOUBLE && d->compute != CUDNN_DATA_DOUBLE)
        return BAD("%s: DOUBLE tensors with compute type %d", api,
                   (int)d->compute);
    if (a->type != c->type ||
        (a->type != CUDNN_DATA_FLOAT && a->type != CUDNN_DATA_DOUBLE))
        return UNSUPPORTED("%s: tensors of types %d and %d", api,
                           (int)a->type, (int)c->type);
    if (a->type == CUDNN_DATA_FLOAT && d->compute != CUDNN_DATA_FLOAT)
        return BAD("%s: FLOAT tensors with compute type %d", api,
                   (int)d->compute);
    return CUDNN_STATUS_SUCCESS;
}

/* Bytes of the indices: one 32-bit index per element of C when the
 * descriptor asks for them, else none. */
static size_t
indices_bytes(cudnnReduceTensorDescriptor_t d, cudnnTensorDescriptor_t c)
{
    size_t n = 1;

    if (!wants_indices(d))
        return 0;
    for (int i = 0; i < c->nb_dims; i++)
        n *= (size_t)c->dim[i];
    return n * sizeof(uint32_t);
}

/* The emulator's workspace: one partial result of the compute type per
 * element of C, in 256-byte units, as a reduction split across blocks
 * keeps (the size is the emulator's own; the call checks it). */
static size_t
workspace_bytes(cudnnReduceTensorDescriptor_t d, cudnnTensorDescriptor_t c)
{
    size_t n = 1;

    for (int i = 0; i < c->nb_dims; i++)
        n *= (size_t)c->dim[i];
    return (n * emu_dnn_type_size(d->compute) + 255) / 256 * 256;
}

/* The two size queries: their checks, then bytes(d, c) into *size. */
static cudnnStatus_t
reduce_size(const char *api, cudnnHandle_t handle,
            cudnnReduceTensorDescriptor_t d, cudnnTensorDescriptor_t a,
            cudnnTensorDescriptor_t c, size_t *size,
            size_t (*bytes)(cudnnReduceTensorDescriptor_t,
                            cudnnTensorDescriptor_t))
{
    struct emu_dnn_config cfg;
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st == CUDNN_STATUS_SUCCESS && size == NULL)
        st = emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                           "%s: NULL size", api);
    if (st == CUDNN_STATUS_SUCCESS)
        st = reduce_check(api, d, a, c);
    if (st == CUDNN_STATUS_SUCCESS)
        *size = bytes(d, c);
    return st;
}

cudnnStatus_t
cudnnGetReductionIndicesSize(cudnnHandle_t handle,
                             const cudnnReduceTensorDescriptor_t reduceTensorDesc,
                             const cudnnTensorDescriptor_t aDesc,
                             const cudnnTensorDescriptor_t cDesc,
                             size_t *sizeInBytes)
{
    return reduce_size("cudnnGetReductionIndicesSize", handle,
                       reduceTensorDesc, aDesc, cDesc, sizeInBytes,
                       indices_bytes);
}

cudnnStatus_t
cudnnGetReductionWorkspaceSize(cudnnHandle_t handle,
                               const cudnnReduceTensorDescriptor_t reduceTensorDesc,
                               const cudnnTensorDescriptor_t aDesc,
                               const cudnnTensorDescriptor_t cDesc,
                               size_t *sizeInBytes)
{
    return reduce_size("cudnnGetReductionWorkspaceSize", handle,
                       reduceTensorDesc, aDesc, cDesc, sizeInBytes,
                       workspace_bytes);
}

/* ---- The reduction -------------------------------------------------------- */

struct reduce_job {
    struct emu_dnn_view a, c;
    CUdeviceptr indices;
    struct cudnnReduceTensorStruct d;
    double alpha, beta;
};

/* The reduced value of n elements of A (those of one element of C) and
 * the index of the chosen one for MIN, MAX and AMAX: the first minimum or
 * maximum, or the first NaN when NaNs propagate (they are skipped when
 * not). */
static double
reduce_run_one(const struct reduce_job *j, const void *a, int64_t base,
               const int *rdim, const int64_t *rstride, int nr, size_t n,
               uint32_t *index)
{
    cudnnReduceTensorOp_t op = j->d.op;
    int propagate = j->d.nan_opt == CUDNN_PROPAGATE_NAN;
    int coord[CUDNN_DIM_MAX] = { 0 };
    double acc, best = 0.0;
    int64_t off = base;
    int have = 0, stop = 0;

    acc = op == CUDNN_REDUCE_TENSOR_MUL ||
                  op == CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS
              ? 1.0
              : 0.0;
    *index = 0;
    for (size_t i = 0; i < n && !stop; i++) {
        double v = emu_dnn_loadd(a, off, j->a.type);

        switch (op) {
        case CUDNN_REDUCE_TENSOR_ADD:
        case CUDNN_REDUCE_TENSOR_AVG:
            acc += v;
            break;
        case CUDNN_REDUCE_TENSOR_MUL:
            acc *= v;
            break;
        case CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS:
            acc *= v != 0.0 ? v : 1.0;
            break;
        case CUDNN_REDUCE_TENSOR_NORM1:
            acc += fabs(v);
            break;
        case CUDNN_REDUCE_TENSOR_NORM2:
            acc += v * v;
            break;
        default: /* MIN, MAX, AMAX */
            if (op == CUDNN_REDUCE_TENSOR_AMAX)
                v = fabs(v);
            if (isnan(v)) {
                /* A propagated NaN stands; else it is skipped. */
                if (propagate) {
                    best = v, *index = (uint32_t)i, have = 1;
                    stop = 1;
                }
                break;
            }
            if (!have || (op == CUDNN_REDUCE_TENSOR_MIN ? v < best
                                                        : v > best)) {
                best = v, *index = (uint32_t)i;
                have = 1;
            }
            break;
        }
        /* The reduced coordinates in row-major order, offset carried. */
        for (int d = nr - 1; d >= 0; d--) {
            off += rstride[d];
            if (++coord[d] < rdim[d])
                break;
            off -= (int64_t)rdim[d] * rstride[d];
            coord[d] = 0;
        }
    }
    /* All NaN, skipped: NaN (nothing to choose). */
    if (op_has_indices(op))
        return have ? best : NAN;
    if (op == CUDNN_REDUCE_TENSOR_AVG)
        return acc / (double)n;
    if (op == CUDNN_REDUCE_TENSOR_NORM2)
        return sqrt(acc);
    return acc;
}

static CUresult
reduce_run(void *arg)
{
    const struct reduce_job *j = arg;
    const struct emu_dnn_view *a = &j->a, *c = &j->c;
    void *ap = emu_dnn_view_at(a), *cp = emu_dnn_view_at(c);
    uint32_t *ip = NULL;
    int rdim[CUDNN_DIM_MAX], nr = 0;
    int64_t rstride[CUDNN_DIM_MAX];
    size_t nc = emu_dnn_view_count(c), n = 1;

    if (j->indices != 0)
        ip = emu_dev_at(j->indices, nc * sizeof(uint32_t));
    if (ap == NULL || cp == NULL || (j->indices != 0 && ip == NULL))
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS, "cudnnReduceTensor",
                           "a tensor is not in device memory");
    for (int d = 0; d < a->nb_dims; d++) {
        if (c->dim[d] != a->dim[d]) {
            rdim[nr] = a->dim[d];
            rstride[nr++] = a->stride[d];
            n *= (size_t)a->dim[d];
        }
    }
    for (size_t lin = 0; lin < nc; lin++) {
        int64_t base = 0, rest = (int64_t)lin, coff = 0;
        uint32_t index;
        double v;

        /* A's offset of the first reduced element of this C element. */
        for (int d = c->nb_dims - 1; d >= 0; d--) {
            int64_t x = rest % c->dim[d];

            rest /= c->dim[d];
            base += x * a->stride[d];
            coff += x * c->stride[d];
        }
        v = reduce_run_one(j, ap, base, rdim, rstride, nr, n, &index);
        emu_dnn_blendd(cp, coff, c->type, j->alpha, j->beta, v);
        if (ip != NULL)
            ip[lin] = index;
    }
    emu_dnn_view_wrote(c);
    if (ip != NULL)
        emu_dev_wrote(j->indices, nc * sizeof(uint32_t));
    return CUDA_SUCCESS;
}

/* Statuses as documented: the configuration's (reduce_check), NULL
 * scalars or data (BAD_PARAM_NULL_POINTER), indices or a workspace
 * smaller than the sizes the two queries give (INVALID_VALUE: "the
 * allocations for the indices or workspace are insufficient"). */
cudnnStatus_t
cudnnReduceTensor(cudnnHandle_t handle,
                  const cudnnReduceTensorDescriptor_t reduceTensorDesc,
                  void *indices, size_t indicesSizeInBytes, void *workspace,
                  size_t workspaceSizeInBytes, const void *alpha,
                  const cudnnTensorDescriptor_t aDesc, const void *A,
                  const void *beta, const cudnnTensorDescriptor_t cDesc,
                  void *C)
{
    const char *api = "cudnnReduceTensor";
    struct emu_dnn_config cfg;
    struct reduce_job *job;
    size_t need_idx, need_ws;
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st == CUDNN_STATUS_SUCCESS)
        st = reduce_check(api, reduceTensorDesc, aDesc, cDesc);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (alpha == NULL || beta == NULL || A == NULL || C == NULL)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                             "%s: NULL scalar or data", api);
    need_idx = indices_bytes(reduceTensorDesc, cDesc);
    need_ws = workspace_bytes(reduceTensorDesc, cDesc);
    if (indicesSizeInBytes < need_idx || (need_idx > 0 && indices == NULL) ||
        workspaceSizeInBytes < need_ws || (need_ws > 0 && workspace == NULL))
        return emu_dnn_error(CUDNN_STATUS_INVALID_VALUE, "%s: indices of %zu "
                             "bytes (%zu needed), workspace of %zu (%zu "
                             "needed)", api, indicesSizeInBytes, need_idx,
                             workspaceSizeInBytes, need_ws);
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "%s: out of host memory", api);
    emu_dnn_view_tensor(&job->a, aDesc, A);
    emu_dnn_view_tensor(&job->c, cDesc, C);
    job->indices = need_idx > 0 ? (CUdeviceptr)(uintptr_t)indices : 0;
    job->d = *reduceTensorDesc;
    job->alpha = emu_dnn_scalar(alpha, cDesc->type);
    job->beta = emu_dnn_scalar(beta, cDesc->type);
    return emu_dnn_submit(&cfg, api, reduce_run, free, job,
                          (double)emu_dnn_view_count(&job->a),
                          emu_dnn_view_bytes(&job->a) +
                              2.0 * emu_dnn_view_bytes(&job->c) +
                              (double)need_idx);
}
