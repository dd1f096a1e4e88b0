/* The emulated libcublasLt.so.13: handles, versions, status names, and the
 * matmul, matrix layout and preference descriptors with their attributes.
 * The product and its heuristics are in cublaslt_matmul.c. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_handle.h"
#include "cublas_status.h"
#include "cublaslt_emu.h"
#include "emu.h"

/* ---- Handles ------------------------------------------------------------- */

cublasStatus_t
emu_lt_handle_device(cublasLtHandle_t handle, int *device)
{
    const struct cublasContext *blas = (const void *)handle;

    if (handle == NULL)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (handle->magic == EMU_LT_MAGIC) {
        *device = handle->device;
        return CUBLAS_STATUS_SUCCESS;
    }
    /* A cuBLAS handle encapsulates a cuBLASLt one, and NVIDIA documents
     * that a cublasHandle_t may be cast and passed here. Its device is
     * fixed when it is made, so it is read without the handle's lock. */
    if (blas->magic == EMU_BLAS_MAGIC) {
        *device = blas->device;
        return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t
cublasLtCreate(cublasLtHandle_t *lightHandle)
{
    struct cublasLtContext *ctx;
    int fault, dev;

    if (lightHandle == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault("cublasLtCreate", CUBLAS_STATUS_NOT_INITIALIZED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    /* It allocates its device resources as cuBLAS does, which a running
     * capture may forbid. */
    if (emu_capture_unsafe_call() != CUDA_SUCCESS)
        return CUBLAS_STATUS_ALLOC_FAILED;
    dev = emu_current_device();
    if (emu_runtime_bind(dev < 0 ? 0 : dev) != CUDA_SUCCESS)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    dev = emu_current_device();
    if (dev < 0)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    ctx->magic = EMU_LT_MAGIC;
    ctx->device = dev;
    *lightHandle = ctx;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtDestroy(cublasLtHandle_t lightHandle)
{
    if (lightHandle == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (lightHandle->magic != EMU_LT_MAGIC)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    /* The library documents an implicit cudaDeviceSynchronize here. */
    if (emu_runtime_bind(lightHandle->device) == CUDA_SUCCESS)
        (void)cuCtxSynchronize();
    lightHandle->magic = 0;
    free(lightHandle);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- Versions and status names ------------------------------------------ */

/* cuBLASLt ships with cuBLAS and carries its version. */
size_t
cublasLtGetVersion(void)
{
    return CUBLAS_VERSION;
}

/* The runtime the library was built against: this toolkit's. */
size_t
cublasLtGetCudartVersion(void)
{
    return CUDART_VERSION;
}

cublasStatus_t
cublasLtGetProperty(libraryPropertyType type, int *value)
{
    if (value == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (type) {
    case MAJOR_VERSION:
        *value = CUBLAS_VER_MAJOR;
        return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
        *value = CUBLAS_VER_MINOR;
        return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
        *value = CUBLAS_VER_PATCH;
        return CUBLAS_STATUS_SUCCESS;
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
}

const char *
cublasLtGetStatusName(cublasStatus_t status)
{
    return emu_blas_status_name(status);
}

const char *
cublasLtGetStatusString(cublasStatus_t status)
{
    return emu_blas_status_text(status);
}

/* ---- Attributes ---------------------------------------------------------- */

/* Where an attribute lives in its descriptor and how many bytes it has:
 * the size the header gives its type, which Set and Get require exactly. */
struct attr_slot {
    int attr;
    size_t offset;
    size_t size;
};

#define SLOT(attr, type, field)                                              \
    { attr, offsetof(type, field), sizeof(((type *)0)->field) }

static const struct attr_slot desc_slots[] = {
    SLOT(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, struct emu_lt_desc, compute_type),
    SLOT(CUBLASLT_MATMUL_DESC_SCALE_TYPE, struct emu_lt_desc, scale_type),
    SLOT(CUBLASLT_MATMUL_DESC_POINTER_MODE, struct emu_lt_desc, pointer_mode),
    SLOT(CUBLASLT_MATMUL_DESC_TRANSA, struct emu_lt_desc, transa),
    SLOT(CUBLASLT_MATMUL_DESC_TRANSB, struct emu_lt_desc, transb),
    SLOT(CUBLASLT_MATMUL_DESC_TRANSC, struct emu_lt_desc, transc),
    SLOT(CUBLASLT_MATMUL_DESC_FILL_MODE, struct emu_lt_desc, fill_mode),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE, struct emu_lt_desc, epilogue),
    SLOT(CUBLASLT_MATMUL_DESC_BIAS_POINTER, struct emu_lt_desc, bias),
    SLOT(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, struct emu_lt_desc,
         bias_batch_stride),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, struct emu_lt_desc, aux),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, struct emu_lt_desc, aux_ld),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, struct emu_lt_desc,
         aux_batch_stride),
    SLOT(CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, struct emu_lt_desc,
         alpha_vector_batch_stride),
    SLOT(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, struct emu_lt_desc,
         sm_count_target),
    SLOT(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, struct emu_lt_desc, a_scale),
    SLOT(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, struct emu_lt_desc, b_scale),
    SLOT(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, struct emu_lt_desc, c_scale),
    SLOT(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, struct emu_lt_desc, d_scale),
    SLOT(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, struct emu_lt_desc, amax_d),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, struct emu_lt_desc,
         aux_data_type),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, struct emu_lt_desc,
         aux_scale),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, struct emu_lt_desc,
         aux_amax),
    SLOT(CUBLASLT_MATMUL_DESC_FAST_ACCUM, struct emu_lt_desc, fast_accum),
    SLOT(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, struct emu_lt_desc,
         bias_data_type),
    SLOT(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, struct emu_lt_desc, a_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, struct emu_lt_desc, b_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, struct emu_lt_desc, c_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_D_SCALE_MODE, struct emu_lt_desc, d_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, struct emu_lt_desc,
         aux_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, struct emu_lt_desc,
         d_out_scale),
    SLOT(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, struct emu_lt_desc,
         d_out_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, struct emu_lt_desc,
         emulation),
};

static const struct attr_slot layout_slots[] = {
    SLOT(CUBLASLT_MATRIX_LAYOUT_TYPE, struct emu_lt_layout, type),
    SLOT(CUBLASLT_MATRIX_LAYOUT_ORDER, struct emu_lt_layout, order),
    SLOT(CUBLASLT_MATRIX_LAYOUT_ROWS, struct emu_lt_layout, rows),
    SLOT(CUBLASLT_MATRIX_LAYOUT_COLS, struct emu_lt_layout, cols),
    SLOT(CUBLASLT_MATRIX_LAYOUT_LD, struct emu_lt_layout, ld),
    SLOT(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, struct emu_lt_layout,
         batch_count),
    SLOT(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, struct emu_lt_layout,
         batch_stride),
    SLOT(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, struct emu_lt_layout,
         plane_offset),
    SLOT(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, struct emu_lt_layout, batch_mode),
};

static const struct attr_slot pref_slots[] = {
    SLOT(CUBLASLT_MATMUL_PREF_SEARCH_MODE, struct emu_lt_pref, search_mode),
    SLOT(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, struct emu_lt_pref,
         max_workspace_bytes),
    SLOT(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, struct emu_lt_pref,
         reduction_scheme_mask),
    SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, struct emu_lt_pref,
         min_alignment[0]),
    SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, struct emu_lt_pref,
         min_alignment[1]),
    SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, struct emu_lt_pref,
         min_alignment[2]),
    SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, struct emu_lt_pref,
         min_alignment[3]),
    SLOT(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, struct emu_lt_pref,
         max_waves_count),
    SLOT(CUBLASLT_MATMUL_PREF_IMPL_MASK, struct emu_lt_pref, impl_mask),
};

#define NSLOTS(a) (sizeof(a) / sizeof((a)[0]))

static const struct attr_slot *
find_slot(const struct attr_slot *slots, size_t n, int attr)
{
    for (size_t i = 0; i < n; i++)
        if (slots[i].attr == attr)
            return &slots[i];
    return NULL;
}

/* The documented contract of every Set: buf not NULL, sizeInBytes the
 * attribute's size; an unknown attribute is an invalid value too. Values
 * are not checked here: cublasLtMatmul checks what it is given. */
static cublasStatus_t
set_attr(void *obj, const struct attr_slot *slots, size_t n, int attr,
         const void *buf, size_t size)
{
    const struct attr_slot *s = find_slot(slots, n, attr);

    if (obj == NULL || s == NULL || buf == NULL || size != s->size)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy((char *)obj + s->offset, buf, size);
    return CUBLAS_STATUS_SUCCESS;
}

/* And of every Get: sizeInBytes 0 asks for the size in *sizeWritten (which
 * must then be given); otherwise buf must be given and sizeInBytes be the
 * attribute's size. */
static cublasStatus_t
get_attr(const void *obj, const struct attr_slot *slots, size_t n, int attr,
         void *buf, size_t size, size_t *written)
{
    const struct attr_slot *s = find_slot(slots, n, attr);

    if (obj == NULL || s == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (size == 0) {
        if (written == NULL)
            return CUBLAS_STATUS_INVALID_VALUE;
        *written = s->size;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (buf == NULL || size != s->size)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, (const char *)obj + s->offset, size);
    if (written != NULL)
        *written = s->size;
    return CUBLAS_STATUS_SUCCESS;
}

/* A descriptor made by Init lives in the caller's memory: Destroy must not
 * be called on it. The real library would free memory it does not own;
 * the emulator says so and leaves it. */
static cublasStatus_t
refuse_destroy(const char *what)
{
    fprintf(stderr, "ampshim-emu: %s called on a descriptor made by its "
            "Init function (the caller's memory); not freed\n", what);
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* ---- Matmul descriptors --------------------------------------------------- */

const struct emu_lt_desc *
emu_lt_desc_at(cublasLtMatmulDesc_t desc)
{
    const struct emu_lt_desc *d = (const void *)desc;

    return d != NULL && d->magic == EMU_LT_DESC_MAGIC ? d : NULL;
}

static void
desc_init(struct emu_lt_desc *d, cublasComputeType_t compute,
          cudaDataType_t scale, int created)
{
    memset(d, 0, sizeof(*d));
    d->magic = EMU_LT_DESC_MAGIC;
    d->created = (uint8_t)created;
    d->compute_type = compute;
    d->scale_type = scale;
    d->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    d->transa = d->transb = d->transc = CUBLAS_OP_N;
    d->fill_mode = CUBLAS_FILL_MODE_FULL;
    d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    d->aux_data_type = -1;
    d->bias_data_type = -1;
}

cublasStatus_t
cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                cublasComputeType_t computeType,
                                cudaDataType_t scaleType)
{
    if (matmulDesc == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(cublasLtMatmulDescOpaque_t))
        return CUBLAS_STATUS_ALLOC_FAILED;
    desc_init((struct emu_lt_desc *)matmulDesc, computeType, scaleType, 0);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                         cublasComputeType_t computeType,
                         cudaDataType_t scaleType)
{
    cublasLtMatmulDescOpaque_t *opaque;

    if (matmulDesc == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    opaque = malloc(sizeof(*opaque));
    if (opaque == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    desc_init((struct emu_lt_desc *)opaque, computeType, scaleType, 1);
    *matmulDesc = opaque;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
    struct emu_lt_desc *d = (struct emu_lt_desc *)matmulDesc;

    if (d == NULL)
        return CUBLAS_STATUS_SUCCESS;
    if (d->magic != EMU_LT_DESC_MAGIC)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!d->created)
        return refuse_destroy("cublasLtMatmulDescDestroy");
    d->magic = 0;
    free(matmulDesc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t sizeInBytes)
{
    struct emu_lt_desc *d = (struct emu_lt_desc *)emu_lt_desc_at(matmulDesc);

    return set_attr(d, desc_slots, NSLOTS(desc_slots), attr, buf,
                    sizeInBytes);
}

cublasStatus_t
cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr,
                               void *buf, size_t sizeInBytes,
                               size_t *sizeWritten)
{
    return get_attr(emu_lt_desc_at(matmulDesc), desc_slots,
                    NSLOTS(desc_slots), attr, buf, sizeInBytes, sizeWritten);
}

/* ---- Matrix layouts ------------------------------------------------------ */

const struct emu_lt_layout *
emu_lt_layout_at(cublasLtMatrixLayout_t layout)
{
    const struct emu_lt_layout *l = (const void *)layout;

    return l != NULL && l->magic == EMU_LT_LAYOUT_MAGIC ? l : NULL;
}

static void
layout_init(struct emu_lt_layout *l, cudaDataType type, uint64_t rows,
            uint64_t cols, int64_t ld, int created)
{
    memset(l, 0, sizeof(*l));
    l->magic = EMU_LT_LAYOUT_MAGIC;
    l->created = (uint8_t)created;
    l->type = (uint32_t)type;
    l->order = CUBLASLT_ORDER_COL;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    l->batch_count = 1;
    l->batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
}

cublasStatus_t
cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout,
                                  size_t size, cudaDataType type,
                                  uint64_t rows, uint64_t cols, int64_t ld)
{
    if (matLayout == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(cublasLtMatrixLayoutOpaque_t))
        return CUBLAS_STATUS_ALLOC_FAILED;
    layout_init((struct emu_lt_layout *)matLayout, type, rows, cols, ld, 0);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
                           cudaDataType type, uint64_t rows, uint64_t cols,
                           int64_t ld)
{
    cublasLtMatrixLayoutOpaque_t *opaque;

    if (matLayout == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    opaque = malloc(sizeof(*opaque));
    if (opaque == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    layout_init((struct emu_lt_layout *)opaque, type, rows, cols, ld, 1);
    *matLayout = opaque;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
{
    struct emu_lt_layout *l = (struct emu_lt_layout *)matLayout;

    if (l == NULL)
        return CUBLAS_STATUS_SUCCESS;
    if (l->magic != EMU_LT_LAYOUT_MAGIC)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!l->created)
        return refuse_destroy("cublasLtMatrixLayoutDestroy");
    l->magic = 0;
    free(matLayout);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 const void *buf, size_t sizeInBytes)
{
    struct emu_lt_layout *l =
        (struct emu_lt_layout *)emu_lt_layout_at(matLayout);

    return set_attr(l, layout_slots, NSLOTS(layout_slots), attr, buf,
                    sizeInBytes);
}

cublasStatus_t
cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 void *buf, size_t sizeInBytes,
                                 size_t *sizeWritten)
{
    return get_attr(emu_lt_layout_at(matLayout), layout_slots,
                    NSLOTS(layout_slots), attr, buf, sizeInBytes,
                    sizeWritten);
}

/* ---- Preferences --------------------------------------------------------- */

const struct emu_lt_pref *
emu_lt_pref_at(cublasLtMatmulPreference_t pref)
{
    const struct emu_lt_pref *p = (const void *)pref;

    return p != NULL && p->magic == EMU_LT_PREF_MAGIC ? p : NULL;
}

/* The header's defaults: best fit, no workspace, every reduction scheme,
 * 256-byte alignment of each matrix, no wave limit, every implementation. */
void
emu_lt_pref_defaults(struct emu_lt_pref *p)
{
    memset(p, 0, sizeof(*p));
    p->magic = EMU_LT_PREF_MAGIC;
    p->search_mode = CUBLASLT_SEARCH_BEST_FIT;
    p->reduction_scheme_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
    for (int i = 0; i < 4; i++)
        p->min_alignment[i] = 256;
    p->impl_mask = UINT64_MAX;
}

cublasStatus_t
cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                      size_t size)
{
    if (pref == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(cublasLtMatmulPreferenceOpaque_t))
        return CUBLAS_STATUS_ALLOC_FAILED;
    emu_lt_pref_defaults((struct emu_lt_pref *)pref);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    cublasLtMatmulPreferenceOpaque_t *opaque;

    if (pref == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    opaque = malloc(sizeof(*opaque));
    if (opaque == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    emu_lt_pref_defaults((struct emu_lt_pref *)opaque);
    ((struct emu_lt_pref *)opaque)->created = 1;
    *pref = opaque;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    struct emu_lt_pref *p = (struct emu_lt_pref *)pref;

    if (p == NULL)
        return CUBLAS_STATUS_SUCCESS;
    if (p->magic != EMU_LT_PREF_MAGIC)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!p->created)
        return refuse_destroy("cublasLtMatmulPreferenceDestroy");
    p->magic = 0;
    free(pref);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     const void *buf, size_t sizeInBytes)
{
    struct emu_lt_pref *p = (struct emu_lt_pref *)emu_lt_pref_at(pref);

    return set_attr(p, pref_slots, NSLOTS(pref_slots), attr, buf,
                    sizeInBytes);
}

cublasStatus_t
cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     void *buf, size_t sizeInBytes,
                                     size_t *sizeWritten)
{
    return get_attr(emu_lt_pref_at(pref), pref_slots, NSLOTS(pref_slots),
                    attr, buf, sizeInBytes, sizeWritten);
}

/* ---- Emulation descriptors ------------------------------------------------ */

static const struct attr_slot emulation_slots[] = {
    SLOT(CUBLASLT_EMULATION_DESC_STRATEGY, struct emu_lt_emulation,
         strategy),
    SLOT(CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT,
         struct emu_lt_emulation, special_values),
    SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_CONTROL,
         struct emu_lt_emulation, mantissa_control),
    SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MAX_MANTISSA_BIT_COUNT,
         struct emu_lt_emulation, max_mantissa_bits),
    SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_OFFSET,
         struct emu_lt_emulation, mantissa_bit_offset),
    SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER,
         struct emu_lt_emulation, mantissa_bit_count),
};

static struct emu_lt_emulation *
emulation_at(cublasLtEmulationDesc_t desc)
{
    struct emu_lt_emulation *e = (void *)desc;

    return e != NULL && e->magic == EMU_LT_EMULATION_MAGIC ? e : NULL;
}

int
emu_lt_emulation_strategy(cublasLtEmulationDesc_t desc)
{
    const struct emu_lt_emulation *e = emulation_at(desc);

    return e != NULL ? e->strategy : 0;
}

/* cublasLt.h's defaults: strategy DEFAULT, every special value supported
 * (0xFFFF), the fixed-point settings 0 and no bit-count pointer. */
static void
emulation_init(struct emu_lt_emulation *e)
{
    memset(e, 0, sizeof(*e));
    e->magic = EMU_LT_EMULATION_MAGIC;
    e->special_values = 0xFFFF;
}

cublasStatus_t
cublasLtEmulationDescInit_internal(cublasLtEmulationDesc_t emulationDesc,
                                   size_t size)
{
    if (emulationDesc == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(cublasLtEmulationDescOpaque_t))
        return CUBLAS_STATUS_ALLOC_FAILED;
    emulation_init((struct emu_lt_emulation *)emulationDesc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtEmulationDescCreate(cublasLtEmulationDesc_t *emulationDesc)
{
    cublasLtEmulationDescOpaque_t *opaque;

    if (emulationDesc == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    opaque = malloc(sizeof(*opaque));
    if (opaque == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    emulation_init((struct emu_lt_emulation *)opaque);
    ((struct emu_lt_emulation *)opaque)->created = 1;
    *emulationDesc = opaque;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtEmulationDescDestroy(cublasLtEmulationDesc_t emulationDesc)
{
    struct emu_lt_emulation *e = (struct emu_lt_emulation *)emulationDesc;

    if (e == NULL)
        return CUBLAS_STATUS_SUCCESS;
    if (e->magic != EMU_LT_EMULATION_MAGIC)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!e->created)
        return refuse_destroy("cublasLtEmulationDescDestroy");
    e->magic = 0;
    free(emulationDesc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtEmulationDescSetAttribute(cublasLtEmulationDesc_t emulationDesc,
                                  cublasLtEmulationDescAttributes_t attr,
                                  const void *buf, size_t sizeInBytes)
{
    return set_attr(emulation_at(emulationDesc), emulation_slots,
                    NSLOTS(emulation_slots), attr, buf, sizeInBytes);
}

cublasStatus_t
cublasLtEmulationDescGetAttribute(cublasLtEmulationDesc_t emulationDesc,
                                  cublasLtEmulationDescAttributes_t attr,
                                  void *buf, size_t sizeInBytes,
                                  size_t *sizeWritten)
{
    return get_attr(emulation_at(emulationDesc), emulation_slots,
                    NSLOTS(emulation_slots), attr, buf, sizeInBytes,
                    sizeWritten);
}
