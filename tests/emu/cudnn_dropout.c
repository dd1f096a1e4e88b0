/* The emulated cuDNN dropout: the descriptor (set, which initialises the
 * generator states in device memory on the handle's stream; restore; get),
 * the states and reserve-space sizes, and cudnnDropoutForward/Backward.
 * The mask is a function of the seed, the number of forward calls the
 * states have seen and the element's index, so a run is reproducible from
 * its seed; forward keeps it in the reserve space, one byte per element,
 * and backward applies the same mask. */
#include <cudnn.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"
#include "emu.h"

#define BAD(...) emu_dnn_error(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)
#define NULL_POINTER(...) \
    emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, __VA_ARGS__)

/* What the states hold: a tag that says they were initialised, the seed
 * and the forward calls made with them. The size asked for leaves room,
 * as a GPU's per-thread generator states would need. */
#define STATES_MAGIC 0x64726f706f757421ull     /* "dropout!" */
#define STATES_SIZE ((size_t)256)

struct dropout_states {
    uint64_t magic;
    uint64_t seed;
    uint64_t calls;
};

/* ---- The mask ------------------------------------------------------------ */

/* The SplitMix64 finaliser: a bijection that spreads every input bit. */
static uint64_t
mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Element i of call `calls` is kept when its uniform number in [0, 1) is
 * at least the dropout probability. */
static int
keep(uint64_t seed, uint64_t calls, size_t i, float dropout)
{
    uint64_t stream = mix64(seed ^ mix64(calls));
    double u = (double)(mix64(stream + (uint64_t)i) >> 11) * 0x1p-53;

    return u >= (double)dropout;
}

/* The factor of a kept element: 1 / (1 - p), and nothing is kept at 1. */
static double
keep_scale(float dropout)
{
    return dropout < 1.0f ? 1.0 / (1.0 - (double)dropout) : 0.0;
}

/* ---- Descriptor ---------------------------------------------------------- */

cudnnStatus_t
cudnnCreateDropoutDescriptor(cudnnDropoutDescriptor_t *dropoutDesc)
{
    return emu_dnn_create_desc((void **)dropoutDesc, sizeof(**dropoutDesc),
                               EMU_DNN_MAGIC_DROPOUT);
}

cudnnStatus_t
cudnnDestroyDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc)
{
    return emu_dnn_destroy_desc(dropoutDesc, EMU_DNN_MAGIC_DROPOUT);
}

static int
dropout_live(cudnnDropoutDescriptor_t d)
{
    return d != NULL && d->magic == EMU_DNN_MAGIC_DROPOUT;
}

cudnnStatus_t
cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t *sizeInBytes)
{
    struct emu_dnn_config cfg;
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (sizeInBytes == NULL)
        return NULL_POINTER("cudnnDropoutGetStatesSize: sizeInBytes is NULL");
    *sizeInBytes = STATES_SIZE;
    return CUDNN_STATUS_SUCCESS;
}

/* One byte per element, rounded up to 16. */
cudnnStatus_t
cudnnDropoutGetReserveSpaceSize(cudnnTensorDescriptor_t xdesc,
                                size_t *sizeInBytes)
{
    struct emu_dnn_view v;

    if (!emu_dnn_tensor_ok(xdesc))
        return BAD("cudnnDropoutGetReserveSpaceSize: invalid descriptor");
    if (sizeInBytes == NULL)
        return NULL_POINTER("cudnnDropoutGetReserveSpaceSize: sizeInBytes "
                            "is NULL");
    emu_dnn_view_tensor(&v, xdesc, NULL);
    *sizeInBytes = (emu_dnn_view_count(&v) + 15) / 16 * 16;
    return CUDNN_STATUS_SUCCESS;
}

/* The descriptor's fields, after the checks set and restore share. */
static cudnnStatus_t
dropout_store(const char *api, cudnnDropoutDescriptor_t d,
              cudnnHandle_t handle, float dropout, void *states,
              size_t stateSizeInBytes, unsigned long long seed,
              struct emu_dnn_config *cfg)
{
    cudnnStatus_t st;

    if (!dropout_live(d))
        return BAD("%s: invalid dropout descriptor", api);
    st = emu_dnn_config(handle, cfg);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (!(dropout >= 0.0f && dropout <= 1.0f))
        return BAD("%s: dropout %g outside 0 to 1", api, (double)dropout);
    if (states != NULL && stateSizeInBytes < STATES_SIZE)
        return BAD("%s: %zu bytes of states, %zu needed", api,
                   stateSizeInBytes, STATES_SIZE);
    d->dropout = dropout;
    d->states = states;
    d->state_size = stateSizeInBytes;
    d->seed = seed;
    return CUDNN_STATUS_SUCCESS;
}

struct init_job {
    CUdeviceptr states;
    uint64_t seed;
};

static CUresult
init_run(void *arg)
{
    const struct init_job *j = arg;
    struct dropout_states s = { STATES_MAGIC, j->seed, 0 };
    void *at = emu_dev_at(j->states, sizeof(s));

    if (at == NULL)
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS,
                           "cudnnSetDropoutDescriptor",
                           "the states are not in device memory");
    memcpy(at, &s, sizeof(s));
    return CUDA_SUCCESS;
}

/* Without states (NULL) only the probability and seed are kept, and
 * dropout forward and backward refuse the descriptor. */
cudnnStatus_t
cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc,
                          cudnnHandle_t handle, float dropout, void *states,
                          size_t stateSizeInBytes, unsigned long long seed)
{
    const char *api = "cudnnSetDropoutDescriptor";
    struct emu_dnn_config cfg;
    struct init_job *job;
    cudnnStatus_t st = dropout_store(api, dropoutDesc, handle, dropout,
                                     states, stateSizeInBytes, seed, &cfg);

    if (st != CUDNN_STATUS_SUCCESS || states == NULL)
        return st;
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "out of host memory");
    job->states = (CUdeviceptr)(uintptr_t)states;
    job->seed = seed;
    return emu_dnn_submit(&cfg, api, init_run, free, job, 0.0,
                          (double)STATES_SIZE);
}

/* The states are taken as they are: no initialisation. */
cudnnStatus_t
cudnnRestoreDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc,
                              cudnnHandle_t handle, float dropout,
                              void *states, size_t stateSizeInBytes,
                              unsigned long long seed)
{
    struct emu_dnn_config cfg;

    return dropout_store("cudnnRestoreDropoutDescriptor", dropoutDesc,
                         handle, dropout, states, stateSizeInBytes, seed,
                         &cfg);
}

cudnnStatus_t
cudnnGetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc,
                          cudnnHandle_t handle, float *dropout,
                          void **states, unsigned long long *seed)
{
    struct emu_dnn_config cfg;
    cudnnStatus_t st;

    if (!dropout_live(dropoutDesc))
        return BAD("cudnnGetDropoutDescriptor: invalid dropout descriptor");
    st = emu_dnn_config(handle, &cfg);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (dropout == NULL || states == NULL || seed == NULL)
        return NULL_POINTER("cudnnGetDropoutDescriptor: NULL output");
    *dropout = dropoutDesc->dropout;
    *states = dropoutDesc->states;
    *seed = dropoutDesc->seed;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Forward and backward ------------------------------------------------ */

struct dropout_job {
    struct emu_dnn_view in, out;
    CUdeviceptr reserve, states;
    uint64_t seed;          /* used when the states were never set */
    float dropout;
    int backward;
};

/* Forward draws the mask from the states (advancing their call count)
 * into the reserve space; backward reads it back. out = in * scale where
 * kept, else 0. Element i is the i-th in row-major order of each tensor. */
static CUresult
dropout_run(void *arg)
{
    const struct dropout_job *j = arg;
    size_t n = emu_dnn_view_count(&j->in);
    void *in = emu_dnn_view_at(&j->in), *out = emu_dnn_view_at(&j->out);
    unsigned char *mask = emu_dev_at(j->reserve, n);
    struct dropout_states s = { STATES_MAGIC, j->seed, 0 }, held;
    double scale = keep_scale(j->dropout);
    void *sp = NULL;

    if (!j->backward)
        sp = emu_dev_at(j->states, sizeof(s));
    if (in == NULL || out == NULL || mask == NULL ||
        (!j->backward && sp == NULL))
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS,
                           j->backward ? "cudnnDropoutBackward"
                                       : "cudnnDropoutForward",
                           "a tensor, the reserve space or the states are "
                           "not in device memory");
    /* States never initialised act as freshly seeded ones. The program
     * may place them at any address: copied, not dereferenced. */
    if (sp != NULL) {
        memcpy(&held, sp, sizeof(held));
        if (held.magic == STATES_MAGIC)
            s = held;
    }
    for (size_t i = 0; i < n; i++) {
        double v;

        if (!j->backward)
            mask[i] = (unsigned char)keep(s.seed, s.calls, i, j->dropout);
        v = mask[i] ? scale * emu_dnn_loadd(in,
                                            emu_dnn_view_offset(&j->in, i),
                                            j->in.type)
                    : 0.0;
        emu_dnn_stored(out, emu_dnn_view_offset(&j->out, i), j->out.type,
                       v);
    }
    if (sp != NULL) {
        s.calls++;
        memcpy(sp, &s, sizeof(s));
    }
    return CUDA_SUCCESS;
}

/* cuDNN's list: a descriptor set with states, tensors of one type and
 * number of elements, in place only with the same strides, enough reserve
 * space (BAD_PARAM); NULL pointers. */
static cudnnStatus_t
dropout_submit(const char *api, int backward, cudnnHandle_t handle,
               cudnnDropoutDescriptor_t d, cudnnTensorDescriptor_t inDesc,
               const void *in, cudnnTensorDescriptor_t outDesc, void *out,
               void *reserve, size_t reserveSize)
{
    struct emu_dnn_config cfg;
    struct dropout_job *job;
    size_t need;
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (!dropout_live(d) || d->states == NULL)
        return BAD("%s: the dropout descriptor has no states", api);
    if (!emu_dnn_tensor_ok(inDesc) || !emu_dnn_tensor_ok(outDesc))
        return BAD("%s: invalid tensor descriptor", api);
    if (in == NULL || out == NULL || reserve == NULL)
        return NULL_POINTER("%s: NULL data or reserve space", api);
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "out of host memory");
    emu_dnn_view_tensor(&job->in, inDesc, in);
    emu_dnn_view_tensor(&job->out, outDesc, out);
    st = cudnnDropoutGetReserveSpaceSize(inDesc, &need);
    if (st == CUDNN_STATUS_SUCCESS &&
        emu_dnn_view_count(&job->in) != emu_dnn_view_count(&job->out))
        st = BAD("%s: the tensors differ in their number of elements", api);
    else if (st == CUDNN_STATUS_SUCCESS && inDesc->type != outDesc->type)
        st = BAD("%s: the tensors differ in type", api);
    else if (st == CUDNN_STATUS_SUCCESS && in == out &&
             (!emu_dnn_same_dims(inDesc, outDesc) ||
              !emu_dnn_same_strides(inDesc, outDesc)))
        st = BAD("%s: in-place call with another layout", api);
    else if (st == CUDNN_STATUS_SUCCESS && reserveSize < need)
        st = BAD("%s: %zu bytes of reserve space, %zu needed", api,
                 reserveSize, need);
    if (st == CUDNN_STATUS_SUCCESS)
        st = emu_dnn_type_ok(inDesc, api);
    if (st != CUDNN_STATUS_SUCCESS) {
        free(job);
        return st;
    }
    job->reserve = (CUdeviceptr)(uintptr_t)reserve;
    job->states = (CUdeviceptr)(uintptr_t)d->states;
    job->seed = d->seed;
    job->dropout = d->dropout;
    job->backward = backward;
    return emu_dnn_submit(&cfg, api, dropout_run, free, job,
                          (double)emu_dnn_view_count(&job->in),
                          emu_dnn_view_bytes(&job->in) +
                              emu_dnn_view_bytes(&job->out) +
                              (double)emu_dnn_view_count(&job->in));
}

cudnnStatus_t
cudnnDropoutForward(cudnnHandle_t handle,
                    const cudnnDropoutDescriptor_t dropoutDesc,
                    const cudnnTensorDescriptor_t xdesc, const void *x,
                    const cudnnTensorDescriptor_t ydesc, void *y,
                    void *reserveSpace, size_t reserveSpaceSizeInBytes)
{
    return dropout_submit("cudnnDropoutForward", 0, handle, dropoutDesc,
                          xdesc, x, ydesc, y, reserveSpace,
                          reserveSpaceSizeInBytes);
}

cudnnStatus_t
cudnnDropoutBackward(cudnnHandle_t handle,
                     const cudnnDropoutDescriptor_t dropoutDesc,
                     const cudnnTensorDescriptor_t dydesc, const void *dy,
                     const cudnnTensorDescriptor_t dxdesc, void *dx,
                     void *reserveSpace, size_t reserveSpaceSizeInBytes)
{
    return dropout_submit("cudnnDropoutBackward", 1, handle, dropoutDesc,
                          dydesc, dy, dxdesc, dx, reserveSpace,
                          reserveSpaceSizeInBytes);
}
