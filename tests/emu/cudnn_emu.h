/* The emulated cuDNN's descriptors, handle and the helpers its entry points
 * share (cudnn.c, cudnn_desc.c, cudnn_conv.c, cudnn_ops.c). */
#ifndef EMU_CUDNN_EMU_H
#define EMU_CUDNN_EMU_H

#include <cudnn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "emu.h"

#define EMU_DNN_MAGIC_HANDLE 0x444e4e48u /* "DNNH" while the object lives */
#define EMU_DNN_MAGIC_TENSOR 0x444e4e54u
#define EMU_DNN_MAGIC_FILTER 0x444e4e46u
#define EMU_DNN_MAGIC_CONV 0x444e4e43u
#define EMU_DNN_MAGIC_ACT 0x444e4e41u
#define EMU_DNN_MAGIC_POOL 0x444e4e50u
#define EMU_DNN_MAGIC_OPTENSOR 0x444e4e4fu
#define EMU_DNN_MAGIC_LRN 0x444e4e4cu
#define EMU_DNN_MAGIC_DROPOUT 0x444e4e44u
#define EMU_DNN_MAGIC_REDUCE 0x444e4e52u
#define EMU_DNN_MAGIC_TRANSFORM 0x444e4e58u

#define EMU_DNN_MAX_SPATIAL (CUDNN_DIM_MAX - 2)

/* cudnn_graph.h declares the handle struct and leaves it to the library.
 * One handle is used by one thread at a time (documented), but the stream
 * is read under `lock` so that a racing cudnnSetStream stays defined. */
struct cudnnContext {
    uint32_t magic;
    pthread_mutex_t lock;
    int device;         /* bound at creation */
    CUstream stream;    /* NULL: the legacy default stream */
};

/* A tensor: `nb_dims` sizes and element strides, outermost (N) first. */
struct cudnnTensorStruct {
    uint32_t magic;
    int is_set;
    cudnnDataType_t type;
    int nb_dims;
    int dim[CUDNN_DIM_MAX];
    int stride[CUDNN_DIM_MAX];
};

/* A filter: dim[] is always K, C, spatial... whatever the format; the
 * format says where C lies in memory (KCRS: after K; KRSC: innermost). */
struct cudnnFilterStruct {
    uint32_t magic;
    int is_set;
    cudnnDataType_t type;
    cudnnTensorFormat_t format;
    int nb_dims;
    int dim[CUDNN_DIM_MAX];
};

struct cudnnConvolutionStruct {
    uint32_t magic;
    int nb_spatial;     /* the array length: tensor dimensions - 2 */
    int pad[EMU_DNN_MAX_SPATIAL];
    int stride[EMU_DNN_MAX_SPATIAL];
    int dilation[EMU_DNN_MAX_SPATIAL];
    cudnnConvolutionMode_t mode;
    cudnnDataType_t compute;
    int groups;
    cudnnMathType_t math;
    cudnnReorderType_t reorder;
};

struct cudnnActivationStruct {
    uint32_t magic;
    cudnnActivationMode_t mode;
    cudnnNanPropagation_t nan_opt;
    double coef;
    double swish_beta;
};

struct cudnnPoolingStruct {
    uint32_t magic;
    cudnnPoolingMode_t mode;
    cudnnNanPropagation_t nan_opt;
    int nb_spatial;
    int window[EMU_DNN_MAX_SPATIAL];
    int pad[EMU_DNN_MAX_SPATIAL];
    int stride[EMU_DNN_MAX_SPATIAL];
};

struct cudnnOpTensorStruct {
    uint32_t magic;
    int is_set;
    cudnnOpTensorOp_t op;
    cudnnDataType_t compute;
    cudnnNanPropagation_t nan_opt;
};

/* Local response normalisation across channels: a window of `n` channels
 * from c - (n - 1) / 2 to c + n / 2 (rounded down). */
struct cudnnLRNStruct {
    uint32_t magic;
    unsigned n;
    double alpha, beta, k;
};

/* Dropout: the probability, and the states (device memory the program
 * gave, which holds the generator's seed and call counter). */
struct cudnnDropoutStruct {
    uint32_t magic;
    float dropout;
    void *states;
    size_t state_size;
    unsigned long long seed;
};

/* A reduction (cudnnReduceTensor): the operation, its compute type, NaN
 * propagation and whether it writes indices, of which type. */
struct cudnnReduceTensorStruct {
    uint32_t magic;
    int is_set;
    cudnnReduceTensorOp_t op;
    cudnnDataType_t compute;
    cudnnNanPropagation_t nan_opt;
    cudnnReduceTensorIndices_t indices;
    cudnnIndicesType_t indices_type;
};

/* A tensor transform (cudnn_transform.c): padding per dimension in the
 * tensor's logical order, a fold per spatial dimension (1: none). */
struct cudnnTensorTransformStruct {
    uint32_t magic;
    int is_set;
    int nb_dims;
    cudnnTensorFormat_t format;
    int pad_before[CUDNN_DIM_MAX];
    int pad_after[CUDNN_DIM_MAX];
    int fold[CUDNN_DIM_MAX];
    cudnnFoldingDirection_t direction;
};

/* ---- Status and last error (cudnn.c) ------------------------------------ */

/* Records `status` with a message for cudnnGetLastErrorString in the
 * calling thread and returns it. */
cudnnStatus_t emu_dnn_error(cudnnStatus_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));


/* ---- Handle and deferred work (cudnn.c) --------------------------------- */

/* The handle's settings, copied once per call. */
struct emu_dnn_config {
    int device;
    CUstream stream;
};

/* Copies the settings of `handle`; BAD_PARAM for a NULL or destroyed
 * handle, as the real library answers without a GPU. */
cudnnStatus_t emu_dnn_config(cudnnHandle_t handle,
                             struct emu_dnn_config *config);

/* Counts one call of `api` for fault injection and, when
 * AMPSHIM_EMU_FAIL asks for it, returns EXECUTION_FAILED (or the status
 * the variable names); else SUCCESS. */
cudnnStatus_t emu_dnn_fault(const char *api);

/* emu_dnn_fault for a call that writes an output: *partial is set when the
 * injected fault asks for part of the output to be written first. */
cudnnStatus_t emu_dnn_fault_partial(const char *api, int *partial);

/* Queues `op` on the handle's stream, after binding the thread to the
 * handle's device; EXECUTION_FAILED when it cannot be queued (op->release
 * is then called). */
cudnnStatus_t emu_dnn_enqueue(const struct emu_dnn_config *config,
                              const struct emu_op *op);

/* ---- Descriptors (cudnn_desc.c) ----------------------------------------- */

/* A new descriptor of `size` bytes whose first field is `magic`, and its
 * destruction (NULL allowed, another kind refused): BAD_PARAM or the host
 * allocation failure. */
cudnnStatus_t emu_dnn_create_desc(void **out, size_t size, uint32_t magic);
cudnnStatus_t emu_dnn_destroy_desc(void *d, uint32_t magic);

int emu_dnn_tensor_ok(cudnnTensorDescriptor_t t);
int emu_dnn_filter_ok(cudnnFilterDescriptor_t f);
int emu_dnn_conv_ok(cudnnConvolutionDescriptor_t c);

/* Bytes of one element of `type`, 0 for types the emulator cannot hold. */
size_t emu_dnn_type_size(cudnnDataType_t type);

/* 1 for a cudnnNanPropagation_t value the API takes. */
int emu_dnn_nan_opt_valid(cudnnNanPropagation_t v);

/* Element strides of a filter in K, C, spatial order, from its format. */
void emu_dnn_filter_strides(cudnnFilterDescriptor_t f,
                            int64_t stride[CUDNN_DIM_MAX]);

/* The output sizes (N, K, spatial...) of a convolution; BAD_PARAM (with a
 * message) when the descriptors do not fit together. */
cudnnStatus_t emu_dnn_conv_output_dims(cudnnConvolutionDescriptor_t conv,
                                       cudnnTensorDescriptor_t x,
                                       cudnnFilterDescriptor_t w,
                                       int out[CUDNN_DIM_MAX]);

/* ---- Device tensors and elements (cudnn_ops.c) --------------------------- */

/* A tensor in device memory as an op sees it. */
struct emu_dnn_view {
    CUdeviceptr ptr;
    cudnnDataType_t type;
    int nb_dims;
    int dim[CUDNN_DIM_MAX];
    int64_t stride[CUDNN_DIM_MAX];
    int packed;     /* strides of a packed row-major layout: offset == index */
};

void emu_dnn_view_tensor(struct emu_dnn_view *v, cudnnTensorDescriptor_t t,
                         const void *ptr);
void emu_dnn_view_filter(struct emu_dnn_view *v, cudnnFilterDescriptor_t f,
                         const void *ptr);

/* Elements in the view, and the element offset of the lin-th one counted
 * in row-major order of dim[]. */
size_t emu_dnn_view_count(const struct emu_dnn_view *v);
int64_t emu_dnn_view_offset(const struct emu_dnn_view *v, size_t lin);

/* Inside an op: the host alias of the whole view, or NULL when it is not
 * in device memory. */
void *emu_dnn_view_at(const struct emu_dnn_view *v);
/* Inside an op: notes that it wrote the view (emu_dev_wrote). */
void emu_dnn_view_wrote(const struct emu_dnn_view *v);

/* Element idx of a FLOAT, HALF or BFLOAT16 array as float, and back. */
float emu_dnn_load(const void *base, int64_t idx, cudnnDataType_t type);
void emu_dnn_store(void *base, int64_t idx, cudnnDataType_t type, float v);

/* dst = alpha * value + beta * dst; dst is not read when beta == 0. */
void emu_dnn_blend(void *base, int64_t idx, cudnnDataType_t type,
                   float alpha, float beta, float value);

/* Bytes the whole view moves once, for the timing model. */
double emu_dnn_view_bytes(const struct emu_dnn_view *v);

/*
 * The operations other than convolution compute in double: each element
 * is loaded exactly, every sum is a double sum, and the result is rounded
 * once to the tensor's type when stored (HALF and BFLOAT16 through FP32,
 * as cuDNN's own kernels compute those types in FP32). cuDNN computes
 * FLOAT tensors in FP32, so a GPU's results may differ from these in the
 * last bits; DOUBLE tensors are computed as cuDNN does.
 */
int emu_dnn_float_type(cudnnDataType_t type);   /* FLOAT, DOUBLE, HALF, BF16 */
double emu_dnn_loadd(const void *base, int64_t idx, cudnnDataType_t type);
void emu_dnn_stored(void *base, int64_t idx, cudnnDataType_t type,
                    double v);
/* dst = alpha * value + beta * dst; dst is not read when beta == 0. */
void emu_dnn_blendd(void *base, int64_t idx, cudnnDataType_t type,
                    double alpha, double beta, double value);

/* A host scaling factor: a double for DOUBLE tensors, else a float. */
double emu_dnn_scalar(const void *p, cudnnDataType_t type);

/* NOT_SUPPORTED (with a message naming `api`) unless `t` holds one of the
 * floating-point types the operations compute on. */
cudnnStatus_t emu_dnn_type_ok(cudnnTensorDescriptor_t t, const char *api);

/* 1 when a and b have the same rank and sizes; the same strides. */
int emu_dnn_same_dims(cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t b);
int emu_dnn_same_strides(cudnnTensorDescriptor_t a,
                         cudnnTensorDescriptor_t b);

/* Counts the call of `api` for fault injection and queues run(arg) on the
 * handle's stream, modelled as `flops` FP32 operations and `bytes` moved;
 * release(arg) is called in every case, after the run or at once when the
 * call fails. */
cudnnStatus_t emu_dnn_submit(const struct emu_dnn_config *config,
                             const char *api, CUresult (*run)(void *),
                             void (*release)(void *), void *arg,
                             double flops, double bytes);

/* ---- The convolution core for the backend API (cudnn_conv.c) ------------- */

/* One convolution as the backend's operation graph gives it: the three
 * tensors as views (pointers filled at execution; for the backward
 * directions x is dx or w is dw, y is dy), the geometry and the math. */
enum emu_dnn_conv_dir {
    EMU_DNN_CONV_FWD, EMU_DNN_CONV_BWD_DATA, EMU_DNN_CONV_BWD_FILTER,
};

/* The legacy algorithms' kinds the backend's engines are made of. */
enum emu_dnn_conv_kind {
    EMU_DNN_KIND_IMPLICIT, EMU_DNN_KIND_PRECOMP, EMU_DNN_KIND_GEMM,
};

struct emu_dnn_conv_spec {
    enum emu_dnn_conv_dir dir;
    enum emu_dnn_conv_kind kind;
    int tensor_core;    /* TF32 for FLOAT data, FP16/BF16 Tensor Cores for
                           HALF and BFLOAT16; else FP32 FMA */
    int nsp, groups, flip;
    int pre_pad[EMU_DNN_MAX_SPATIAL];
    int stride[EMU_DNN_MAX_SPATIAL], dil[EMU_DNN_MAX_SPATIAL];
    cudnnDataType_t type;
    struct emu_dnn_view x, w, y;
};

/* Whether the engine the spec names supports it, its workspace (bytes, a
 * multiple of 256), modelled time and determinism: NOT_SUPPORTED (with a
 * message) when it does not. */
cudnnStatus_t emu_dnn_conv_engine(const struct emu_dnn_conv_spec *s,
                                  size_t *workspace, double *model_ns,
                                  int *deterministic);

/* Queues the convolution on the handle's stream as `api`, with alpha and
 * beta, the workspace given (at least emu_dnn_conv_engine's) and, for an
 * injected partial fault, the first half of the output only. */
cudnnStatus_t emu_dnn_conv_enqueue(const struct emu_dnn_config *config,
                                   const char *api,
                                   const struct emu_dnn_conv_spec *s,
                                   float alpha, float beta,
                                   CUdeviceptr workspace, int partial);

#endif
