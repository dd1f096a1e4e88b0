/* The emulated libcublasLt.so.13's handle and descriptors, shared by its
 * sources: the descriptor calls (cublaslt.c) and the matrix product with
 * its heuristics (cublaslt_matmul.c). */
#ifndef EMU_CUBLASLT_EMU_H
#define EMU_CUBLASLT_EMU_H

#include <cublasLt.h>
#include <stdint.h>

#define EMU_LT_MAGIC 0x4c74486eu        /* "LtHn" while a handle lives */
#define EMU_LT_DESC_MAGIC 0x4c744d64u   /* "LtMd": a matmul descriptor */
#define EMU_LT_LAYOUT_MAGIC 0x4c744c79u /* "LtLy": a matrix layout */
#define EMU_LT_PREF_MAGIC 0x4c745066u   /* "LtPf": a preference */
#define EMU_LT_EMULATION_MAGIC 0x4c74456du /* "LtEm": an emulation
                                              descriptor */

/* cublasLt.h declares the struct and leaves it to the library. A handle
 * holds nothing but the device it was made on: the library's settings
 * live in the descriptors. */
struct cublasLtContext {
    uint32_t magic;
    int device;
};

/*
 * The descriptors live in the header's semi-opaque structs, in the
 * caller's memory when made by the Init functions, so each must fit its
 * struct. Fields are named after the attributes they hold and have the
 * attributes' types; `created` says whether the library allocated it
 * (Create) or the caller did (Init).
 */
struct emu_lt_desc {
    uint32_t magic;
    uint8_t created;
    int8_t fast_accum;
    int32_t compute_type;           /* cublasComputeType_t */
    int32_t scale_type;             /* cudaDataType */
    int32_t pointer_mode;           /* cublasLtPointerMode_t */
    int32_t transa, transb, transc; /* cublasOperation_t */
    int32_t fill_mode;              /* cublasFillMode_t */
    uint32_t epilogue;              /* cublasLtEpilogue_t */
    int32_t sm_count_target;
    int32_t aux_data_type;          /* -1: the default */
    int32_t bias_data_type;         /* -1: the default */
    int32_t a_scale_mode, b_scale_mode, c_scale_mode, d_scale_mode;
    int32_t aux_scale_mode, d_out_scale_mode;
    const void *bias;
    int64_t bias_batch_stride;
    void *aux;
    int64_t aux_ld, aux_batch_stride;
    int64_t alpha_vector_batch_stride;
    const void *a_scale, *b_scale, *c_scale, *d_scale;
    void *amax_d;
    void *aux_scale, *aux_amax;
    void *d_out_scale;
    cublasLtEmulationDesc_t emulation;
};

struct emu_lt_layout {
    uint32_t magic;
    uint8_t created;
    uint32_t type;                  /* cudaDataType */
    int32_t order;                  /* cublasLtOrder_t */
    int32_t batch_count;
    uint32_t batch_mode;            /* cublasLtBatchMode_t */
    uint64_t rows, cols;
    int64_t ld;
    int64_t batch_stride;           /* STRIDED_BATCH_OFFSET, elements */
    int64_t plane_offset;
};

struct emu_lt_pref {
    uint32_t magic;
    uint8_t created;
    uint32_t search_mode;
    uint32_t reduction_scheme_mask;
    uint32_t min_alignment[4];      /* A, B, C, D */
    float max_waves_count;
    uint64_t max_workspace_bytes;
    uint64_t impl_mask;
};

/* An emulation descriptor (cublasLt.h, cublasLtEmulationDescAttributes_t,
 * with its defaults): only the strategy changes what the emulator does. */
struct emu_lt_emulation {
    uint32_t magic;
    uint8_t created;
    int32_t strategy;               /* cublasEmulationStrategy_t, 0 */
    int32_t special_values;         /* 0xFFFF */
    int32_t mantissa_control;       /* fixed-point emulation: 0 */
    int32_t max_mantissa_bits;      /* 0 */
    int32_t mantissa_bit_offset;    /* 0 */
    int32_t *mantissa_bit_count;    /* NULL */
};

_Static_assert(sizeof(struct emu_lt_emulation) <=
                   sizeof(cublasLtEmulationDescOpaque_t),
               "the emulation descriptor fits the header's struct");

/* The strategy of a valid emulation descriptor, else 0 (DEFAULT). */
int emu_lt_emulation_strategy(cublasLtEmulationDesc_t desc);

_Static_assert(sizeof(struct emu_lt_desc) <= sizeof(cublasLtMatmulDescOpaque_t),
               "the matmul descriptor fits the header's struct");
_Static_assert(sizeof(struct emu_lt_layout) <=
                   sizeof(cublasLtMatrixLayoutOpaque_t),
               "the matrix layout fits the header's struct");
_Static_assert(sizeof(struct emu_lt_pref) <=
                   sizeof(cublasLtMatmulPreferenceOpaque_t),
               "the preference fits the header's struct");

/* The device of a live cuBLASLt handle, or of a cuBLAS handle passed in
 * its place (the cuBLAS documentation allows the cast). Fails with
 * NOT_INITIALIZED for NULL or anything else. */
cublasStatus_t emu_lt_handle_device(cublasLtHandle_t handle, int *device);

/* The logger (cublaslt_log.c): whether it writes anything, and one call
 * ("ARGS -> STATUS") to the API trace, and to the errors when it failed. */
int emu_lt_log_on(void);
void emu_lt_log_call(const char *function, cublasStatus_t status,
                     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The descriptors behind the handles, or NULL when the handle is NULL or
 * does not hold a live descriptor of that kind. */
const struct emu_lt_desc *emu_lt_desc_at(cublasLtMatmulDesc_t desc);
const struct emu_lt_layout *emu_lt_layout_at(cublasLtMatrixLayout_t layout);
const struct emu_lt_pref *emu_lt_pref_at(cublasLtMatmulPreference_t pref);

/* A preference as cublasLtMatmulPreferenceCreate makes it: what
 * cublasLtMatmul uses when it is given no algorithm. */
void emu_lt_pref_defaults(struct emu_lt_pref *pref);

#endif
